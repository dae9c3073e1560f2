#!/usr/bin/env bash
# Round 13: the fixed pooled detector (host-time work on top of 718b31d) at
# 4096 FMAs, both schedules, raw windows dumped (dump.diff, temporary and
# applied here only) so that the machine's boundary wander can be read.
set -u
git apply docs/hardware/data/h200-2026-12-01-round12/dump.diff || exit 1
rm -rf c4096 p4096 dumps-c dumps-p; mkdir -p dumps-c dumps-p
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.applications.graphics,serial,uuid --format=csv > "$OUT/smi.txt"
LATEST_DUMP_DIR=$PWD/dumps-c bash scripts/h200-quick.sh "c4096 ${1:-200} --latency-ms 0.2:50 -n ${2:-60} --iteration-fmas 4096 --schedule chained --seed ${3:-13}" > "$OUT/c.txt" 2>&1
cp "$OUT/run.log" "$OUT/c-run.log"
LATEST_DUMP_DIR=$PWD/dumps-p bash scripts/h200-quick.sh "p4096 ${1:-200} --latency-ms 0.2:50 -n ${2:-60} --iteration-fmas 4096 --schedule paper --seed ${3:-13}" > "$OUT/p.txt" 2>&1
tar -cJf "$OUT/round13.tar.xz" -C "$OUT" c.txt p.txt c-run.log run.log smi.txt --exclude=round13.tar.xz -C "$PWD" dumps-c dumps-p c4096 p4096 2>/dev/null
ls -la "$OUT"
