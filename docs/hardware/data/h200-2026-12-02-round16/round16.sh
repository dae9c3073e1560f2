#!/usr/bin/env bash
# Round 16: the stated uncertainty (commit 89d8d2b) on emulated switching,
# the settings of round 14 (1024 FMAs both schedules, 4096 chained), then a
# real switch through the guard (exit 4). Run from the repository root
# behind the guard; results in $OUT.
set -u
seed=${1:-30}; n=${2:-80}
here=$(dirname "$0")
final=$OUT; export OUT=/tmp/r16; rm -rf "$OUT"; mkdir -p "$OUT"
rm -rf c1024 p1024 c4096 realtry
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.applications.graphics,serial,uuid --format=csv > "$final/smi.txt"
bash scripts/h200-quick.sh \
  "c1024 200 --latency-ms 0.2:50 -n $n --iteration-fmas 1024 --schedule chained --seed $seed" \
  "p1024 200 --latency-ms 0.2:50 -n $n --iteration-fmas 1024 --schedule paper --seed $seed" \
  "c4096 200 --latency-ms 0.2:50 -n 60 --iteration-fmas 4096 --schedule chained --seed $seed" > "$OUT/quick.txt" 2>&1
{ echo "== real switch through the guard"; timeout 60 build-h200/latest --backend cuda --freq 1980,990 --max-measurements 5 --output realtry; echo "rc=$?"; ls realtry 2>&1; } > "$OUT/realtry.txt" 2>&1
{ python3 scripts/h200-summary.py selftest c1024 p1024 c4096; python3 "$here/uncertainty.py" c1024 p1024 c4096; } > "$final/summary.txt" 2>&1
cat "$OUT/quick.txt" "$OUT/realtry.txt" > "$final/log.txt"
tar -czf "$final/results.tgz" c1024 p1024 c4096 2>/dev/null
ls -la "$final"; cat "$final/summary.txt"; tail -5 "$OUT/realtry.txt"
