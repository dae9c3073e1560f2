#pragma once
// The clock side of a device: which SM clocks exist, setting one, putting the
// prior state back, and what limits the clock (throttling). Implemented by the
// simulator and by the NVML controller.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/types.hpp"

namespace latest {

// Clock-event (throttle) reasons, classified the way the engine acts on them.
struct ThrottleState {
  bool thermal = false;
  bool power = false;
  bool other = false;
  std::uint64_t raw_reasons = 0;  // NVML's bit mask where there is one
};

struct Telemetry {
  ThrottleState throttle;
  std::optional<double> temperature_c;
  std::optional<double> power_w;
  std::optional<Mhz> memory_mhz;
};

class ClockControl {
 public:
  virtual ~ClockControl() = default;
  virtual DeviceIdentity identity() = 0;
  // Supported SM clocks at the memory clock in force, ascending.
  virtual std::vector<Mhz> supported_clocks() = 0;
  // Requests the SM clock. Throws Error(no_permission / not_supported / ...).
  virtual void set_clock(Mhz mhz) = 0;
  // Puts back what was in force before the first set_clock. Idempotent.
  virtual void restore() = 0;
  virtual Telemetry telemetry() = 0;
};

}  // namespace latest
