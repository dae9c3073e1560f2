#!/usr/bin/env python3
"""The figures docs/hardware.md quotes, from what the lent H200 sent back.

  summary.py selftest PATH...        per selftest.json, or per result
      directory (its selftest.json and manifest.json): n, |error - in effect|
      median / p99 / max in us, measurements early by more than their sync
      uncertainty, those beyond 5 us, late beyond 2 us, the in-effect and
      error - in effect medians; for a directory also failed tries, skipped
      pairs, GPU ms a measurement (the pairs' shares), the whole run's GPU
      and wall seconds, bytes copied and host CPU seconds, and from the
      pairs' CSVs each detector's error against the truth (in effect
      included) per pair, median, min and max in us: the selected one's and
      the paper's (the paper_ columns); with several PATHs, a last line
      of the first figures over all of their measurements together
  summary.py telemetry CSV FROM TO   nvidia-smi samples between two
      UTC times (HH:MM:SS, from the run log's step lines): power, temperature,
      SM clock range, utilisation

Standard library only; quantiles as the index floor(q*n) of the sorted values.
"""
import csv
import json
import os
import sys
from datetime import datetime


def accuracy(ms):
    """n, |error - in effect| median / p99 / max, early beyond sync, beyond 5 us, late beyond 2 us."""
    residual = [m["error_minus_in_effect_us"] for m in ms]
    r = sorted(abs(x) for x in residual)
    n = len(r)
    early = sum(1 for m in ms if m["error_minus_in_effect_us"] < -m["sync_uncertainty_us"])
    far = [round(x, 1) for x in residual if abs(x) > 5]
    late = sum(1 for x in residual if x > 2)
    return (f"n {n}, |error - in effect| us median {r[n // 2]:.2f} p99 {r[min(n - 1, int(0.99 * n))]:.2f} "
            f"max {r[-1]:.2f}; early beyond sync {early} ({100 * early / n:.1f} %); beyond 5 us {far}; "
            f"late beyond 2 us {late}")


def selftest(paths):
    every = []  # all runs' measurements, for the line that pools them
    for path in paths:
        directory = path if os.path.isdir(path) else None
        source = os.path.join(directory, "selftest.json") if directory else path
        if not os.path.exists(source):  # a run that measured nothing writes none: say so, go on
            print(f"{path}: no selftest.json (no measurement accepted; the run's log says why)")
            continue
        doc = json.load(open(source))
        ms = doc["accuracy"]["measurements"]
        every += ms
        residual = [m["error_minus_in_effect_us"] for m in ms]
        n = len(residual)
        early = sum(1 for m in ms if m["error_minus_in_effect_us"] < -m["sync_uncertainty_us"])
        in_effect = sorted(m["in_effect_us"] for m in ms if m.get("in_effect_us") is not None)
        line = f"{path}: {accuracy(ms)}; error - in effect median {sorted(residual)[n // 2]:+.2f} us"
        if in_effect:
            line += f"; in effect median {in_effect[len(in_effect) // 2]:.2f} us"
            early_ones = sorted(m["in_effect_us"] for m in ms
                                if m["error_minus_in_effect_us"] < -m["sync_uncertainty_us"] and m.get("in_effect_us") is not None)
            others = sorted(m["in_effect_us"] for m in ms
                            if m["error_minus_in_effect_us"] >= -m["sync_uncertainty_us"] and m.get("in_effect_us") is not None)
            if early_ones and others:
                into = {}
                for m in ms:
                    if m["error_minus_in_effect_us"] < -m["sync_uncertainty_us"]:
                        into[m["target_mhz"]] = into.get(m["target_mhz"], 0) + 1
                line += (f" (early ones {early_ones[len(early_ones) // 2]:.2f}, others {others[len(others) // 2]:.2f}; early into each target MHz "
                         f"{dict(sorted(into.items()))}; median L of the early {sorted(m['true_ms'] for m in ms if m['error_minus_in_effect_us'] < -m['sync_uncertainty_us'])[early // 2]:.1f} ms, "
                         f"of the others {sorted(m['true_ms'] for m in ms if m['error_minus_in_effect_us'] >= -m['sync_uncertainty_us'])[(n - early) // 2]:.1f} ms)")
        if directory:
            manifest = json.load(open(os.path.join(directory, "manifest.json")))
            pairs = manifest["pairs"]
            measured = sum(p.get("measurements", 0) for p in pairs)
            pair_s = sum(p["gpu_seconds"] for p in pairs)
            failed = sum(sum(p.get("failed", {}).values()) for p in pairs)
            skipped = [f"{p['init_mhz']}->{p['target_mhz']}" for p in pairs if p["status"] != "measured"]
            wall = (datetime.fromisoformat(manifest["finished_utc"].replace("Z", "+00:00"))
                    - datetime.fromisoformat(manifest["started_utc"].replace("Z", "+00:00"))).total_seconds()
            line += (f"; failed tries {failed}; skipped {skipped}; GPU ms a measurement (pairs) "
                     f"{1000 * pair_s / max(measured, 1):.1f}; whole run {manifest['gpu_seconds']:.1f} GPU s, "
                     f"{wall:.0f} s wall; bytes {sum(p.get('bytes', 0) for p in pairs)}; host CPU "
                     f"{sum(p.get('host_cpu_seconds', 0) for p in pairs):.2f} s")
            # Per pair: the two directions' target iterations differ, and so do the paper detector's errors.
            for p in pairs:
                if not p.get("file") or not os.path.exists(os.path.join(directory, p["file"])):
                    continue
                rows = list(csv.DictReader(open(os.path.join(directory, p["file"]))))
                line += f"; {p['init_mhz']}->{p['target_mhz']} error against the truth us"
                for name, column in (("selected", "switching_latency_ms"), ("paper", "paper_switching_latency_ms")):
                    errors = sorted(1000 * (float(row[column]) - float(row["true_latency_ms"])) for row in rows
                                    if row.get(column) and row.get("true_latency_ms"))
                    if errors:
                        line += (f" {name} median {errors[len(errors) // 2]:+.2f} "
                                 f"({errors[0]:+.2f} to {errors[-1]:+.2f})")
        print(line)
    if len(paths) > 1 and every:
        print(f"all {len(paths)} together: {accuracy(every)}")


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
