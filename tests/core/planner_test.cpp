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

TEST(Planner, WindowCoversDelayCaptureAndConfirmation) {
  PlanSettings s;
  const WindowPlan p = plan_window(100, 20, cal(1980, 2000, 1024), cal(990, 4000, 1024), s);
  EXPECT_EQ(p.iteration_fmas, 1024);
  EXPECT_EQ(p.warmup_iterations, 10000);  // 20 ms at the initial 2 us
  EXPECT_EQ(p.delay_iterations, 500);
  EXPECT_DOUBLE_EQ(p.delay_ms, 1.0);
  // Capture counted at the faster (initial) clock: 100 ms / 2 us.
  EXPECT_EQ(p.recorded_iterations, 500 + 50000 + 1000);
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

TEST(Planner, RunEstimateAddsPhaseOnePilotAndMeasurements) {
  PlanSettings p;
  // Before the pilot: a 500 ms capture (10x the 50 ms first pilot window),
  // a 50 ms wake-up, delay and confirmation as a tenth of the capture.
  const RunEstimate e = estimate_run(p, 4, 12, 25);
  EXPECT_FALSE(e.capture_fixed);
  EXPECT_DOUBLE_EQ(e.capture_ms, 500);
  EXPECT_DOUBLE_EQ(e.wakeup_ms, 50);
  EXPECT_DOUBLE_EQ(e.calibration_s, 4 * 1.1);
  EXPECT_DOUBLE_EQ(e.pilot_s, 3 * 5 * 0.55);
  EXPECT_NEAR(e.measurements_s, 12 * 25 * 0.6, 1e-9);
  EXPECT_NEAR(e.total_s(), 4.4 + 8.25 + 180, 1e-9);
  p.capture_ms = 20;
  p.wakeup_ms = 10;
  const RunEstimate fixed = estimate_run(p, 2, 2, 10);
  EXPECT_TRUE(fixed.capture_fixed && fixed.wakeup_fixed);
  EXPECT_DOUBLE_EQ(fixed.pilot_s, 0) << "a given capture needs no pilot";
  EXPECT_NEAR(fixed.measurements_s, 2 * 10 * (10 + 22) / 1e3, 1e-9);
}

}  // namespace
}  // namespace latest
