#include "core/pooled_detection.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "recorded_window.hpp"

namespace latest {
namespace {

// One window through the pooled detector, as the engine calls it.
Measurement replay(const RecordedWindow& w) {
  return detect_switch_pooled(w.records, w.request_gpu_ns, w.initial, w.target, recorded_tolerance_ns(w.initial),
                              recorded_tolerance_ns(w.target), PooledSettings{});
}

RecordedWindow load(const std::filesystem::path& path) {
  RecordedWindow w = load_recorded_window(path);
  EXPECT_TRUE(w.complete) << path;
  return w;
}

// Measured within 2 µs of the emulated truth (the p99 on the H200,
// the dump's rounding of t_s included), or refused: never reported wrong.
// Returns whether it was measured.
bool measured_or_refused(const RecordedWindow& w, const Measurement& m) {
  if (m.outcome != MeasurementOutcome::accepted) {
    EXPECT_TRUE(m.outcome == MeasurementOutcome::not_confirmed || m.outcome == MeasurementOutcome::not_captured)
        << w.name << ": " << to_string(m.outcome);
    return false;
  }
  const double residual_us = (m.switching_ms - w.true_ms) * 1e3 - w.in_effect_us;
  EXPECT_LE(std::abs(residual_us), 2.0) << w.name;
  return true;
}

// Real records: on some H200s the SMs' common boundaries wander by tens of
// ns within a millisecond. The detector of cb4a17a refused six of the seven
// `bad-` windows (its fine scan settled milliseconds late) and measured 2 of
// the 8; the emulation's truth says when every SM ran at the target. Each
// window must be measured within 2 µs or refused. Until the detector
// measured the wander (quiet_scan_mean) it refused bad-c-w9 and bad-p-w7
// and measured 6; now all 8 are measured, within 0.72 µs.
// LATEST_REPLAY_WINDOWS=DIR replays every dumped window under DIR instead
// (docs/hardware/data/h200-2026-12-01-round12/callN-dumps.tar.xz, unpacked),
// one line each, with the same check and no counts:
// LATEST_REPLAY_WINDOWS=DIR build/unit_tests --gtest_filter='PooledDetection.*'
TEST(PooledDetection, RealH200WindowsWithWanderingBoundaries) {
  const char* other = std::getenv("LATEST_REPLAY_WINDOWS");
  const std::vector<std::filesystem::path> files = recorded_windows_in(other ? other : LATEST_H200_WINDOWS);
  if (!other) {
    ASSERT_EQ(files.size(), 8u) << LATEST_H200_WINDOWS;
  }
  int measured = 0, bad_measured = 0;
  for (const auto& file : files) {
    const RecordedWindow w = load(file);
    const Measurement m = replay(w);
    const bool ok = measured_or_refused(w, m);
    std::printf("%s %d->%d: %s, error %+.2f us\n", file.string().c_str(), w.initial.mhz, w.target.mhz,
                to_string(m.outcome), ok ? (m.switching_ms - w.true_ms) * 1e3 : 0.0);
    if (!ok) {
      if (!other) {
        EXPECT_EQ(m.outcome, MeasurementOutcome::not_confirmed) << w.name;
      }
      continue;
    }
    ++measured;
    bad_measured += w.name.rfind("bad-", 0) == 0;
  }
  std::printf("%d of %zu measured\n", measured, files.size());
  if (other) return;
  EXPECT_EQ(measured, 8);
  EXPECT_EQ(bad_measured, 7);
}

// A window the detector must measure, replayed: its error after the
// in-effect time (µs), printed with the stated uncertainty.
struct Replayed {
  RecordedWindow w;
  Measurement m;
  double residual_us = 0;
};
Replayed replay_measured_records(RecordedWindow w) {
  Replayed r{std::move(w), {}, 0};
  r.m = replay(r.w);
  EXPECT_EQ(r.m.outcome, MeasurementOutcome::accepted) << r.w.name;
  r.residual_us = (r.m.switching_ms - r.w.true_ms) * 1e3 - r.w.in_effect_us;
  std::printf("%s %d->%d: error - in effect %+.2f us, stated %.2f us\n", r.w.name.c_str(), r.w.initial.mhz,
              r.w.target.mhz, r.residual_us, r.m.uncertainty_us);
  return r;
}
Replayed replay_measured(const std::filesystem::path& file) { return replay_measured_records(load(file)); }

// Within -0.8 and +2 us (the p99 on the H200) of its truth.
void expect_within_h200_target(const Replayed& r) {
  EXPECT_GT(r.residual_us, -0.8) << r.w.name;
  EXPECT_LT(r.residual_us, 2.0) << r.w.name;
}

// `check` on each of the `count` windows under `dir`.
template <class Check>
void for_every_window(const char* dir, std::size_t count, Check check) {
  const std::vector<std::filesystem::path> files = recorded_windows_in(dir);
  ASSERT_EQ(files.size(), count) << dir;
  for (const auto& file : files) check(file);
}

// The `count` windows under `dir`, each measured within that target.
void expect_every_window_within_h200_target(const char* dir, std::size_t count) {
  for_every_window(dir, count, [](const auto& file) { expect_within_h200_target(replay_measured(file)); });
}

// Real records of the paper's schedule (a launch a measurement): 80 % of
// the SMs within 0 or 256 ns of each other through the window, so that
// (a) their stall bounds all span the same iteration and cannot narrow
// it, and (b) their boundaries sample the lag at the same moments, where
// their iteration lengths move together. Splitting the stall's span in the
// middle dated the 990 -> 1980 windows 1.0 to 1.2 us (0.4 iteration) early
// after their in-effect time and the 1980 -> 990 ones 1.7 to 4.4 us late;
// counting the pooled hinges' gains as if every SM were independent
// marched two 990 -> 1980 windows 8.7 and 21.6 us late (round 20 of
// the former hardware log (git history): 5 of 240 measurements early beyond the sync
// uncertainty, the selftest's verdict not met). Each must now be within
// -0.8 and +2 us (the p99 on the H200) of its truth.
TEST(PooledDetection, RealH200WindowsOfSmsInStep) {
  expect_every_window_within_h200_target(LATEST_H200_IN_STEP_WINDOWS, 10);
}

// Real records of a chained stream at 4096 FMAs, 1980 <-> 990 MHz, from one
// H200 (round 21 of the former hardware log (git history); core/data/README.md):
// - 1980 -> 990: the SMs whose boundary fell at the switch ran their first
//   target iteration 50 to 120 ns longer, the emulation's own cost. The
//   arrival's tail hinge read that as lag still owed and, from the first
//   time it could propose, a quarter iteration on, dated the four 4.1 to
//   4.2 us late (0.23 iteration); from 1/64 iteration on it moved them by
//   what that lag says (-0.2 to +1.9 us); reading from one iteration after
//   the arrival on, it leaves them at -0.5 to -0.4 us. Each must be within
//   -0.8 and +2 us of its truth.
// - 990 -> 1980: the SMs' phases span 4.4-5.4 of the iteration's 18.3 us, so
//   their mixed iterations together leave a stall anywhere between 0.17
//   and 7.3 us open (a longer stall, an earlier change); the middle dates
//   the two about 3 us early. Not yet resolved: each must stay within
//   three times its stated uncertainty.
TEST(PooledDetection, RealH200ChainedWindows) {
  for_every_window(LATEST_H200_CHAINED_WINDOWS, 6, [](const auto& file) {
    const Replayed r = replay_measured(file);
    if (r.w.target.mhz < r.w.initial.mhz) {
      expect_within_h200_target(r);
    } else {
      EXPECT_LE(std::abs(r.residual_us), 3 * r.m.uncertainty_us) << r.w.name;
    }
  });
}

// Real records of chained streams on one H100 (round 22 of
// the former hardware log (git history); core/data/README.md), six with each block's timing
// started blockIdx/gridDim of an iteration late, so that the SMs' phases
// spread over 6-16 us of the 9.3 and 18.4 us iterations, and one without.
// Each SM's first one or two target iterations after its own switch ran
// 10-20 ns long (the emulated switch's code path); spread over the
// iteration after the arrival, those excesses read as a lag still closing
// to the arrival's tail hinge when it read from the arrival on, which dated
// these 10-50 us (up to 2.7 target iterations) late. Each must be within
// -0.8 and +2 us of its truth. Those excesses are no level of a ramp (far
// under half a percent of the change an iteration), so they must not widen
// the stated uncertainty either: under one target iteration each (the tail
// hinge from the arrival on proposed 10.9-50.6 us, 0.6-2.7 iterations,
// until it asked for that rate too).
TEST(PooledDetection, RealH100WindowsWithSpreadPhases) {
  for_every_window(LATEST_H100_SPREAD_PHASE_WINDOWS, 7, [](const auto& file) {
    const Replayed r = replay_measured(file);
    expect_within_h200_target(r);
    EXPECT_LT(r.m.uncertainty_us * 1e3, r.w.target.pooled.iteration.mean) << r.w.name;
  });
}

// Real records of chained streams on one H200 (round 23 of
// the former hardware log (git history); core/data/README.md), 990 -> 1980 at 4096 FMAs.
// After the switch the rate of 2 ms stretches stayed within 1 ns of its
// mean, but single blocks of 64 iterations strayed 1.5-2.0 ns an iteration
// every 10-40 ms, past the relevance threshold's 1.4 ns: the scan settled
// on the last stray, 22-62 ms after the switch, no SM could place a change
// there, and the arrival fell to the scan's floor. Then a stray after 8
// quiet blocks was refused (PooledScan::stray). A level of the ramp lies
// at least half a percent of the change from the target
// (PooledSettings::relevant_change_share: 23 ns here), so the scans pass
// over these strays: each must be within -0.8 and +2 us of its truth.
TEST(PooledDetection, RealH200WindowsWithLateRateStraysAreMeasured) {
  expect_every_window_within_h200_target(LATEST_H200_LATE_STRAY_WINDOWS, 3);
}

// Real records of the paper's schedule on one H100 (round 27 of
// the former hardware log (git history); core/data/README.md), 1980 -> 990 at 1024 FMAs.
// Some SMs ran up to 13 ns of 4,824 an iteration slower for tens of ms,
// the pooled rate 2.2 ns off the target's: in `p1024-w12` from the switch
// (11 ms) to 71 ms, then back; in `p1024-w9` from 13 ms to the window's
// end. The scans took the return in w12 for the end of the switch (60 ms
// late, 55 us stated) and refused w9. Those levels are a twentieth of a
// percent of the change, no level of a ramp; the median SM's rate moved by
// less than the relevance threshold, so the segment after the switch is
// homogeneous. Each must be within -0.8 and +2 us of its truth.
TEST(PooledDetection, RealH100WindowsWithSomeSmsSlowedAfterTheSwitch) {
  expect_every_window_within_h200_target(LATEST_H100_SLOW_SMS_WINDOWS, 2);
}

// A real record of a chained stream on one H200 (round 23 of
// the former hardware log (git history); core/data/README.md), 990 -> 1980 at 4096 FMAs:
// the first 15 target iterations after the switch ran 3-5 ns long (of
// 9,287), so the pooled scan's latest significant bin lay 4.6 iterations
// after the switch, and the floor set there dated it 33 us late (25 us
// stated) where the SMs' own hinges placed it within 0.3 us. Between the
// two the records ran within half a percent of the change of the target's
// rate: a drift, no level of the ramp, and the floor does not bind. It
// must be within -0.8 and +2 us of its truth.
TEST(PooledDetection, RealH200WindowWithAPostSwitchDrift) {
  expect_every_window_within_h200_target(LATEST_H200_POST_SWITCH_DRIFT_WINDOW, 1);
}

// A real record of a chained stream on one H100 (round 43 of
// the former hardware log (git history); core/data/README.md), 1980 -> 990 at 4096 FMAs:
// every SM's own change point lies within 0.7 us before the in-effect
// time, and the first target iteration after the emulated switch lagged
// the final line by a few ns, so the scan's late bin ended 1.2 iterations
// on. The floor set there, 0.2 iterations after the SMs' estimate, bound
// (the stretch the drift test read between them held no whole iteration)
// and dated it 3.6 us late. It must be within -0.8 and +2 us of its truth.
TEST(PooledDetection, RealH100WindowWithAFloorWithinAnIteration) {
  expect_every_window_within_h200_target(LATEST_H100_NEAR_FLOOR_WINDOW, 1);
}

// A misfit is what a user should send us, so it must be material. No
// emulated window at one warp per SM carries one: every SM switches at one
// named time, with no stall (the switch's own code path halts the SMs'
// mixed iterations together by 50-90 ns, and the latest SM stands tens of
// ns from the next; both were flagged, 10-33 % of some runs, until a misfit
// had to reach 1 µs). Three windows at eight warps per SM, where a few SMs
// took the change 1-6 µs after the rest and the detector, dating the
// latest, came out 1.9-5.4 µs late while stating 0.03-0.41 µs, must carry
// `sms_disagree`, and state an uncertainty of at least a third of the error
// (the arrival's distance from the SM a tenth from the end).
TEST(PooledDetection, MisfitsAreMaterial) {
  const std::pair<const char*, std::size_t> one_warp[] = {
      {LATEST_H200_WINDOWS, 8},           {LATEST_H200_IN_STEP_WINDOWS, 10},   {LATEST_H200_CHAINED_WINDOWS, 6},
      {LATEST_H100_SPREAD_PHASE_WINDOWS, 7}, {LATEST_H200_LATE_STRAY_WINDOWS, 3}, {LATEST_H100_SLOW_SMS_WINDOWS, 2},
      {LATEST_H200_POST_SWITCH_DRIFT_WINDOW, 1}, {LATEST_H100_NEAR_FLOOR_WINDOW, 1}};
  int accepted = 0;
  for (const auto& [dir, count] : one_warp)
    for_every_window(dir, count, [&](const auto& file) {
      const RecordedWindow w = load(file);
      const Measurement m = replay(w);
      if (m.outcome != MeasurementOutcome::accepted) return;
      ++accepted;
      EXPECT_EQ(m.misfits, 0u) << w.name;
    });
  EXPECT_GE(accepted, 35);
  for_every_window(LATEST_H100_EIGHT_WARPS_WINDOWS, 3, [](const auto& file) {
    const Replayed r = replay_measured(file);
    EXPECT_GT(r.residual_us, 1.5) << r.w.name;  // late, as the card gave it
    EXPECT_NE(r.m.misfits & static_cast<unsigned>(Misfit::sms_disagree), 0u) << r.w.name;
    EXPECT_LE(r.residual_us, 3 * r.m.uncertainty_us) << r.w.name;
  });
}

// Records of one H200 (round 51 of the former hardware log (git history); core/data/README.md)
// where, at four emulated switches of one chained run, 59 to 66 of the 132
// SMs (pairs of neighbours, the same ones each time) ran one iteration 5.3
// to 31.6 us long just after their switch while the others ran on; in three
// of them those long iterations all ended within 0.1 us of one another.
// Those SMs had run at the target before they halted; by the switching
// latency's definition (every SM runs at the target and stays there), the
// truth is where the last of them resumed, which the emulation's in-effect
// time does not see: at the long iterations' end, or up to one target
// iteration before it (a halt at an iteration's start, its work after).
// The records alone cannot tell such a halt from an SM group that reached
// the target late either; both put the truth there. Each window must be
// refused, or carry `sms_disagree`, not be early against the earlier end of
// that stretch, and state an uncertainty that reaches both of its ends.
// With each halted SM's long iteration as long as the next one, the three
// it measures are within -0.8 and +2 us of the in-effect time and
// unflagged.
TEST(PooledDetection, RealH200WindowsWithHalfTheSmsHaltedAreDatedAtTheHaltsEnd) {
  int refused = 0;
  for_every_window(LATEST_H200_HALTED_SMS_WINDOWS, 4, [&](const auto& file) {
    RecordedWindow w = load(file);
    const Measurement m = replay(w);
    const double residual_us = (m.switching_ms - w.true_ms) * 1e3 - w.in_effect_us;
    // The halts: long iterations within 50 us of the switch; the latest end
    // of one after the in-effect time.
    const Nanos named = w.request_gpu_ns + std::llround(w.true_ms * 1e6);
    const Nanos in_effect = named + std::llround(w.in_effect_us * 1e3);
    std::vector<bool> here(w.records.sms.size());
    double halts_end_us = -1e9;
    for (const LongIteration& l : long_iterations(w.records)) {
      if (std::abs(l.start - named) > 50'000) continue;
      std::vector<std::uint32_t>& d = w.records.sms[l.sm].duration_ns;
      halts_end_us = std::max(halts_end_us, static_cast<double>(l.start + d[l.i] - in_effect) / 1e3);
      d[l.i] = d[l.i + 1];
      here[l.sm] = true;
    }
    const auto halted = std::count(here.begin(), here.end(), true);
    EXPECT_GE(halted, 59) << w.name;
    const double target_iteration_us = w.target.pooled.iteration.mean / 1e3;
    std::printf("%s: %s, error - in effect %+.2f us, the long iterations' end %+.2f us after in effect (a target "
                "iteration %.2f us), stated %.2f us, misfits %u\n",
                w.name.c_str(), to_string(m.outcome), residual_us, halts_end_us, target_iteration_us,
                m.uncertainty_us, m.misfits);
    if (m.outcome != MeasurementOutcome::accepted) {
      EXPECT_EQ(m.outcome, MeasurementOutcome::not_confirmed) << w.name;
      ++refused;
      return;
    }
    EXPECT_NE(m.misfits & static_cast<unsigned>(Misfit::sms_disagree), 0u) << w.name;
    EXPECT_GT(residual_us - (halts_end_us - target_iteration_us), -0.8) << w.name;
    EXPECT_LE(std::abs(residual_us - halts_end_us), m.uncertainty_us) << w.name;
    EXPECT_LE(residual_us - (halts_end_us - target_iteration_us), m.uncertainty_us) << w.name;
    const Replayed r = replay_measured_records(std::move(w));
    expect_within_h200_target(r);
    EXPECT_EQ(r.m.misfits, 0u) << r.w.name;
  });
  EXPECT_EQ(refused, 1);
}

// The boundary index of `sm` at or after GPU time t.
std::size_t index_at(const SmRecords& sm, Nanos t) {
  Nanos at = sm.first_start_ns;
  std::size_t i = 0;
  while (i < sm.duration_ns.size() && at < t) at += sm.duration_ns[i++];
  return i;
}

// An interrupt on one SM is taken out exactly: the window measures as the
// same window with that iteration as long as the one before it, that SM's
// own change included (an SM interrupted before the request, or after it
// but before its change, once dated it early by the interrupt's excess).
// Before the request, between the request and the change, just after the
// arrival and in the window's tail (where the lines are fitted), 40 µs long
// and 4.29 s long (the block's sum then passes 2^32 ns: the block pass's
// 32-bit sums must give way), on two SMs.
TEST(PooledDetection, AnInterruptIsTakenOutExactly) {
  const std::vector<std::filesystem::path> files = recorded_windows_in(LATEST_H200_WINDOWS);
  ASSERT_FALSE(files.empty());
  const RecordedWindow w = load(files.front());
  ASSERT_EQ(replay(w).outcome, MeasurementOutcome::accepted) << w.name;
  int cases = 0;
  for (const std::size_t sm : {std::size_t{0}, w.records.sms.size() / 3}) {
    const SmRecords& r = w.records.sms[sm];
    const std::size_t n = r.duration_ns.size();
    const Nanos arrival = w.request_gpu_ns + std::llround(w.true_ms * 1e6);
    const Nanos between = w.request_gpu_ns + (arrival - w.request_gpu_ns) / 2;
    for (const std::size_t k : {index_at(r, w.request_gpu_ns - 100'000), index_at(r, between),
                                index_at(r, arrival + 200'000), n - 200}) {
      ASSERT_GT(k, 0u);
      ASSERT_LT(k + 1, n);
      RecordedWindow base = w;
      auto& d = base.records.sms[sm].duration_ns;
      d[k] = d[k - 1];
      const Measurement expected = replay(base);
      ASSERT_EQ(expected.outcome, MeasurementOutcome::accepted) << w.name << " sm " << sm << " k " << k;
      for (const std::uint32_t length : {40'000u, 4'294'900'000u}) {
        // As the timer sees it: the clock does not wait for an interrupted
        // SM. Before its change (before the request or after it), the SM's
        // records before the interrupt come earlier by its excess and those
        // after it stay where they were; after the change, the later ones
        // come later.
        RecordedWindow hit = base;
        SmRecords& h = hit.records.sms[sm];
        if (index_at(r, arrival) > k) h.first_start_ns -= static_cast<Nanos>(length) - d[k - 1];
        h.duration_ns[k] = length;
        const Measurement m = replay(hit);
        ASSERT_EQ(m.outcome, MeasurementOutcome::accepted) << "sm " << sm << " k " << k << " length " << length;
        EXPECT_EQ(m.switching_ms, expected.switching_ms) << "sm " << sm << " k " << k << " length " << length;
        EXPECT_EQ(m.transition_ms, expected.transition_ms) << "sm " << sm << " k " << k << " length " << length;
        EXPECT_EQ(m.uncertainty_us, expected.uncertainty_us) << "sm " << sm << " k " << k << " length " << length;
        // The interrupted SM's own change too: the arrival can be set by others.
        ASSERT_EQ(m.per_sm.size(), expected.per_sm.size());
        EXPECT_EQ(m.per_sm[sm].arrival_ns, expected.per_sm[sm].arrival_ns) << "sm " << sm << " k " << k << " length " << length;
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 16);
}

}  // namespace
}  // namespace latest
