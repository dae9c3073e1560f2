#!/usr/bin/env bash
# Round 15's host-time measurement (docs/hardware/h200.md): the pooled
# detector of 02bfaf3 beside the tree's and the paper's, on BM_DetectSwitch's
# window. Its program is now docs/benchmarks/detector-host-time/ (the same
# measurement, with the paper detector of 9088a1a^ added; hostbench.txt here
# is round 15's output of the program as it was then). Run from the
# repository root (on the lent H200 behind the guard, as docs/hardware/h200.md
# says; it touches no GPU). Output: $OUT/hostbench.txt.
set -u
BUILD=build-hb bash docs/benchmarks/detector-host-time/run.sh 02bfaf3 2>&1 | tee "$OUT/hostbench.txt"
