#!/usr/bin/env bash
# Times the README's two quick-start commands, each on a fresh clone of this
# repository (HEAD), and writes OUT (default docs/benchmarks/commands.txt).
# On a machine where the Debian packages are installed already, the setup
# step only checks them; the times then cover clone, charting library,
# build and run.
#   bench/commands.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-docs/benchmarks/commands.txt}")
repo=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git clone -q "$repo" "$work/one"
git clone -q "$repo" "$work/two"
cd "$work/one"
t0=$(date +%s)
./scripts/build.sh > "$work/command1.log" 2>&1 && ./build/latest --freq 1980,1500,990 --output results \
  >> "$work/command1.log" 2>&1
t1=$(date +%s)
cd "$work/two"
rc=0
./scripts/test.sh > "$work/command2.log" 2>&1 || rc=$?
t2=$(date +%s)
{
  echo "# bench/commands.sh output"
  echo "commit: $(git rev-parse --short HEAD)"
  echo "host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "command 1 (scripts/build.sh && build/latest --freq 1980,1500,990 --output results): $((t1 - t0)) s"
  echo "command 2 (scripts/test.sh): $((t2 - t1)) s, exit $rc"
  grep -E "tests passed|Total Test time" "$work/command2.log"
  echo "slowest tests (ctest's own timings):"
  grep -E "Test +#" "$work/command2.log" | sed -E 's/.*Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec/\2 \1/' | sort -rn | head -10
} > "$out"
cat "$out"
