#pragma once
// Emulated switching for `latest selftest` (SPEC §5.2): the real kernel,
// timers and sync, but no clock ever changes. At host time t_s + L the host
// flips a mapped word and the kernel's iterations take the length the target
// clock would give: once in a window, at every request in a stream (the
// chained schedule). Built on CudaWorkload's public surface.
#include <sched.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "backends/cuda/cuda_workload.hpp"
#include "core/clock_control.hpp"

namespace latest::cuda {

struct Emulation {
  double min_latency_ms = 1;  // L is uniform in [min, max]
  double max_latency_ms = 50;
  std::uint64_t seed = 1;
};

// Emulated switching's own record of one switch (SPEC §5.2). The host flips
// a mapped word; block 0 polls it and broadcasts it; each SM takes up the
// target's length inside its next iteration.
struct EmulatedSwitch {
  Nanos request_host_ns = 0;          // t_s (host clock)
  Nanos flip_host_ns = 0;             // the host wrote the word, at t_s + L
  Nanos flip_bracket_ns = 0;          // between the two host reads around that write
  std::optional<Nanos> seen_gpu_ns;   // block 0's poll read it
  std::optional<Nanos> in_effect_gpu_ns;  // the latest SM's switch
};

// When an emulated switch was in effect on every SM: the latest of the
// per-SM times the kernel recorded; empty if an SM never took it up.
std::optional<Nanos> in_effect_on_every_sm(const std::vector<unsigned long long>& switch_ns);

// The truth on the GPU's time axis, the one measurements use: t_s and the
// flip are mapped alike with the syncs around the window, so L is as the
// GPU's clock counts it (the host's runs some ppm apart: 6 µs over a 1 s L
// on the H200), and the delivery delays follow.
SwitchTruth resolve(const EmulatedSwitch& em, const TimerSync& before, const TimerSync& after);

class EmulatedWorkload final : public Workload {
 public:
  EmulatedWorkload(std::unique_ptr<CudaWorkload> gpu, const Emulation& emulation);
  ~EmulatedWorkload() override;

  WorkloadInfo info() const override;
  TimeSource& time() override { return gpu_->time(); }
  TimerSync synchronize() override { return gpu_->synchronize(); }
  Nanos launch(const WindowSpec& spec) override;
  WindowRecords collect() override;
  bool can_stream() const override { return true; }
  Nanos start_stream(const WindowSpec& spec) override;
  WindowRecords drain() override { return gpu_->drain(); }
  void stop_stream() override;
  void clock_requested(Nanos host_ns, Mhz target) override;
  std::optional<SwitchTruth> truth(const TimerSync& before, const TimerSync& after) const override;

 private:
  // FMAs that last at the card's clock what `fmas` would at `clock`.
  double stretched(std::int64_t fmas, Mhz clock) const;
  void join_flipper();
  // The record of the switch requested last, as far as it has happened.
  std::optional<EmulatedSwitch> emulated_switch() const;

  std::unique_ptr<CudaWorkload> gpu_;
  Emulation emulation_;
  SwitchSignal signal_;
  std::optional<WindowSpec> pending_;  // the window or stream that runs
  bool streaming_ = false;
  Mhz emulated_clock_ = 0;
  Mhz pending_target_ = 0;        // the target of the switch requested last in this launch, 0 none
  unsigned long long word_ = 0;   // the host word of that switch (kernels.hpp)
  std::thread flipper_;
  std::atomic<Nanos> flipped_at_{0};
  std::atomic<Nanos> flip_bracket_ns_{0};
  Nanos requested_at_ = 0;
  std::mt19937_64 rng_;
};

// The clock side for emulated switching: the card's identity, clock table and
// telemetry from a read-only clock control, and no change ever.
class EmulatedClockControl final : public ClockControl {
 public:
  explicit EmulatedClockControl(std::shared_ptr<ClockControl> card) : card_(std::move(card)) {}
  DeviceIdentity identity() override { return card_->identity(); }
  std::vector<Mhz> supported_clocks() override { return card_->supported_clocks(); }
  void set_clock(Mhz) override {}
  Telemetry telemetry() override { return card_->telemetry(); }

 private:
  std::shared_ptr<ClockControl> card_;
};

}  // namespace latest::cuda
