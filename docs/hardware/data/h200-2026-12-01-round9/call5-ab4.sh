#!/usr/bin/env bash
# The same three binaries as ab3.sh (already built on this warm machine), in reversed and repeated order.
set -uo pipefail
mkdir -p /tmp/ab2
[ -x /tmp/v-old/b/latest ] && [ -x /tmp/v-rel01/b/latest ] || { echo "variants missing (fresh machine)"; exit 1; }
nvidia-smi --query-gpu=timestamp,power.draw,temperature.gpu,clocks.sm,utilization.gpu --format=csv,nounits -lms 500 > $OUT/telemetry.csv 2>&1 &
s=$!
run() {  # label binary fmas
  echo "== $1 $3 $(date -u +%T)"
  timeout 100 $2 selftest --output /tmp/ab2/$1-$3-$(date +%s) --detector pooled --latency-ms 0.2:50 -n 40 --iteration-fmas $3 2>&1 | grep -E "error - in effect, us|criterion" | sed 's/ (median |error.*)://'
}
run old /tmp/v-old/b/latest 4096; run rel01 /tmp/v-rel01/b/latest 4096; run new build-h200/latest 4096
run new build-h200/latest 4096; run old /tmp/v-old/b/latest 4096; run rel01 /tmp/v-rel01/b/latest 4096
kill $s
tar -czf $OUT/ab2.tar.gz -C /tmp ab2
