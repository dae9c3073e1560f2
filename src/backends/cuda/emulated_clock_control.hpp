#pragma once
// The clock side for emulated switching (`latest selftest`): the card's
// identity, clock table and telemetry through read-only NVML, and no change
// ever. The workload emulates the clock.
#include <memory>

#include "backends/nvml/nvml_clock_control.hpp"
#include "core/clock_control.hpp"

namespace latest::cuda {

class EmulatedClockControl final : public ClockControl {
 public:
  explicit EmulatedClockControl(std::unique_ptr<nvml::NvmlClockControl> nvml) : nvml_(std::move(nvml)) {}
  DeviceIdentity identity() override { return nvml_->identity(); }
  std::vector<Mhz> supported_clocks() override { return nvml_->supported_clocks(); }
  void set_clock(Mhz) override {}
  void restore() override {}
  Telemetry telemetry() override { return nvml_->telemetry(); }

 private:
  std::unique_ptr<nvml::NvmlClockControl> nvml_;
};

}  // namespace latest::cuda
