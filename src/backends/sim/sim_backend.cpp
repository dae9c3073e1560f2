#include "backends/sim/sim_backend.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.hpp"

namespace latest::sim {

WorkloadInfo SimWorkload::info() const {
  const auto& p = gpu_->profile();
  return {"sim", p.sm_count, p.timer_tick_ns};
}

DeviceIdentity SimClockControl::identity() {
  const auto& p = gpu_->profile();
  DeviceIdentity id;
  id.name = p.device_name;
  // Each seed is a different simulated card of the model (its own draws),
  // so runs with several seeds compare like several GPUs of one model; so is
  // each card of --sim-gpus (the fourth group counts them).
  unsigned profile_tag = 0;
  for (char c : p.name) profile_tag = profile_tag * 31 + static_cast<unsigned char>(c);
  id.uuid = fmt::format("GPU-5111a7ed-{:04x}-4000-{:04x}-{:012x}", profile_tag & 0xFFFF, 0x8000 + gpu_->card(),
                        gpu_->seed());
  id.pci_bus_id = fmt::format("00000000:{:02X}:00.0", index_ + 1);
  id.index = index_;
  id.sm_count = p.sm_count;
  return id;
}

void SimClockControl::set_clock(Mhz mhz) {
  const auto& clocks = gpu_->profile().clocks;
  if (!std::binary_search(clocks.begin(), clocks.end(), mhz))
    throw Error(ErrorKind::not_supported, fmt::format("the simulated GPU does not support {} MHz", mhz));
  // The call itself takes time (t_r - t_s).
  gpu_->advance_to(gpu_->now() + static_cast<Nanos>(gpu_->draw_call_latency_ms() * 1e6));
}

}  // namespace latest::sim
