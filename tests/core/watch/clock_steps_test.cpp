// The judge of real clock changes against exact truth: records made here
// from a known clock path (not the simulator's), each iteration a fixed
// number of cycles, its end read by a timer of 32 ns tick with jitter.
#include "core/watch/clock_steps.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace latest {
namespace {

struct Segment {
  double from_ns;  // the clock holds `mhz` from here
  double mhz;
};

// One SM's records over [0, end_ns) of `cycles` an iteration under `path`.
SmRecords make_records(const std::vector<Segment>& path, double cycles, double end_ns, std::uint64_t seed, int sm = 0,
                       double jitter_ns = 8, double tick_ns = 32) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> jitter(0, jitter_ns);
  const auto read = [&](double t) { return std::floor((t + jitter(rng)) / tick_ns) * tick_ns; };
  SmRecords r;
  r.sm = sm;
  double t = 1000 + std::uniform_real_distribution<double>(0, 1000)(rng);
  std::size_t seg = 0;
  double prev = read(t);
  r.first_start_ns = static_cast<Nanos>(prev);
  while (t < end_ns) {
    double left = cycles;
    for (;;) {  // the iteration's cycles at the clock of each segment it spans
      const double until = seg + 1 < path.size() ? path[seg + 1].from_ns : 1e18;
      const double ns = left * 1000.0 / path[seg].mhz;
      if (t + ns <= until) {
        t += ns;
        break;
      }
      left -= (until - t) * path[seg].mhz / 1000.0;
      t = until;
      ++seg;
    }
    const double now = std::max(prev, read(t));
    r.duration_ns.push_back(static_cast<std::uint32_t>(now - prev));
    r.cycles.push_back(static_cast<std::uint32_t>(cycles));
    prev = now;
  }
  return r;
}

// A path from 1980 MHz through `n` changes of random size from `sizes`,
// each held 5-60 ms.
std::vector<Segment> random_path(std::mt19937_64& rng, int n, const std::vector<double>& sizes, double& end_ns) {
  std::vector<Segment> path{{0, 1980}};
  std::uniform_real_distribution<double> hold(5e6, 60e6);
  double t = hold(rng);
  for (int i = 0; i < n; ++i) {
    const double size = sizes[rng() % sizes.size()];
    const double mhz = path.back().mhz + (path.back().mhz - size < 900 || rng() % 2 ? size : -size);
    path.push_back({t, mhz});
    t += hold(rng);
  }
  end_ns = t;
  return path;
}

TEST(ClockSteps, HeldClockHasNoStep) {
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    const SmRecords r = make_records({{0, 1755}}, 16384, 80e6, seed);
    EXPECT_TRUE(find_sm_steps(r, {}).empty()) << "seed " << seed;
  }
}

TEST(ClockSteps, AdjacentClocksArePlacedWithinTheirUncertainty) {
  // 15 MHz steps, the hardest: an iteration's own clock scatters by about
  // 4 MHz from the tick alone. Every change is found and placed within
  // 1 µs and four of its own standard deviations.
  int changes = 0;
  double worst_ns = 0;
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    std::mt19937_64 rng(seed);
    double end = 0;
    const auto path = random_path(rng, 6, {15}, end);
    const SmRecords r = make_records(path, 16384, end, seed);
    const auto steps = find_sm_steps(r, {});
    ASSERT_EQ(steps.size(), path.size() - 1) << "seed " << seed;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const double err = static_cast<double>(steps[i].arrival_ns) - path[i + 1].from_ns;
      EXPECT_TRUE(steps[i].jump());
      EXPECT_NEAR(steps[i].before_mhz, path[i].mhz, 0.5);
      EXPECT_NEAR(steps[i].after_mhz, path[i + 1].mhz, 0.5);
      EXPECT_LT(std::abs(err), 1000) << "seed " << seed << " change " << i;
      EXPECT_LT(std::abs(err), 4 * steps[i].arrival_uncertainty_ns + 32) << "seed " << seed << " change " << i;
      worst_ns = std::max(worst_ns, std::abs(err));
      ++changes;
    }
  }
  EXPECT_EQ(changes, 72);
  RecordProperty("worst_error_ns", static_cast<int>(worst_ns));
}

