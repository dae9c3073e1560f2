# Sourced by the H200 scripts: where results go, the binary, the guard's
# log of refused setters, and a step marker for the log.
set -uo pipefail
out=${OUT:?set OUT}
bin=build-h200/latest
export LATEST_GUARD_LOG="$out/guard-refusals.log"
log="$out/run.log"
step() { echo "== $(date -u +%T) $*"; }
