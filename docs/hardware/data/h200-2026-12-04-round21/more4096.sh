#!/usr/bin/env bash
# Round 21, call 4 (docs/hardware/h200.md): call 3's chained run at 4096 FMAs
# with two more seeds on the same machine, dumps as in verify.sh.
set -u
final=$OUT; export OUT=/tmp/r21d; rm -rf "$OUT"; mkdir -p "$OUT"
git apply docs/hardware/data/h200-2026-12-04-round20/dump.diff || exit 1
runs=(c4096s31 c4096s32)
d=build-h200/dumps4; rm -rf "$d" "${runs[@]}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.applications.graphics,uuid --format=csv > "$final/smi.txt" 2>&1
for i in 0 1; do
  mkdir -p "$d/${runs[$i]}"
  LATEST_DUMP_DIR=$PWD/$d/${runs[$i]} bash scripts/h200-quick.sh \
    "${runs[$i]} 200 --latency-ms 0.2:50 -n 80 --iteration-fmas 4096 --schedule chained --seed $((31 + i))" > "$OUT/quick$i.txt" 2>&1
done
python3 scripts/h200-summary.py selftest "${runs[@]}" > "$final/summary.txt" 2>&1
cat "$OUT"/quick?.txt > "$final/log.txt"
tar -czf "$final/results.tgz" "${runs[@]}" 2>/dev/null
python3 docs/hardware/data/h200-2026-12-04-round21/late.py "$d"/* > "$OUT/late.txt" 2> "$final/late.txt"
tar -cJf "$final/late.tar.xz" -T "$OUT/late.txt"
ls -la "$final"; cat "$final/summary.txt" "$final/late.txt"
