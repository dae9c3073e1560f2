# Sourced by round 53's scripts after scripts/h200-env.sh: builds `latest`
# twice, the tree's in build-new and the tree with pending.diff reversed
# (records held as one vector an SM, 8b9a718) in build-old.
rm -rf /tmp/old && mkdir /tmp/old
for f in *; do case $f in build*) ;; *) cp -r "$f" /tmp/old/ ;; esac; done
(cd /tmp/old && git apply -R docs/hardware/data/2026-12-07-round53/pending.diff) >> "$log" 2>&1 || { cat "$log"; exit 1; }
for t in new old; do
  src=.; [ $t = old ] && src=/tmp/old
  { step "build $t"; cmake -S $src -B build-$t -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
      -DLATEST_BUILD_BENCHMARKS=OFF -DLATEST_BUILD_TESTS=OFF >/dev/null && cmake --build build-$t -j16 --target latest 2>&1 | tail -1; } >> "$log" 2>&1
  [ -x build-$t/latest ] || { tail -n 30 "$log"; exit 1; }
done
