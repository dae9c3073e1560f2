// The selftest's settings and verdict.
#include "core/selftest.hpp"

#include <gtest/gtest.h>

namespace latest {
namespace {

TEST(Selftest, DefaultClocksAreTheCardsAndAboutHalf) {
  std::vector<Mhz> h200;
  for (Mhz f = 345; f <= 1980; f += 15) h200.push_back(f);
  EXPECT_EQ(default_selftest_clocks(h200), (std::vector<Mhz>{1980, 990}));
  EXPECT_EQ(default_selftest_clocks({300, 700, 1000, 1410}), (std::vector<Mhz>{1410, 700}));
}

TEST(Selftest, CaptureHoldsTheLongestLatencyWithoutAPilot) {
  const EngineSettings s = selftest_engine_settings({1980, 990}, {50, 20, 1024, true});
  EXPECT_EQ(s.pairs.size(), 2u);
  EXPECT_EQ(s.min_measurements, 20);
  EXPECT_EQ(s.max_measurements, 20);
  ASSERT_TRUE(s.plan.capture_ms);
  EXPECT_DOUBLE_EQ(*s.plan.capture_ms, 80);
  EXPECT_EQ(s.plan.iteration_fmas, 1024);
  EXPECT_TRUE(s.save_traces);
  EXPECT_DOUBLE_EQ(s.plan.max_capture_ms, 80) << "a missed switch fails; windows never grow past L's range";
}

TEST(Selftest, VerdictFollowsTheMedianExcessAndTheEarlyShare) {
  Accuracy a;
  EXPECT_EQ(selftest_verdict(a), SelftestVerdict::not_evaluated);
  a.excess_us = Summary{};
  a.excess_us->median = -0.5;
  a.early_share = 0.0;
  EXPECT_EQ(selftest_verdict(a), SelftestVerdict::passed);
  a.early_share = 0.02;
  EXPECT_EQ(selftest_verdict(a), SelftestVerdict::failed) << "2 % early";
  a.early_share = 0.0;
  a.excess_us->median = 0.1;
  EXPECT_EQ(selftest_verdict(a), SelftestVerdict::failed);
}

}  // namespace
}  // namespace latest
