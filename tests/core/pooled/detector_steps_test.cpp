// Each step of the pooled detector (docs/methodology.md, "The pooled
// detector") on synthetic records where that step decides the outcome.
// The records: every SM's work advances at the clock's rate (one
// iteration's work takes T_initial, then T_target from the change on, with
// any ramp levels between), iteration boundaries where the work reaches a
// whole number (each SM at its own phase), read by a 32 ns timer. So the
// truth is exact: the time the last level began (the arrival) and when the
// first left the initial clock (the departure).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/pooled_detection.hpp"

namespace latest {
namespace {

constexpr double kTick = 32;
constexpr Nanos kRequest = 10'000'000;  // t_s on the GPU's axis
constexpr double kInitial = 2368, kTarget = 4736;  // 1980 and 990 MHz at 1024 FMAs

// The clock's iteration length from a moment on (ns after the request).
struct Level {
  double from_ns;
  double length_ns;
};

struct Window {
  int sms = 32;
  double start_ns = -3'000'000;  // the first boundary, after the request (negative: before it)
  double end_ns = 20'000'000;
  std::vector<Level> levels;     // in time order; before the first, kInitial
  double halt_ns = 0;            // every SM halts this long where the last level begins
  double drift_per_ms = 0;       // the target's length grows by this share per ms after the last level
};

// The work done by time t (in iterations), integrating the levels.
double work_at(const Window& w, double t) {
  double work = 0, from = w.start_ns, length = kInitial;
  for (const Level& l : w.levels) {
    if (t <= l.from_ns) break;
    work += (l.from_ns - from) / length;
    from = l.from_ns;
    length = l.length_ns;
    if (&l == &w.levels.back() && w.halt_ns > 0) {
      if (t <= from + w.halt_ns) return work;
      from += w.halt_ns;
    }
  }
  if (w.drift_per_ms != 0 && !w.levels.empty() && from >= w.levels.back().from_ns) {
    // The length grows linearly: integrate 1/(L0 (1 + k (t - from))).
    const double k = w.drift_per_ms / 1e6;
    return work + std::log1p(k * (t - from)) / (k * length);
  }
  return work + (t - from) / length;
}

WindowRecords records_of(const Window& w) {
  WindowRecords r;
  for (int sm = 0; sm < w.sms; ++sm) {
    const double phase = static_cast<double>(sm) / w.sms;  // spread over an iteration
    SmRecords rec;
    rec.sm = sm;
    // Boundary k where work = k + phase: found by bisection on the monotone work.
    std::vector<Nanos> boundaries;
    double lo = w.start_ns;
    for (long k = 0;; ++k) {
      const double goal = static_cast<double>(k) + phase;
      double a = lo, b = lo + 100'000;
      while (work_at(w, b) < goal) b += 100'000;
      for (int i = 0; i < 60; ++i) {
        const double m = (a + b) / 2;
        (work_at(w, m) < goal ? a : b) = m;
      }
      if (b > w.end_ns) break;
      boundaries.push_back(kRequest + static_cast<Nanos>(std::floor(b / kTick) * kTick));
      lo = b;
    }
    rec.first_start_ns = boundaries.front();
    for (std::size_t i = 1; i < boundaries.size(); ++i)
      rec.duration_ns.push_back(static_cast<std::uint32_t>(boundaries[i] - boundaries[i - 1]));
    r.sms.push_back(std::move(rec));
  }
  return r;
}

ClockCalibration calibration(Mhz mhz, double mean) {
  ClockCalibration c;
  c.mhz = mhz;
  c.pooled.iteration = {100'000, mean, 24};
  return c;
}

Measurement detect(const Window& w, double initial_mean = kInitial, double target_mean = kTarget) {
  // Tolerances: half the step to a neighbouring clock 15 MHz away.
  return detect_switch_pooled(records_of(w), kRequest, calibration(1980, initial_mean), calibration(990, target_mean),
                              0.5 * kInitial * 15 / 1980, 0.5 * kTarget * 15 / 990, PooledSettings{});
}

// Steps 1 and 2: the segments. No iteration before t_s: the initial clock
// cannot be checked. Records at another rate than phase 1's before t_s: the
// initial clock was not held; after the change: the target was not reached.
TEST(DetectorSteps, SegmentsDecideWhetherTheClocksWereHeld) {
  Window late_start;
  late_start.start_ns = 1'000;
  late_start.levels = {{4'000'000, kTarget}};
  EXPECT_EQ(detect(late_start).outcome, MeasurementOutcome::initial_not_held);
  Window short_window;
  short_window.levels = {{4'000'000, kTarget}};
  short_window.end_ns = 300'000;  // 126 initial iterations after t_s: less than twice the confirmation
  EXPECT_EQ(detect(short_window).outcome, MeasurementOutcome::not_captured);
  Window clean;
  clean.levels = {{4'000'000, kTarget}};
  EXPECT_EQ(detect(clean, kInitial * 1.01).outcome, MeasurementOutcome::initial_not_held) << "1 % off before t_s";
  EXPECT_EQ(detect(clean, kInitial, kTarget * 1.01).outcome, MeasurementOutcome::not_captured) << "1 % off after";
}

// Step 3: a window whose records never leave the final line holds no change.
TEST(DetectorSteps, NoChangeIsSeenWhereTheRecordsKeepOneRate) {
  Window none;
  none.levels = {};
  EXPECT_EQ(detect(none, kInitial, kInitial).outcome, MeasurementOutcome::initial_not_held);
}

// Steps 4 and 5: a jump inside an iteration is dated where it happened, by
// every SM's change point, to within a timer tick (measured: 0 to +17 ns).
TEST(DetectorSteps, AJumpIsDatedInsideItsIteration) {
  for (const double at_ns : {4'000'000.0, 4'001'111.0, 7'345'678.0}) {
    Window jump;
    jump.levels = {{at_ns, kTarget}};
    const Measurement m = detect(jump);
    ASSERT_EQ(m.outcome, MeasurementOutcome::accepted) << at_ns;
    EXPECT_NEAR(m.switching_ms * 1e6, at_ns, kTick) << at_ns;
    EXPECT_NEAR(m.transition_ms * 1e6, 0, kTarget) << "a jump has no transition to speak of";
    EXPECT_EQ(m.accepted_sms, 32);
    EXPECT_EQ(m.misfits, 0u);
    EXPECT_LT(m.uncertainty_us * 1e3, 0.5 * kTarget);
  }
}

// Steps 5 and 6: a ramp whose last level lasts three target iterations: the
// arrival is the start of the last level, not of the steeper step before.
TEST(DetectorSteps, TheArrivalIsTheStartOfTheLastLevel) {
  Window ramp;
  ramp.levels = {{3'000'000, 3000}, {3'200'000, 4000}, {3'400'000, 4600}, {3'414'000, kTarget}};
  const Measurement m = detect(ramp);
  ASSERT_EQ(m.outcome, MeasurementOutcome::accepted);
  // Measured: 276 ns early, 0.06 of a target iteration.
  EXPECT_NEAR(m.switching_ms * 1e6, 3'414'000, 0.25 * kTarget) << "within a quarter iteration of the last level";
  EXPECT_GT(m.switching_ms * 1e6, 3'400'000 - kTarget) << "never at the level before";
}

// Step 7: after the arrival the rate must stay: a length that keeps growing
// by 0.2 % a millisecond is no settled target.
TEST(DetectorSteps, ARateThatKeepsMovingIsNotConfirmed) {
  Window drift;
  drift.levels = {{4'000'000, kTarget}};
  drift.drift_per_ms = 0.002;
  EXPECT_NE(detect(drift).outcome, MeasurementOutcome::accepted);
}

// Step 8: the departure is where the first level began: the transition of a
// two-level ramp is the time from its first level to its last.
TEST(DetectorSteps, TheDepartureIsWhereTheFirstLevelBegan) {
  Window ramp;
  ramp.levels = {{3'000'000, 3500}, {3'600'000, kTarget}};
  const Measurement m = detect(ramp);
  ASSERT_EQ(m.outcome, MeasurementOutcome::accepted);
  EXPECT_NEAR(m.switching_ms * 1e6, 3'600'000, 0.25 * kTarget);
  EXPECT_NEAR(m.transition_ms * 1e6, 600'000, 0.25 * kInitial) << "measured: +39 ns";
}

// Step 9: every SM halted for 3 µs where the last level began is a stall,
// a misfit from 1 µs on; the arrival is after the halt.
TEST(DetectorSteps, AHaltOfEverySmIsAStall) {
  Window stall;
  stall.levels = {{3'000'000, 3500}, {3'600'000, kTarget}};
  stall.halt_ns = 3'000;
  const Measurement m = detect(stall);
  ASSERT_EQ(m.outcome, MeasurementOutcome::accepted);
  EXPECT_TRUE(m.misfits & static_cast<unsigned>(Misfit::stall)) << m.misfits;
  EXPECT_NEAR(m.switching_ms * 1e6, 3'603'000, 0.25 * kTarget) << "measured: +248 ns";
}

}  // namespace
}  // namespace latest
