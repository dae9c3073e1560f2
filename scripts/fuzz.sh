#!/usr/bin/env bash
# Builds the fuzz targets in their own tree (clang, ASan, UBSan; build-fuzz,
# or $LATEST_FUZZ_BUILD) and runs each: first over its committed corpus
# (fuzz/corpus/<target>), then for SECONDS of fuzzing from it (none for 0:
# the test suite's replay; `build`: build them and stop). New inputs go to a
# scratch copy, not the repository.
# LATEST_FUZZ_OPT sets the tree's optimisation (default -O1).
# Usage: scripts/fuzz.sh [SECONDS per target, default 60 | build] [target...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
tree=${LATEST_FUZZ_BUILD:-build-fuzz}
shift || true
if [ $# -gt 0 ]; then targets=("$@"); else targets=(table result_csv manifest watch_windows); fi
cmake -S . -B "$tree" -DLATEST_BUILD_FUZZERS=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLATEST_FUZZ_OPT="${LATEST_FUZZ_OPT:--O1}" >/dev/null
cmake --build "$tree" -j"$(nproc)" --target "${targets[@]/#/fuzz_}" >/dev/null
[ "$seconds" != build ] || exit 0
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for t in "${targets[@]}"; do
  echo "== fuzz_$t: corpus replay$([ "$seconds" -gt 0 ] && echo ", then ${seconds} s")"
  "$tree/fuzz_$t" -runs=0 "fuzz/corpus/$t" 2>&1 | tail -1
  [ "$seconds" -gt 0 ] || continue
  work=$(mktemp -d)
  cp -r "fuzz/corpus/$t/." "$work/"
  "$tree/fuzz_$t" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$tree/crash-$t-" "$work" 2>&1 | grep -E "^#[0-9]+ *DONE|Done [0-9]+ runs|ERROR|SUMMARY" || true
  rm -rf "$work"
done
