#pragma once
// The methodology end to end (SPEC §3.1–§3.4): calibration, pair validity,
// pilot, the measurement loop with its stopping and throttling rules. Written
// only against the Workload and ClockControl interfaces.
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/calibration.hpp"
#include "core/clock_control.hpp"
#include "core/detection.hpp"
#include "core/planner.hpp"
#include "core/pooled_detection.hpp"
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
  std::string status;  // measured | skipped
  SkipReason reason;
  std::vector<MeasurementRow> rows;
  std::map<std::string, int> discarded;  // reason -> count
  std::map<std::string, int> failed;     // reason -> count
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
  // (docs/benchmarks/detector-host-time/ times the detectors on them).
  virtual void window_read(const WindowRead&) {}
  virtual void pair_started(ClockPair, std::size_t /*number*/, std::size_t /*count*/) {}
  virtual void pair_finished(const PairResult&, const RunState&) {}
  virtual void progress(const Progress&) {}
  // The run's last state (its cost), once every pair is done.
  virtual void finished(const RunState&) {}
};

class Engine {
 public:
  // `stop` is polled between windows; when it turns non-empty the engine
  // throws Interrupted with its text.
  Engine(Workload& workload, ClockControl& clocks, EngineSettings settings, RunObserver& observer,
         std::function<std::string()> stop = [] { return std::string(); });

  // Measures every pair not in `done`. Returns the state the manifest records.
  RunState run(const std::set<std::pair<Mhz, Mhz>>& done = {});
  // Phase 1, the pilot, the pair checks and the plan's sample of pairs
  // (measured to their stop and reported like a run's): the state with its
  // cost plan (RunState::cost).
  RunState plan(const std::set<std::pair<Mhz, Mhz>>& done = {});
  // Measures routes in one chained launch, taking turns, each to the RSE
  // stop. Needs a workload that streams (ErrorKind::not_supported else).
  RouteRun measure_routes(const std::vector<RouteRequest>& routes);

