#pragma once
// What a run is told (EngineSettings) and what it records (RunState,
// PairResult and the rows of its measurements), and the observer that sees
// it happen. The engine (engine.hpp) and the schedules
// (schedules/pair_schedule.hpp) fill them.
#include <cstdint>
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/calibration.hpp"
#include "core/detection.hpp"
#include "core/planner.hpp"
#include "core/pooled_detection.hpp"
#include "core/schedules/stream_request.hpp"
#include "core/statistics.hpp"
#include "core/workload.hpp"

namespace latest {

struct EngineSettings {
  std::vector<Mhz> clocks;
  std::vector<ClockPair> pairs;
  double rse = 0.05;
  int min_measurements = 25;
  int max_measurements = 500;
  int rse_check_every = 25;
  int throttle_check_every = 5;
  double thermal_cooldown_s = 10;
  int max_attempts = 5;           // tries per measurement before it counts as failed
  // A measurement whose records misfit the model (Misfit) is taken again
  // this often; the last try's is kept, set aside from the statistics.
  int misfit_retries = 2;
  int max_failed_measurements = 5;// failed measurements before the pair is skipped
  double max_band_overlap = 0.0;  // separability gate (0 = bands must be disjoint)
  bool include_inseparable = false;
  // Traces (each SM's records around a switch): of every measurement, or of
  // the first `trace_first` of each pair and as many of its misfits, within
  // `trace_budget_bytes` over the run (rows of kTraceRowBytes).
  bool save_traces = false;
  int trace_first = 0;
  std::int64_t trace_budget_bytes = 256ll << 20;
  int trace_margin = 32;          // iterations kept either side of the request and of each SM's change
  int trace_rows_per_sm = 256;    // the ramp between them thinned to fit
  PlanSettings plan;
  // Chained where the workload can stream (else the paper's, said in the
  // run state); a poll for the switch's end every this share of the
  // confirmation length.
  Schedule schedule = Schedule::chained;
  double poll_share = 0.25;
  // Chained: a request counts once the records after its arrival last this
  // many times the switch itself (and the confirmation length).
  double settle_factor = 1.0;
  // Chained: past the plan's sample, one launch walks the pairs among the
  // clocks of two blocks of at most this many (so at most 2 x this^2 pairs
  // are in flight); docs/methodology.md, "Schedules".
  int walk_block_clocks = 10;
  Detector detector = Detector::pooled;  // whose numbers are reported; both always run
  DetectionSettings detection;           // the paper's detector
  PooledSettings pooled;
};

// Why a pair is not measured, as data: a code and the numbers behind it.
// Words for people (naming the CLI's options) are the caller's.
struct SkipReason {
  enum class Code {
    none,
    clock_power_capped,       // `clock` was power-capped while calibrating (`raw_reasons`)
    means_indistinguishable,  // the interval of the phase-1 means' difference contains 0
    bands_overlap,            // the ±2σ bands overlap `value`, more than `limit`
    power_capping,            // while measuring, one of the clocks could not be held
    not_captured,             // no switch within the longest window, `value` ms
    measurements_failed,      // `count` measurements failed after `tries` tries each, most as
                              // `failure`, at `fmas` FMAs per iteration (`fmas_fixed`: set by the user)
  };
  Code code = Code::none;
  Mhz clock = 0;
  std::uint64_t raw_reasons = 0;
  double value = 0;
  double limit = 0;
  int count = 0;
  int tries = 0;
  MeasurementOutcome failure = MeasurementOutcome::not_captured;
  std::int64_t fmas = 0;
  bool fmas_fixed = false;
  bool skipped() const { return code != Code::none; }
};
// A stable name for files: "bands_overlap", ...
const char* to_string(SkipReason::Code code);

struct PairCheck {
  ClockPair pair;
  bool means_differ = false;
  Interval difference_ns;
  double band_overlap = 0;
  SkipReason skip;  // none when the pair is measured
  // The iteration the pooled detector needs for this pair
  // (separable_iteration_fmas from the run's); 0 with the paper's detector.
  // Above a fixed --iteration-fmas, the pair is measured finer than that.
  std::int64_t separable_fmas = 0;
};

struct ThrottleEvent {
  double at_s = 0;  // host seconds since the run started
  ClockPair pair;
  std::string kind;    // thermal | power
  std::string action;
  std::uint64_t raw_reasons = 0;
};

struct MeasurementRow {
  int index = 0;
  double switching_ms = 0;   // the selected detector's
  double transition_ms = 0;
  double switching_uncertainty_us = 0;  // the selected detector's own
  // The paper's detector on the same records; empty where it found nothing.
  std::optional<double> paper_switching_ms;
  std::optional<double> paper_transition_ms;
  double call_ms = 0;
  int accepted_sms = 0;
  int max_sm = -1;
  double sm_spread_ms = 0;
  double sync_uncertainty_us = 0;
  std::optional<double> temperature_c;
  std::optional<double> power_w;
  std::optional<Mhz> memory_mhz;  // kept in the manifest per pair; the CSV's columns are fixed
  std::optional<SwitchTruth> truth;
  unsigned misfits = 0;  // Misfit bits, from the pooled detector whichever is selected
  // The target's calibrated iteration at this measurement's length, the
  // unit of its resolution (the selftest's bound); not in the CSV.
  double target_iteration_ns = 0;
  // Still a misfit when its retries ran out: in the CSV, marked, and left
  // out of the pair's statistics and its stop.
  bool set_aside = false;
  // The SMs' clock from cycles over time before the request and after the
  // arrival; empty under emulation, whose clock never moves.
  std::optional<double> clock_before_mhz, clock_after_mhz;
};

// Each SM's records around one switch, for auditing detection.
struct TraceRow {
  int measurement = 0;
  int sm = 0;
  std::int64_t iteration = 0;
  Nanos start_from_request_ns = 0;
  std::uint32_t duration_ns = 0;
  std::uint32_t cycles = 0;  // 0 where the backend gives none
};

struct PairResult {
  ClockPair pair;
  std::size_t number = 0;  // its place in the run as pair_started gave it (routes: the route's); 0 where none
  std::string status;  // measured | skipped
  SkipReason reason;
  std::vector<MeasurementRow> rows;
  std::map<std::string, int> discarded;  // reason -> count
  std::map<std::string, int> failed;     // reason -> count
  std::map<std::string, int> misfit_retries;  // cause -> measurements taken again for it
  std::vector<MeasurementRow> retried;         // the misfits taken again: not results, but truth for the selftest
  // The clock the SMs ran at after each window's arrival (or at its end,
  // where none was found), from cycles over time; its median is the clock
  // the pair reached. A pair whose SMs run at another clock than the target
  // (a power or thermal brake, or a driver that accepted the call and did
  // something else) is flagged.
  std::vector<double> clocks_reached_mhz;
  std::optional<double> reached_mhz;
  bool target_not_reached = false;
  // Rows that count: those not set aside.
  int kept() const {
    return static_cast<int>(std::count_if(rows.begin(), rows.end(), [](const MeasurementRow& r) { return !r.set_aside; }));
  }
  int failed_windows() const {
    int n = 0;
    for (const auto& [reason, count] : failed) n += count;
    return n;
  }
  double rse = 0;
  std::int64_t iteration_fmas = 0;
  double capture_ms = 0;
  double wakeup_ms = 0;
  int windows = 0;            // windows (paper) or requests (chained) measured
  int transits = 0;           // chained: unrecorded requests back to the initial clock
  // Chained: the measurements when the stop was met (0: the pair's last one).
  // The pair may measure on while the other direction still needs returns.
  int measurements_at_stop = 0;
  int stop_count() const { return measurements_at_stop > 0 ? measurements_at_stop : static_cast<int>(rows.size()); }
  int capture_retries = 0;    // measurements retried with a longer capture
  int iteration_coarsenings = 0;  // times the pair moved to a coarser iteration (not confirmed on every try)
  double gpu_seconds = 0;     // the pair's share of the run's
  double host_cpu_seconds = 0;  // CPU time of detection on the host
  std::int64_t bytes = 0;
  std::vector<TraceRow> traces;
};

// Timer synchronisations over a run. Drift is the least-squares slope of the
// offset against host time; with the longest gap between syncs it gives the
// largest drift a measurement can have carried, to set against the
// uncertainty.
struct SyncStats {
  int count = 0;
  double min_uncertainty_ns = 0;
  double max_uncertainty_ns = 0;
  double min_round_trip_ns = 0;
  double max_round_trip_ns = 0;
  double drift_ppm = 0;
  double max_gap_s = 0;
  Nanos first_offset_ns = 0, last_offset_ns = 0;
  double max_drift_between_syncs_ns = 0;
  // Running sums for the fit: host seconds since the first sync, offset ns.
  void add(const TimerSync& s);

