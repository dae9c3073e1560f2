#!/usr/bin/env bash
# What we run on the lent H200, always behind ../shared/device/nvml-guard
# (the caller builds the guard and runs guard-check first). Only read-only
# paths: info, calibration at the card's own clock, emulated switching, the
# GPU-labelled tests, and real measurements that must end in the guard's
# permission error (exit 4). One log and the JSON results go to $OUT as each
# step ends ($OUT brings back only a few files);
# docs/hardware/h200.md records what came back.
set -uo pipefail
out=${OUT:?set OUT}
bin=build-h200/latest
export LATEST_GUARD_LOG="$out/guard-refusals.log"
log="$out/run.log"
step() { echo "== $(date -u +%T) $*"; }
{
  date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.applications.graphics,clocks_event_reasons.active --format=csv
  step build
  cmake -S . -B build-h200 -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DLATEST_BUILD_BENCHMARKS=OFF >/dev/null \
    && cmake --build build-h200 -j16 --target latest gpu_tests 2>&1 | tail -3
  step built
} > "$log" 2>&1
[ -x "$bin" ] || { tail -n 40 "$log"; exit 1; }
{
  step info 1024 FMAs; $bin info --iterations 32768 --iteration-fmas 1024 --json "$out/info-1024.json"; echo "rc=$?"
  step info 256 FMAs; $bin info --iterations 65536 --iteration-fmas 256 | tail -2; echo "rc=$?"
} >> "$log" 2>&1
{
  step selftest 1-50 ms, default iteration; $bin selftest --latency-ms 1:50 -n 100 --output st1; echo "rc=$?"
  cp st1/selftest.json "$out/selftest-1-50.json"
} >> "$log" 2>&1
{
  step real measurement, must be refused by the guard
  nvidia-smi --query-gpu=clocks.sm,clocks.applications.graphics --format=csv
  $bin --backend cuda --freq 1980,990 --output guarded --min-measurements 5 --max-measurements 5; echo "rc=$?"
  step read-only: no setter may even be tried
  n0=$(wc -l < "$LATEST_GUARD_LOG")
  $bin --backend cuda --read-only --freq 1980,990 --output ro --min-measurements 5 --max-measurements 5; echo "rc=$?"
  echo "guard refusals during it: $(( $(wc -l < "$LATEST_GUARD_LOG") - n0 ))"
  step application clocks: refused by the guard
  $bin --backend cuda --clock-api application --freq 1980,990 --output app --min-measurements 5 --max-measurements 5; echo "rc=$?"
  step reset, refused too; $bin reset; echo "rc=$?"
  cat "$LATEST_GUARD_LOG"
  ls guarded ro app 2>&1; ls /var/tmp/latest 2>&1
  nvidia-smi --query-gpu=clocks.sm,clocks.applications.graphics --format=csv
} >> "$log" 2>&1
{
  step ctest -L gpu; (cd build-h200 && ctest -L gpu --output-on-failure); echo "rc=$?"
} >> "$log" 2>&1
{
  step selftest 50-500 ms; $bin selftest --latency-ms 50:500 -n 10 --output st2; echo "rc=$?"
  cp st2/selftest.json "$out/selftest-50-500.json"
  step selftest 1-50 ms, 256 FMAs; $bin selftest --latency-ms 1:50 -n 50 --iteration-fmas 256 --output st3; echo "rc=$?"
  cp st3/selftest.json "$out/selftest-256.json"
  step traces around the switch, iteration sized from the window; mkdir -p tr
  (cd tr && ../$bin selftest --latency-ms 1:5 -n 5 --save-traces --output auto && python3 ../scripts/near_switch_traces.py "$out/traces-near-switch.csv.gz"); echo "rc=$?"
  step done
} >> "$log" 2>&1
grep -v "^\[" "$log" | tail -n 120
