#!/usr/bin/env bash
# Round 36, call 2 (docs/hardware/h200.md), on the warm machine of call 1
# (load.sh, whose build-h200 it reuses): the load curve with round 20's
# dump applied (the device's copy only), so that the windows dated late can
# be replayed here. Chained selftests at 1024 FMAs, 1980 <-> 990 MHz, 40
# measurements a direction, seed 5, at 1, 2, 4, 8 and 16 warps per SM, with
# read-only telemetry. Everything goes into four files under $OUT.
set -u
git apply docs/hardware/data/h200-2026-12-04-round20/dump.diff || exit 1
cmake --build build-h200 -j16 --target latest 2>&1 | tail -1
t=$OUT/t; mkdir -p "$t"; d=$PWD/dumps; rm -rf "$d"
nvidia-smi --query-gpu=timestamp,power.draw,temperature.gpu,clocks.sm,clocks.mem,utilization.gpu,clocks_throttle_reasons.active \
  --format=csv,nounits -lms 500 > "$t/telemetry.csv" 2>&1 &
sampler=$!
runs=()
for w in 1 2 4 8 16; do
  mkdir -p "$d/w$w"; runs+=("w$w")
  echo "== $(date -u +%T) w$w" | tee -a "$t/steps.txt"
  LATEST_DUMP_DIR=$d/w$w timeout 150 build-h200/latest selftest --output "w$w" --latency-ms 0.2:50 -n 40 \
    --iteration-fmas 1024 --schedule chained --seed 5 --warps "$w" > "$t/w$w.log" 2>&1
  echo "rc=$?" >> "$t/w$w.log"
done
echo "== $(date -u +%T) end" >> "$t/steps.txt"
kill "$sampler" 2>/dev/null
python3 scripts/h200-summary.py selftest "${runs[@]}" > "$OUT/summary.txt" 2>&1
python3 docs/hardware/data/h200-2026-12-04-round21/late.py "$d"/w* > "$t/keep.txt" 2> "$t/late.txt"
tar -cJf "$OUT/windows.tar.xz" -T "$t/keep.txt" 2>/dev/null
tar -czf "$OUT/results.tgz" "${runs[@]}" 2>/dev/null
tar -czf "$OUT/logs.tgz" -C "$OUT" t
cat "$t/steps.txt" "$OUT/summary.txt"; wc -l < "$t/keep.txt"; head -30 "$t/late.txt"; ls -la "$OUT"
