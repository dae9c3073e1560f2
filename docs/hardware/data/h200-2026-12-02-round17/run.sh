#!/usr/bin/env bash
# Round 17 (docs/hardware/h200.md): the detectors' host time on the lent
# H200's own host after eb70da7 (a window's memory kept by the thread), beside
# the pooled detector of d8a24ec and the paper detector of the day
# (9088a1a^). Run from the repository root on the lent machine behind the
# guard; touches no GPU. The machine's copy of the tree has no history, so
# the two older sources travel in .device/hb (made here with
#   git show d8a24ec:src/core/pooled_detection.cpp > .device/hb/base.cpp
#   git archive 9088a1a^ src | tar -x -C .device/hb/then).
# Output under $OUT.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv >"$OUT/smi.txt" 2>&1
lscpu >"$OUT/lscpu.txt"
for k in 1 2; do
  SOURCES="$PWD/.device/hb" BUILD=build-hb bash docs/benchmarks/detector-host-time/run.sh 2>&1 | tee "$OUT/hostbench-$k.txt"
done
