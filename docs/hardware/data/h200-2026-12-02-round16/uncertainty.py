#!/usr/bin/env python3
"""How well the stated uncertainty covers the error, per result directory
of `latest selftest` (emulated switching): the switching uncertainty's
median, 90th percentile and maximum, and how many measurements miss the
truth (`true_latency_ms`) by more than three times hypot(switching
uncertainty, sync uncertainty). Standard library only."""
import csv
import glob
import math
import os
import sys

for d in sys.argv[1:]:
    rows = []
    for f in sorted(glob.glob(os.path.join(d, "*.csv"))):
        rows += list(csv.DictReader(open(f)))
    if not rows:
        print(f"{d}: no measurements")
        continue
    us = sorted(float(r["switching_uncertainty_us"]) for r in rows)
    beyond = sum(
        abs(float(r["switching_latency_ms"]) - float(r["true_latency_ms"])) * 1e3
        > 3 * math.hypot(float(r["switching_uncertainty_us"]), float(r["sync_uncertainty_us"]))
        for r in rows)
    print(f"{d}: n {len(rows)}, switching uncertainty median {us[len(us) // 2]:.3f} p90 {us[int(0.9 * len(us))]:.3f} "
          f"max {us[-1]:.2f} us; beyond 3 x hypot(uncertainty, sync): {beyond}")