 private:
  // Everything before the pairs are measured; returns those to measure.
  std::vector<ClockPair> prepare(const std::set<std::pair<Mhz, Mhz>>& done);
  // Phase 1 for one clock at one iteration length (cached).
  const ClockCalibration& calibration(Mhz mhz, std::int64_t iteration_fmas);
  struct Attempt {
    Measurement measurement;  // the selected detector's
    Measurement paper;
    MeasurementRow row;
    WindowRecords records;
    Nanos request_gpu_ns = 0;
    double detection_cpu_s = 0;
    bool records_full = false;  // chained, not captured: the slice reached the records budget first
  };
  Attempt measure_once(ClockPair pair, const WindowPlan& plan);
  // Both detectors on a window's or a stream slice's records; fills the row.
  void detect(Attempt& a, ClockPair pair, std::int64_t fmas, const TimerSync& before, const TimerSync& after,
              Nanos t_s, Nanos t_r, const Telemetry& tel);
  // A pair is given up for the rest of the run; the reason goes to the manifest.
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
  // Keeps an accepted measurement (traces, throttle checks, the RSE stop);
  // true when the pair is complete.
  bool accept(PairProgress& p, Attempt& a, std::size_t count);
  // Counts a failed attempt; a measurement that failed every try counts once
  // more, and a pair with too many is skipped (SkipPair).
  void reject(PairProgress& p, const Attempt& a);
  // A failure that a longer capture (or, where the records budget ran out
  // first, a coarser iteration) may fix: raises the pair's, or skips it.
  void lengthen_capture(PairProgress& p, bool records_full);
  // A measurement refused on every try as not confirmed: the rest of the
  // pair runs at four times the iteration, up to 65536 FMAs (unless the
  // user fixed the iteration).
  void coarsen_iteration(PairProgress& p);
  void skip(PairProgress& p, const SkipReason& reason);
  PairResult measure_pair(ClockPair pair, std::size_t number, std::size_t count);
  // The chained schedule (chained_schedule.cpp): a group's pairs in one
  // launch, each request from where the one before left the clock, until
  // none needs more.
  std::vector<PairResult> measure_chained(const std::vector<ClockPair>& group, std::size_t first_number,
                                         std::size_t count);
  std::vector<PairResult> run_chained(std::vector<PairProgress>& pairs, std::size_t count);
  Attempt request_in_stream(ClockPair pair, const PairProgress& p, const std::vector<RouteHop>& via = {});
  void start_stream_at(Mhz init, std::int64_t fmas);
  // Every SM's last confirmation length of records (after `from`, per SM)
  // at this clock's calibrated rate, within half the step to its neighbour.
  bool settled_at(const std::vector<SmRecords>& sms, const std::vector<std::size_t>& from, Mhz mhz);
  void stop_stream();
  void cool_down();
  // One pair per target clock (the initial one farthest from it): the
  // chained schedule's pilot, which the plan needs per target.
  static std::vector<ClockPair> target_pilot_pairs(const std::vector<ClockPair>& pairs);
  double initial_capture_ms(ClockPair pair) const;
  // The iteration whose records hold a slice of (1 + settle_factor) x 1.5
  // the pilot's latency into the pair's target: the run's, or coarser for a
  // slow target.
  std::int64_t slice_fmas(ClockPair pair);
  // The plan of the pairs still to measure: their measurement counts from
  // `counts` (the sample's) or else from the pilot's spread.
  void plan_cost(const std::vector<ClockPair>& measured, const std::vector<double>& counts);
  // Both directions of a pair of clocks, as one group (the plan's sample,
  // and every group of the paper's schedule).
  static std::vector<std::vector<ClockPair>> groups_of(const std::vector<ClockPair>& todo);
  // The chained schedule's walks over the rest: pairs of one iteration
  // length, among the clocks of one block or between two blocks.
  std::vector<std::vector<ClockPair>> walks_of(const std::vector<ClockPair>& todo);
  // The iteration both directions of a pair of clocks run at, chained.
  std::int64_t walk_fmas(ClockPair pair);
  // The run's iteration, or a coarser one where the pooled detector needs
  // it for this pair's clocks (separable_fmas), unless the iteration is fixed.
  std::int64_t pair_fmas(ClockPair pair);
  // What the pooled detector needs: separable_iteration_fmas from the run's
  // iteration and its calibrations of the two clocks.
  std::int64_t separable_fmas(ClockPair pair);
  std::vector<PairResult> measure_group(const std::vector<ClockPair>& group, std::size_t first_number,
                                        std::size_t count);
  // Measures a sample of the groups to their stop and plans the rest from
  // it; returns the sample's indices.
  std::vector<std::size_t> measure_sample(const std::vector<std::vector<ClockPair>>& groups, std::size_t count);
  // The workload is told the request time: t_s where the caller took it.
  void set_clock(Mhz mhz, std::optional<Nanos> requested_at = std::nullopt);
  TimerSync synchronize();
  void check_stop();
  std::vector<ClockPair> check_pairs();
  // Neighbours in the supported clock table.
  bool adjacent(ClockPair pair) const;
  // Pilot measurements of each pair; the first `capture_pairs` set the
  // capture (10x their longest latency), which it returns.
  double run_pilot(const std::vector<ClockPair>& pilot, std::size_t capture_pairs);
  // Throws the pair's skip when the card reports power capping.
  void skip_if_power_capped(const Telemetry& telemetry, ClockPair pair);
  // Twice the longest switch into the clock seen in phase 1 and the pilot
  // (or the user's); each try after `initial_not_held` raises it, for the
  // tries of that measurement only, within a bound.
  double wakeup_for(Mhz init, int raises = 0) const;
  // The pilot's longest switch into `target`, 0 where it measured none.
  double longest_pilot_into(Mhz target) const;
  std::int64_t iteration_for(double capture_ms);
  void keep_traces(PairResult& result, const Attempt& attempt, int index);
  std::int64_t trace_bytes_ = 0;  // kept so far in the run
  double seconds_since_start();

  Workload& workload_;
  ClockControl& clocks_;
  EngineSettings settings_;
  RunObserver& observer_;
  std::function<std::string()> stop_;
  RunState state_;
  std::vector<Mhz> supported_;
  std::map<std::pair<Mhz, std::int64_t>, ClockCalibration> calibrations_;
  Mhz current_clock_ = 0;
  // The chained schedule's running launch: its clock (0 when none runs) and
  // the newest records of each SM, the start of the next request's slice.
  Mhz stream_clock_ = 0;
  std::int64_t stream_fmas_ = 0;
  std::vector<SmRecords> tail_;
  std::int64_t stream_bytes_ = 0;  // drained since the last request was measured
  double sync_seconds_ = 0;  // spent in timer syncs, for the plan
  Nanos started_ns_ = 0;
  double ns_per_fma_ = 0;  // at the fastest requested clock
  double measurement_gpu_ms_ = 0;
};

}  // namespace latest
