"""The C, C++ and Python calls of the advisor give identical answers:
runs advisor_c and advisor_cpp (argv[1], argv[2]) on the hand-made table
and advisor_queries.txt, answers the same queries through the Python module,
and compares the three texts line by line."""
import os
import subprocess
import sys

import latest_table

here = os.path.dirname(os.path.abspath(__file__))
table_path = os.path.join(here, "hand_table.json")
queries_path = os.path.join(here, "advisor_queries.txt")


def route_text(r):
    out = " hops %d" % len(r.clocks_mhz)
    out += "".join(" %d/%.6f" % (c, w) for c, w in zip(r.clocks_mhz, r.wait_ms))
    return out + " latency %.6f band %.6f %.6f direct %.6f" % (r.latency_ms, r.low_ms, r.high_ms, r.direct_ms)


def python_answers():
    t = latest_table.LatencyTable(table_path)
    lines = []
    for q in open(queries_path).read().split("\n"):
        if not q.strip():
            continue
        f = q.split()
        if f[0] == "route":
            frm, to, stat, margin = int(f[1]), int(f[2]), f[3], float(f[4])
            line = "route %d %d %s %.6f: status " % (frm, to, stat, margin)
            try:
                line += "0" + route_text(t.route(frm, to, stat, margin))
            except latest_table.TableError as e:
                line += "%d" % e.status
        else:
            frm, to, phase, stat, rule = int(f[1]), int(f[2]), float(f[3]), f[4], f[5]
            gain, penalty, margin = float(f[6]), float(f[7]), float(f[8])
            line = "advise %d %d %.6f %s %s: status " % (frm, to, phase, stat, rule)
            try:
                a = t.advise(frm, to, phase, stat, rule, gain, penalty, margin)
                line += "0 %s %s latency %.6f lost %.6f interval %.6f route" % (
                    a.decision, a.rule, a.latency_ms, a.time_lost_ms, a.min_interval_ms)
                line += route_text(a.route) + " back" + route_text(a.back)
            except latest_table.TableError as e:
                line += "%d" % e.status
        lines.append(line)
    return lines


c = subprocess.run([sys.argv[1], table_path, queries_path], capture_output=True, text=True, check=True).stdout.splitlines()
cpp = subprocess.run([sys.argv[2], table_path, queries_path], capture_output=True, text=True, check=True).stdout.splitlines()
py = python_answers()
assert len(c) == len(py) == len(cpp) == 19, (len(c), len(cpp), len(py))
for a, b, p in zip(c, cpp, py):
    assert a == b == p, "C, C++ and Python differ:\n  C:      %s\n  C++:    %s\n  Python: %s" % (a, b, p)
assert any(" switch " in l for l in c) and any(" stay " in l for l in c) and any("hops 2" in l for l in c)
print("\n".join(c))
print("advisor: C, C++ and Python agree on %d queries" % len(c))
