#!/usr/bin/env python3
"""The figures docs/hardware/h200.md quotes, from what the lent H200 sent back.

  h200-summary.py selftest FILE.json...   per file: n, |error - in effect|
      median / p99 / max in us, measurements early by more than their sync
      uncertainty, and those beyond 5 us
  h200-summary.py telemetry CSV FROM TO   nvidia-smi samples between two
      UTC times (HH:MM:SS, from the run log's step lines): power, temperature,
      SM clock range, utilisation

Standard library only; quantiles as the index floor(q*n) of the sorted values.
"""
import csv
import json
import sys


def selftest(paths):
    for path in paths:
        ms = json.load(open(path))["accuracy"]["measurements"]
        r = sorted(abs(m["error_minus_in_effect_us"]) for m in ms)
        n = len(r)
        early = sum(1 for m in ms if m["error_minus_in_effect_us"] < -m["sync_uncertainty_us"])
        far = [round(m["error_minus_in_effect_us"], 1) for m in ms if abs(m["error_minus_in_effect_us"]) > 5]
        print(f"{path}: n {n}, |error - in effect| us median {r[n // 2]:.2f} p99 {r[min(n - 1, int(0.99 * n))]:.2f} "
              f"max {r[-1]:.2f}; early beyond sync {early} ({100 * early / n:.1f} %); beyond 5 us {far}")


def telemetry(path, start, end):
    rows = []
    for row in csv.reader(open(path)):
        if not row or row[0].startswith("timestamp"):
            continue
        t = row[0].split()[1][:8]
        if start <= t < end:
            rows.append([float(row[1]), float(row[2]), float(row[3]), float(row[5])])
    if not rows:
        print(f"{path} {start}-{end}: no samples")
        return
    n = len(rows)
    print(f"{path} {start}-{end}: {n} samples, power {sum(r[0] for r in rows) / n:.0f} W (max {max(r[0] for r in rows):.0f}), "
          f"temperature {sum(r[1] for r in rows) / n:.1f} C, SM clock {min(r[2] for r in rows):.0f}-"
          f"{max(r[2] for r in rows):.0f} MHz, utilisation {sum(r[3] for r in rows) / n:.0f} %")


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "selftest":
        selftest(sys.argv[2:])
    elif len(sys.argv) == 5 and sys.argv[1] == "telemetry":
        telemetry(*sys.argv[2:])
    else:
        sys.exit(__doc__)
