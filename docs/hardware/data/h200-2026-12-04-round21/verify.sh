#!/usr/bin/env bash
# Round 21, call 3 (docs/hardware/h200.md): call 1's four selftests on the
# tail hinge that starts 1/64 iteration after the arrival, with dump.diff
# (on the device only), the dumps kept under build-h200/ and only the
# windows dated more than 2 us late or 0.7 us early (late.py) brought back;
# then a real switch, which must end at the guard.
set -u
final=$OUT; export OUT=/tmp/r21c; rm -rf "$OUT"; mkdir -p "$OUT"
git apply docs/hardware/data/h200-2026-12-04-round20/dump.diff || exit 1
runs=(c1024 p1024 c4096 p1024s31)
args=("240 --latency-ms 0.2:50 -n 120 --iteration-fmas 1024 --schedule chained --seed 30"
      "240 --latency-ms 0.2:50 -n 120 --iteration-fmas 1024 --schedule paper --seed 30"
      "200 --latency-ms 0.2:50 -n 80 --iteration-fmas 4096 --schedule chained --seed 30"
      "240 --latency-ms 0.2:50 -n 120 --iteration-fmas 1024 --schedule paper --seed 31")
d=build-h200/dumps; rm -rf "$d" "${runs[@]}" realtry
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.applications.graphics,uuid --format=csv > "$final/smi.txt" 2>&1
for i in "${!runs[@]}"; do
  mkdir -p "$d/${runs[$i]}"
  LATEST_DUMP_DIR=$PWD/$d/${runs[$i]} bash scripts/h200-quick.sh "${runs[$i]} ${args[$i]}" > "$OUT/quick$i.txt" 2>&1
  cp "$OUT/telemetry.csv" "$OUT/telemetry$i.csv" 2>/dev/null
done
{ echo "== real switch through the guard"; timeout 60 build-h200/latest --backend cuda --freq 1980,990 --max-measurements 5 --output realtry; echo "rc=$?"; ls realtry 2>&1; } > "$OUT/realtry.txt" 2>&1
python3 scripts/h200-summary.py selftest "${runs[@]}" > "$final/summary.txt" 2>&1
cat "$OUT"/quick?.txt > "$final/log.txt"; cp "$OUT/realtry.txt" "$final/"
cat "$OUT"/telemetry?.csv > "$final/telemetry.csv" 2>/dev/null
tar -czf "$final/results.tgz" "${runs[@]}" 2>/dev/null
python3 docs/hardware/data/h200-2026-12-04-round21/late.py "$d"/* > "$OUT/late.txt" 2> "$final/late.txt"
tar -cJf "$final/late.tar.xz" -T "$OUT/late.txt"
ls -la "$final"; cat "$final/summary.txt" "$final/late.txt"; tail -6 "$OUT/realtry.txt"
