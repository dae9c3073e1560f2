#!/usr/bin/env bash
# Round 21 (docs/hardware/h200.md): round 20's four selftests (after.sh) on
# the detector that measures the wander (46a26e0), with round 20's dump.diff
# applied on the device only, so that every window dated more than 0.7 us
# early or 2 us late (up to 40 a run) and every tenth other one (up to 8)
# can be replayed here; then a real switch, which must end at the guard.
set -u
final=$OUT; export OUT=/tmp/r21; rm -rf "$OUT"; mkdir -p "$OUT"
git apply docs/hardware/data/h200-2026-12-04-round20/dump.diff || exit 1
runs=(c1024 p1024 c4096 p1024s31)
rm -rf "${runs[@]}" realtry; for r in "${runs[@]}"; do rm -rf "dumps-$r"; mkdir -p "dumps-$r"; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.applications.graphics,uuid --format=csv > "$final/smi.txt" 2>&1
args=("240 --latency-ms 0.2:50 -n 120 --iteration-fmas 1024 --schedule chained --seed 30"
      "240 --latency-ms 0.2:50 -n 120 --iteration-fmas 1024 --schedule paper --seed 30"
      "200 --latency-ms 0.2:50 -n 80 --iteration-fmas 4096 --schedule chained --seed 30"
      "240 --latency-ms 0.2:50 -n 120 --iteration-fmas 1024 --schedule paper --seed 31")
for i in "${!runs[@]}"; do
  LATEST_DUMP_DIR=$PWD/dumps-${runs[$i]} bash scripts/h200-quick.sh "${runs[$i]} ${args[$i]}" > "$OUT/quick$i.txt" 2>&1
  cp "$OUT/telemetry.csv" "$OUT/telemetry$i.csv" 2>/dev/null
done
{ echo "== real switch through the guard"; timeout 60 build-h200/latest --backend cuda --freq 1980,990 --max-measurements 5 --output realtry; echo "rc=$?"; ls realtry 2>&1; } > "$OUT/realtry.txt" 2>&1
python3 scripts/h200-summary.py selftest "${runs[@]}" > "$final/summary.txt" 2>&1
cat "$OUT"/quick?.txt > "$final/log.txt"; cp "$OUT/realtry.txt" "$final/"
cat "$OUT"/telemetry?.csv > "$final/telemetry.csv" 2>/dev/null
tar -czf "$final/results.tgz" "${runs[@]}" 2>/dev/null
tar -cJf "$final/dumps.tar.xz" dumps-* 2>/dev/null
ls -la "$final"; cat "$final/summary.txt"; tail -8 "$OUT/realtry.txt"
