#!/usr/bin/env python3
"""Checks that every #include "..." under src/ points the way
docs/architecture.md draws: core includes only core; a backend only core and
its own folder; and so on up to the CLI, which may include everything."""
import pathlib
import re
import sys

# layer -> the layers it may include (its own is always allowed)
ALLOWED = {
    "core": set(),
    "backends/sim": {"core"},
    "backends/nvml": {"core"},
    "backends/cuda": {"core"},
    "results": {"core"},
    "guard": {"core", "results"},
    "analysis": {"core", "results"},
    "report": {"core", "results", "analysis"},
    "table": set(),  # the latency-table library: nothing of the tool
    "cli": None,  # the composition root
}

def layer_of(path: str) -> str:
    for layer in sorted(ALLOWED, key=len, reverse=True):
        if path == layer or path.startswith(layer + "/"):
            return layer
    return ""

def main() -> int:
    src = pathlib.Path(sys.argv[1])
    include = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
    errors, checked = [], 0
    for file in sorted(src.rglob("*")):
        if file.suffix not in {".hpp", ".cpp", ".cu", ".in", ".h"}:
            continue
        rel = file.relative_to(src).as_posix()
        here = layer_of(rel)
        if not here:
            errors.append(f"{rel}: in no known layer; add its folder to {__file__}")
            continue
        for n, line in enumerate(file.read_text().splitlines(), 1):
            m = include.match(line)
            if not m:
                continue
            checked += 1
            there = layer_of(m.group(1))
            allowed = ALLOWED[here]
            if not there:
                errors.append(f"{rel}:{n}: includes {m.group(1)}, which is in no layer")
            elif allowed is not None and there != here and there not in allowed:
                errors.append(f"{rel}:{n}: {here} must not include {m.group(1)} ({there})")
    for e in errors:
        print(e)
    print(f"{checked} includes checked, {len(errors)} against the layering")
    return 1 if errors else 0

if __name__ == "__main__":
    sys.exit(main())
