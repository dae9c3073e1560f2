#pragma once
// The clock side for emulated switching (`latest selftest`): it reports the
// card's identity, clock table and telemetry through read-only NVML where
// there is one, and never changes anything. The workload emulates the clock.
#include <memory>

#include "backends/nvml/nvml_clock_control.hpp"
#include "core/clock_control.hpp"

namespace latest::cuda {

class EmulatedClockControl final : public ClockControl {
 public:
  // `nvml` may be null (no NVML): then the table is every 15 MHz up to the card's clock.
  EmulatedClockControl(std::unique_ptr<nvml::NvmlClockControl> nvml, DeviceIdentity identity, Mhz card_mhz)
      : nvml_(std::move(nvml)), identity_(std::move(identity)), card_mhz_(card_mhz) {}
  DeviceIdentity identity() override { return nvml_ ? nvml_->identity() : identity_; }
  std::vector<Mhz> supported_clocks() override {
    if (nvml_) return nvml_->supported_clocks();
    std::vector<Mhz> clocks;
    for (Mhz f = card_mhz_ % 15 + 15; f <= card_mhz_; f += 15) clocks.push_back(f);
    return clocks;
  }
  void set_clock(Mhz) override {}
  void restore() override {}
  Telemetry telemetry() override { return nvml_ ? nvml_->telemetry() : Telemetry{}; }

 private:
  std::unique_ptr<nvml::NvmlClockControl> nvml_;
  DeviceIdentity identity_;
  Mhz card_mhz_;
};

}  // namespace latest::cuda
