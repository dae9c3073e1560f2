"""Round 23 (docs/hardware/h200.md): the mean iteration over all SMs in
2 ms bins from 4 ms before a dumped window's switch to 80 ms after it
(round 20's dump.diff layout, tests/core/data/README.md).
  python3 rates.py FILE.bin...
"""
import array, struct, sys

for path in sys.argv[1:]:
    b = open(path, "rb").read()
    h = struct.unpack_from("10d", b, 0)
    (n,) = struct.unpack_from("q", b, 80)
    o, switch, bins = 88, h[0] + h[1] * 1e6, {}
    for _ in range(n):
        _, first, count = struct.unpack_from("3q", b, o)
        o += 24
        d = array.array("I")
        d.frombytes(b[o:o + 4 * count])
        o += 4 * count + 16  # the SM's two calibrated means follow
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
