#!/usr/bin/env bash
# Round 18 (docs/hardware/h200.md): the detectors' host time on the lent
# H200's own host after daad61e (the pooled hinges' counting sort), on the
# default window (beside d60e53f's pooled detector), on the 93 windows H200s
# recorded in rounds 12 and 13, and on every window of the side-by-side
# benchmark's simulated run (run.sh WINDOWS= and ENGINE=1). Run from the
# repository root on the lent machine behind the guard; touches no GPU. The
# machine's copy of the tree has no history, so the two older sources travel
# in .device/hb18 (made here with
#   git show d60e53f:src/core/pooled_detection.cpp > .device/hb18/base.cpp
#   git archive 9088a1a^ src | tar -x -C .device/hb18/then).
# Output under $OUT.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv >"$OUT/smi.txt" 2>&1
lscpu >"$OUT/lscpu.txt"
windows=$(mktemp -d)
tar -xJf tests/core/data/h200-round12-windows.tar.xz -C "$windows"
tar -xJf docs/hardware/data/h200-2026-12-01-round12/call4-5-dumps.tar.xz -C "$windows"
tar -xJf docs/hardware/data/h200-2026-12-01-round13/call7-round13.tar.xz -C "$windows"
echo "$(find "$windows" -name '*.bin' | wc -l) recorded windows" | tee "$OUT/windows.txt"
for k in 1 2; do
  SOURCES="$PWD/.device/hb18" BUILD=build-hb WINDOWS="$windows" ENGINE=1 \
    bash docs/benchmarks/detector-host-time/run.sh 2>&1 | tee "$OUT/hostbench-$k.txt"
done
