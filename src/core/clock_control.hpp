#pragma once
// The clock side of a device: which SM clocks exist, setting one, and what
// limits the clock (throttling). Implemented by the simulator and by NVML.
// Putting the prior state back is the run guard's job (guard/run_guard.hpp),
// through ClockState below.
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
  std::optional<Mhz> sm_mhz;  // the SM clock the driver reports
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
  virtual Telemetry telemetry() = 0;
};

// The clock settings that can be read back before a run changes them. Locked
// clocks cannot be read back on NVML, so they are always put back to the
// driver's defaults.
struct SavedClocks {
  std::optional<Mhz> application_graphics_mhz;
  std::optional<Mhz> application_memory_mhz;
};

// What a run guard needs of a device: who else uses it, and saving and
// putting back its clock settings.
class ClockState {
 public:
  virtual ~ClockState() = default;
  virtual DeviceIdentity identity() = 0;
  // Process ids of other processes on the device.
  virtual std::vector<unsigned> other_processes() = 0;
  virtual SavedClocks save() = 0;
  // Locked clocks to the defaults; application clocks to `saved`, or to the
  // defaults where it holds none.
  virtual void put_back(const SavedClocks& saved) = 0;
};

}  // namespace latest
