#!/usr/bin/env bash
# The package as a runtime system meets it: install this build to a prefix,
# make a table with the installed CLI from a simulator run, then build a C
# and a C++ consumer through find_package and again through pkg-config, and
# run them and the Python module; every answer must equal analyze's
# pairs.csv. Usage: run.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(find "$prefix" -name 'liblatest_table.so.1' -printf '%h\n' | head -1)
"$prefix/bin/latest" --backend sim --freq 1980,1500,990 --max-measurements 25 --output "$work/run" >/dev/null
"$prefix/bin/latest" table "$work/run" -o "$work/table.json"
cmake -S "$here" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
export PKG_CONFIG_PATH=$libdir/pkgconfig
cc -std=c99 -Wall -Wextra -pedantic "$here/../c_api_test.c" $(pkg-config --cflags --libs latest) -o "$work/pc_consumer"
c++ -std=c++17 -Wall -Wextra -pedantic "$here/cpp_consumer.cpp" $(pkg-config --cflags --libs latest) -o "$work/pc_cpp_consumer"
# No LD_LIBRARY_PATH: every consumer starts as docs/table.md builds it.
unset LD_LIBRARY_PATH
"$work/consumer/c_consumer" "$work/table.json" > "$work/c.txt"
"$work/consumer/cpp_consumer" "$work/table.json" > "$work/cpp.txt"
"$work/pc_consumer" "$work/table.json" > "$work/pc.txt"
"$work/pc_cpp_consumer" "$work/table.json" > "$work/pc_cpp.txt"
PYTHONPATH=$libdir/python3/dist-packages LATEST_TABLE_LIBRARY= python3 "$here/py_consumer.py" "$work/table.json" > "$work/py.txt"
python3 - "$work" <<'PY'
import csv, sys
work = sys.argv[1]
want = {}
for r in csv.DictReader(open(work + "/run/analysis/pairs.csv")):
    if r["subset"] == "filtered":
        want[(int(r["init_mhz"]), int(r["target_mhz"]))] = (float(r["median_ms"]), float(r["p95_ms"]))
assert len(want) == 6, want
for name in ("c", "cpp", "pc", "pc_cpp", "py"):
    got = {}
    for line in open("%s/%s.txt" % (work, name)):
        a, b, m, p = line.split()
        got[(int(a), int(b))] = (float(m), float(p))
    assert got.keys() == want.keys(), (name, sorted(got), sorted(want))
    for k, (m, p) in want.items():
        assert abs(got[k][0] - m) < 1e-6 and abs(got[k][1] - p) < 1e-6, (name, k, got[k], (m, p))
    print("%s consumer: %d pairs as analyze has them" % (name, len(got)))
PY
