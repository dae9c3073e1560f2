#!/usr/bin/env bash
# A/B/C on one machine: the new detector, the new with relevance 0.1, and 5e619cf's.
set -uo pipefail
mkdir -p /tmp/ab
src=$PWD
mk() {  # name: a copy of the tree with its own build
  rm -rf /tmp/v-$1 && mkdir -p /tmp/v-$1 && tar --exclude=./build-h200 --exclude=./.device --exclude=./build -cf - . | tar -xf - -C /tmp/v-$1
}
mk rel01; sed -i 's/double relevant_rate_share = 0.04;/double relevant_rate_share = 0.1;/' /tmp/v-rel01/src/core/pooled_detection.hpp
mk old; git show 5e619cf:src/core/pooled_detection.cpp > /tmp/v-old/src/core/pooled_detection.cpp; git show 5e619cf:src/core/pooled_detection.hpp > /tmp/v-old/src/core/pooled_detection.hpp
grep -c relevant_rate_share /tmp/v-*/src/core/pooled_detection.hpp; grep -h "relevant_rate_share =" /tmp/v-*/src/core/pooled_detection.hpp
for v in rel01 old; do (cd /tmp/v-$v && cmake -S . -B b -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DLATEST_BUILD_BENCHMARKS=OFF -DLATEST_BUILD_TESTS=OFF >/dev/null && cmake --build b -j16 --target latest 2>&1 | tail -1) & done; wait
run() {  # label binary fmas
  echo "== $1 $3 $(date -u +%T)"
  timeout 100 $2 selftest --output /tmp/ab/ab-$1-$3 --detector pooled --latency-ms 0.2:50 -n 40 --iteration-fmas $3 2>&1 | grep -E "error - in effect, us|criterion"
  python3 -c "
import json; d=json.load(open('/tmp/ab/ab-$1-$3/manifest.json'))
for p in d['pairs']: print(' ',p['init_mhz'],'->',p['target_mhz'],p['status'],'n',p.get('measurements'),'windows',p.get('windows'),'failed',p.get('failed'))" 2>/dev/null
}
for f in 4096 1024; do
  run new build-h200/latest $f; run rel01 /tmp/v-rel01/b/latest $f; run old /tmp/v-old/b/latest $f
done
tar -czf $OUT/ab.tar.gz -C /tmp ab
