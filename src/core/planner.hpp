#pragma once
// Planning the measurement windows (SPEC §3.1) and sizing the iteration so
// that a window's records stay bounded (SPEC §3.0, "mind the volume").
#include <cstdint>
#include <optional>
#include <vector>

#include "core/calibration.hpp"
#include "core/types.hpp"

namespace latest {

struct PlanSettings {
  std::int64_t delay_iterations = 500;         // at the initial clock before t_s
  std::int64_t confirmation_iterations = 1000; // at the target clock after the capture
  std::int64_t max_recorded_iterations = 32768;// per SM per window: 256 KiB of records
  std::int64_t min_iteration_fmas = 256;       // the finest resolution offered
  std::optional<std::int64_t> iteration_fmas;  // user override: fixed iteration length
  std::optional<double> capture_ms;            // user override: skips the pilot
  std::optional<double> wakeup_ms;             // user override
  double pilot_capture_ms = 50;    // first pilot window, grown x10 until captured
  double max_capture_ms = 10'000;  // a switch slower than this skips its pair
  double min_capture_ms = 1;
  double capture_factor = 10;      // capture = factor x longest pilot latency
  int pilot_measurements = 5;
  std::int64_t calibration_iterations = 32768;  // recorded in the first and last kernel
  double calibration_settle_ms = 1000;          // unrecorded kernel between them
  double min_wakeup_ms = 5;
};

// The shortest iteration (a power of two FMAs, at least the minimum) whose
// window of `capture_ms` fits in the recorded-iteration budget at the fastest
// clock. Powers of two keep the number of distinct lengths, and so of
// calibrations, small.
std::int64_t iteration_fmas_for(double capture_ms, double ns_per_fma_at_fastest,
                                 const PlanSettings& settings);

// The coarsest iteration the engine moves a pair to (65536 FMAs: about
// 130 µs an iteration at 2 GHz).
inline constexpr std::int64_t kCoarsestIterationFmas = 65536;

// What the pooled detector needs of a pair's iteration: the two clocks'
// iteration lengths `difference_ns` apart (at `fmas`) by at least
// kRampLevels times `sd_ns` (their calibrated iteration sd), so that the
// last level of a ramp in that many equal levels still lags a boundary by
// about one sd an iteration. Closer, the last level of a linear ramp lies
// within the records' noise for iterations, and the arrival was dated up to
// 2.1 target iterations early (docs/decisions/0005-separable-iteration.md).
// Returns `fmas` doubled as often as that takes (the
// difference grows with the iteration, the timer's noise does not), at most
// `coarsest`.
inline constexpr double kRampLevels = 32;
std::int64_t separable_iteration_fmas(std::int64_t fmas, double difference_ns, double sd_ns,
                                      std::int64_t coarsest = kCoarsestIterationFmas);

struct WindowPlan {
  std::int64_t iteration_fmas = 0;
  std::int64_t warmup_iterations = 0;   // separate kernel that reaches the initial clock
  std::int64_t delay_iterations = 0;
  std::int64_t recorded_iterations = 0; // delay + capture + confirmation
  double wakeup_ms = 0;
  double delay_ms = 0;                  // host sleep after launch before t_s
  double capture_ms = 0;
  double gpu_ms = 0;                    // expected device time of one measurement
};

WindowPlan plan_window(double capture_ms, double wakeup_ms, const ClockCalibration& initial,
                       const ClockCalibration& target, const PlanSettings& settings);

// The device time of one measurement window, all four parts (SPEC §3.1).
double window_gpu_ms(double wakeup_ms, double delay_ms, double capture_ms, double confirmation_ms);

// Which schedule measures the pairs (docs/methodology.md, "Schedules").
// chained: many switches per launch, each request issued as soon as the one
// before it is confirmed; paper: one switch per launch after a wake-up, with
// a capture of 10x the longest pilot latency.
enum class Schedule { chained, paper };
const char* to_string(Schedule schedule);

// How many measurements the RSE stop takes for a pair whose latencies have
// this coefficient of variation (sd / mean): the RSE is cv / sqrt(n), so
// n = (cv / rse)^2, rounded up to the next check (every `check_every` from
// the minimum on) and kept within [min, max].
int measurements_for_rse(double cv, double rse, int min_measurements, int max_measurements, int check_every);

// The plan of a run once phase 1 and the pilot are done: what each pair will
// cost, from what the pilot measured. The model (docs/methodology.md,
// "Plan"):
// - measurements per pair: measurements_for_rse of each pilot pair's cv,
//   the pilot pairs standing for all pairs;
// - paper schedule, per measurement: wake-up + delay + capture +
//   confirmation, as planned for its window;
// - chained schedule, per measurement: the latency (the pilot's for the
//   pair's target clock: the target dominates a switch's latency), then the
//   longer of the confirmation at the target and `settle_factor` latencies,
//   half a poll and two timer syncs; per walk (the pairs of one launch),
//   one launch's wake-up. Every arrival at a clock is followed by a
//   departure, so where a clock's pairs in take more measurements than its
//   pairs out, the difference is measured on past their stops: per clock,
//   E[max(0, sum of its pairs in - sum of its pairs out)], each a draw of
//   the measurement count, at the mean request of its pairs out. For the
//   two directions of one pair of clocks that is the expected maximum of
//   two draws, each a round both ways.
struct PlannedPair {
  ClockPair pair;
  double latency_ms = 0;        // expected, from the pilot
  double iteration_ns = 0;      // at the target clock
  double init_iteration_ns = 0; // at the initial clock
  double wakeup_ms = 0;         // of the initial clock
  int walk = -1;                // chained: the walk (launch) it is in; -1: a launch of its pair of clocks
};
struct CostModelInputs {
  Schedule schedule = Schedule::chained;
  std::vector<PlannedPair> pairs;
  std::vector<double> pilot_cvs;  // one per pilot pair with two or more latencies
  // Measurement counts per pair, where known (a finished run: to check the
  // cost model apart from the count's estimate); else from pilot_cvs.
  std::vector<double> measurement_counts;
  double capture_ms = 0;          // the paper's run-wide capture
  double sync_ms = 0;             // one timer sync, as measured
  double poll_share = 0.25;       // a poll every this share of the confirmation
  double settle_factor = 1.0;     // records after the arrival, in switch lengths
  double rse = 0.05;
  int min_measurements = 25, max_measurements = 500, check_every = 25;
  PlanSettings plan;
};
struct CostPlan {
  double measurements_per_pair = 0;  // expected, from the pilot's spread
  double measurements_s = 0;         // the pairs' GPU seconds
};
CostPlan plan_cost(const CostModelInputs& inputs);

// Every ordered pair of distinct clocks, in the order given, or only those
// that raise or lower the clock.
enum class PairDirection { all, increasing, decreasing };
std::vector<ClockPair> ordered_pairs(const std::vector<Mhz>& clocks, PairDirection direction = PairDirection::all);

// Pilot pairs among the valid ones (SPEC §3.1): lowest to highest clock,
// highest to lowest, and the middle clock to the highest.
std::vector<ClockPair> pilot_pairs(const std::vector<ClockPair>& valid);

double capture_from_pilot(double longest_pilot_latency_ms, const PlanSettings& settings);

// Half the mean-duration step to the nearest other supported clock: a mean
// closer than this to the clock's own is nearer to it than to any neighbour.
double neighbour_tolerance_ns(Mhz clock, double mean_ns, const std::vector<Mhz>& supported);

}  // namespace latest
