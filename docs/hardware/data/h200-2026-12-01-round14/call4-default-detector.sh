#!/usr/bin/env bash
# The default detector on the real path, after the flip: a real switch
# through the guard (exit 4, no files), and the run's own words about it.
set -u
cmake -S . -B build-h200 -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DLATEST_BUILD_BENCHMARKS=OFF -DLATEST_BUILD_TESTS=OFF >/dev/null && cmake --build build-h200 -j16 --target latest 2>&1 | tail -1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.applications.graphics,uuid --format=csv
rm -rf realtry
timeout 60 build-h200/latest --backend cuda --freq 1980,990 --max-measurements 5 --output realtry; echo "rc=$?"; ls realtry 2>&1
timeout 60 build-h200/latest --backend cuda --freq 1980,1500,990 --plan --json > plan.json; echo "plan rc=$?"; head -c 300 plan.json
timeout 120 build-h200/latest info 2>&1 | head -30; echo "info rc=${PIPESTATUS[0]}"
