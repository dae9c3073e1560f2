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

struct BackendOptions {
  std::string backend = "auto";  // auto | cuda | sim
  std::string device = "0";      // index, UUID or PCI bus id
  std::string sim_profile = "h200";
  std::uint64_t seed = 1;
  std::vector<double> sim_thermal_at_s;
  std::optional<int> sim_power_cap_mhz;
};

struct Backends {
  std::unique_ptr<Workload> workload;
  std::unique_ptr<ClockControl> clocks;
  std::string notice;  // one line for stderr, e.g. why the simulator was chosen
};

Backends open_backends(const BackendOptions& options);

}  // namespace latest::cli
