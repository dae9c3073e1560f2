#!/usr/bin/env bash
# The figures of docs/benchmarks.md, from a Release build in BUILD_DIR
# (default build/): accuracy against the simulator's truth, the detectors
# side by side, the two schedules' GPU time, and the report at scale. Writes
# OUT (default docs/benchmarks/figures.txt), which is checked in; rerun it
# and commit its output with any change that moves a figure.
#   bench/figures.sh [BUILD_DIR] [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-docs/benchmarks/figures.txt}
mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
  echo "# bench/figures.sh output"
  echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src bench || echo ' (with uncommitted changes)')"
  echo "host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo
  echo "## Engine, detectors and the detector's host time (build/latest_bench)"
  "$build/latest_bench" --benchmark_filter='BM_EngineAccuracyAndCost|BM_DetectorsOnTheSameRecords|BM_DetectSwitch' \
    --benchmark_counters_tabular=true 2>/dev/null
  echo
  echo "## Schedules: the 20 clocks of the h200 profile, 380 pairs, seed 77"
  LATEST_BENCH_OUT=$tmp "$build/latest_bench" --benchmark_filter='BM_Schedules' --benchmark_counters_tabular=true \
    2>/dev/null
  echo
  echo "## Outlier filter and analysis (build/latest_bench)"
  "$build/latest_bench" --benchmark_filter='BM_AdaptiveDbscan500|BM_AnalyzeFullMatrix' \
    --benchmark_counters_tabular=true 2>/dev/null
  echo
  echo "## Several simulated GPUs at once (bench/sim_gpus.sh)"
  bash bench/sim_gpus.sh "$build" "$tmp/gpus"
  echo
  echo "## The merged report at scale (build/latest_report_scale)"
  "$build/latest_report_scale" "$tmp/scale"
} > "$out"
echo "wrote $out"
