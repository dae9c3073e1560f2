#!/usr/bin/env bash
# Round 20, call 1 (docs/hardware/h200.md): round 19's script, unchanged, on
# the tree of 3889d8b. (It ran as a copy of that script whose only other
# difference was its scratch folder, /tmp/r20.)
exec bash "$(dirname "$0")/../h200-2026-12-03-round19/round19.sh" "$@"
