// The selftest's settings and verdict.
#include "core/selftest.hpp"

#include <utility>
#include <vector>

#include "core/planner.hpp"

#include <gtest/gtest.h>

namespace latest {
namespace {

TEST(Selftest, DefaultClocksAreTheCardsAndAboutHalf) {
  std::vector<Mhz> h200;
  for (Mhz f = 345; f <= 1980; f += 15) h200.push_back(f);
  EXPECT_EQ(default_selftest_clocks(h200), (std::vector<Mhz>{1980, 990}));
  EXPECT_EQ(default_selftest_clocks({300, 700, 1000, 1410}), (std::vector<Mhz>{1410, 700}));
}

// The window's iterations after the request, run at the initial clock until
// the longest L and at the target's after it, outlast L by the
// confirmation in both directions (a decrease runs its first L faster
// than the window was counted at), for clocks two and three times apart.
TEST(Selftest, CaptureHoldsTheLongestLatencyWithoutAPilot) {
  for (const auto& [clocks, capture_ms] :
       std::vector<std::pair<std::vector<Mhz>, double>>{{{1980, 990}, 115}, {{1980, 1500, 660}, 170}}) {
    const EngineSettings s = selftest_engine_settings(clocks, {50, 20, 1024, true});
    EXPECT_EQ(s.pairs.size(), clocks.size() * (clocks.size() - 1));
    EXPECT_EQ(s.min_measurements, 20);
    EXPECT_EQ(s.max_measurements, 20);
    ASSERT_TRUE(s.plan.capture_ms);
    EXPECT_DOUBLE_EQ(*s.plan.capture_ms, capture_ms);
    EXPECT_EQ(s.plan.iteration_fmas, 1024);
    EXPECT_TRUE(s.save_traces);
    EXPECT_DOUBLE_EQ(s.plan.max_capture_ms, capture_ms) << "a missed switch fails; windows never grow past L's range";
    for (const ClockPair& pair : s.pairs) {
      const auto calibration = [](Mhz mhz) {
        ClockCalibration c;
        c.mhz = mhz;
        c.iteration_fmas = 1024;
        c.pooled.iteration = {1000, 2'380.0 * 1980 / mhz, 12};
        return c;
      };
      const ClockCalibration initial = calibration(pair.init), target = calibration(pair.target);
      const WindowPlan plan = plan_window(capture_ms, 1, initial, target, s.plan);
      const double after_request = static_cast<double>(plan.recorded_iterations - plan.delay_iterations);
      const double longest_ns = 50e6, initial_ns = initial.pooled.iteration.mean;
      const double after_switch_ns = (after_request - longest_ns / initial_ns) * target.pooled.iteration.mean;
      const double confirmation_ns = static_cast<double>(s.plan.confirmation_iterations) * target.pooled.iteration.mean;
      EXPECT_GE(after_switch_ns, 1e6 + confirmation_ns) << pair.init << " -> " << pair.target;
    }
  }
}

TEST(Selftest, VerdictFollowsTheMedianExcessAndTheEarlyAndLateShares) {
  Accuracy a;
  EXPECT_EQ(selftest_verdict(a), SelftestVerdict::not_evaluated);
  a.excess_us = Summary{};
  a.excess_us->median = -0.5;
  a.early_share = 0.0;
  a.late_share = 0.01;
  EXPECT_EQ(selftest_verdict(a), SelftestVerdict::passed);
  a.early_share = 0.02;
  EXPECT_EQ(selftest_verdict(a), SelftestVerdict::failed) << "2 % early";
  a.early_share = 0.0;
  a.late_share = 0.02;
  EXPECT_EQ(selftest_verdict(a), SelftestVerdict::failed) << "2 % late";
  a.late_share = 0.0;
  a.excess_us->median = 0.1;
  EXPECT_EQ(selftest_verdict(a), SelftestVerdict::failed);
}

}  // namespace
}  // namespace latest
