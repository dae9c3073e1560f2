#!/usr/bin/env bash
# Second pass on the lent H200 (behind the guard, like h200-check.sh): the
# GPU-labelled tests, and two more ways a real run must not touch the card.
set -uo pipefail
out=${OUT:?set OUT}
export LATEST_GUARD_LOG="$out/guard-refusals.log"
{
  cmake -S . -B build-h200 -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DLATEST_BUILD_BENCHMARKS=OFF \
    && cmake --build build-h200 -j16 --target latest gpu_tests 2>&1 | tail -3
} > "$out/build.log" 2>&1
{
  echo "== ctest -L gpu"
  (cd build-h200 && ctest -L gpu --output-on-failure); echo "rc=$?"
  echo "== --read-only: no setter may even be tried (the guard logs none)"
  : > "$LATEST_GUARD_LOG"
  build-h200/latest --backend cuda --read-only --freq 1980,990 --output ro --min-measurements 5 --max-measurements 5; echo "rc=$?"
  echo "guard refusals during it: $(wc -l < "$LATEST_GUARD_LOG")"
  echo "== application clocks: refused by the guard"
  build-h200/latest --backend cuda --clock-api application --freq 1980,990 --output app --min-measurements 5 --max-measurements 5; echo "rc=$?"
  cat "$LATEST_GUARD_LOG"
  ls ro app 2>&1; ls /var/tmp/latest 2>&1
  nvidia-smi --query-gpu=clocks.sm,clocks.applications.graphics --format=csv
} > "$out/gpu-tests.log" 2>&1
tail -n 40 "$out/gpu-tests.log"
