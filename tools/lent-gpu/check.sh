#!/usr/bin/env bash
# What we run on the lent H200, always behind ../shared/device/nvml-guard
# (the caller builds the guard and runs guard-check first). Only read-only
# paths: info, calibration at the card's own clock, emulated switching, the
# GPU-labelled tests, and real measurements that must end in the guard's
# permission error (exit 4). One log and the JSON results go to $OUT as each
# step ends ($OUT brings back at most 8 files);
# docs/hardware.md records what came back.
source "$(dirname "$0")/env.sh"
# Each selftest's results (selftest.json and the CSVs, which hold both
# detectors' latencies) go into one archive.
keep() { tar -C "$1/.." -rf "$out/selftests.tar" "$(basename "$1")" 2>/dev/null; }
{
  date -u; git log -1 --format='commit %H'
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.applications.graphics,clocks_event_reasons.active --format=csv
  step build
  cmake -S . -B build-h200 -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DLATEST_BUILD_BENCHMARKS=OFF >/dev/null \
    && cmake --build build-h200 -j16 --target latest gpu_tests 2>&1 | tail -3
  step built
} > "$log" 2>&1
[ -x "$bin" ] || { tail -n 40 "$log"; exit 1; }
{
  step info 1024 FMAs; $bin info --iterations 32768 --iteration-fmas 1024 --json "$out/info-1024.json"; echo "rc=$?"
} >> "$log" 2>&1
{
  # The accuracy target: mid-iteration switches, L in 0.2-50 ms, 1024 FMAs.
  step selftest pooled 0.2-50 ms 1024 FMAs; $bin selftest --latency-ms 0.2:50 -n 160 --iteration-fmas 1024 --output st-1024; echo "rc=$?"
  keep st-1024
  step selftest pooled 0.2-50 ms 256 FMAs; $bin selftest --latency-ms 0.2:50 -n 60 --iteration-fmas 256 --output st-256; echo "rc=$?"
  keep st-256
  step selftest pooled 0.2-50 ms 4096 FMAs; $bin selftest --latency-ms 0.2:50 -n 40 --iteration-fmas 4096 --output st-4096; echo "rc=$?"
  keep st-4096
  step selftest paper detector 0.2-50 ms 1024 FMAs; $bin selftest --detector paper --latency-ms 0.2:50 -n 40 --iteration-fmas 1024 --output st-paper; echo "rc=$?"
  keep st-paper
} >> "$log" 2>&1
{
  # What the load changes (SPEC §3.0 asks for full load): warps per SM.
  for w in 1 8 32; do
    step selftest load: $w warps per SM; $bin selftest --warps $w --latency-ms 1:20 -n 25 --iteration-fmas 1024 --output st-warps-$w; echo "rc=$?"
    keep st-warps-$w
    nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv,noheader
  done
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
  step done
} >> "$log" 2>&1
gzip -f "$out/selftests.tar"
grep -v "^\[" "$log" | tail -n 150
