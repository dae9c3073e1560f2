#!/usr/bin/env bash
# What we run on the lent H200, always behind ../shared/device/nvml-guard
# (the caller builds the guard and runs guard-check first). Only read-only
# paths: info, calibration at the card's own clock, emulated switching, and a
# real measurement that must end in the guard's permission error (exit 4).
# Logs and results go to $OUT; docs/hardware/h200.md records what came back.
set -uo pipefail
out=${OUT:?set OUT}
log() { echo "== $*"; }
{
  date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks_event_reasons.active --format=csv
  log build
  cmake -S . -B build-h200 -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
        -DLATEST_BUILD_TESTS=OFF -DLATEST_BUILD_BENCHMARKS=OFF >/dev/null && cmake --build build-h200 -j16 2>&1 | tail -3
} > "$out/build.log" 2>&1
bin=build-h200/latest
[ -x "$bin" ] || { cat "$out/build.log"; exit 1; }
export LATEST_GUARD_LOG="$out/guard-refusals.log"
{
  log info 1024 FMAs; $bin info --iterations 32768 --iteration-fmas 1024 --json "$out/info-1024.json"; echo "rc=$?"
  log info 256 FMAs;  $bin info --iterations 65536 --iteration-fmas 256 --json "$out/info-256.json" | tail -2; echo "rc=$?"
  log info 4096 FMAs; $bin info --iterations 16384 --iteration-fmas 4096 --json "$out/info-4096.json" | tail -2; echo "rc=$?"
} > "$out/info.log" 2>&1
{
  log selftest 1-50 ms; $bin selftest --latency-ms 1:50 -n 100 --output st1; echo "rc=$?"
  log selftest 50-500 ms; $bin selftest --latency-ms 50:500 -n 10 --output st2; echo "rc=$?"
} > "$out/selftest.log" 2>&1
{
  log real measurement, must be refused by the guard
  nvidia-smi --query-gpu=clocks.sm,clocks.applications.graphics --format=csv
  $bin --backend cuda --freq 1980,990 --output guarded --min-measurements 5 --max-measurements 5; echo "rc=$?"
  ls guarded 2>&1 | head; ls /var/tmp/latest 2>&1
  nvidia-smi --query-gpu=clocks.sm,clocks.applications.graphics --format=csv
  log reset, must be refused too; $bin reset; echo "rc=$?"
} > "$out/guarded.log" 2>&1
tar czf "$out/results.tgz" st1 st2 2>/dev/null
tail -n 4 "$out/info.log"; tail -n 12 "$out/selftest.log"; cat "$out/guarded.log"
