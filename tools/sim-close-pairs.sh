#!/usr/bin/env bash
# Close pairs on the simulator, one run per profile, pair, seed and ramp
# shape (docs/methodology.md, "Pair validity and separability" and
# "Accuracy"): per direction, the measurements, the iteration the pair ended
# at, its coarsenings, the median |error| and the extremes of the switching
# latency, and the median error of the transition latency, both against the
# simulator's truth. Run from the repository root after ./scripts/build.sh:
#   bash tools/sim-close-pairs.sh [SEEDS...]   (default: 3 4)
set -euo pipefail
seeds=("$@")
[[ ${#seeds[@]} -eq 0 ]] && seeds=(3 4)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for case in "h200 1980,1950" "a100 1410,1380" "rtx6000 1845,1815"; do
  read -r profile freq <<<"$case"
  for seed in "${seeds[@]}"; do
    for shape in four-steps steps linear overshoot stall slow-approach; do
      out="$tmp/$profile-$seed-$shape"
      build/latest --backend sim --sim-profile "$profile" --freq "$freq" --seed "$seed" --sim-ramp "$shape" \
        --max-measurements 25 -o "$out" >"$out.log" 2>&1 || { echo "$profile $freq $seed $shape: failed (exit $?)"; continue; }
      python3 - "$out" "$profile $freq seed $seed $shape" <<'PY'
import csv, json, sys
out, label = sys.argv[1], sys.argv[2]
for p in json.load(open(out + "/manifest.json"))["pairs"]:
    head = "%-36s %4d->%-4d" % (label, p["init_mhz"], p["target_mhz"])
    if p["status"] != "measured":
        print(head, p["status"], p.get("reason", ""))
        continue
    rows = list(csv.DictReader(open(out + "/" + p["file"])))
    sw = sorted((float(r["switching_latency_ms"]) - float(r["true_latency_ms"])) * 1e3 for r in rows)
    tr = sorted((float(r["transition_latency_ms"]) - float(r["true_transition_ms"])) * 1e3 for r in rows)
    ab = sorted(abs(x) for x in sw)
    print(head, "n %3d fmas %5d coarsened %d | switching median |error| %6.2f us, earliest %7.2f, latest %7.2f"
          " | transition median error %8.1f us" % (len(rows), p["iteration_fmas"], p.get("iteration_coarsenings", 0),
                                                  ab[len(ab) // 2], sw[0], sw[-1], tr[len(tr) // 2]))
PY
    done
  done
done
