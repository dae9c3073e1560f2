#!/usr/bin/env bash
set -uo pipefail
rm -rf /tmp/v-dbg && mkdir -p /tmp/v-dbg && tar --exclude=./build-h200 --exclude=./.device --exclude=./build -cf - . | tar -xf - -C /tmp/v-dbg
cp .device/variants/dbg.cpp /tmp/v-dbg/src/core/pooled_detection.cpp
[ -d /tmp/v-old/b ] && cp -r /tmp/v-old/b /tmp/v-dbg/b 2>/dev/null  # reuse a configured tree's objects where it helps
(cd /tmp/v-dbg && rm -rf b && cmake -S . -B b -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DLATEST_BUILD_BENCHMARKS=OFF -DLATEST_BUILD_TESTS=OFF >/dev/null && cmake --build b -j16 --target latest 2>&1 | tail -1)
nvidia-smi --query-gpu=timestamp,power.draw,temperature.gpu,clocks.sm,utilization.gpu --format=csv,nounits -lms 500 > $OUT/telemetry.csv 2>&1 &
s=$!
for k in 1 2 3; do
  echo "== dbg 4096 run $k $(date -u +%T)"
  timeout 100 /tmp/v-dbg/b/latest selftest --output /tmp/dbg-$k --detector pooled --latency-ms 0.2:50 -n 40 --iteration-fmas 4096 2> $OUT/dbg-$k.err | grep -E "error - in effect, us|criterion" | sed 's/ (median |error.*)://'
  cp /tmp/dbg-$k/selftest.json $OUT/dbg-$k-selftest.json
done
echo "== old 4096 $(date -u +%T)"; timeout 100 /tmp/v-old/b/latest selftest --output /tmp/dbg-old --detector pooled --latency-ms 0.2:50 -n 40 --iteration-fmas 4096 2>&1 | grep -E "error - in effect, us|criterion" | sed 's/ (median |error.*)://'
kill $s
for k in 1 2 3; do gzip -f $OUT/dbg-$k.err; done
