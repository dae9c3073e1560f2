#!/usr/bin/env bash
# Round 53 (docs/hardware/h200.md): what makes a stream's ring overrun?
# Round 28's and 52's overruns came with a dump writing from the engine's
# thread. While the engine does not drain, the helper thread holds the
# records; grown as one vector an SM, each doubling copied them all
# (docs/benchmarks.md, "Records held for the engine"). Two binaries: the
# tree's (records held in chunks, PendingRecords) and the same with
# pending.diff reversed (one vector an SM, as before). Chained selftests
# (emulated switching, seed 40) whose engine thread is starved for STARVE
# seconds at AT seconds in (a SCHED_FIFO busy loop on its CPU; the helper
# thread runs on the others), and one stopped whole (SIGSTOP) for 0.5 s,
# whose error must say how long the ring went unread. Then
# pending_growth.cpp here. Behind the guard, from the repository root, OUT set.
set -u
source scripts/h200-env.sh
{ id -u; nproc; lscpu | grep -E "Model name|Hypervisor"; } > "$out/host.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.applications.graphics,uuid --format=csv > "$out/smi.txt" 2>&1
# (As run, these lines stood here; they are build-both.sh now.)
source docs/hardware/data/2026-12-07-round53/build-both.sh
run() {  # binary fmas stop|starve seconds
  local t=$1 fmas=$2 how=$3 s=$4 name=$1-c$2-$3$4
  step "$name" >> "$log"
  build-$t/latest selftest --output "/tmp/$name" --latency-ms 0.2:50 -n 40 --iteration-fmas "$fmas" --schedule chained \
    --seed 40 > "$out/$name.txt" 2>&1 &
  local pid=$!
  ( sleep 90; kill -CONT "$pid"; kill "$pid" ) 2>/dev/null &
  local watchdog=$!
  sleep "${AT:-6}"
  local cpu; cpu=$(taskset -cp "$pid" 2>/dev/null | awk -F': ' '{print $2}')
  if [ "$how" = stop ]; then
    kill -STOP "$pid" && sleep "$s" && kill -CONT "$pid"
  else
    taskset -c "$cpu" chrt -f 99 timeout "$s" sh -c 'while :; do :; done' >> "$log" 2>&1
  fi
  wait "$pid"
  echo "rc=$? ($how $s s at ${AT:-6} s; engine's CPUs: $cpu)" >> "$log"
  kill "$watchdog" 2>/dev/null
  grep -vE "^\[" "$out/$name.txt" | grep -E "overwritten|rror|criterion|selftest:" | cut -c1-700 >> "$log"
}
for t in old new; do
  run $t 1024 starve 0.3
  run $t 1024 starve 0.8
  run $t 4096 starve 1.5
  run $t 1024 stop 0.5
done
g++ -std=c++20 -O2 -Isrc docs/benchmarks/stream-pending/pending_growth.cpp build-new/liblatest_cuda.a \
  build-new/liblatest_core.a -L/usr/local/cuda/lib64 -lcudart -lfmt -lpthread -o /tmp/pending_growth >> "$log" 2>&1 &&
  /tmp/pending_growth >> "$log" 2>&1
cat "$log"
