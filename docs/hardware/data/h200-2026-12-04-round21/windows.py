"""Round 21 (docs/hardware/h200.md): what a dumped window's SMs did at the
switch, read from the records alone (round 20's dump.diff layout,
tests/core/data/README.md). Per window: the span of the SMs' phases (the
shortest stretch of one initial iteration holding 80 % of the starts of
the iterations that hold the switch, and all of them), and how much longer
than a change alone makes it each SM's mixed iteration ran (its part before
the switch at the initial clock's calibrated mean, the rest at the
target's): the median over all SMs, and the range over those whose
iteration began within a sixteenth of an iteration before the switch.
  python3 windows.py FILE.bin...
"""
import array, bisect, itertools, statistics, struct, sys


def load(path):
    b = open(path, "rb").read()
    h = struct.unpack_from("10d", b, 0)
    (n,) = struct.unpack_from("q", b, 80)
    o, sms = 88, []
    for _ in range(n):
        sm, first, count = struct.unpack_from("3q", b, o)
        o += 24
        d = array.array("I")
        d.frombytes(b[o:o + 4 * count])
        o += 4 * count + 16  # the SM's two calibrated means follow
        sms.append((first, list(d)))
    return h, sms


def span(phases, period, share):
    p = sorted(x % period for x in phases)
    n = len(p)
    held = max(1, -(-n * share // 10))
    return min((p[k + held - 1] if k + held - 1 < n else p[k + held - 1 - n] + period) - p[k] for k in range(n))


if __name__ == "__main__":  # rates.py of 2026-12-06 imports load()
    for path in sys.argv[1:]:
        h, sms = load(path)
        request, truth_ms, _, _, pooled_ms, _, initial, target, target_mean, initial_mean = h
        switch = request + truth_ms * 1e6
        into, excess = [], []
        for first, d in sms:
            b = [first] + [first + x for x in itertools.accumulate(d)]
            k = bisect.bisect_right(b, switch) - 1  # the iteration that holds the switch
            x = switch - b[k]
            into.append(x)
            excess.append(d[k] - (x + (1 - x / initial_mean) * target_mean))
        near = [round(e) for x, e in zip(into, excess) if x < initial_mean / 16]
        print(f"{path}: {initial:.0f} -> {target:.0f} MHz, detector then {(pooled_ms - truth_ms) * 1e3:+.2f} us; "
              f"phases: 80 % within {span(into, initial_mean, 8) / 1e3:.1f} us, all within "
              f"{span(into, initial_mean, 10) / 1e3:.1f} us of {initial_mean / 1e3:.1f}; mixed iteration longer than "
              f"a change alone by {statistics.median(excess):.0f} ns (median); {len(near)} SMs began it within "
              f"1/16 iteration of the switch: {min(near, default=0)} to {max(near, default=0)} ns")