TEST(ClockSteps, LargeJumpsArePlacedWithinTwoHundredNanoseconds) {
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    std::mt19937_64 rng(seed + 100);
    double end = 0;
    const auto path = random_path(rng, 5, {150, 210, 450}, end);
    const SmRecords r = make_records(path, 8192, end, seed);
    const auto steps = find_sm_steps(r, {});
    ASSERT_EQ(steps.size(), path.size() - 1) << "seed " << seed;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      EXPECT_TRUE(steps[i].jump()) << "seed " << seed << " change " << i;
      const double err = static_cast<double>(steps[i].arrival_ns) - path[i + 1].from_ns;
      EXPECT_LT(std::abs(err), 200) << "seed " << seed << " change " << i;
      EXPECT_LT(std::abs(err), 4 * steps[i].arrival_uncertainty_ns + 32) << "seed " << seed << " change " << i;
    }
  }
}

TEST(ClockSteps, ARampKeepsItsLevelsAndEnds) {
  // 1980 down to 1755 in four levels of 300 µs, and back up in one jump.
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    const double t0 = 20e6 + seed * 1e5;
    const std::vector<Segment> path{{0, 1980},       {t0, 1920},      {t0 + 3e5, 1860}, {t0 + 6e5, 1800},
                                    {t0 + 9e5, 1755}, {t0 + 30e6, 1980}};
    const SmRecords r = make_records(path, 4096, t0 + 50e6, seed);
    const auto steps = find_sm_steps(r, {});
    ASSERT_EQ(steps.size(), 2u) << "seed " << seed;
    EXPECT_FALSE(steps[0].jump());
    ASSERT_EQ(steps[0].ramp_levels_mhz.size(), 3u);
    EXPECT_NEAR(steps[0].ramp_levels_mhz[0], 1920, 1);
    EXPECT_NEAR(steps[0].ramp_levels_mhz[2], 1800, 1);
    // Levels of 300 µs tilt the lines that place the ramp's ends.
    const double departure_err = static_cast<double>(steps[0].departure_ns) - t0;
    const double arrival_err = static_cast<double>(steps[0].arrival_ns) - (t0 + 9e5);
    EXPECT_LT(std::abs(departure_err), std::min(600.0, 4 * steps[0].departure_uncertainty_ns + 32)) << "seed " << seed;
    EXPECT_LT(std::abs(arrival_err), std::min(600.0, 4 * steps[0].arrival_uncertainty_ns + 32)) << "seed " << seed;
    EXPECT_NEAR(static_cast<double>(*steps[0].holds_ns), 30e6 - 9e5, 800);
    EXPECT_TRUE(steps[1].jump());
    EXPECT_FALSE(steps[1].holds_ns);
  }
}

TEST(ClockSteps, WiggleSmallerThanAStepIsNoChange) {
  // ±3 MHz every millisecond: below half a clock step, so one level.
  std::vector<Segment> path;
  for (int k = 0; k < 60; ++k) path.push_back({k * 1e6, 1740.0 + (k % 2 ? 3 : -3)});
  const SmRecords r = make_records(path, 4096, 60e6, 5);
  EXPECT_TRUE(find_sm_steps(r, {}).empty());
}

TEST(ClockSteps, SmsThatMoveTogetherShareAGroup) {
  // Eight SMs in two groups 20 µs apart take the same two changes.
  std::vector<SmStep> all;
  for (int sm = 0; sm < 8; ++sm) {
    const double skew = sm < 4 ? 0 : 20'000;
    const std::vector<Segment> path{{0, 1980}, {15e6 + skew, 1770}, {45e6 + skew, 1785}};
    for (SmStep& s : find_sm_steps(make_records(path, 8192, 70e6, 40 + sm, sm), {})) all.push_back(s);
  }
  const auto cards = group_card_steps(all, {});
  ASSERT_EQ(cards.size(), 2u);
  for (const CardStep& c : cards) {
    ASSERT_EQ(c.sms.size(), 8u);
    EXPECT_NEAR(static_cast<double>(c.spread_ns()), 20'000, 2'000);
    for (std::size_t i = 0; i < c.sms.size(); ++i) EXPECT_EQ(c.groups[i], c.sms[i].sm < 4 ? 0 : 1);
  }
  EXPECT_NEAR(cards[0].after_mhz() - cards[0].before_mhz(), -210, 0.5);
  EXPECT_NEAR(cards[1].after_mhz() - cards[1].before_mhz(), 15, 0.5);
}

}  // namespace
}  // namespace latest
