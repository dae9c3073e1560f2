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

// Pilot pairs among the valid ones (SPEC §3.1): lowest to highest clock,
// highest to lowest, and the middle clock to the highest.
std::vector<ClockPair> pilot_pairs(const std::vector<ClockPair>& valid);

double capture_from_pilot(double longest_pilot_latency_ms, const PlanSettings& settings);

// Half the mean-duration step to the nearest other supported clock: a mean
// closer than this to the clock's own is nearer to it than to any neighbour.
double neighbour_tolerance_ns(Mhz clock, double mean_ns, const std::vector<Mhz>& supported);

}  // namespace latest
