#!/usr/bin/env bash
# Round 21, call 2 (docs/hardware/h200.md): call 1's c4096 and p1024s31
# again on the same machine with dump.diff, the dumps kept under build-h200/
# (ignored, so they outlast the call), and only the windows dated more than
# 2 us late or 0.7 us early (late.py) brought back, to replay here.
set -u
final=$OUT; export OUT=/tmp/r21b; rm -rf "$OUT"; mkdir -p "$OUT"
git apply docs/hardware/data/h200-2026-12-04-round20/dump.diff || exit 1
d=build-h200/dumps; rm -rf "$d" c4096 p1024s31; mkdir -p "$d/c4096" "$d/p1024s31"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.applications.graphics,uuid --format=csv > "$final/smi.txt" 2>&1
LATEST_DUMP_DIR=$PWD/$d/c4096 bash scripts/h200-quick.sh \
  "c4096 200 --latency-ms 0.2:50 -n 80 --iteration-fmas 4096 --schedule chained --seed 30" > "$OUT/quick0.txt" 2>&1
LATEST_DUMP_DIR=$PWD/$d/p1024s31 bash scripts/h200-quick.sh \
  "p1024s31 240 --latency-ms 0.2:50 -n 120 --iteration-fmas 1024 --schedule paper --seed 31" > "$OUT/quick1.txt" 2>&1
python3 scripts/h200-summary.py selftest c4096 p1024s31 > "$final/summary.txt" 2>&1
cat "$OUT"/quick?.txt > "$final/log.txt"
python3 docs/hardware/data/h200-2026-12-04-round21/late.py "$d"/* > "$OUT/late.txt" 2> "$final/late.txt"
tar -cJf "$final/late.tar.xz" -T "$OUT/late.txt"
ls -la "$final"; cat "$final/summary.txt" "$final/late.txt"
