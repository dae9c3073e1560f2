#!/usr/bin/env bash
# Round 52's second call: does c1024 seed 101's ring overrun come back? Three more runs of it.
set -u
real=$OUT; export OUT=/tmp/r101-out; rm -rf "$OUT"; mkdir -p "$OUT"
C1024_SEEDS="101 101 101" C4096_SEEDS=" " P1024_SEEDS=" " STOP_S=${STOP_S:-150} \
  bash docs/hardware/data/2026-12-06-round27/round27.sh > "$OUT/round27-stdout.txt" 2>&1
grep -n -A6 "c1024s101" "$OUT/log.txt" | head -40
tail -12 "$OUT/summary.txt"
tar -czf "$real/rerun101.tgz" -C "$OUT" --exclude=windows.tar.xz .
