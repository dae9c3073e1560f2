#!/usr/bin/env python3
# Usage: near_switch_traces.py OUT.csv.gz, run in a directory holding result
# directories made with --save-traces (e.g. `latest selftest --save-traces`).
# Keeps each measurement's trace rows from 10 us before the first SM leaves
# its initial iteration length to 40 us after.
import csv, glob, gzip, statistics, sys
out = gzip.open(sys.argv[1], "wt")
w = csv.writer(out)
w.writerow(["file", "measurement", "sm", "iteration", "start_from_request_ns", "duration_ns"])
for path in sorted(glob.glob("*/traces/*.csv")):
    rows = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            rows.setdefault(int(r["measurement"]), []).append((int(r["sm"]), int(r["iteration"]), int(r["start_from_request_ns"]), int(r["duration_ns"])))
    for m, rs in rows.items():
        base = statistics.median(d for _, _, _, d in rs[:50])
        firsts = {}
        for sm, it, st, d in rs:
            if st > 0 and abs(d - base) > 100 and sm not in firsts:
                firsts[sm] = st
        if not firsts:
            continue
        s0 = min(firsts.values())
        for sm, it, st, d in rs:
            if s0 - 10000 <= st <= s0 + 40000:
                w.writerow([path, m, sm, it, st, d])
out.close()
