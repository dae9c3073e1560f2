// Accuracy against known truth: the numbers `latest selftest` and the
// engine benchmark report, on measurements whose answers are made up here.
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "core/accuracy.hpp"
#include "support/emulated_results.hpp"

namespace latest {
namespace {
using testing::emulated_pair;

TEST(Accuracy, SummaryUsesNumpyQuantiles) {
  const Summary s = summarise({5, 1, 4, 2, 3, 10, 7, 6, 9, 8});
  EXPECT_DOUBLE_EQ(s.p5, 1.45);
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_EQ(s.n, 10u);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.median, 5.5);
  EXPECT_DOUBLE_EQ(s.p95, 9.55);  // numpy.quantile(range(1, 11), 0.95)
  EXPECT_DOUBLE_EQ(s.p99, 9.91);
  EXPECT_DOUBLE_EQ(s.max, 10);
  EXPECT_EQ(summarise({}).n, 0u);
  EXPECT_TRUE(std::isnan(summarise({}).median));
}

TEST(Accuracy, OneTargetIterationAfterTheSwitchIsWithinTheBound) {
  std::mt19937_64 rng(11);
  const std::vector<PairResult> results = {emulated_pair({1980, 990}, 4800, 1.0, rng),
                                           emulated_pair({990, 1980}, 2500, 1.0, rng)};
  const Accuracy a = accuracy_against_truth(results);
  ASSERT_EQ(a.measurements.size(), 100u);
  ASSERT_TRUE(a.residual_iterations && a.excess_us && a.in_effect_us && a.delivery_us);
  EXPECT_NEAR(a.residual_iterations->median, 1.0, 0.03);
  EXPECT_NEAR(a.residual_iterations->max, 1.0, 0.03);
  EXPECT_NEAR(a.excess_us->median, -1.1, 0.06);
  EXPECT_TRUE(a.within_bound());
  EXPECT_DOUBLE_EQ(a.delivery_us->median, 2.0);
  EXPECT_GE(a.in_effect_us->min, 3);
  EXPECT_LE(a.in_effect_us->max, 8);
  // Every measurement knows its own target iteration and bound.
  for (const auto& m : a.measurements) {
    ASSERT_TRUE(m.target_iteration_ns && m.bound_us);
    EXPECT_DOUBLE_EQ(*m.bound_us, *m.target_iteration_ns / 1e3 + 1.1);
  }
}

TEST(Accuracy, TwoTargetIterationsAreNot) {
  std::mt19937_64 rng(12);
  const Accuracy a = accuracy_against_truth({emulated_pair({1980, 990}, 4800, 2.0, rng)});
  EXPECT_NEAR(a.residual_iterations->median, 2.0, 0.03);
  EXPECT_NEAR(a.excess_us->median, 4.8 - 1.1, 0.06);
  EXPECT_FALSE(a.within_bound());
}

TEST(Accuracy, TheVerdictIsTwoSided) {
  std::mt19937_64 rng(14);
  // Exact (the pooled detector): within the bound, nothing early.
  const Accuracy exact = accuracy_against_truth({emulated_pair({1980, 990}, 4800, 0.0, rng)});
  EXPECT_TRUE(exact.within_bound());
  ASSERT_TRUE(exact.early_share);
  EXPECT_DOUBLE_EQ(*exact.early_share, 0);
  // Two target iterations early: out, both ways of looking at it.
  const Accuracy early = accuracy_against_truth({emulated_pair({1980, 990}, 4800, -2.0, rng)});
  EXPECT_GT(early.excess_us->median, 0);
  EXPECT_DOUBLE_EQ(*early.early_share, 1.0);
  EXPECT_FALSE(early.within_bound());
  // Half an iteration early: the median is within the bound, but every
  // measurement is early beyond the sync uncertainty.
  const Accuracy half = accuracy_against_truth({emulated_pair({1980, 990}, 4800, -0.5, rng)});
  EXPECT_LE(half.excess_us->median, 0);
  EXPECT_FALSE(half.within_bound());
}

// Measurements later than one target iteration + the sync uncertainty are
// counted: up to the bound none is, beyond it each, and more than 1 % fail
// the verdict.
TEST(Accuracy, LateBeyondTheBoundIsCountedBesideTheVerdict) {
  std::mt19937_64 rng(15);
  for (const double iterations : {0.0, 1.0}) {
    const Accuracy a = accuracy_against_truth({emulated_pair({1980, 990}, 4800, iterations, rng)});
    ASSERT_TRUE(a.late_share);
    EXPECT_DOUBLE_EQ(*a.late_share, 0) << iterations;
  }
  const Accuracy late = accuracy_against_truth({emulated_pair({1980, 990}, 4800, 2.0, rng)});
  EXPECT_DOUBLE_EQ(*late.late_share, 1.0);
  // A third of them late, the median exact: the verdict holds, and the share says the rest.
  std::vector<PairResult> mixed = {emulated_pair({1980, 990}, 4800, 0.0, rng), emulated_pair({1980, 990}, 4800, 0.0, rng),
                                   emulated_pair({1980, 990}, 4800, 3.0, rng)};
  const Accuracy some = accuracy_against_truth(mixed);
  EXPECT_NEAR(*some.late_share, 1.0 / 3, 1e-12);
  // The verdict is two-sided: at most 1 % late beyond the bound, as early.
  EXPECT_LE(some.excess_us->median, 0);
  EXPECT_FALSE(some.within_bound());
  std::vector<PairResult> one_late(99, emulated_pair({1980, 990}, 4800, 0.0, rng));
  one_late.push_back(emulated_pair({1980, 990}, 4800, 3.0, rng));
  one_late.back().rows.resize(1);
  for (auto& r : one_late) r.rows.resize(1);
  EXPECT_TRUE(accuracy_against_truth(one_late).within_bound());
}

TEST(Accuracy, WithoutEmulationOnlyTheErrorIsKnown) {
  PairResult r;
  r.pair = {1500, 600};
  MeasurementRow with, without;
  with.switching_ms = 12.006;
  with.truth = SwitchTruth{12.0, 3.0};
  r.rows = {with, without};
  // Without its target iteration a measurement has no error in iterations.
  const Accuracy a = accuracy_against_truth({r});
  ASSERT_EQ(a.measurements.size(), 1u);
  EXPECT_NEAR(a.error_us.median, 6.0, 1e-9);
  EXPECT_FALSE(a.error_iterations || a.residual_us || a.excess_us);
  EXPECT_FALSE(a.within_bound());
  r.rows[0].target_iteration_ns = 5000;
  const Accuracy b = accuracy_against_truth({r});
  ASSERT_TRUE(b.error_iterations);
  EXPECT_NEAR(b.error_iterations->median, 1.2, 1e-9);
}

}  // namespace
}  // namespace latest
