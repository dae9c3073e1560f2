#include "core/selftest.hpp"

#include <algorithm>
#include <cstdlib>

#include "core/planner.hpp"

namespace latest {

std::vector<Mhz> default_selftest_clocks(const std::vector<Mhz>& supported) {
  const Mhz card = supported.back();
  Mhz half = supported.front();
  for (Mhz f : supported)
    if (std::abs(f - card / 2) < std::abs(half - card / 2)) half = f;
  return {card, half};
}

EngineSettings selftest_engine_settings(const std::vector<Mhz>& clocks, const SelftestSettings& st) {
  EngineSettings s;
  s.clocks = clocks;
  s.pairs = ordered_pairs(clocks);
  s.min_measurements = s.max_measurements = st.measurements;
  // L's range is known, so no pilot: the capture holds the longest L, and a
  // switch it misses is a failure, not a reason for longer windows. A
  // window's iterations are counted at the slower clock (plan_window), so
  // before a decrease the card runs them faster and the window is shorter:
  // it holds L only where the capture is L times the clocks' ratio. At 1.5
  // times L, 1980 -> 990 MHz windows on an H100 missed every L above ~42 of
  // 50 ms (up to 10 tries of 60 failed, and once the pair was skipped). A
  // tenth more, and 5 ms for the confirmation.
  const auto [slowest, fastest] = std::minmax_element(clocks.begin(), clocks.end());
  const double ratio = clocks.empty() ? 1.0 : static_cast<double>(*fastest) / static_cast<double>(*slowest);
  s.plan.capture_ms = st.max_latency_ms * std::max(1.5, 1.1 * ratio) + 5;
  s.plan.max_capture_ms = *s.plan.capture_ms;
  s.plan.iteration_fmas = st.iteration_fmas;
  s.save_traces = st.save_traces;
  s.detector = st.detector;
  s.schedule = st.schedule;
  return s;
}

SelftestVerdict selftest_verdict(const Accuracy& a) {
  if (!a.excess_us) return SelftestVerdict::not_evaluated;
  return a.within_bound() ? SelftestVerdict::passed : SelftestVerdict::failed;
}

}  // namespace latest
