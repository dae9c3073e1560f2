#include "core/planner.hpp"

#include <gtest/gtest.h>

namespace latest {
namespace {

ClockCalibration cal(Mhz mhz, double mean, std::int64_t fmas) {
  ClockCalibration c;
  c.mhz = mhz;
  c.iteration_fmas = fmas;
  c.pooled.iteration = {100000, mean, 16};
  return c;
}

TEST(Planner, IterationIsThePowerOfTwoThatFitsTheCapture) {
  PlanSettings s;  // 32768 records, 500 delay + 1000 confirmation
  // 2.3 ns per FMA at the fastest clock; 50 ms over 31268 iterations needs
  // 1599 ns, so 1024 FMAs (2355 ns), not 512 (1178 ns).
  EXPECT_EQ(iteration_fmas_for(50, 2.3, s), 1024);
  EXPECT_EQ(iteration_fmas_for(0.001, 2.3, s), s.min_iteration_fmas);
  s.iteration_fmas = 777;
  EXPECT_EQ(iteration_fmas_for(5000, 2.3, s), 777);
}

// Two clocks whose iterations differ by 88 ns at 2048 FMAs against a 24 ns
// sd (an H200 pair two steps apart): 32 sd is 768 ns, reached at 16x the
// iteration (704 ns at 8x is still short), so 32768 FMAs; a wide pair keeps its
// iteration; the doubling stops at the coarsest, and never makes a given
// iteration finer.
TEST(Planner, SeparableIterationDoublesUntilTheDifferenceIsWellAboveTheNoise) {
  EXPECT_EQ(separable_iteration_fmas(2048, 88, 24), 32768);
  EXPECT_EQ(separable_iteration_fmas(2048, -88, 24), 32768);
  EXPECT_EQ(separable_iteration_fmas(2048, 768, 24), 2048);
  EXPECT_EQ(separable_iteration_fmas(2048, 767, 24), 4096);
  EXPECT_EQ(separable_iteration_fmas(2048, 4000, 24), 2048);
  EXPECT_EQ(separable_iteration_fmas(2048, 1, 24), kCoarsestIterationFmas);
  EXPECT_EQ(separable_iteration_fmas(2048, 1, 24, 8192), 8192);
  EXPECT_EQ(separable_iteration_fmas(131072, 1, 24), 131072);
}

TEST(Planner, WindowCoversDelayCaptureAndConfirmation) {
  PlanSettings s;
  const WindowPlan p = plan_window(100, 20, cal(1980, 2000, 1024), cal(990, 4000, 1024), s);
  EXPECT_EQ(p.iteration_fmas, 1024);
  EXPECT_EQ(p.warmup_iterations, 10000);  // 20 ms at the initial 2 us
  EXPECT_EQ(p.delay_iterations, 500);
  EXPECT_DOUBLE_EQ(p.delay_ms, 1.0);
  // Capture counted at the slower (target) clock: 100 ms / 4 us, so the
  // decrease's window lasts what was planned, not twice as long.
  EXPECT_EQ(p.recorded_iterations, 500 + 25000 + 1000);
  EXPECT_DOUBLE_EQ(p.gpu_ms, 20 + 1 + 100 + 1000 * 4000 / 1e6);
}

TEST(Planner, PilotTakesLowHighAndMiddle) {
  std::vector<ClockPair> all;
  for (Mhz a : {600, 900, 1200, 1500})
    for (Mhz b : {600, 900, 1200, 1500})
      if (a != b) all.push_back({a, b});
  const auto pilot = pilot_pairs(all);
  ASSERT_EQ(pilot.size(), 3u);
  EXPECT_EQ(pilot[0], (ClockPair{600, 1500}));
  EXPECT_EQ(pilot[1], (ClockPair{1500, 600}));
  EXPECT_EQ(pilot[2], (ClockPair{1200, 1500}));
  EXPECT_EQ(pilot_pairs({{900, 600}}).size(), 1u);
}

TEST(Planner, CaptureIsTenTimesThePilotWithinLimits) {
  PlanSettings s;
  EXPECT_DOUBLE_EQ(capture_from_pilot(7.5, s), 75);
  EXPECT_DOUBLE_EQ(capture_from_pilot(5000, s), s.max_capture_ms);
  EXPECT_DOUBLE_EQ(capture_from_pilot(0.01, s), s.min_capture_ms);
}

TEST(Planner, ToleranceIsHalfTheStepToTheNearestClock) {
  const std::vector<Mhz> table = {1950, 1965, 1980};
  // Neighbour 1965 MHz is 15 MHz away: its mean would be 2368*1980/1995 from
  // the faster side; half the gap is 8.90 ns.
  EXPECT_NEAR(neighbour_tolerance_ns(1980, 2368, table), 0.5 * (2368 - 2368.0 * 1980 / 1995), 1e-9);
  EXPECT_NEAR(neighbour_tolerance_ns(1980, 2368, table), 8.90, 0.01);
}

TEST(Planner, OrderedPairsKeepTheGivenOrder) {
  EXPECT_EQ(ordered_pairs({1410, 705, 1095}),
            (std::vector<ClockPair>{{1410, 705}, {1410, 1095}, {705, 1410}, {705, 1095}, {1095, 1410}, {1095, 705}}));
  EXPECT_EQ(ordered_pairs({1410, 705, 1095}, PairDirection::increasing),
            (std::vector<ClockPair>{{705, 1410}, {705, 1095}, {1095, 1410}}));
  EXPECT_EQ(ordered_pairs({1410, 705}, PairDirection::decreasing), (std::vector<ClockPair>{{1410, 705}}));
}

TEST(Planner, RseStopCountsComeFromTheCoefficientOfVariation) {
  // n = (cv / rse)^2, rounded up to the next check, within [min, max].
  EXPECT_EQ(measurements_for_rse(0.03, 0.05, 25, 500, 25), 25);   // n = 0.36
  EXPECT_EQ(measurements_for_rse(0.3, 0.05, 25, 500, 25), 50);    // n = 36
  EXPECT_EQ(measurements_for_rse(0.5, 0.05, 25, 500, 25), 100);   // n = 100 exactly
  EXPECT_EQ(measurements_for_rse(0.51, 0.05, 25, 500, 25), 125);  // n = 104
  EXPECT_EQ(measurements_for_rse(5.0, 0.05, 25, 500, 25), 500);   // capped
  EXPECT_EQ(measurements_for_rse(0.3, 0.05, 40, 500, 25), 40);    // n = 36 < min
}

TEST(Planner, CostOfEachScheduleByHand) {
  CostModelInputs in;
  in.plan.delay_iterations = 500;
  in.plan.confirmation_iterations = 1000;
  in.pilot_cvs = {0.03, 0.3};  // 25 and 50 measurements
  in.sync_ms = 0.25;
  in.poll_share = 0.25;
  in.capture_ms = 100;
  // 1000 -> 2000: 10 ms, iterations 2 us at the target, 4 us at the initial clock.
  in.pairs = {{{1000, 2000}, 10, 2000, 4000, 6}, {{2000, 1000}, 20, 4000, 2000, 8}};

  in.schedule = Schedule::paper;
  CostPlan paper = plan_cost(in);
  EXPECT_DOUBLE_EQ(paper.measurements_per_pair, 37.5);
  // Per window: wake-up + 500 delay iterations at the initial clock +
  // capture + 1000 confirmation iterations at the slower clock (4 us).
  const double first = 6 + 2 + 100 + 4, second = 8 + 1 + 100 + 4;
  EXPECT_NEAR(paper.measurements_s, 37.5 * (first + second) / 1e3, 1e-9);

  in.schedule = Schedule::chained;
  in.settle_factor = 1;
  CostPlan chained = plan_cost(in);
  // The two directions alternate: E[max of two draws of {25, 50}] = 43.75
  // rounds, each a request both ways: the longer of latency + 1000 target
  // iterations and twice the latency (settle factor 1), half a poll share
  // of the confirmation, two syncs; one launch's wake-up and delay.
  const double up = 2 * 10 + 2 * 0.125 + 0.5, down = 2 * 20 + 4 * 0.125 + 0.5;
  EXPECT_NEAR(chained.measurements_s, (6 + 2) / 1e3 + 43.75 * (up + down) / 1e3, 1e-9);
  EXPECT_LT(chained.measurements_s, paper.measurements_s);
}

// A walk leaves a clock by another of its pairs: with the same counts, a
// clock with two pairs in and two out forces fewer measurements past the
// stops than two alternating pairs of clocks do. Counts {25, 50}: the sum of
// two draws is 50, 75 or 100 (1/4, 1/2, 1/4), so E[max(0, in - out)] at A
// is 25 x 1/8 + 50 x 1/16 + 25 x 1/8 = 9.375, against 6.25 per pair of
// clocks (E[max(0, one draw - another)]) alternating, twice at A.
TEST(Planner, WalkCostCountsWhatEachClockForces) {
  CostModelInputs in;
  in.schedule = Schedule::chained;
  in.plan.delay_iterations = 500;
  in.plan.confirmation_iterations = 1000;
  in.measurement_counts = {25, 50};
  in.sync_ms = 0.25;
  in.poll_share = 0.25;
  in.settle_factor = 1;
  const Mhz a = 1980, b = 1500, c = 990;
  // Every request alike: twice the 10 ms latency (longer than 10 + 2 ms of
  // confirmation), a quarter of a poll of 2 ms, two syncs: 20.75 ms.
  const double request = 20 + 0.25 + 0.5;
  const double launch = 6 + 1;  // wake-up, 500 delay iterations of 2 us
  for (ClockPair p : {ClockPair{a, b}, ClockPair{b, a}, ClockPair{a, c}, ClockPair{c, a}})
    in.pairs.push_back({p, 10, 2000, 2000, 6});
  const double alternating = plan_cost(in).measurements_s;
  EXPECT_NEAR(alternating, (2 * launch + 2 * 43.75 * 2 * request) / 1e3, 1e-9);
  for (auto& pp : in.pairs) pp.walk = 0;
  const double walk = plan_cost(in).measurements_s;
  EXPECT_NEAR(walk, (launch + 37.5 * 4 * request + (9.375 + 6.25 + 6.25) * request) / 1e3, 1e-9);
  EXPECT_LT(walk, alternating);
}

}  // namespace
}  // namespace latest
