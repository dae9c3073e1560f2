#include "core/detection.hpp"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace latest
