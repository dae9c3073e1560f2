#pragma once
// One GPU through NVML: its clock side for the engine, the calls a run guard
// needs (guard/run_guard.hpp), and the read-only facts `latest info` shows.
// It only talks to the device; locking and state files are the guard's.
#include <memory>
#include <string>

#include "backends/nvml/nvml_library.hpp"
#include "core/clock_control.hpp"
#include "core/device_query.hpp"

namespace latest::nvml {

struct NvmlOptions {
  DeviceSelector device;
  bool read_only = false;
  std::string clock_api = "locked";  // locked | application
};

// LATEST_READ_ONLY=1 (or any value but 0 and empty) turns read-only mode on.
bool read_only_from_environment();

class NvmlDevice final : public ClockControl, public ClockState, public DeviceQuery {
 public:
  static std::shared_ptr<NvmlDevice> open(const NvmlOptions& options);

  DeviceIdentity identity() override { return identity_; }
  std::vector<Mhz> supported_clocks() override;
  void set_clock(Mhz mhz) override;
  Telemetry telemetry() override;

  std::vector<unsigned> other_processes() override;
  SavedClocks save() override;
  void put_back(const SavedClocks& saved) override;

  std::vector<DeviceIdentity> all_devices() override;
  DeviceStatus status() override;
  std::vector<int> near_cpus() override;

  bool read_only() const { return lib_->read_only(); }

 private:
  NvmlDevice(std::shared_ptr<NvmlLibrary> lib, nvmlDevice_t device, NvmlOptions options);
  Mhz clock(unsigned type, const char* what);

  std::shared_ptr<NvmlLibrary> lib_;
  nvmlDevice_t device_;
  NvmlOptions options_;
  DeviceIdentity identity_;
};

}  // namespace latest::nvml
