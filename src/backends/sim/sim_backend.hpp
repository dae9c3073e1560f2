#pragma once
// The simulator behind the device interfaces (and `latest watch`'s load). Both views share one SimGpu,
// so the workload sees what the clock side asked for.
#include <memory>

#include "backends/sim/sim_gpu.hpp"
#include "core/clock_control.hpp"
#include "core/watch/watch.hpp"
#include "core/workload.hpp"

namespace latest::sim {

class SimTime final : public TimeSource {
 public:
  explicit SimTime(SimGpu& gpu) : gpu_(gpu) {}
  Nanos now_ns() override { return gpu_.now(); }
  void sleep_until(Nanos host_ns) override { gpu_.advance_to(host_ns); }

 private:
  SimGpu& gpu_;
};

class SimWorkload final : public Workload {
 public:
  explicit SimWorkload(std::shared_ptr<SimGpu> gpu) : gpu_(std::move(gpu)), time_(*gpu_) {}
  WorkloadInfo info() const override;
  TimeSource& time() override { return time_; }
  TimerSync synchronize() override { return gpu_->synchronize(); }
  Nanos launch(const WindowSpec& spec) override { return gpu_->launch(spec); }
  WindowRecords collect() override { return gpu_->collect(); }
  bool can_stream() const override { return true; }
  Nanos start_stream(const WindowSpec& spec) override { return gpu_->start_stream(spec); }
  WindowRecords drain() override { return gpu_->drain(); }
  void stop_stream() override { gpu_->stop_stream(); }
  void clock_requested(Nanos host_ns, Mhz target) override { gpu_->request_clock(host_ns, target); }
  // The simulator draws its truth on the GPU's axis already.
  std::optional<SwitchTruth> truth(const TimerSync&, const TimerSync&) const override { return gpu_->last_truth(); }

 private:
  std::shared_ptr<SimGpu> gpu_;
  SimTime time_;
};

// `latest watch`'s load on the simulator: the power brake of SimGpu.
class SimBrakeLoad final : public Load {
 public:
  SimBrakeLoad(std::shared_ptr<SimGpu> gpu, double seconds) : gpu_(std::move(gpu)), seconds_(seconds) {}
  std::string describe() const override { return "simulated power brake"; }
  void prepare() override {}
  void start(Nanos host_ns) override {
    started_ = host_ns;
    gpu_->brake(host_ns, seconds_);
  }
  LoadStats stop(Nanos host_ns) override {
    gpu_->release(host_ns);
    return {static_cast<double>(host_ns - started_) / 1e9, 0, 0};
  }
  std::vector<KnownChange> truth() const override {
    std::vector<KnownChange> out;
    for (const auto& s : gpu_->brake_steps()) out.push_back({s.gpu_ns, s.from_mhz, s.to_mhz});
    return out;
  }
  double sm_delay_ns(int sm) const override { return gpu_->sm_skew_ns(sm); }

 private:
  std::shared_ptr<SimGpu> gpu_;
  double seconds_;
  Nanos started_ = 0;
};

class SimClockControl final : public ClockControl {
 public:
  SimClockControl(std::shared_ptr<SimGpu> gpu, int index) : gpu_(std::move(gpu)), index_(index) {}
  DeviceIdentity identity() override;
  std::vector<Mhz> supported_clocks() override { return gpu_->profile().clocks; }
  void set_clock(Mhz mhz) override;
  Telemetry telemetry() override { return gpu_->telemetry(); }

 private:
  std::shared_ptr<SimGpu> gpu_;
  int index_;
};

}  // namespace latest::sim
