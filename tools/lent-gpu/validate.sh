#!/usr/bin/env bash
# A short guarded check after a change to the engine, the schedules or the
# kernel (the caller runs the guard first): build, `info`, a default
# selftest in each schedule, a real measurement that the guard must refuse
# (exit 4), and the GPU-labelled tests. Everything lands in $OUT.
source "$(dirname "$0")/env.sh"
{
  date -u; git log -1 --format='commit %H' 2>/dev/null
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.applications.graphics,power.limit --format=csv
  step build
  cmake -S . -B build-h200 -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DLATEST_BUILD_BENCHMARKS=OFF >/dev/null \
    && cmake --build build-h200 -j16 --target latest gpu_tests 2>&1 | tail -2
} > "$log" 2>&1
[ -x "$bin" ] || { tail -n 40 "$log"; exit 1; }
{
  step info; timeout 120 $bin info --json "$out/info.json"; echo "rc=$?"
  step selftest chained, defaults; timeout 240 $bin selftest --output st-chained; echo "rc=$?"
  step selftest paper schedule; timeout 240 $bin selftest --schedule paper -n 40 --output st-paper; echo "rc=$?"
  tar -czf "$out/selftests.tgz" st-chained st-paper 2>/dev/null
  step real measurement, must be refused by the guard
  timeout 120 $bin --backend cuda --freq 1980,990 --output guarded --max-measurements 5; echo "rc=$?"
  nvidia-smi --query-gpu=clocks.sm,clocks.applications.graphics,power.limit --format=csv
  step ctest -L gpu; (cd build-h200 && timeout 400 ctest -L gpu --output-on-failure | tail -20); echo "rc=$?"
  step done
} >> "$log" 2>&1
grep -v "^\[" "$log" | tail -n 120
