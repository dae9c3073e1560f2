#include "core/planner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace latest {

std::int64_t iteration_fmas_for(double capture_ms, double ns_per_fma_at_fastest,
                                const PlanSettings& s) {
  if (s.iteration_fmas) return *s.iteration_fmas;
  const auto capture_budget = std::max<std::int64_t>(
      1, s.max_recorded_iterations - s.delay_iterations - s.confirmation_iterations);
  const double want_ns = capture_ms * 1e6 / static_cast<double>(capture_budget);
  std::int64_t fmas = std::max<std::int64_t>(s.min_iteration_fmas, 1);
  while (static_cast<double>(fmas) * ns_per_fma_at_fastest < want_ns) fmas *= 2;
  return fmas;
}

WindowPlan plan_window(double capture_ms, double wakeup_ms, const ClockCalibration& initial,
                       const ClockCalibration& target, const PlanSettings& s) {
  WindowPlan p;
  p.iteration_fmas = initial.iteration_fmas;
  p.capture_ms = capture_ms;
  p.wakeup_ms = wakeup_ms;
  const double init_ns = initial.pooled.iteration.mean;
  const double fast_ns = std::min(init_ns, target.pooled.iteration.mean);
  const double slow_ns = std::max(init_ns, target.pooled.iteration.mean);
  p.warmup_iterations = static_cast<std::int64_t>(std::ceil(wakeup_ms * 1e6 / init_ns));
  p.delay_iterations = s.delay_iterations;
  p.delay_ms = static_cast<double>(s.delay_iterations) * init_ns / 1e6;
  // Capture counted at the faster clock, so it lasts at least capture_ms.
  const auto capture_iterations = static_cast<std::int64_t>(std::ceil(capture_ms * 1e6 / fast_ns));
  p.recorded_iterations = s.delay_iterations + capture_iterations + s.confirmation_iterations;
  p.gpu_ms = window_gpu_ms(wakeup_ms, p.delay_ms, capture_ms,
                           static_cast<double>(s.confirmation_iterations) * slow_ns / 1e6);
  return p;
}

double window_gpu_ms(double wakeup_ms, double delay_ms, double capture_ms, double confirmation_ms) {
  return wakeup_ms + delay_ms + capture_ms + confirmation_ms;
}

RunEstimate estimate_run(const PlanSettings& p, std::size_t clocks, std::size_t pairs, int measurements_per_pair) {
  RunEstimate e;
  e.capture_fixed = p.capture_ms.has_value();
  e.capture_ms = p.capture_ms.value_or(p.capture_factor * p.pilot_capture_ms);
  e.wakeup_fixed = p.wakeup_ms.has_value();
  e.wakeup_ms = p.wakeup_ms.value_or(std::max(p.min_wakeup_ms, 50.0));
  const double per_measurement_s = window_gpu_ms(e.wakeup_ms, 0, e.capture_ms, 0.1 * e.capture_ms) / 1e3;
  e.calibration_s = static_cast<double>(clocks) * (p.calibration_settle_ms / 1e3 + 0.1);
  // Three pilot pairs, each window grown up to ten times the first.
  e.pilot_s = e.capture_fixed ? 0.0
                              : 3.0 * p.pilot_measurements * window_gpu_ms(e.wakeup_ms, 0, p.pilot_capture_ms * 10, 0) / 1e3;
  e.measurements_s = static_cast<double>(pairs) * measurements_per_pair * per_measurement_s;
  return e;
}

std::vector<ClockPair> ordered_pairs(const std::vector<Mhz>& clocks, PairDirection direction) {
  std::vector<ClockPair> pairs;
  for (Mhz a : clocks)
    for (Mhz b : clocks) {
      if (a == b) continue;
      if (direction == PairDirection::increasing && b < a) continue;
      if (direction == PairDirection::decreasing && b > a) continue;
      pairs.push_back({a, b});
    }
  return pairs;
}

std::vector<ClockPair> pilot_pairs(const std::vector<ClockPair>& valid) {
  if (valid.empty()) return {};
  std::vector<Mhz> clocks;
  for (const auto& p : valid) {
    clocks.push_back(p.init);
    clocks.push_back(p.target);
  }
  std::sort(clocks.begin(), clocks.end());
  clocks.erase(std::unique(clocks.begin(), clocks.end()), clocks.end());
  const Mhz lo = clocks.front(), hi = clocks.back();
  const Mhz mid = clocks[clocks.size() / 2];
  std::vector<ClockPair> wanted = {{lo, hi}, {hi, lo}, {mid, hi}, {mid, lo}};
  std::vector<ClockPair> chosen;
  for (const auto& w : wanted) {
    if (chosen.size() == 3) break;
    if (std::find(valid.begin(), valid.end(), w) != valid.end() &&
        std::find(chosen.begin(), chosen.end(), w) == chosen.end())
      chosen.push_back(w);
  }
  for (const auto& v : valid) {  // too few of the wanted ones are valid
    if (chosen.size() >= std::min<std::size_t>(3, valid.size())) break;
    if (std::find(chosen.begin(), chosen.end(), v) == chosen.end()) chosen.push_back(v);
  }
  return chosen;
}

double capture_from_pilot(double longest_pilot_latency_ms, const PlanSettings& s) {
  return std::clamp(s.capture_factor * longest_pilot_latency_ms, s.min_capture_ms, s.max_capture_ms);
}

double neighbour_tolerance_ns(Mhz clock, double mean_ns, const std::vector<Mhz>& supported) {
  double nearest = std::numeric_limits<double>::infinity();
  for (Mhz f : supported)
    if (f != clock) nearest = std::min(nearest, std::abs(static_cast<double>(f - clock)));
  if (!std::isfinite(nearest)) nearest = 0.05 * clock;
  // Durations scale as 1/f: the neighbour's mean is mean * clock / (clock ± step).
  const double neighbour_mean = mean_ns * clock / (clock + nearest);
  return 0.5 * std::abs(mean_ns - neighbour_mean);
}

}  // namespace latest
