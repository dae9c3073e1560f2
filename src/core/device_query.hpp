#pragma once
// Read-only facts about a device beyond its clock side, for `latest info`.
// Only real devices answer; the simulator has none.
#include <optional>
#include <string>
#include <vector>

#include "core/types.hpp"

namespace latest {

struct DeviceStatus {
  Mhz sm_clock_mhz = 0;
  std::optional<Mhz> application_clock_mhz;  // empty: the board has none
  std::string driver_version;
  std::optional<double> power_limit_w;  // empty: the board does not say
  std::vector<unsigned> other_processes;
  std::optional<bool> application_clocks_restricted;  // to root; empty: unknown
};

class DeviceQuery {
 public:
  virtual ~DeviceQuery() = default;
  // Every GPU the driver sees, in its own numbering.
  virtual std::vector<DeviceIdentity> all_devices() = 0;
  virtual DeviceStatus status() = 0;
  // The host CPUs nearest the device (its NUMA node or socket), where a
  // thread driving it belongs; empty where the device does not say.
  virtual std::vector<int> near_cpus() { return {}; }
};

}  // namespace latest
