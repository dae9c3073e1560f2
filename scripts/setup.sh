#!/usr/bin/env bash
# Installs every build and test dependency of LATEST from Debian 12 packages.
# Safe to run twice: apt-get skips what is already installed.
set -euo pipefail
packages=(
  cmake g++ make
  libcli11-dev libfmt-dev nlohmann-json3-dev libboost-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3-sklearn chromium
  clang libclang-rt-14-dev pkgconf
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all dependencies present"
  exit 0
fi
echo "setup: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
