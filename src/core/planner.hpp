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

// The device time of a run, estimated before anything is measured: phase 1,
// the pilot and `measurements_per_pair` measurements of every pair. Until
// the pilot has run the capture is assumed (10x the first pilot window), and
// delay plus confirmation, fixed only with the iteration length, are taken
// as a tenth of the capture.
struct RunEstimate {
  double wakeup_ms = 0;
  bool wakeup_fixed = false;  // given by the user, not from phase 1
  double capture_ms = 0;
  bool capture_fixed = false;  // given by the user, not from the pilot
  double calibration_s = 0;
  double pilot_s = 0;
  double measurements_s = 0;
  double total_s() const { return calibration_s + pilot_s + measurements_s; }
};
RunEstimate estimate_run(const PlanSettings& settings, std::size_t clocks, std::size_t pairs,
                         int measurements_per_pair);

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
