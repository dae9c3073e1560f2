"""Round 21, call 2: the names of the dumped windows (round 20's dump.diff
format: ten doubles first) the pooled detector accepted and dated more than
2 us late or 0.7 us early against their truth (dump.diff's own test), one
per line; each with its error and in-effect time on stderr."""
import struct, sys, pathlib
for d in sys.argv[1:]:
    for f in sorted(pathlib.Path(d).glob("w*.bin")):
        h = struct.unpack("10d", f.open("rb").read(80))
        truth_ms, in_effect_us, outcome, pooled_ms = h[1], h[2], h[3], h[4]
        if outcome != 0 or truth_ms < 0:
            continue
        err_us = (pooled_ms - truth_ms) * 1e3
        if err_us > 2 or err_us < -0.7:
            print(f, f"error {err_us:+.2f} us, in effect {in_effect_us:.2f} us,", int(h[6]), "->", int(h[7]), file=sys.stderr)
            print(f)
