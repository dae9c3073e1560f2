#!/usr/bin/env bash
# Round 20, call 3 (docs/hardware/h200.md): call 1's three runs and call 2's
# second paper-schedule seed with the in-step change (2949454) on the card.
set -u
final=$OUT; export OUT=/tmp/r20c; rm -rf "$OUT"; mkdir -p "$OUT"
rm -rf c1024 p1024 c4096 p1024s31 realtry
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.applications.graphics,uuid --format=csv > "$final/smi.txt" 2>&1
bash scripts/h200-quick.sh \
  "c1024 240 --latency-ms 0.2:50 -n 120 --iteration-fmas 1024 --schedule chained --seed 30" \
  "p1024 240 --latency-ms 0.2:50 -n 120 --iteration-fmas 1024 --schedule paper --seed 30" \
  "c4096 200 --latency-ms 0.2:50 -n 80 --iteration-fmas 4096 --schedule chained --seed 30" \
  "p1024s31 240 --latency-ms 0.2:50 -n 120 --iteration-fmas 1024 --schedule paper --seed 31" > "$OUT/quick.txt" 2>&1
{ echo "== real switch through the guard"; timeout 60 build-h200/latest --backend cuda --freq 1980,990 --max-measurements 5 --output realtry; echo "rc=$?"; ls realtry 2>&1; } > "$OUT/realtry.txt" 2>&1
python3 scripts/h200-summary.py selftest c1024 p1024 c4096 p1024s31 > "$final/summary.txt" 2>&1
cp "$OUT/quick.txt" "$final/log.txt"; cp "$OUT/realtry.txt" "$final/"
cp "$OUT"/telemetry.csv "$final/" 2>/dev/null
tar -czf "$final/results.tgz" c1024 p1024 c4096 p1024s31 2>/dev/null
cat "$final/summary.txt"; tail -8 "$OUT/realtry.txt"
