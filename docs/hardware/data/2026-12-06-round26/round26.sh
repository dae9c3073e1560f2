#!/usr/bin/env bash
# Round 26 (docs/hardware/h200.md): the committed, staggered kernel and the
# day's detector, one binary, chained selftests; run behind the guard from
# the repository root with OUT set, as it ran on 2026-12-06.
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.applications.graphics,uuid --format=csv > $OUT/smi.txt
(cmake -S . -B build-h200 -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DLATEST_BUILD_BENCHMARKS=OFF \
   -DLATEST_BUILD_TESTS=OFF >/dev/null && cmake --build build-h200 -j16 --target latest 2>&1 | tail -1) > $OUT/build.txt 2>&1
for a in "s41 --iteration-fmas 4096 --seed 41" "s42 --iteration-fmas 4096 --seed 42" "c1024 --iteration-fmas 1024 --seed 40"; do
  set -- $a; n=$1; shift
  timeout 60 build-h200/latest selftest --output $n --latency-ms 0.2:50 -n 80 --schedule chained "$@" 2>&1 | grep -v "^\[" | tail -4 >> $OUT/log.txt
done
python3 scripts/h200-summary.py selftest s41 s42 c1024 > $OUT/summary.txt 2>&1
tar -czf $OUT/results.tgz s41 s42 c1024
