#!/usr/bin/env bash
# One guarded call for real clock changes (the caller runs the guard
# first): build, a watch at an iteration short enough (512 FMAs) for the
# card's holds of 25 us to 2 ms to reach the judge's 100 iterations, 6 s of
# load, the driver's settings before and after, and a real measurement the
# guard must refuse (exit 4).
# Each file of a watch lands in $OUT/NAME/ compressed on its own (the
# device returns files of at most 16 MiB).
source "$(dirname "$0")/env.sh"
settings() { nvidia-smi --query-gpu=clocks.sm,clocks.applications.graphics,clocks.applications.memory,power.limit,enforced.power.limit --format=csv,noheader; }
watch() {  # NAME ARGS...
  local name=$1; shift
  step "watch $name: $*"; settings; timeout 200 $bin watch --seconds 6 --tail-seconds 2 --output "$name" "$@"; echo "rc=$?"; settings
  mkdir -p "$out/$name"; for f in "$name"/*; do xz -T8 -c "$f" > "$out/$name/$(basename "$f").xz"; done
}
{
  date -u; git log -1 --format='commit %H' 2>/dev/null
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,power.draw --format=csv
  step build
  cmake -S . -B build-h200 -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DLATEST_BUILD_TESTS=OFF -DLATEST_BUILD_BENCHMARKS=OFF >/dev/null \
    && cmake --build build-h200 -j16 --target latest 2>&1 | tail -2
} > "$log" 2>&1
[ -x "$bin" ] || { tail -n 40 "$log"; exit 1; }
{
  watch watch-512 --iteration-fmas 512
  step real measurement, must be refused by the guard
  timeout 120 $bin --backend cuda --freq 1980,990 --output guarded --max-measurements 5; echo "rc=$?"
  step done
} >> "$log" 2>&1
grep -v "^\[" "$log" | tail -n 120
