#!/usr/bin/env bash
# Written for round 53's second call, run in round 54 with STALLS=1.5
# (docs/hardware/h200.md): the engine's thread alone
# stalled (engine_stall.c, preloaded: the main thread's first sleep after
# 6 s lasts STALL seconds more) while the helper keeps reading the ring.
# Chained selftests at 1024 FMAs (emulated switching, seed 40) with the
# tree's binary (records held in chunks) and the one with pending.diff
# reversed (one vector an SM), as stall.sh builds them. Behind the guard,
# from the repository root, OUT set.
set -u
source scripts/h200-env.sh
here=docs/hardware/data/2026-12-07-round53
{ lscpu | grep -E "Model name|Hypervisor"; } > "$out/host.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.applications.graphics,uuid --format=csv > "$out/smi.txt" 2>&1
cc -shared -fPIC -O2 -o /tmp/engine_stall.so "$here/engine_stall.c" -ldl > "$log" 2>&1 || { cat "$log"; exit 1; }
source "$here/build-both.sh"
for stall in ${STALLS:-0.4 0.8 1.5}; do
  for t in old new; do
    name=$t-c1024-engine$stall
    step "$name" >> "$log"
    STALL_AT_S=6 STALL_S=$stall LD_PRELOAD=/tmp/engine_stall.so timeout 90 build-$t/latest selftest --output "/tmp/$name" \
      --latency-ms 0.2:50 -n 40 --iteration-fmas 1024 --schedule chained --seed 40 > "$out/$name.txt" 2>&1
    echo "rc=$?" >> "$log"
    grep -vE "^\[" "$out/$name.txt" | grep -E "engine_stall|overwritten|rror|criterion|selftest:" | cut -c1-700 >> "$log"
  done
done
cat "$log"
