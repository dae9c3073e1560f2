"""The Python module over the build tree's library: values and every error
status it can meet. Run by CTest with PYTHONPATH and LATEST_TABLE_LIBRARY."""
import json
import os
import sys
import tempfile

import latest_table

stats = lambda b: {"min": b, "p05": b + .1, "median": b + .2, "mean": b + .25, "p95": b + .4, "p99": b + .5, "max": b + .6}
table = {"schema_version": 1, "kind": "latest latency table", "gpu": {"model": "NVIDIA H200", "uuids": ["GPU-a"]},
         "conditions": {"memory_mhz": [3201]}, "clocks_mhz": [990, 1980],
         "pairs": [{"init_mhz": 1980, "target_mhz": 990, "status": "measured", "n": 25, "outlier_share": 0,
                    "flags": ["noisy"], "switching_ms": stats(5), "transition_ms": stats(1)},
                   {"init_mhz": 990, "target_mhz": 1980, "status": "skipped", "reason": "x"}]}
d = tempfile.mkdtemp()
path = os.path.join(d, "t.json")
json.dump(table, open(path, "w"))
t = latest_table.LatencyTable(path)
assert abs(t.latency_ms(1980, 990, "median") - 5.2) < 1e-12
assert abs(t.latency_ms(1980, 990) - 5.4) < 1e-12, "p95 by default"
assert abs(t.transition_ms(1980, 990, "max") - 1.6) < 1e-12
assert t.clocks() == [990, 1980]
assert t.matches("GPU-a", 3201) and not t.matches("NVIDIA A100")
assert t.model == "NVIDIA H200"
assert t.flags(1980, 990) == {"noisy"}
assert "Route(clocks_mhz=[990]" in repr(t.route(1980, 990)), repr(t.route(1980, 990))
assert repr(latest_table.Advice(latest_table._CAdvice())).startswith("Advice(decision='stay', rule='break-even'")


def status(fn):
    try:
        fn()
    except latest_table.TableError as e:
        return e.status
    return 0


assert status(lambda: t.latency_ms(990, 1980)) == 6, "skipped"
assert status(lambda: t.latency_ms(1980, 1234)) == 5, "unknown clock"
assert status(lambda: t.latency_ms(1980, 990, "p90")) == 7, "unknown statistic"
assert status(lambda: latest_table.LatencyTable(os.path.join(d, "none.json"))) == 1
open(os.path.join(d, "bad.json"), "w").write("{")
assert status(lambda: latest_table.LatencyTable(os.path.join(d, "bad.json"))) == 2
table["schema_version"] = 2
json.dump(table, open(path, "w"))
assert status(lambda: latest_table.LatencyTable(path)) == 3
print("python module: values and statuses as documented")
