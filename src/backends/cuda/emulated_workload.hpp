#pragma once
// Emulated switching for `latest selftest` (SPEC §5.2): the real kernel,
// timers and sync, but no clock ever changes. At each request the host
// writes mapped words naming a GPU time, t_s + L, and the length the target
// clock would give; from that time on every SM runs that length (once in a
// window, at every request in a stream: the chained schedule). Built on
// CudaWorkload's public surface.
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "backends/cuda/cuda_workload.hpp"
#include "core/clock_control.hpp"

namespace latest::cuda {

struct Emulation {
  double min_latency_ms = 1;  // L is uniform in [min, max]
  double max_latency_ms = 50;
  std::uint64_t seed = 1;
};

// Emulated switching's own record of one switch (SPEC §5.2). The host writes
// the words at the request; block 0 polls and broadcasts them; each SM
// splits the iteration that holds the named time at that time.
struct EmulatedSwitch {
  Nanos request_host_ns = 0;          // t_s (host clock)
  Nanos write_host_ns = 0;            // the host wrote the words
  Nanos flip_bracket_ns = 0;          // between the two host reads around that write
  Nanos switch_gpu_ns = 0;            // the time they name, t_s + L on the GPU's axis
  std::optional<Nanos> seen_gpu_ns;   // block 0's poll read them
  std::optional<Nanos> in_effect_gpu_ns;  // the latest SM's switch
};

// When an emulated switch was in effect on every SM: the latest of the
// per-SM times the kernel recorded; empty if an SM never took it up.
std::optional<Nanos> in_effect_on_every_sm(const std::vector<unsigned long long>& switch_ns);

// The truth on the GPU's time axis, the one measurements use: t_s and the
// write are mapped with the syncs around the window; the switch's time is
// the GPU's already. In effect: how long after that time the last SM took
// the switch (about nothing, unless the words came late).
SwitchTruth resolve(const EmulatedSwitch& em, const TimerSync& before, const TimerSync& after);

class EmulatedWorkload final : public Workload {
 public:
  EmulatedWorkload(std::unique_ptr<CudaWorkload> gpu, const Emulation& emulation);
  ~EmulatedWorkload() override;

  WorkloadInfo info() const override;
  bool clock_moves() const override { return false; }
  TimeSource& time() override { return gpu_->time(); }
  // The latest sync places each switch's time on the GPU's axis.
  TimerSync synchronize() override {
    last_sync_ = gpu_->synchronize();
    return last_sync_;
  }
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
  // The record of the switch requested last in this launch.
  std::optional<EmulatedSwitch> emulated_switch() const;

  std::unique_ptr<CudaWorkload> gpu_;
  Emulation emulation_;
  SwitchSignal signal_;
  std::optional<WindowSpec> pending_;  // the window or stream that runs
  bool streaming_ = false;
  TimerSync last_sync_;
  Mhz emulated_clock_ = 0;
  Mhz pending_target_ = 0;       // the target of the switch requested last in this launch, 0 none
  unsigned long long word_ = 0;  // its word (kernels.hpp)
  EmulatedSwitch requested_;     // its record, as far as the host knows it
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
