#include "core/detection.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/statistics.hpp"

namespace latest {
namespace {

Band band(double mean, double sd) {
  Band b;
  b.iteration = {1'000'000, mean, sd};
  return b;
}

// Durations with a ±1-tick flip pattern, as a 32 ns timer gives them.
struct Trace {
  SmRecords rec;
  Nanos now = 0;
  void add(std::uint32_t duration, int count) {
    for (int i = 0; i < count; ++i) {
      rec.duration_ns.push_back(duration);
      now += duration;
    }
  }
  void add_flipping(std::uint32_t duration, int count) {  // d-32, d+32, d-32, ...
    for (int i = 0; i < count; ++i) add(i % 2 ? duration + 32 : duration - 32, 1);
  }
};

DetectionSettings settings() {
  DetectionSettings s;
  s.target_tol_ns = 9;
  s.initial_tol_ns = 9;
  return s;
}

const Band kInit = band(2368, 16);     // 1980 MHz at 1024 FMAs
const Band kTarget = band(4736, 16);   // 990 MHz

TEST(Detection, FindsArrivalAndDeparture) {
  Trace t;
  t.add(2368, 500);
  const Nanos request = t.now;  // t_s at the start of iteration 500
  t.add(2368, 200);
  const Nanos departure = t.now;  // iteration 700 starts the ramp
  t.add(3000, 3);
  t.add(4736, 1000);
  const SmDetection d = detect_on_sm(t.rec, request, kInit, kTarget, settings());
  ASSERT_EQ(d.outcome, SmOutcome::accepted);
  EXPECT_EQ(d.departure_ns, departure);
  EXPECT_EQ(d.arrival_ns, departure + 3 * 3000 + 4736);
}

TEST(Detection, TickFlipBurstsDoNotFakeADeparture) {
  Trace t;
  t.add(2368, 500);
  const Nanos request = t.now;
  t.add_flipping(2368, 60);  // ±32 ns flips: each beyond the ±2σ band
  t.add(2368, 100);
  const Nanos departure = t.now;
  t.add(4736, 1000);
  const SmDetection d = detect_on_sm(t.rec, request, kInit, kTarget, settings());
  ASSERT_EQ(d.outcome, SmOutcome::accepted);
  EXPECT_EQ(d.departure_ns, departure);
}

TEST(Detection, NoTargetIterationsIsNotCaptured) {
  Trace t;
  t.add(2368, 500);
  const Nanos request = t.now;
  t.add(3500, 2000);  // stuck between the clocks
  const SmDetection d = detect_on_sm(t.rec, request, kInit, kTarget, settings());
  EXPECT_EQ(d.outcome, SmOutcome::no_candidate);
}

TEST(Detection, ArrivalTooCloseToTheEndIsShortConfirmation) {
  Trace t;
  t.add(2368, 500);
  const Nanos request = t.now;
  t.add(2368, 900);
  t.add(4736, 50);
  EXPECT_EQ(detect_on_sm(t.rec, request, kInit, kTarget, settings()).outcome, SmOutcome::short_confirmation);
}

TEST(Detection, InitialClockNotHeldBeforeTheRequest) {
  Trace t;
  t.add(2600, 500);  // still switching to the initial clock
  const Nanos request = t.now;
  t.add(4736, 1000);
  EXPECT_EQ(detect_on_sm(t.rec, request, kInit, kTarget, settings()).outcome, SmOutcome::initial_not_held);
}

TEST(Detection, CandidateThatFailsConfirmationIsPassedOver) {
  Trace t;
  t.add(2368, 500);
  const Nanos request = t.now;
  t.add(4736, 1);    // one in-band iteration by chance
  t.add(4690, 300);  // a neighbouring clock: 46 ns off, far beyond tol
  const Nanos real = t.now;
  t.add(4736, 1000);
  const SmDetection d = detect_on_sm(t.rec, request, kInit, kTarget, settings());
  ASSERT_EQ(d.outcome, SmOutcome::accepted);
  EXPECT_EQ(d.arrival_ns, real + 4736);
}

TEST(Detection, ConfirmationAcceptsWithinToleranceAndRejectsTheNeighbourClock) {
  // Calibrated at 4736; the SM then runs 4741 on average (drifted by 5 ns,
  // under tol = 9 ns): accepted although the interval excludes 0.
  Trace near;
  near.add(2368, 500);
  const Nanos request = near.now;
  for (int i = 0; i < 600; ++i) near.add(i % 2 ? 4746 : 4736, 1);
  EXPECT_EQ(detect_on_sm(near.rec, request, kInit, kTarget, settings()).outcome, SmOutcome::accepted);
  // One 15 MHz step away (about 18 ns): rejected on every candidate.
  Trace far;
  far.add(2368, 500);
  for (int i = 0; i < 600; ++i) far.add(i % 2 ? 4718 + 32 : 4718 - 32, 1);
  EXPECT_EQ(detect_on_sm(far.rec, request, kInit, kTarget, settings()).outcome, SmOutcome::confirmation_failed);
}

TEST(Detection, MeasurementIsTheMaximumOverAcceptedSms) {
  ClockCalibration init, target;
  init.pooled = kInit;
  target.pooled = kTarget;
  WindowRecords w;
  Nanos request = 0;
  for (int sm = 0; sm < 3; ++sm) {
    Trace t;
    t.rec.sm = sm;
    t.add(2368, 500);
    request = t.now;
    t.add(2368, 100 + sm * 10);  // SM 2 arrives last
    t.add(4736, 1000);
    w.sms.push_back(t.rec);
  }
  Trace stuck;  // an SM that never confirms does not count
  stuck.rec.sm = 3;
  stuck.add(2368, 2000);
  w.sms.push_back(stuck.rec);
  const Measurement m = detect_switch(w, request, init, target, settings());
  ASSERT_EQ(m.outcome, MeasurementOutcome::accepted);
  EXPECT_EQ(m.accepted_sms, 3);
  EXPECT_EQ(m.max_sm, 2);
  EXPECT_DOUBLE_EQ(m.switching_ms, (120 * 2368 + 4736) / 1e6);
  EXPECT_DOUBLE_EQ(m.sm_spread_ms, 20 * 2368 / 1e6);
  EXPECT_DOUBLE_EQ(m.transition_ms, 4736 / 1e6);  // a jump: departure is the arrival iteration
}

TEST(Detection, NothingAcceptedNamesTheCommonestReason) {
  ClockCalibration init, target;
  init.pooled = kInit;
  target.pooled = kTarget;
  WindowRecords w;
  Trace t;
  t.add(2368, 500);
  const Nanos request = t.now;
  t.add(2368, 1000);
  w.sms.push_back(t.rec);
  EXPECT_EQ(detect_switch(w, request, init, target, settings()).outcome, MeasurementOutcome::not_captured);
}

// The paper's test as it was: the running mean and variance of the stretch.
bool holds_by_running_moments(const std::vector<std::uint32_t>& d, std::size_t from, std::size_t to, const Band& band,
                              double tol_ns, double confidence) {
  MomentAccumulator acc;
  for (std::size_t i = from; i < to; ++i) acc.add(d[i]);
  const Moments m = acc.moments();
  return std::abs(m.mean - band.iteration.mean) < tol_ns || !means_differ(m, band.iteration, confidence);
}

// BandTest answers from exact sums where that is clear, sliding them along:
// it must give the running moments' answer always, most of all where the
// stretch's mean sits at the tolerance or at Welch's edge, and however the
// stretches move (forward, overlapping, back, apart). Durations as a timer
// gives them (ticks of 32 ns about a mean, now and then an interrupt).
TEST(Detection, BandTestGivesTheRunningMomentsAnswer) {
  std::mt19937_64 rng(11);
  int cases = 0, holds = 0;
  for (int trace = 0; trace < 40; ++trace) {
    std::vector<std::uint32_t> d(3000);
    const std::uint32_t base = 2000 + static_cast<std::uint32_t>(rng() % 3000);
    for (auto& x : d) x = base + 32 * static_cast<std::uint32_t>(rng() % 3) + (rng() % 500 == 0 ? 40'000 : 0);
    BandTest test(d);
    std::size_t from = 0;
    for (int k = 0; k < 150; ++k) {
      // Mostly forward by a little (the candidates), sometimes anywhere.
      from = rng() % 8 ? std::min<std::size_t>(from + rng() % 5, 2000) : rng() % 2000;
      const std::size_t to = from + 2 + rng() % (rng() % 2 ? 500 : 900);
      MomentAccumulator acc;
      for (std::size_t i = from; i < to; ++i) acc.add(d[i]);
      const Moments m = acc.moments();
      const double tol = 1 + static_cast<double>(rng() % 20);
      // A band whose mean lies at the tolerance from the stretch's (a few
      // ulp either side), or at Welch's edge, or anywhere near.
      double band_mean = m.mean + (rng() % 2 ? tol : -tol);
      const int kind = static_cast<int>(rng() % 3);
      if (kind == 0) {
        for (int u = static_cast<int>(rng() % 7) - 3; u != 0; u += u > 0 ? -1 : 1)
          band_mean = std::nextafter(band_mean, u > 0 ? 1e300 : -1e300);
      }
      Band b = band(band_mean, 5 + static_cast<double>(rng() % 40));
      b.iteration.n = 2 + static_cast<std::int64_t>(rng() % 100000);
      if (kind == 1) {
        // Where the interval's half-width equals the distance of the means.
        const Interval ci = difference_interval(m, b.iteration, 0.95);
        b.iteration.mean = m.mean + (ci.high - ci.low) / 2 * (1 + 1e-12 * static_cast<double>(rng() % 5) - 2e-12);
      } else if (kind == 2) {
        b.iteration.mean = m.mean + (static_cast<double>(rng() % 2001) - 1000) / 10;
      }
      const bool expected = holds_by_running_moments(d, from, to, b, tol, 0.95);
      ASSERT_EQ(test.holds(from, to, b, tol, 0.95), expected) << "trace " << trace << " [" << from << ", " << to << ")";
      holds += expected;
      ++cases;
    }
  }
  EXPECT_EQ(cases, 6000);
  EXPECT_GT(holds, 1000);
  EXPECT_LT(holds, 5000);
}

}  // namespace
}  // namespace latest
