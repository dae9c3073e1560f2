#pragma once
// Chooses and opens the device sides for a command: the composition root,
// the one place that knows every backend.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clock_control.hpp"
#include "cli/arguments.hpp"
#include "core/device_query.hpp"
#include "core/watch/watch.hpp"
#include "core/workload.hpp"
#include "guard/run_guard.hpp"

namespace latest::cli {

struct EmulationOptions {
  double min_latency_ms = 1;
  double max_latency_ms = 50;
};

struct BackendOptions {
  std::string backend = "auto";        // auto | cuda | sim
  std::string clock_control = "auto";  // auto (the backend's own) | sim | nvml
  DeviceSelector device{DeviceSelector::Kind::index, "0", 0};  // one GPU: index, UUID or PCI bus id
  std::string sim_profile = "h200";
  int sim_gpus = 1;                    // simulated cards of the model, indices 0..N-1
  std::uint64_t seed = 1;
  std::vector<double> sim_thermal_at_s;
  std::optional<int> sim_power_cap_mhz;
  std::optional<std::string> sim_ramp;  // every switch takes this ramp shape
  bool read_only = false;
  std::string clock_api = "locked";  // locked | application
  bool allow_busy = false;
  int warps = 1;
  std::optional<EmulationOptions> emulation;  // selftest: emulated switching on the CUDA workload
  // watch: the load that makes the card move its own clock, for this long;
  // NVML read only.
  std::optional<double> watch_seconds;
  int gemm_size = 8192;
};

// Members are destroyed in reverse order: the guard puts the clocks back
// while the device is still open.
struct Backends {
  std::unique_ptr<Workload> workload;
  std::unique_ptr<Load> load;  // watch only; stopped before the workload goes
  std::shared_ptr<ClockControl> clocks;  // what the engine drives
  std::shared_ptr<RunGuard> guard;       // where a run may change clocks; null elsewhere
  std::shared_ptr<DeviceQuery> query;    // read-only device facts; null on the simulator
  std::string notice;  // one line for stderr, e.g. why the simulator was chosen
};

Backends open_backends(const BackendOptions& options);

// The GPUs a selection names: those listed, or for "all" every GPU of the
// backend `options` resolves to (--sim-gpus of them on the simulator).
std::vector<DeviceSelector> resolve_devices(const DeviceSelection& selection, const BackendOptions& options);

// The run guard of an NVML device, for `latest reset`.
std::shared_ptr<RunGuard> open_nvml_guard(const BackendOptions& options);

}  // namespace latest::cli
