#!/usr/bin/env bash
# Host time of the pooled detector at 02bfaf3 and in the working tree, and
# of the paper's detector, alternated in one process on BM_DetectSwitch's
# window (detector_host_time.cpp: minimum over rounds of three calls each).
# Run from the repository root (on the lent H200 behind the guard, as
# docs/hardware/h200.md says; it touches no GPU). Output: $OUT/hostbench.txt.
set -u
here=$(dirname "$0")
{
date -u; lscpu | grep -E "Model name|^CPU\(s\)|L3"
cmake -S . -B build-hb -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DLATEST_BUILD_BENCHMARKS=OFF -DLATEST_BUILD_TESTS=OFF >/dev/null 2>&1
cmake --build build-hb -j16 --target latest_core latest_sim 2>&1 | tail -1
# The old detector, built as it was (without the -fno-math-errno of later commits).
git show 02bfaf3:src/core/pooled_detection.cpp | sed 's/^Measurement detect_switch_pooled(/Measurement detect_switch_pooled_old(/' > /tmp/old_pd.cpp &&
g++ -std=c++20 -O3 -DNDEBUG -Isrc -c /tmp/old_pd.cpp -o /tmp/old.o &&
g++ -std=c++20 -O3 -DNDEBUG -Isrc -Ibench "$here/detector_host_time.cpp" /tmp/old.o build-hb/liblatest_sim.a build-hb/liblatest_core.a -lfmt -lpthread -o /tmp/detector_host_time &&
for i in 1 2 3; do /tmp/detector_host_time 150; done
} 2>&1 | tee "$OUT/hostbench.txt"
