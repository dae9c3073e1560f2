#!/usr/bin/env bash
# Round 27 (docs/hardware/h200.md): the committed kernel and detector, one
# binary with round 20's dump.diff applied on the device only. Chained
# selftests at 4096 and 1024 FMAs, a paper-schedule one at 1024, a real
# switch that must end at the guard. Kept windows: those dated beyond 2 us
# late or 0.7 us early (round 21's late.py), up to 10 refused ones a run
# (GPU-8dc209b2 refused every 990->1980 at 1024 FMAs in round 23), and up
# to 10 accepted ones a run. Run behind the guard from the repository root
# with OUT set, tree clean. C1024_SEEDS, C4096_SEEDS and P1024_SEEDS choose
# the seeds of each kind (round 27 ran the defaults; its paper-schedule run
# was named p1024, now p1024s43).
set -u
final=$OUT; export OUT=/tmp/r27; rm -rf "$OUT"; mkdir -p "$OUT"
here=$(dirname "$0")
source scripts/h200-env.sh
start=$SECONDS
git apply docs/hardware/data/h200-2026-12-04-round20/dump.diff || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.applications.graphics,uuid --format=csv > "$final/smi.txt" 2>&1
{ step build; cmake -S . -B build-h200 -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DLATEST_BUILD_BENCHMARKS=OFF \
    -DLATEST_BUILD_TESTS=OFF >/dev/null && cmake --build build-h200 -j16 --target latest 2>&1 | tail -1; } > "$log" 2>&1
[ -x build-h200/latest ] || { tail -n 30 "$log"; exit 1; }
d=build-h200/dumps; rm -rf "$d"; runs=()
selftest() {  # name args...
  local name=$1; shift
  [ $((SECONDS - start)) -lt "${STOP_S:-330}" ] || { step "skipped $name (time)" >> "$log"; return; }
  rm -rf "$name"; mkdir -p "$d/$name"; runs+=("$name")
  step "$name: $*" >> "$log"
  LATEST_DUMP_DIR=$PWD/$d/$name timeout 120 build-h200/latest selftest --output "$name" "$@" 2>&1 | grep -v "^\[" | tail -14 >> "$log"
}
selftest warmup --latency-ms 0.2:5 -n 25 --iteration-fmas 4096 --schedule chained --seed 39
for s in ${C1024_SEEDS:-40 41 42}; do selftest c1024s$s --latency-ms 0.2:50 -n 80 --iteration-fmas 1024 --schedule chained --seed $s; done
for s in ${C4096_SEEDS:-41 42}; do selftest c4096s$s --latency-ms 0.2:50 -n 80 --iteration-fmas 4096 --schedule chained --seed $s; done
for s in ${P1024_SEEDS:-43}; do selftest p1024s$s --latency-ms 0.2:50 -n 60 --iteration-fmas 1024 --schedule paper --seed $s; done
{ echo "== real switch through the guard"; timeout 60 build-h200/latest --backend cuda --freq 1980,990 --max-measurements 5 --output realtry; echo "rc=$?"; ls realtry 2>&1; } > "$final/realtry.txt" 2>&1
python3 scripts/h200-summary.py selftest "${runs[@]}" > "$final/summary.txt" 2>&1
cp "$log" "$final/log.txt"
tar -czf "$final/results.tgz" "${runs[@]}" 2>/dev/null
python3 docs/hardware/data/h200-2026-12-04-round21/late.py "$d"/* > "$OUT/keep.txt" 2> "$final/late.txt"
python3 - "$d" >> "$OUT/keep.txt" 2>> "$final/refused.txt" <<'PY'
import struct, sys, pathlib
for run in sorted(pathlib.Path(sys.argv[1]).iterdir()):
    refused, accepted = [], []
    for f in sorted(run.glob("w*.bin"), key=lambda p: int(p.stem[1:])):
        h = struct.unpack("10d", f.open("rb").read(80))
        (refused if h[3] != 0 else accepted).append((f, h))
    print(run.name, "refused", len(refused), "dumped accepted", len(accepted), file=sys.stderr)
    for f, h in refused[:10] + accepted[:10]:
        print(f)
        if h[3] != 0:
            print(f"  {f.name} outcome {int(h[3])} {int(h[6])}->{int(h[7])} truth {h[1]:.4f} ms", file=sys.stderr)
PY
sort -u "$OUT/keep.txt" > "$OUT/keep-u.txt"
tar -cJf "$final/windows.tar.xz" -T "$OUT/keep-u.txt"
echo "seconds $((SECONDS - start))" >> "$final/summary.txt"
ls -la "$final"; cat "$final/summary.txt" "$final/late.txt"; head -40 "$final/refused.txt"; tail -4 "$final/realtry.txt"
