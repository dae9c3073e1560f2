"""Round 23 (docs/hardware/h200.md): the mean iteration over all SMs in
2 ms bins from 4 ms before a dumped window's switch to 80 ms after it
(round 20's dump.diff layout, tests/core/data/README.md).
  python3 rates.py FILE.bin...
"""
import os, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "h200-2026-12-04-round21"))
from windows import load  # noqa: E402

for path in sys.argv[1:]:
    h, sms = load(path)
    switch, bins = h[0] + h[1] * 1e6, {}
    for first, d in sms:
        t = first
        for x in d:
            k = int((t - switch) // 2e6)
            if -2 <= k < 40:
                bins.setdefault(k, []).append(x)
            t += x
    print(f"{path}: {h[6]:.0f} -> {h[7]:.0f} MHz, switch at {h[1]:.2f} ms")
    for k in sorted(bins):
        v = bins[k]
        print(f"  {2 * k:+4d} ms: mean iteration {sum(v) / len(v):9.2f} ns ({len(v)} iterations)")