 private:
  double first_host_s_ = 0, last_x_ = 0, sum_x_ = 0, sum_y_ = 0, sum_xx_ = 0, sum_xy_ = 0;
};

// The cost a run expects once phase 1 and the pilot are done
// (planner.hpp, plan_cost), and what it has spent.
struct RunCost {
  double planning_gpu_seconds = 0; // phase 1 and the pilot
  int sampled_pairs = 0;           // measured first, to plan the rest from
  double gpu_seconds = 0;          // first kernel to now, cool-downs included
  double planned_gpu_seconds = 0;  // spent before the rest + plan_cost's for the rest
  double planned_measurements_per_pair = 0;
  double sync_ms = 0;              // mean time one timer sync takes
};

struct RunState {
  DeviceIdentity device;
  Detector detector = Detector::pooled;  // whose latencies the results report
  Schedule schedule = Schedule::chained;
  RunCost cost;
  WorkloadInfo workload;
  std::vector<ClockCalibration> calibrations;
  std::vector<PairCheck> checks;
  std::vector<std::pair<ClockPair, double>> pilot;  // pilot latencies, ms
  double capture_ms = 0;
  std::int64_t iteration_fmas = 0;
  std::vector<ThrottleEvent> throttle_events;
  SyncStats sync;
  std::map<Mhz, SkipReason> unusable_clocks;  // clock -> why
  int traces_dropped = 0;  // measurements whose traces the budget left out
  std::vector<double> settle_ms;  // chained: each launch's wait until its first clock held
};

// Bytes a trace row takes in traces/*.csv, about; and the most one
// measurement's traces can take with `sm_count` SMs.
inline constexpr std::int64_t kTraceRowBytes = 40;
std::int64_t trace_bytes_per_measurement(const EngineSettings& s, int sm_count);

// A route measured end to end (--measure-route), the way a runtime takes
// it: each clock of `via` is requested in turn, the next once the wait after
// it has passed, then the target. One measurement runs from the first
// request until every SM runs at the target and stays there.
struct RouteHop {
  Mhz clock = 0;
  double wait_ms = 0;
};
struct RouteRequest {
  ClockPair pair;              // the route's first and last clock
  std::vector<RouteHop> via;   // empty: the direct change
  double expected_ms = 0;      // the longest it may take: sizes the capture and the iteration
};
struct RouteRun {
  RunState state;
  std::vector<PairResult> results;  // one per route, in the order given
};

struct Progress {
  std::size_t pair_number = 0;  // 1-based
  std::size_t pair_count = 0;
  ClockPair pair;
  int measurements = 0;
  double rse = 0;
  double eta_s = 0;  // estimated device time left
};

// One window as both detectors read it, with what the engine gave them.
struct WindowRead {
  ClockPair pair;
  const WindowRecords& records;
  Nanos request_gpu_ns = 0;
  const ClockCalibration& initial;
  const ClockCalibration& target;
  double initial_tol_ns = 0, target_tol_ns = 0;
};

class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void planned(const RunState&) {}
  // Every window once detected, the pilot's and the plan's sample's too
  // (the benchmarks time the detectors on them).
  virtual void window_read(const WindowRead&) {}
  virtual void pair_started(ClockPair, std::size_t /*number*/, std::size_t /*count*/) {}
  virtual void pair_finished(const PairResult&, const RunState&) {}
  virtual void progress(const Progress&) {}
  // Every step of a chained request's state machine (stream_request.hpp).
  virtual void request_transition(const RequestTransition&) {}
  // The run's last state (its cost), once every pair is done.
  virtual void finished(const RunState&) {}
};

}  // namespace latest
