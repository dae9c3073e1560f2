#!/usr/bin/env python3
"""Keeps some windows of a `latest watch` windows.bin, each cut to a span
around its middle, for the test data (tests/core/data/README.md).

    cut_watch_windows.py IN.bin OUT.bin --windows 0,5,9 --half-ms 6

The layout is results/watch_files.cpp's: magic, window count, then per
window its step and SMs, per SM its id, first start (ns), iteration count,
the durations (uint32 ns) and the cycles (uint32)."""
import argparse
import struct

MAGIC = b"LTWIND1\n"


def read(path):
    data = open(path, "rb").read()
    assert data[:8] == MAGIC, "not a windows.bin"
    at = 8
    (count,) = struct.unpack_from("<I", data, at)
    at += 4
    windows = []
    for _ in range(count):
        step, sms = struct.unpack_from("<iI", data, at)
        at += 8
        records = []
        for _ in range(sms):
            sm, start, n = struct.unpack_from("<iqI", data, at)
            at += 16
            durations = list(struct.unpack_from("<%dI" % n, data, at))
            at += 4 * n
            cycles = list(struct.unpack_from("<%dI" % n, data, at))
            at += 4 * n
            records.append((sm, start, durations, cycles))
        windows.append((step, records))
    return windows


def cut(records, half_ns):
    """Each SM's iterations that end within half_ns of the window's middle."""
    begin = min(r[1] for r in records)
    end = max(r[1] + sum(r[2]) for r in records)
    middle = (begin + end) // 2
    out = []
    for sm, start, durations, cycles in records:
        t, first, kept_d, kept_c = start, None, [], []
        for d, c in zip(durations, cycles):
            if middle - half_ns <= t and t + d <= middle + half_ns:
                if first is None:
                    first = t
                kept_d.append(d)
                kept_c.append(c)
            t += d
        out.append((sm, first if first is not None else start, kept_d, kept_c))
    return out


def write(path, windows):
    parts = [MAGIC, struct.pack("<I", len(windows))]
    for step, records in windows:
        parts.append(struct.pack("<iI", step, len(records)))
        for sm, start, durations, cycles in records:
            parts.append(struct.pack("<iqI", sm, start, len(durations)))
            parts.append(struct.pack("<%dI" % len(durations), *durations))
            parts.append(struct.pack("<%dI" % len(cycles), *cycles))
    open(path, "wb").write(b"".join(parts))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("source")
    p.add_argument("target")
    p.add_argument("--windows", required=True, help="indices of the windows to keep, e.g. 0,5,9")
    p.add_argument("--half-ms", type=float, required=True, help="ms kept either side of each window's middle")
    a = p.parse_args()
    windows = read(a.source)
    keep = [int(i) for i in a.windows.split(",")]
    write(a.target, [(windows[i][0], cut(windows[i][1], int(a.half_ms * 1e6))) for i in keep])


if __name__ == "__main__":
    main()
