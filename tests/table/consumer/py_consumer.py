"""The Python module from an installed prefix: prints init target median
p95 of each measured pair, as the C consumer does."""
import sys

import latest_table

t = latest_table.LatencyTable(sys.argv[1])
for a in t.clocks():
    for b in t.clocks():
        if a == b:
            continue
        try:
            print("%d %d %.6f %.6f" % (a, b, t.latency_ms(a, b, "median"), t.latency_ms(a, b, "p95")))
        except latest_table.TableError as e:
            if e.status != 6:
                raise
