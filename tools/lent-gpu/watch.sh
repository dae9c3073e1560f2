#!/usr/bin/env bash
# One guarded call for `latest watch` on a lent card (the caller runs the
# guard first): build, `info`, a watch under the GEMM load, the driver's
# clock and power settings read before and after, a real measurement the
# guard must refuse (exit 4), and a selftest with --freq and no
# --iteration-fmas (the verdict must be evaluated). Everything lands in $OUT; the watch's directory as
# watch.tar.xz.
source "$(dirname "$0")/env.sh"
seconds=${WATCH_SECONDS:-20}
settings() { nvidia-smi --query-gpu=clocks.sm,clocks.applications.graphics,clocks.applications.memory,power.limit,enforced.power.limit --format=csv,noheader; }
{
  date -u; git log -1 --format='commit %H' 2>/dev/null
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,power.draw --format=csv
  step build
  cmake -S . -B build-h200 -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DLATEST_BUILD_TESTS=OFF \
    -DLATEST_BUILD_BENCHMARKS=OFF >/dev/null && cmake --build build-h200 -j16 --target latest 2>&1 | tail -2
} > "$log" 2>&1
[ -x "$bin" ] || { tail -n 40 "$log"; exit 1; }
{
  step info; timeout 120 $bin info --json "$out/info.json" | head -30; echo "rc=$?"
  step settings before; settings
  step watch ${seconds}s; timeout 300 $bin watch --seconds "$seconds" --output watch; echo "rc=$?"
  step settings after; settings
  tar -cJf "$out/watch.tar.xz" watch 2>/dev/null
  step real measurement, must be refused by the guard
  timeout 120 $bin --backend cuda --freq 1980,990 --output guarded --max-measurements 5; echo "rc=$?"
  step selftest --freq 1980,990, no --iteration-fmas; timeout 120 $bin selftest --freq 1980,990 -n 40 --output st-freq; echo "rc=$?"
  tar -czf "$out/selftests.tgz" st-freq 2>/dev/null
  step done
} >> "$log" 2>&1
grep -v "^\[" "$log" | tail -n 150
