#!/usr/bin/env bash
# Round 23 (docs/hardware/h200.md): round 22 (its script: git show
# 5c618c5:docs/hardware/data/h100-2026-12-06-round22/round22.sh) again, on
# the detector whose tail hinge reads from one iteration after the arrival
# on. Does starting each block's timing blockIdx/gridDim of an iteration
# late (stagger.diff beside this
# file) spread the SMs' phases and remove round 21's early chained
# 990->1980 windows at 4096 FMAs? Two binaries of the tree, without and with
# stagger.diff, take turns on the same seeds (a short run first warms the
# card: on a cold H100 the first run refused every window), then both at
# 1024 FMAs in both schedules, and a real switch, which must end at the
# guard. Round 20's dump.diff on the device only; late.py's windows and
# every tenth other come back. Run from the repository root, tree clean.
# SEEDS, SEED_S and LATE_S shorten it (the seeds, and the seconds after
# which no more 4096-FMA or 1024-FMA runs start); round 23 ran the defaults.
# Since round 25 the kernel staggers (stagger.diff is in the tree), so this
# script runs as written only on a tree before that (round 25's, 4e40b59).
set -u
final=$OUT; export OUT=/tmp/r22; rm -rf "$OUT"; mkdir -p "$OUT"
here=$(dirname "$0")
source scripts/h200-env.sh
start=$SECONDS
git apply docs/hardware/data/h200-2026-12-04-round20/dump.diff || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.applications.graphics,uuid --format=csv > "$final/smi.txt" 2>&1
build() {
  cmake -S . -B build-h200 -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DLATEST_BUILD_BENCHMARKS=OFF \
    -DLATEST_BUILD_TESTS=OFF >/dev/null && cmake --build build-h200 -j16 --target latest 2>&1 | tail -1 && cp build-h200/latest "build-h200/latest-$1"
}
{ step build base; build base; git apply "$here/stagger.diff" && step build stagger && build stagger; git apply -R "$here/stagger.diff"; } > "$log" 2>&1
[ -x build-h200/latest-base ] && [ -x build-h200/latest-stagger ] || { tail -n 30 "$log"; exit 1; }
d=build-h200/dumps; rm -rf "$d"; runs=()
selftest() {  # binary name args...
  local b=$1 name=$2; shift 2
  rm -rf "$name"; mkdir -p "$d/$name"; runs+=("$name")
  step "$b $name: $*" >> "$log"
  LATEST_DUMP_DIR=$PWD/$d/$name timeout 120 "build-h200/latest-$b" selftest --output "$name" "$@" 2>&1 | grep -v "^\[" | tail -14 >> "$log"
}
selftest base warmup --latency-ms 0.2:5 -n 25 --iteration-fmas 4096 --schedule chained --seed 39
c4096="--latency-ms 0.2:50 -n 80 --iteration-fmas 4096 --schedule chained"
for seed in ${SEEDS:-40 41 42 43 44 45}; do
  [ $((SECONDS - start)) -lt "${SEED_S:-300}" ] || break
  selftest base "base-c4096s$seed" $c4096 --seed $seed
  selftest stagger "stag-c4096s$seed" $c4096 --seed $seed
done
for b in base stagger; do
  [ $((SECONDS - start)) -lt "${LATE_S:-420}" ] || break
  selftest $b "${b:0:4}-c1024" --latency-ms 0.2:50 -n 60 --iteration-fmas 1024 --schedule chained --seed 40
  selftest $b "${b:0:4}-p1024" --latency-ms 0.2:50 -n 60 --iteration-fmas 1024 --schedule paper --seed 40
done
{ echo "== real switch through the guard"; timeout 60 build-h200/latest-base --backend cuda --freq 1980,990 --max-measurements 5 --output realtry; echo "rc=$?"; ls realtry 2>&1; } > "$final/realtry.txt" 2>&1
python3 scripts/h200-summary.py selftest "${runs[@]}" > "$final/summary.txt" 2>&1
cp "$log" "$final/log.txt"
tar -czf "$final/results.tgz" "${runs[@]}" 2>/dev/null
python3 docs/hardware/data/h200-2026-12-04-round21/late.py "$d"/* > "$OUT/late.txt" 2> "$final/late.txt"
for b in base stag; do ls "$d"/$b-*/w*0.bin 2>/dev/null | head -20; done >> "$OUT/late.txt"
tar -cJf "$final/windows.tar.xz" -T "$OUT/late.txt"
echo "seconds $((SECONDS - start))" >> "$final/summary.txt"
ls -la "$final"; cat "$final/summary.txt" "$final/late.txt"; tail -4 "$final/realtry.txt"
