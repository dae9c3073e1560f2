#pragma once
// Chooses and opens the two device sides for a command.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clock_control.hpp"
#include "core/workload.hpp"

namespace latest::cli {

struct EmulationOptions {
  double min_latency_ms = 1;
  double max_latency_ms = 50;
};

struct BackendOptions {
  std::string backend = "auto";        // auto | cuda | sim
  std::string clock_control = "auto";  // auto (the backend's own) | sim | nvml
  std::string device = "0";            // index, UUID or PCI bus id
  std::string sim_profile = "h200";
  std::uint64_t seed = 1;
  std::vector<double> sim_thermal_at_s;
  std::optional<int> sim_power_cap_mhz;
  bool read_only = false;
  std::string clock_api = "locked";  // locked | application
  bool allow_busy = false;
  int warps = 1;
  std::optional<EmulationOptions> emulation;  // selftest: emulated switching on the CUDA workload
};

struct Backends {
  std::unique_ptr<Workload> workload;
  std::unique_ptr<ClockControl> clocks;
  std::string notice;  // one line for stderr, e.g. why the simulator was chosen
};

Backends open_backends(const BackendOptions& options);

// Opens only the NVML clock side (for `latest reset` and `latest info`).
std::unique_ptr<ClockControl> open_nvml_clocks(const BackendOptions& options);

}  // namespace latest::cli
