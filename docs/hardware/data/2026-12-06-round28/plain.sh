#!/usr/bin/env bash
# Selftests of the tree as committed (no dump), one binary, behind the guard,
# from the repository root with OUT set (round 29 of docs/hardware/h200.md).
# RUNS: "name fmas schedule seed n" entries, ';'-separated.
set -u
RUNS=${RUNS:-"p1024s43 1024 paper 43 60; p1024s44 1024 paper 44 60; p1024s45 1024 paper 45 60; c1024s41 1024 chained 41 80; c4096s42 4096 chained 42 80"}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.applications.graphics,uuid --format=csv > "$OUT/smi.txt" 2>&1
(cmake -S . -B build-h200 -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DLATEST_BUILD_BENCHMARKS=OFF \
   -DLATEST_BUILD_TESTS=OFF >/dev/null && cmake --build build-h200 -j16 --target latest 2>&1 | tail -1) > "$OUT/build.txt" 2>&1
names=()
IFS=';' read -ra entries <<< "$RUNS"
for e in "${entries[@]}"; do
  read -r name fmas schedule seed n <<< "$e"
  names+=("$name")
  echo "== $(date -u +%T) $e" >> "$OUT/log.txt"
  timeout 100 build-h200/latest selftest --output "$name" --latency-ms 0.2:50 -n "$n" --iteration-fmas "$fmas" \
    --schedule "$schedule" --seed "$seed" 2>&1 | grep -v "^\[" | tail -14 >> "$OUT/log.txt"
done
python3 scripts/h200-summary.py selftest "${names[@]}" > "$OUT/summary.txt" 2>&1
tar -czf "$OUT/results.tgz" "${names[@]}" 2>/dev/null
cat "$OUT/summary.txt"
