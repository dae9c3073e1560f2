#!/usr/bin/env bash
# Round 54's calls 2 and 3 (docs/hardware/h200.md), as run on the machine
# call 1 (STALLS=1.5 bash docs/hardware/data/2026-12-07-round53/engine_stall.sh)
# had left warm: its two builds (build-old, build-new) reused, a 3 s stall of
# the engine's thread, then the two runs' manifests copied. Behind the guard,
# from the repository root, OUT set.
set -u
ls -d build-old/latest build-new/latest || exit 1
here=docs/hardware/data/2026-12-07-round53
cc -shared -fPIC -O2 -o /tmp/engine_stall.so $here/engine_stall.c -ldl || exit 1
export LATEST_GUARD_LOG=$OUT/guard-refusals.log
# Call 2.
for t in old new; do
  name=$t-c1024-engine3
  echo "== $(date -u +%T) $name"
  STALL_AT_S=6 STALL_S=3 LD_PRELOAD=/tmp/engine_stall.so timeout 60 build-$t/latest selftest --output /tmp/$name \
    --latency-ms 0.2:50 -n 40 --iteration-fmas 1024 --schedule chained --seed 40 > $OUT/$name.txt 2>&1
  echo "rc=$?"
  grep -vE "^\[" $OUT/$name.txt | grep -E "engine_stall|overwritten|rror|criterion|selftest:" | cut -c1-700
done
# Call 3 (which also printed each manifest's GPU seconds, capture retries and failures).
cp /tmp/old-c1024-engine3/manifest.json $OUT/old-manifest.json
cp /tmp/new-c1024-engine3/manifest.json $OUT/new-manifest.json
