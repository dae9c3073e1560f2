#!/usr/bin/env bash
# Round 14: the current tree at 1024 and 4096 FMAs, both schedules at 1024,
# raw windows dumped (round 12's dump.diff, applied here only) to read the
# machine's boundary wander; then a real switch through the guard (exit 4).
set -u
seed=${1:-20}; n=${2:-80}
final=$OUT; export OUT=/tmp/r14; rm -rf "$OUT"; mkdir -p "$OUT"
git apply docs/hardware/data/h200-2026-12-01-round12/dump.diff || exit 1
rm -rf c1024 p1024 c4096 dumps-c1024 dumps-p1024 dumps-c4096 realtry; mkdir -p dumps-c1024 dumps-p1024 dumps-c4096
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.applications.graphics,serial,uuid --format=csv > "$final/smi.txt"
LATEST_DUMP_DIR=$PWD/dumps-c1024 bash scripts/h200-quick.sh \
  "c1024 200 --latency-ms 0.2:50 -n $n --iteration-fmas 1024 --schedule chained --seed $seed" \
  "p1024 200 --latency-ms 0.2:50 -n $n --iteration-fmas 1024 --schedule paper --seed $seed" > "$OUT/quick1.txt" 2>&1
cp "$OUT/run.log" "$OUT/run1.log"
LATEST_DUMP_DIR=$PWD/dumps-c4096 bash scripts/h200-quick.sh \
  "c4096 200 --latency-ms 0.2:50 -n 60 --iteration-fmas 4096 --schedule chained --seed $seed" > "$OUT/quick2.txt" 2>&1
{ echo "== real switch through the guard"; timeout 60 build-h200/latest --backend cuda --freq 1980,990 --max-measurements 5 --output realtry; echo "rc=$?"; ls realtry 2>&1; } > "$OUT/realtry.txt" 2>&1
python3 scripts/h200-summary.py selftest c1024 p1024 c4096 > "$final/summary.txt" 2>&1
cat "$OUT/quick1.txt" "$OUT/quick2.txt" "$OUT/realtry.txt" > "$final/log.txt"
tar -cJf "$final/round14.tar.xz" -C "$OUT" . -C "$PWD" c1024 p1024 c4096 dumps-c1024 dumps-p1024 dumps-c4096 2>/dev/null
ls -la "$final"; cat "$final/summary.txt"; tail -5 "$OUT/realtry.txt"
