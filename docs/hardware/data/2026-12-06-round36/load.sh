#!/usr/bin/env bash
# Round 36 (docs/hardware/h200.md): what the load does, with the current
# kernel and detector (issue 9, item 7; round 11's call 10 measured it with
# f097823's). Chained selftests at 1024 FMAs, 1980 <-> 990 MHz, 40
# measurements a direction, seed 5, at 1, 8 and 31 warps per SM
# (scripts/h200-quick.sh, with its read-only telemetry), then `latest info`
# at each load, a real switch that must end at the guard, and the
# selftests' summary. Run behind the guard from the repository root with
# OUT set.
set -u
runs=()
for w in 1 8 31; do
  runs+=("w$w 150 --latency-ms 0.2:50 -n 40 --iteration-fmas 1024 --schedule chained --seed 5 --warps $w")
done
bash scripts/h200-quick.sh "${runs[@]}"
for w in 1 8 31; do
  timeout 60 build-h200/latest info --iteration-fmas 1024 --warps $w --json "$OUT/info-w$w.json" > "$OUT/info-w$w.txt" 2>&1
done
{ timeout 60 build-h200/latest --backend cuda --freq 1980,990 --max-measurements 5 --output realtry; echo "rc=$?"; } \
  > "$OUT/realtry.txt" 2>&1
python3 scripts/h200-summary.py selftest w1 w8 w31 > "$OUT/summary.txt" 2>&1
cat "$OUT/run.log" "$OUT/summary.txt"; tail -3 "$OUT/realtry.txt"
