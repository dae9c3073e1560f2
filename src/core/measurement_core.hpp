#pragma once
// What both schedules measure with (schedules/): phase 1 calibrations, timer
// syncs, clock requests, one switch in a window of its own, both detectors
// on a window's records, and the rules that keep a measurement, retry it or
// skip its pair. Written only against the Workload and ClockControl
// interfaces.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/clock_control.hpp"
#include "core/run_state.hpp"
#include "core/workload.hpp"

namespace latest {

// One try at a measurement: both detectors' answers and the row it makes.
struct Attempt {
  Measurement measurement;  // the selected detector's
  Measurement paper;
  MeasurementRow row;
  WindowRecords records;
  Nanos request_gpu_ns = 0;
  double detection_cpu_s = 0;
  bool records_full = false;  // chained, not captured: the slice reached the records budget first
};

// A pair given up for the rest of the run; the reason goes to the manifest.
struct SkipPair {
  SkipReason reason;
};

// A pair being measured, in either schedule.
struct PairProgress {
  PairResult result;
  std::size_t number = 0;
  int measurement_number = 0;
  int traced_misfits = 0;
  int failed_measurements = 0;
  int failed_attempts = 0;  // of the measurement in progress
  int misfit_tries = 0;     // of the measurement in progress
  double capture_ms = 0;
  std::int64_t fmas = 0;
  // What the pair's measurements so far need, to come back to after a
  // single switch outran the longest window.
  double usual_capture_ms = 0;
  std::int64_t usual_fmas = 0;
  std::vector<RouteHop> via;  // a route's clocks before the target
  bool met = false;   // chained: its stop is met, it measures on as a link
  bool done = false;
};

class MeasurementCore {
 public:
  // `stop` is polled between windows; when it turns non-empty, Interrupted
  // is thrown with its text.
  MeasurementCore(Workload& workload, ClockControl& clocks, EngineSettings settings, RunObserver& observer,
                  std::function<std::string()> stop);

  Workload& workload() { return workload_; }
  ClockControl& clocks() { return clocks_; }
  const EngineSettings& settings() const { return settings_; }
  RunObserver& observer() { return observer_; }
  RunState& state() { return state_; }
  const RunState& state() const { return state_; }
  const std::vector<Mhz>& supported() const { return supported_; }

  // The run starts: its clock, the device, the supported clocks. `schedule`
  // is what the run's pairs are measured in.
  void start(Schedule schedule);
  // The iteration's cost at the fastest clock, from a calibration there.
  void measure_fma_cost(Mhz fastest);
  double seconds_since_start();
  void check_stop();
  // The workload is told the request time: t_s where the caller took it.
  void set_clock(Mhz mhz, std::optional<Nanos> requested_at = std::nullopt);
  TimerSync synchronize();
  // Phase 1 for one clock at one iteration length (cached).
  const ClockCalibration& calibration(Mhz mhz, std::int64_t iteration_fmas);
  bool calibrated(Mhz mhz, std::int64_t iteration_fmas) const { return calibrations_.count({mhz, iteration_fmas}) > 0; }

  std::int64_t iteration_for(double capture_ms) const;
  // The pilot's longest switch into `target`, 0 where it measured none.
  double longest_pilot_into(Mhz target) const;
  // Twice the longest switch into the clock seen in phase 1 and the pilot
  // (or the user's); each try after `initial_not_held` raises it, for the
  // tries of that measurement only, within a bound.
  double wakeup_for(Mhz init, int raises = 0) const;
  // The run's iteration, or a coarser one where the pooled detector needs
  // it for this pair's clocks (separable_fmas), unless the iteration is fixed.
  std::int64_t pair_fmas(ClockPair pair);
  // What the pooled detector needs: separable_iteration_fmas from the run's
  // iteration and its calibrations of the two clocks.
  std::int64_t separable_fmas(ClockPair pair);

  // One switch in a window of its own: wake-up, delay, request, capture and
  // confirmation (the paper's schedule, and every pilot).
  Attempt measure_window(ClockPair pair, const WindowPlan& plan);
  // Both detectors on a window's or a stream slice's records; fills the row.
  void detect(Attempt& a, ClockPair pair, std::int64_t fmas, const TimerSync& before, const TimerSync& after,
              Nanos t_s, Nanos t_r, const Telemetry& tel);

  // Keeps an accepted measurement (traces, throttle checks, the RSE stop);
  // true when the pair is complete.
  bool accept(PairProgress& p, Attempt& a, std::size_t count);
  // Counts a failed attempt; a measurement that failed every try counts once
  // more, and a pair with too many is skipped (SkipPair).
  void reject(PairProgress& p, const Attempt& a);
  void skip(PairProgress& p, const SkipReason& reason);
  // What must stop before the card cools down (a running stream).
  void on_cool_down(std::function<void()> pause) { pause_ = std::move(pause); }
  // The device time the newest measurement took, for the progress's ETA.
  void set_measurement_gpu_ms(double ms) { measurement_gpu_ms_ = ms; }

 private:
  // Keeps the clock a window's SMs reached and flags a pair whose SMs run
  // at another clock than its target.
  void note_clock_reached(PairResult& r, const MeasurementRow& row) const;
  // A failure that a longer capture (or, where the records budget ran out
  // first, a coarser iteration) may fix: raises the pair's, or skips it.
  void lengthen_capture(PairProgress& p, bool records_full);
  // A measurement refused on every try as not confirmed: the rest of the
  // pair runs at four times the iteration, up to 65536 FMAs (unless the
  // user fixed the iteration).
  void coarsen_iteration(PairProgress& p);
  // Throws the pair's skip when the card reports power capping.
  void skip_if_power_capped(const Telemetry& telemetry, ClockPair pair);
  void keep_traces(PairResult& result, const Attempt& attempt, int index);
  void cool_down();

  Workload& workload_;
  ClockControl& clocks_;
  EngineSettings settings_;
  RunObserver& observer_;
  std::function<std::string()> stop_;
  std::function<void()> pause_;
  RunState state_;
  std::vector<Mhz> supported_;
  std::map<std::pair<Mhz, std::int64_t>, ClockCalibration> calibrations_;
  std::int64_t trace_bytes_ = 0;  // kept so far in the run
  double sync_seconds_ = 0;       // spent in timer syncs, for the plan
  Nanos started_ns_ = 0;
  double ns_per_fma_ = 0;  // at the fastest requested clock
  double measurement_gpu_ms_ = 0;
};

}  // namespace latest
