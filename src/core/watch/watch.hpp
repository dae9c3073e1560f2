#pragma once
// `latest watch`: a load makes the card move its own clock (a power brake
// under heavy GEMMs; no setting changes) while a recorder on a few SMs of
// its own writes each iteration's cycles and nanoseconds and the driver's
// telemetry is read every few milliseconds. The recording is then cut
// into the clock's changes (clock_steps.hpp), which judge the detectors.
#include <functional>
#include <string>
#include <vector>

#include "core/clock_control.hpp"
#include "core/types.hpp"
#include "core/watch/clock_steps.hpp"
#include "core/workload.hpp"

namespace latest {

struct LoadStats {
  double seconds = 0;
  std::int64_t operations = 0;  // e.g. GEMMs finished
  double tflops = 0;            // the load's own throughput, where it counts FLOPs
};

// What makes the card move its clock by itself.
class Load {
 public:
  virtual ~Load() = default;
  virtual std::string describe() const = 0;
  // Everything that would hold the first launch back (module loading,
  // buffers) happens here, before the recorder starts.
  virtual void prepare() = 0;
  virtual void start(Nanos host_ns) = 0;
  virtual LoadStats stop(Nanos host_ns) = 0;
  // The changes the load is known to have made, where it knows them (the
  // simulator), on the GPU's axis; each SM takes them `sm_delay_ns` late.
  struct KnownChange {
    Nanos gpu_ns = 0;
    double from_mhz = 0, to_mhz = 0;
  };
  virtual std::vector<KnownChange> truth() const { return {}; }
  virtual double sm_delay_ns(int sm) const {
    (void)sm;
    return 0;
  }
};

struct WatchSettings {
  double lead_seconds = 1;  // the recorder alone before the load
  double load_seconds = 20;
  double tail_seconds = 5;  // the recorder alone after it: the recovery
  std::int64_t iteration_fmas = 4096;
  int recorded_sms = 16;
  Nanos sample_period_ns = 20'000'000;  // telemetry
  Nanos drain_period_ns = 100'000'000;
};

struct TelemetrySample {
  Nanos gpu_ns = 0;
  Telemetry telemetry;
};

struct WatchRecording {
  std::vector<SmRecords> sms;  // every recorded SM, whole
  std::vector<TelemetrySample> samples;
  LoadStats load;
  Nanos start_gpu_ns = 0, load_start_gpu_ns = 0, load_end_gpu_ns = 0, end_gpu_ns = 0;
  TimerSync first_sync, last_sync;
  std::int64_t bytes = 0;
  bool interrupted = false;
};

// Records until the tail ends or `interrupted()` says stop; the load is
// stopped on every way out.
WatchRecording record_watch(Workload& workload, Load& load, ClockControl& telemetry, const WatchSettings& settings,
                            const std::function<bool()>& interrupted);

// The clock over all recorded SMs in one bin of time.
struct ClockBand {
  Nanos start_ns = 0;
  double min_mhz = 0, median_mhz = 0, max_mhz = 0;
};

// What says the cycles read the clock: a dependent FMA chain on an SM of
// its own takes the same cycles every iteration whatever the clock (its
// spread), and the driver's clock agrees with the SMs' over its samples.
struct JudgeEvidence {
  double cycles_median = 0, cycles_p01 = 0, cycles_p99 = 0;  // per iteration, every SM
  double nvml_minus_sms_median_mhz = 0;  // the driver's clock less the SMs' over the period before each sample
  double nvml_minus_sms_max_abs_mhz = 0;
  // Within levels held for 20 ms or longer: the SD of 1 ms clocks about the level.
  double wiggle_sd_mhz = 0;
  double wiggle_max_abs_mhz = 0;
};

struct WatchAnalysis {
  std::vector<CardStep> steps;
  std::vector<ClockBand> band;
  JudgeEvidence judge;
};

WatchAnalysis analyse_watch(const WatchRecording& recording, const StepSettings& settings, Nanos band_ns = 1'000'000);

// The iterations of `records` that start within [from_ns, to_ns).
SmRecords slice_records(const SmRecords& records, Nanos from_ns, Nanos to_ns);

// The telemetry sample in force at `gpu_ns` (the latest before it), if any.
const TelemetrySample* sample_at(const std::vector<TelemetrySample>& samples, Nanos gpu_ns);

}  // namespace latest
