#!/usr/bin/env bash
# Round 20, call 2 (docs/hardware/h200.md): the paper schedule at 1024 FMAs
# again (seeds 30 and 31) with this directory's dump.diff applied here only,
# so that windows the pooled detector dated more than 0.7 us early or 2 us
# late (and every tenth good one) can be replayed off the card.
set -u
final=$OUT; export OUT=/tmp/r20b; rm -rf "$OUT"; mkdir -p "$OUT"
git apply docs/hardware/data/h200-2026-12-04-round20/dump.diff || exit 1
rm -rf p1024s30 p1024s31 dumps-s30 dumps-s31; mkdir -p dumps-s30 dumps-s31
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.applications.graphics,uuid --format=csv > "$final/smi.txt" 2>&1
LATEST_DUMP_DIR=$PWD/dumps-s30 bash scripts/h200-quick.sh \
  "p1024s30 240 --latency-ms 0.2:50 -n 120 --iteration-fmas 1024 --schedule paper --seed 30" > "$OUT/quick1.txt" 2>&1
LATEST_DUMP_DIR=$PWD/dumps-s31 bash scripts/h200-quick.sh \
  "p1024s31 240 --latency-ms 0.2:50 -n 120 --iteration-fmas 1024 --schedule paper --seed 31" > "$OUT/quick2.txt" 2>&1
python3 scripts/h200-summary.py selftest p1024s30 p1024s31 > "$final/summary.txt" 2>&1
cat "$OUT/quick1.txt" "$OUT/quick2.txt" > "$final/log.txt"
cp "$OUT"/telemetry.csv "$final/" 2>/dev/null
tar -cJf "$final/dumps.tar.xz" p1024s30 p1024s31 dumps-s30 dumps-s31 2>/dev/null
ls -la "$final"; cat "$final/summary.txt"
