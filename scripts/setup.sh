#!/usr/bin/env bash
# Installs what LATEST needs on Debian 12: the packages the CLI builds with
# and the report's charting library (the pinned npm packages of
# src/report/charting/package-lock.json). With --tests, also what the test
# suite, the benchmarks and the fuzzers need (GoogleTest, Google Benchmark,
# scikit-learn, Chromium, clang, Slurm and munge). Safe to run twice: what
# is there already is kept.
#   scripts/setup.sh [--tests]
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(cmake g++ make pkgconf libcli11-dev libfmt-dev nlohmann-json3-dev libboost-dev)
if [ "${1:-}" = "--tests" ]; then
  packages+=(libgtest-dev libgmock-dev libbenchmark-dev python3-sklearn chromium clang libclang-rt-14-dev
             slurmctld slurmd slurm-client munge)
fi
# Node.js and npm only to install the charting library; a newer one already
# on PATH serves as well.
command -v npm >/dev/null || packages+=(nodejs npm)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all Debian packages present"
else
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The charting library, from the lock file (npm ci), when it is missing or
# the lock file changed since. Without a registry (the GPU machine) the
# build still works and reports say they have no figures.
charting=src/report/charting
if [ ! -f "$charting/node_modules/.package-lock.json" ] || [ "$charting/package-lock.json" -nt "$charting/node_modules/.package-lock.json" ]; then
  echo "setup: installing the report's charting library (npm ci in $charting)"
  if ! npm ci --prefix "$charting" --no-audit --no-fund --loglevel=error; then
    echo "setup: warning: the charting library could not be installed; reports will have tables but no figures" >&2
  fi
else
  echo "setup: charting library present"
fi
echo "setup: done"
