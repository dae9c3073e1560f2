#pragma once
// The workload side of a device: runs measurement windows on every SM and
// owns the host clock the engine reads and sleeps on. Implemented by the
// simulator and by the CUDA backend.
#include <optional>
#include <string>

#include "core/error.hpp"
#include "core/types.hpp"

namespace latest {

// The host clock. Real backends use CLOCK_MONOTONIC_RAW; the simulator runs on
// virtual time so that hours of GPU time take seconds.
class TimeSource {
 public:
  virtual ~TimeSource() = default;
  virtual Nanos now_ns() = 0;
  virtual void sleep_until(Nanos host_ns) = 0;
};

struct WorkloadInfo {
  std::string backend;  // "sim", "cuda", "cuda-emulated"
  int sm_count = 0;
  double timer_tick_ns = 0;
};

class Workload {
 public:
  virtual ~Workload() = default;
  virtual WorkloadInfo info() const = 0;
  virtual TimeSource& time() = 0;
  virtual TimerSync synchronize() = 0;
  // Starts a window asynchronously; returns the host time of the launch.
  virtual Nanos launch(const WindowSpec& spec) = 0;
  // Waits for the window launched last and returns its records.
  virtual WindowRecords collect() = 0;
  // A launch that runs until stopped, for the chained schedule (many
  // switches per launch): every SM runs `spec.warmup_iterations` unrecorded
  // iterations, then records until stop_stream(); drain() hands over what
  // each SM has finished since the last drain, so the engine detects while
  // the kernel runs and keeps only the slices around its requests.
  // synchronize() works while a stream runs. Backends without streams say
  // so here, and the engine uses the paper's schedule on them.
  virtual bool can_stream() const { return false; }
  virtual Nanos start_stream(const WindowSpec& spec) {
    (void)spec;
    throw Error(ErrorKind::internal, "this backend has no streams");
  }
  virtual WindowRecords drain() { throw Error(ErrorKind::internal, "this backend has no streams"); }
  virtual void stop_stream() {}
  // Told of every clock request right before it is made. The simulator moves
  // its modelled clock; emulated switching schedules its flip. Real GPUs
  // ignore it.
  virtual void clock_requested(Nanos host_ns, Mhz target) {
    (void)host_ns;
    (void)target;
  }
  // Whether a clock request moves the clock the SMs count (clock64()):
  // emulated switching changes the iterations' length, never the clock.
  virtual bool clock_moves() const { return true; }
  // Truth of the switch requested last, where the backend knows it; host
  // times are put on the GPU's axis with the syncs taken around its window.
  virtual std::optional<SwitchTruth> truth(const TimerSync& before, const TimerSync& after) const {
    (void)before;
    (void)after;
    return std::nullopt;
  }
};

}  // namespace latest
