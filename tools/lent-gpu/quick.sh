#!/usr/bin/env bash
# A short guarded check on the lent H200 (the caller runs the guard first):
# build, then selftests bounded in time, each reporting per pair how many
# measurements it took and why attempts failed. Results tarred into $OUT.
source "$(dirname "$0")/env.sh"
pairs() { python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1] + "/manifest.json"))
print("status", d.get("status"), "detector", d.get("detector"))
for p in d.get("pairs", []):
    print(p["init_mhz"], "->", p["target_mhz"], p["status"], "n", p.get("measurements"), "windows", p.get("windows"),
          "failed", p.get("failed"), "host s", round(p.get("host_cpu_seconds", 0), 2), "gpu s", round(p.get("gpu_seconds", 0), 1))
PY
}
selftest() {  # name timeout args...
  local name=$1 limit=$2; shift 2
  step selftest $name: "$@"
  # The full output (progress, any diagnostics) stays in $OUT; the log gets its end.
  timeout "$limit" $bin selftest --output "$name" "$@" 2>&1 | tee "$out/$name.log" | grep -v "^\[" | tail -12
  echo "rc=${PIPESTATUS[0]}"
  # One manifest, or one a GPU below it (--device all).
  find "$name" -name manifest.json 2>/dev/null | sort | while read -r m; do pairs "$(dirname "$m")"; done
  tar -rf "$out/selftests.tar" "$name" 2>/dev/null
}
{
  date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.applications.graphics --format=csv
  step build
  cmake -S . -B build-h200 -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DLATEST_BUILD_BENCHMARKS=OFF -DLATEST_BUILD_TESTS=OFF >/dev/null \
    && cmake --build build-h200 -j16 --target latest 2>&1 | tail -2
} > "$log" 2>&1
[ -x "$bin" ] || { tail -n 40 "$log"; exit 1; }
# Read-only telemetry through the runs (power, temperature, the clocks the
# card reports), to tell what each load does; the log's step times say which
# run a sample belongs to.
nvidia-smi --query-gpu=timestamp,power.draw,temperature.gpu,clocks.sm,clocks.mem,utilization.gpu,clocks_throttle_reasons.active \
  --format=csv,nounits -lms 500 > "$out/telemetry.csv" 2>&1 &
sampler=$!
for run in "$@"; do eval "selftest $run" >> "$log" 2>&1; done
kill "$sampler" 2>/dev/null
gzip -f "$out/selftests.tar"
cat "$log"
