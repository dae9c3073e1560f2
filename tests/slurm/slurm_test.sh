#!/usr/bin/env bash
# The cluster path for real: a single-node Slurm (munge, slurmctld, slurmd,
# started here with their own files under a scratch directory, the node's
# CPUs and four GPUs as generic resources), scripts/slurm/submit.sh queues
# the measurement of four simulated GPUs and the merge after it, and the
# merged results are checked. Exit 77 (CTest: skipped) where Slurm cannot
# start, except under CI=true, where that is a failure.
#   slurm_test.sh BUILD_DIR SOURCE_DIR
# LATEST_SLURM_DEBUG=1 keeps the scratch directory (logs, results) in
# /tmp/slurm-debug; LATEST_SLURM_WAIT sets how long the node may take to
# come up (s, default 60).
set -uo pipefail
build=$(cd "$1" && pwd)
source=$(cd "$2" && pwd)
work=$(mktemp -d /tmp/latest-slurm.XXXXXX)
chmod 700 "$work"
skip() {
  echo "slurm test: $*" >&2
  if [ "${CI:-}" = "true" ]; then echo "slurm test: CI=true, so this is a failure" >&2; exit 1; fi
  echo "slurm test: skipped" >&2
  exit 77
}
fail() { echo "slurm test: FAILED: $*" >&2; for f in "$work"/*.log; do echo "== $f"; tail -20 "$f"; done >&2; exit 1; }
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  sleep 1
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
[ -n "${LATEST_SLURM_DEBUG:-}" ] && trap 'rm -rf /tmp/slurm-debug; cp -r "$work" /tmp/slurm-debug; cleanup' EXIT

for tool in munged mungekey slurmctld slurmd sbatch sinfo scontrol; do
  command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] || skip "$tool is missing (scripts/setup.sh installs Slurm and munge)"
done
export PATH=$PATH:/usr/sbin
user=$(id -un)
host=$(hostname -s)
cpus=$(nproc)
# Ports no one else uses here: from this process's id, checked free.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
base=$((20000 + ($$ % 2000) * 4))
while ! port_free $base || ! port_free $((base + 1)); do base=$((base + 2)); done

# munge, with a key and socket of its own.
mungekey --create --keyfile "$work/munge.key" 2>/dev/null || dd if=/dev/urandom of="$work/munge.key" bs=1024 count=1 2>/dev/null
chmod 600 "$work/munge.key"
force=()
[ "$(id -u)" -eq 0 ] && force=(--force)
munged "${force[@]}" --key-file "$work/munge.key" --socket "$work/munge.sock" --pid-file "$work/munged.pid" \
  --log-file "$work/munged.log" --seed-file "$work/munge.seed" || skip "munged did not start ($(tail -1 "$work/munged.log" 2>/dev/null))"
pids+=("$(cat "$work/munged.pid")")

mkdir -p "$work/state" "$work/spool"
export SLURM_CONF="$work/slurm.conf"
cat > "$SLURM_CONF" <<CONF
ClusterName=latest-test
SlurmctldHost=$host
SlurmctldPort=$base
SlurmdPort=$((base + 1))
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
AuthInfo=socket=$work/munge.sock
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
GresTypes=gpu
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
NodeName=$host CPUs=$cpus Gres=gpu:4 State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
# Slurm keeps a GPU only with a character device: four stand-ins (with
# task/none nothing binds them; the simulator is the GPU).
printf "AutoDetect=off\nNodeName=%s Name=gpu File=/dev/null,/dev/zero,/dev/full,/dev/urandom\n" "$host" > "$work/gres.conf"

slurmctld -D -i > "$work/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -vv > "$work/slurmd.out" 2>&1 &
pids+=($!)
up=no
for _ in $(seq 1 ${LATEST_SLURM_WAIT:-60}); do
  state=$(sinfo -h -n "$host" -o %t 2>/dev/null | head -1)
  if [ "$state" = "idle" ]; then up=yes; break; fi
  [ "$state" = "down" ] || [ "$state" = "drain" ] && scontrol update nodename="$host" state=resume >/dev/null 2>&1
  sleep 1
done
[ $up = yes ] || skip "the node did not come up: $(sinfo -h -o '%t %E' 2>&1 | head -2); $(tail -3 "$work/slurmctld.log" 2>/dev/null); $(tail -3 "$work/slurmd.log" 2>/dev/null)"
echo "slurm test: Slurm is up on $host ($cpus CPUs, gpu:4), ports $base and $((base + 1))"

# The job as docs/cluster.md gives it: four simulated GPUs on the node.
results="$work/results"
export LATEST_BIN="$build/latest"
ids=$("$source/scripts/slurm/submit.sh" "$results" 1 -- --backend sim --sim-gpus 4 --freq 1980,990 --max-measurements 25) \
  || fail "submit.sh failed"
echo "slurm test: $ids"
measure=$(echo "$ids" | awk '{print $2}')
merge=$(echo "$ids" | awk '{print $4}')
for _ in $(seq 1 300); do
  squeue -h -j "$measure,$merge" 2>/dev/null | grep -q . || break
  sleep 1
done
squeue -h -j "$measure,$merge" 2>/dev/null | grep -q . && fail "the jobs did not finish in 300 s: $(squeue 2>&1)"

# Four GPU directories under the node, each complete; the merge saw them all.
dirs=$(find "$results/$host" -name manifest.json | wc -l)
[ "$dirs" -eq 4 ] || fail "expected 4 GPU result directories under $results/$host, found $dirs ($(cat "$results"/latest-*.out 2>/dev/null | tail -20))"
grep -q '"status": "complete"' $(find "$results/$host" -name manifest.json) || fail "a GPU's run is not complete"
[ -f "$results/merged/report.html" ] || fail "no merged report ($(cat "$results"/latest-merge-*.out 2>/dev/null | tail -20))"
[ -f "$results/merged/analysis/summary.txt" ] || fail "no merged analysis"
gpus=$(grep -c "Simulated NVIDIA H200 on" "$results/merged/analysis/summary.txt")
[ "$gpus" -eq 4 ] || fail "the merged summary holds $gpus GPUs, not 4"
tables=$(ls "$results/merged/tables"/*.json | wc -l)
[ "$tables" -eq 1 ] || fail "expected one latency table (one model), found $tables"
python3 - "$results/merged/tables" <<'PY' || fail "the merged table does not hold the four cards"
import glob, json, sys
t = json.load(open(glob.glob(sys.argv[1] + "/*.json")[0]))
assert len(t["gpu"]["uuids"]) == 4, t["gpu"]["uuids"]
PY
echo "slurm test: passed: 4 simulated GPUs measured by one Slurm task, merged by the dependent job"
