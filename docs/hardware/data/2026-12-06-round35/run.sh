#!/usr/bin/env bash
# Round 35 (docs/hardware/h200.md): the detectors' host time on the lent
# machine's own host, where a user's run detects: the tree's pooled
# detector beside 05f91db's (the base of docs/benchmarks.md's 2026-12-06
# runs) and the issue day's paper detector, on the default window, on the
# recorded windows of tests/core/data and of rounds 12, 13 and 23, and on
# every window of the side-by-side benchmark's simulated run (run.sh
# WINDOWS= and ENGINE=1), twice. Run from the repository root on the lent
# machine behind the guard; touches no GPU. The machine's copy of the tree
# has no history, so the two older sources travel in .device/hb35 (made
# here with
#   git show 05f91db:src/core/pooled_detection.cpp > .device/hb35/base.cpp
#   git archive 9088a1a^ src | tar -x -C .device/hb35/then).
# HB (default .device/hb35): that folder, for another base (round 41:
# .device/hb41, base.cpp from 679f89e). Output under $OUT.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv >"$OUT/smi.txt" 2>&1
lscpu >"$OUT/lscpu.txt"
windows=$(mktemp -d)
dirs=()
for t in tests/core/data/*.tar.xz docs/hardware/data/h200-2026-12-01-round12/call4-5-dumps.tar.xz \
  docs/hardware/data/h200-2026-12-01-round12/call7-dumps.tar.xz \
  docs/hardware/data/h200-2026-12-01-round13/call7-round13.tar.xz \
  docs/hardware/data/2026-12-06-rounds22-23/call2-late-windows.tar.xz; do
  d="$windows/$(basename "$t" .tar.xz)"
  mkdir -p "$d" && tar -xJf "$t" -C "$d" && dirs+=("$d")
done
echo "$(find "$windows" -name '*.bin' | wc -l) recorded windows" | tee "$OUT/windows.txt"
for k in 1 2; do
  SOURCES="$PWD/${HB:-.device/hb35}" BUILD=build-hb WINDOWS="${dirs[*]}" ENGINE=1 \
    bash docs/benchmarks/detector-host-time/run.sh 2>&1 | tee "$OUT/hostbench-$k.txt"
done
