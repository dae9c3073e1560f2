#!/usr/bin/env bash
# Several simulated GPUs at once: the wall time of one fixed run on N cards
# (--sim-gpus N --device all) and the host CPU it takes per card, for N = 1,
# 2, 4, 8 (docs/benchmarks.md). Goal: N cards take no longer than one, up
# to the host's cores.
#   bench/sim_gpus.sh BUILD_DIR [OUT_DIR]
set -euo pipefail
bin=$(cd "$1" && pwd)/latest
out=${2:-$(mktemp -d)}
mkdir -p "$out"
echo "host: $(nproc) cores; run: --freq 1980,1500,990 --max-measurements 25, seed 1"
printf "%6s %10s %14s %16s\n" GPUs "wall s" "CPU s (total)" "CPU s per GPU"
for n in 1 2 4 8; do
  rm -rf "$out/n$n"
  /usr/bin/time -f "%e %U %S" -o "$out/time$n" "$bin" --backend sim --sim-gpus "$n" --device all \
    --freq 1980,1500,990 --max-measurements 25 --output "$out/n$n/%i" --progress none > /dev/null
  read -r wall user sys < "$out/time$n"
  awk -v n="$n" -v w="$wall" -v u="$user" -v s="$sys" 'BEGIN { printf "%6d %10.1f %14.1f %16.1f\n", n, w, u + s, (u + s) / n }'
done
