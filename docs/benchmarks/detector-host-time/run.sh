#!/usr/bin/env bash
# Host time of the pooled and paper detectors per default window, alternated
# in one process (detector_host_time.cpp). Run from the repository root:
#   bash docs/benchmarks/detector-host-time/run.sh [BASE]
# BASE (default HEAD~): the commit whose pooled detector is timed beside the
# tree's, built as it was: against its own headers (until 089dcaf the
# tree's, so that a change to src/core/pooled/ was timed on both sides),
# with -fno-math-errno only where that commit's build had it. BUILD (default build): a build tree of the product; made
# here (Release, no tests) when it does not exist. SOURCES (optional): a
# folder holding base.cpp (BASE's src/core/pooled_detection.cpp) and then/
# (9088a1a^'s src), for a checkout without that history (the lent machine's
# copy of the tree; base.cpp then built against SOURCES/src, BASE's src,
# where it is there, else against the tree's headers). WINDOWS (optional): folders of windows recorded on real
# H200s (tests/core/data/README.md; the tar files of
# docs/hardware/data/h200-2026-12-01-round12 and -round13 and of
# tests/core/data, unpacked): then recorded_windows.cpp also times the same
# four detectors (detector_timing.hpp) on each of them. ENGINE=1 (optional):
# engine_windows.cpp times them on every window of the side-by-side
# benchmark's simulated run (BM_DetectorsOnTheSameRecords) as the engine
# reads it. Both count the windows where BASE's pooled detector answers
# otherwise (bitwise). Prints three runs; touches no GPU.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
base=${1:-HEAD~}
build=${BUILD:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DLATEST_BUILD_BENCHMARKS=OFF -DLATEST_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build" -j"$(nproc)" --target latest_core latest_sim >/dev/null
flags=(-std=c++20 -O3 -DNDEBUG)
base_flags=()
if [[ -n "${SOURCES:-}" ]]; then
  base_flags=(-fno-math-errno)
  sed 's/^Measurement detect_switch_pooled(/Measurement detect_switch_pooled_base(/' "$SOURCES/base.cpp" >"$tmp/base.cpp"
  if [[ -d "$SOURCES/src" ]]; then base_include=$SOURCES/src; fi
else
  git show "$base:src/core/sources.cmake" | grep -q fno-math-errno && base_flags=(-fno-math-errno)
  git show "$base:src/core/pooled_detection.cpp" |
    sed 's/^Measurement detect_switch_pooled(/Measurement detect_switch_pooled_base(/' >"$tmp/base.cpp"
  # With BASE's own headers: the detector's parts in src/core/pooled/ are
  # compiled into it (internal linkage), and the tree's would time them twice.
  mkdir "$tmp/base-src" && git archive "$base" src | tar -x -C "$tmp/base-src"
  base_include=$tmp/base-src/src
fi
g++ "${flags[@]}" "${base_flags[@]}" -I"${base_include:-src}" -c "$tmp/base.cpp" -o "$tmp/base.o"
# The paper's detector of the issue's day, in its own namespace.
if [[ -n "${SOURCES:-}" ]]; then
  cp -r "$SOURCES/then" "$tmp/then"
else
  mkdir "$tmp/then" && git archive 9088a1a^ src | tar -x -C "$tmp/then"
fi
for f in "$here/paper_then.cpp" "$tmp/then/src/core/detection.cpp" "$tmp/then/src/core/statistics.cpp"; do
  g++ "${flags[@]}" -Dlatest=latest_then -I"$tmp/then/src" -c "$f" -o "$tmp/then_$(basename "$f" .cpp).o"
done
g++ "${flags[@]}" -Isrc -Ibench "$here/detector_host_time.cpp" "$tmp/base.o" "$tmp"/then_*.o \
  "$build/liblatest_sim.a" "$build/liblatest_core.a" -lfmt -lpthread -o "$tmp/detector_host_time"
date -u
lscpu | grep -E "Model name|^CPU\(s\)|L3" || true
if [[ -z "${SOURCES:-}" ]]; then
  git log -1 --format='HEAD %h %s' | cut -c1-100
  git diff --quiet HEAD -- src || echo "(the tree's src differs from HEAD)"
  git log -1 --format='base %h %s' "$base" | cut -c1-100
else
  echo "base and then from $SOURCES"
fi
for i in 1 2 3; do "$tmp/detector_host_time" 150; done
if [[ -n "${WINDOWS:-}" ]]; then
  g++ "${flags[@]}" -Isrc -Itests "$here/recorded_windows.cpp" "$tmp/base.o" "$tmp"/then_*.o \
    "$build/liblatest_core.a" -lfmt -lpthread -o "$tmp/recorded_windows"
  # shellcheck disable=SC2086 # several folders
  "$tmp/recorded_windows" 20 $WINDOWS
fi
if [[ -n "${ENGINE:-}" ]]; then
  g++ "${flags[@]}" -Isrc "$here/engine_windows.cpp" "$tmp/base.o" "$tmp"/then_*.o "$build/liblatest_sim.a" \
    "$build/liblatest_core.a" -lfmt -lpthread -o "$tmp/engine_windows"
  "$tmp/engine_windows" 7
fi
