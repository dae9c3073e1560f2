#!/usr/bin/env bash
# Where the pooled detector's host time goes on the lent machine's host.
set -u
build=build-hb
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DLATEST_BUILD_BENCHMARKS=OFF -DLATEST_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build" -j16 --target latest_core latest_sim >/dev/null 2>&1 || echo build failed
g++ -std=c++20 -O3 -DNDEBUG -g -Isrc -Ibench .device/hb2/prof.cpp "$build/liblatest_sim.a" "$build/liblatest_core.a" -lfmt -lpthread -o .device/hb2/prof
g++ -O3 -std=c++20 .device/hb2/bp.cpp -o .device/hb2/bp
for i in 1 2 3; do .device/hb2/prof 800; done
for i in 1 2; do .device/hb2/bp; done
for i in 1 2; do GLIBC_TUNABLES=glibc.malloc.trim_threshold=200000000:glibc.malloc.mmap_threshold=200000000 .device/hb2/prof 800; done
if command -v perf >/dev/null; then
  perf record -F 4000 -o "$OUT/perf.data" .device/hb2/prof 2500 >/dev/null 2>&1
  perf report -i "$OUT/perf.data" --no-children --percent-limit 0.7 --stdio 2>/dev/null | grep -v "^#" | grep -v "^$" | cut -c1-140
else
  echo "no perf"
fi
