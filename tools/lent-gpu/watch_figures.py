#!/usr/bin/env python3
"""The figures docs/hardware.md gives for a `latest watch` directory: one
recorded SM's changes while the load ran (count, holds, step sizes, jumps
and ramps with their durations), the range of the SMs' 1 ms medians, and
NVML's samples over the same time.

    watch_figures.py WATCH_DIR [--sm 0]"""
import argparse
import collections
import csv
import json
import os
import statistics


def percentiles(xs, *ps):
    q = statistics.quantiles(xs, n=100)
    return ", ".join("p%d %.3g" % (p, q[p - 1]) for p in ps)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("watch")
    p.add_argument("--sm", default="0", help="the recorded SM whose changes are counted")
    a = p.parse_args()
    m = json.load(open(os.path.join(a.watch, "manifest.json")))
    lead_ms = 1000.0  # record_watch's second alone before the load
    load_ms = lead_ms + 1000 * m["settings"]["load_seconds"]
    rows = [r for r in csv.DictReader(open(os.path.join(a.watch, "steps.csv")))
            if r["sm"] == a.sm and lead_ms < float(r["departure_ms"]) < load_ms]
    holds = [float(r["holds_ms"]) for r in rows if r["holds_ms"]]
    sizes = [abs(float(r["after_mhz"]) - float(r["before_mhz"])) for r in rows]
    ramps = [r for r in rows if r["kind"] == "ramp"]
    print("SM %s under load: %d changes, %.0f %% jumps" % (a.sm, len(rows), 100.0 * (len(rows) - len(ramps)) / len(rows)))
    print("holds ms: %s" % percentiles(holds, 5, 50, 75, 95))
    print("steps MHz: %s" % percentiles(sizes, 5, 50, 95))
    for name, up in (("rises", True), ("drops", False)):
        d = [1000 * (float(r["arrival_ms"]) - float(r["departure_ms"])) for r in ramps
             if (float(r["after_mhz"]) > float(r["before_mhz"])) == up]
        if d:
            print("ramps that are %s: %d, median %.0f us" % (name, len(d), statistics.median(d)))
    band = [float(b["median_mhz"]) for b in csv.DictReader(open(os.path.join(a.watch, "clock.csv")))
            if lead_ms < float(b["time_ms"]) < load_ms]
    print("1 ms medians over the SMs: %.0f-%.0f MHz" % (min(band), max(band)))
    tel = [t for t in csv.DictReader(open(os.path.join(a.watch, "telemetry.csv")))
           if lead_ms < float(t["time_ms"]) < load_ms]
    reasons = collections.Counter(t["reasons"] for t in tel)
    sm = [int(t["sm_mhz"]) for t in tel]
    print("NVML: %d samples, reasons %s, power median %.0f W, SM clock %d-%d MHz (median %.0f)"
          % (len(tel), dict(reasons), statistics.median(float(t["power_w"]) for t in tel), min(sm), max(sm),
             statistics.median(sm)))


if __name__ == "__main__":
    main()
