#!/usr/bin/env bash
# As run in round 52 (docs/hardware/h200.md): the empty C4096_SEEDS and
# P1024_SEEDS fell back to round27.sh's defaults (c4096 41 42, p1024 43).
# Do round 51's half-card halts recur? Chained selftests at 1024 FMAs
# (seed 93 again, then 99-101) through round27.sh, then halts.cpp over every
# dumped window. Everything packed into one tar under $OUT.
set -u
real=$OUT; export OUT=/tmp/halts-out; rm -rf "$OUT"; mkdir -p "$OUT"
C1024_SEEDS="93 99 100 101" C4096_SEEDS="" P1024_SEEDS="" STOP_S=${STOP_S:-300} \
  bash docs/hardware/data/2026-12-06-round27/round27.sh > "$OUT/round27-stdout.txt" 2>&1
g++ -std=c++20 -O2 -Isrc -Itests/core docs/hardware/data/2026-12-06-round51/halts.cpp \
  build-h200/liblatest_core.a -lfmt -lpthread -o /tmp/halts > "$OUT/halts-build.txt" 2>&1
(cd build-h200/dumps && /tmp/halts */*.bin) > "$OUT/halts.txt" 2>&1
grep -c "" "$OUT/halts.txt" >> "$OUT/halts-build.txt"
grep -v " 0 SMs with a long iteration near the switch, 0 anywhere" "$OUT/halts.txt" | cut -c1-300 | head -40
tail -30 "$OUT/round27-stdout.txt"
tar -czf "$real/halts-call.tgz" -C "$OUT" .
