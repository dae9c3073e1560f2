#!/usr/bin/env bash
# Queues a LATEST measurement on NODES nodes and its merge after it:
#   scripts/slurm/submit.sh RESULTS NODES [sbatch options --] latest arguments...
# e.g. scripts/slurm/submit.sh /shared/latest 4 -- --freq all --rse 0.05
# Prints the two job ids. LATEST_BIN names the binary (default: latest).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
results=${1:?usage: submit.sh RESULTS NODES [sbatch options --] latest arguments...}
nodes=${2:?usage: submit.sh RESULTS NODES [sbatch options --] latest arguments...}
shift 2
sbatch_options=()
if [[ " $* " == *" -- "* ]]; then
  while [ "$1" != "--" ]; do sbatch_options+=("$1"); shift; done
  shift
fi
mkdir -p "$results"
export LATEST_RESULTS=$results
measure=$(sbatch --parsable --nodes="$nodes" --chdir="$results" "${sbatch_options[@]}" "$here/latest.sbatch" "$@")
merge=$(sbatch --parsable --dependency=afterok:"${measure%%;*}" --chdir="$results" "${sbatch_options[@]}" "$here/merge.sbatch")
echo "measure ${measure%%;*} merge ${merge%%;*}"
