#!/usr/bin/env bash
# Round 20, call 5 (docs/hardware/h200.md): the chained runs of call 4 again
# with dump.diff applied on the device only, to replay the windows dated
# more than 2 us late (call 4: three 1980 -> 990 at 4096 FMAs, 4-5.6 us).
set -u
final=$OUT; export OUT=/tmp/r20e; rm -rf "$OUT"; mkdir -p "$OUT"
git apply docs/hardware/data/h200-2026-12-04-round20/dump.diff || exit 1
rm -rf c4096 c1024 dumps-c4096 dumps-c1024; mkdir -p dumps-c4096 dumps-c1024
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.applications.graphics,uuid --format=csv > "$final/smi.txt" 2>&1
LATEST_DUMP_DIR=$PWD/dumps-c4096 bash scripts/h200-quick.sh \
  "c4096 200 --latency-ms 0.2:50 -n 80 --iteration-fmas 4096 --schedule chained --seed 30" > "$OUT/quick1.txt" 2>&1
LATEST_DUMP_DIR=$PWD/dumps-c1024 bash scripts/h200-quick.sh \
  "c1024 240 --latency-ms 0.2:50 -n 120 --iteration-fmas 1024 --schedule chained --seed 30" > "$OUT/quick2.txt" 2>&1
python3 scripts/h200-summary.py selftest c4096 c1024 > "$final/summary.txt" 2>&1
cat "$OUT/quick1.txt" "$OUT/quick2.txt" > "$final/log.txt"
cp "$OUT"/telemetry.csv "$final/" 2>/dev/null
tar -czf "$final/results.tgz" c4096 c1024 2>/dev/null
tar -cJf "$final/dumps.tar.xz" dumps-c4096 dumps-c1024 2>/dev/null
ls -la "$final"; cat "$final/summary.txt"
