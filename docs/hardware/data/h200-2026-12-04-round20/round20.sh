#!/usr/bin/env bash
# Round 20 (docs/hardware/h200.md): the tree of 3889d8b on the card, emulated switching only: both
# schedules at 1024 FMAs and the chained one at 4096, L uniform in
# 0.2-50 ms, mid-iteration switches; then a real switch through the guard
# (must end in exit 4 with no files) and `latest info`.
set -u
seed=${1:-30}
final=$OUT; export OUT=/tmp/r20; rm -rf "$OUT"; mkdir -p "$OUT"
rm -rf c1024 p1024 c4096 realtry
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.applications.graphics,uuid --format=csv > "$final/smi.txt" 2>&1
bash scripts/h200-quick.sh \
  "c1024 240 --latency-ms 0.2:50 -n 120 --iteration-fmas 1024 --schedule chained --seed $seed" \
  "p1024 240 --latency-ms 0.2:50 -n 120 --iteration-fmas 1024 --schedule paper --seed $seed" \
  "c4096 200 --latency-ms 0.2:50 -n 80 --iteration-fmas 4096 --schedule chained --seed $seed" > "$OUT/quick.txt" 2>&1
{ echo "== real switch through the guard"; timeout 60 build-h200/latest --backend cuda --freq 1980,990 --max-measurements 5 --output realtry; echo "rc=$?"; ls realtry 2>&1;
  echo "== info"; timeout 60 build-h200/latest info; echo "rc=$?"; } > "$OUT/realtry.txt" 2>&1
python3 scripts/h200-summary.py selftest c1024 p1024 c4096 > "$final/summary.txt" 2>&1
cp "$OUT/quick.txt" "$OUT/realtry.txt" "$OUT/run.log" "$final/" 2>/dev/null
cp "$OUT"/telemetry.csv "$OUT"/guard-refusals.log "$final/" 2>/dev/null
tar -czf "$final/results.tgz" c1024 p1024 c4096 2>/dev/null
cat "$final/summary.txt"; tail -30 "$OUT/realtry.txt"
