#include <cmath>
#include <map>

#include <gtest/gtest.h>

#include "backends/sim/sim_backend.hpp"
#include "core/calibration.hpp"
#include "core/error.hpp"

namespace latest::sim {
namespace {

WindowRecords window(SimGpu& gpu, std::int64_t fmas, std::int64_t iterations) {
  gpu.launch({fmas, 0, iterations});
  return gpu.collect();
}

TEST(Sim, SameSeedSameRecords) {
  SimGpu a(profile_named("h200"), 7), b(profile_named("h200"), 7), c(profile_named("h200"), 8);
  const auto ra = window(a, 1024, 2000), rb = window(b, 1024, 2000), rc = window(c, 1024, 2000);
  EXPECT_EQ(ra.sms[5].duration_ns, rb.sms[5].duration_ns);
  EXPECT_EQ(ra.sms[5].first_start_ns, rb.sms[5].first_start_ns);
  EXPECT_NE(ra.sms[5].first_start_ns, rc.sms[5].first_start_ns);
}

TEST(Sim, NoiseLooksLikeTheH200) {
  // SPEC §4: 1024 FMAs at 1980 MHz read 2368 or 2400 ns, sd 16 ns, no slow
  // outliers.
  SimGpu gpu(profile_named("h200"), 1);
  const auto rec = window(gpu, 1024, 20000);
  std::map<std::uint32_t, int> histogram;
  for (const auto& sm : rec.sms)
    for (auto d : sm.duration_ns) ++histogram[d];
  std::vector<double> all;
  for (const auto& sm : rec.sms) all.insert(all.end(), sm.duration_ns.begin(), sm.duration_ns.end());
  const Moments m = moments_of(all);
  EXPECT_NEAR(m.mean, 2384, 20);
  EXPECT_GT(m.sd, 8);
  EXPECT_LT(m.sd, 20);
  std::int64_t total = 0, on_two = 0, slow = 0;
  for (const auto& [d, n] : histogram) {
    total += n;
    if (d == 2368 || d == 2400) on_two += n;
    if (d > 1.5 * 2384) slow += n;
    EXPECT_EQ(d % 32, 0u) << "durations are whole ticks";
  }
  EXPECT_GT(static_cast<double>(on_two) / static_cast<double>(total), 0.9);
  EXPECT_EQ(slow, 0);
}

TEST(Sim, DurationsScaleWithTheClock) {
  SimGpu gpu(profile_named("h200"), 2);
  const double at_1980 = calibrate_from_records(1980, 4096, window(gpu, 4096, 3000), 32).pooled.iteration.mean;
  gpu.request_clock(gpu.now(), 990);
  gpu.advance_to(gpu.now() + 2'000'000'000);  // long after any switch
  const double at_990 = calibrate_from_records(990, 4096, window(gpu, 4096, 3000), 32).pooled.iteration.mean;
  EXPECT_NEAR(at_990 / at_1980, 2.0, 0.002);
}

TEST(Sim, CyclesGiveTheEffectiveClock) {
  SimGpu gpu(profile_named("h200"), 9);
  gpu.request_clock(gpu.now(), 1200);
  gpu.advance_to(gpu.now() + 2'000'000'000);
  const auto cal = calibrate_from_records(1200, 1024, window(gpu, 1024, 4000), 32);
  EXPECT_NEAR(cal.effective_mhz, 1200, 1200 * 0.002);
}

TEST(Sim, SwitchLandsWhereTheTruthSays) {
  SimGpu gpu(profile_named("h200"), 3);
  const Nanos launched = gpu.launch({1024, 0, 100000});  // ~237 ms
  gpu.advance_to(launched + 5'000'000);
  const Nanos request = gpu.now();
  gpu.request_clock(request, 990);
  const auto rec = gpu.collect();
  const SwitchTruth truth = *gpu.last_truth();
  ASSERT_GT(truth.switching_ms, 0.05);
  ASSERT_GE(truth.switching_ms, truth.transition_ms);
  const TimerSync sync = gpu.synchronize();
  // On SM 0, the last iteration that ends before arrival is not yet at the
  // target, the first that starts after it is.
  const Nanos arrival = sync.to_gpu(request) + static_cast<Nanos>(truth.switching_ms * 1e6);
  Nanos t = rec.sms[0].first_start_ns;
  std::uint32_t before = 0, after = 0;
  for (auto d : rec.sms[0].duration_ns) {
    if (t + static_cast<Nanos>(d) < arrival - 5000) before = d;
    if (t > arrival + 5000 && after == 0) after = d;
    t += d;
  }
  EXPECT_LT(before, 4000u);
  EXPECT_NEAR(after, 4768, 64);
}

TEST(Sim, TimerSyncIsWithinItsUncertainty) {
  SimGpu gpu(profile_named("h200"), 4);
  const TimerSync a = gpu.synchronize();
  gpu.advance_to(gpu.now() + 1'000'000'000);
  const TimerSync b = gpu.synchronize();
  EXPECT_GT(a.uncertainty_ns, 1000);
  EXPECT_LT(a.uncertainty_ns, 1500);  // SPEC §4: round trips of 2.2–2.6 us
  // Drift is under 8 ppm: at most 8 us over the second.
  EXPECT_LE(std::abs(static_cast<double>(b.offset_ns - a.offset_ns)), a.uncertainty_ns + b.uncertainty_ns + 8000);
}

TEST(Sim, InjectedThrottling) {
  Injection inj;
  inj.power_cap_mhz = 1500;
  inj.thermal_at_s = {2.0};
  SimGpu gpu(profile_named("h200"), 5, inj);
  gpu.request_clock(gpu.now(), 1980);
  EXPECT_TRUE(gpu.telemetry().throttle.power);
  gpu.request_clock(gpu.now(), 1200);
  EXPECT_FALSE(gpu.telemetry().throttle.power);
  EXPECT_FALSE(gpu.telemetry().throttle.thermal);
  gpu.advance_to(2'100'000'000);
  EXPECT_TRUE(gpu.telemetry().throttle.thermal);
  EXPECT_TRUE(gpu.telemetry().throttle.thermal) << "an event lasts, reading it does not clear it";
  gpu.advance_to(20'000'000'000);
  EXPECT_FALSE(gpu.telemetry().throttle.thermal);
}

TEST(Sim, ProfilesMatchThePaperTables) {
  EXPECT_EQ(profile_named("gh200").clocks.size(), 110u);
  EXPECT_EQ(profile_named("h200").clocks.front(), 345);
  EXPECT_EQ(profile_named("h200").clocks.back(), 1980);
  EXPECT_EQ(profile_named("a100").clocks.size(), 81u);
  EXPECT_EQ(profile_named("a100").sm_count, 108);
  EXPECT_EQ(profile_named("rtx6000").sm_count, 72);
  EXPECT_THROW(profile_named("h100"), Error);
}

TEST(Sim, LatencyModelShapes) {
  const auto& a100 = profile_named("a100");
  // A100: decreases faster than increases (Fig. 4b).
  double up = 0, down = 0;
  int n_up = 0, n_down = 0;
  for (Mhz a = 210; a <= 1410; a += 150)
    for (Mhz b = 210; b <= 1410; b += 150) {
      if (a == b) continue;
      const double c = a100.latency_model({a, b}).clusters.front().center_ms;
      (b > a ? up : down) += c;
      ++(b > a ? n_up : n_down);
    }
  EXPECT_GT(up / n_up, 2 * down / n_down);
  // GH200: Table II's worst pair has a cluster near 477 ms.
  const auto worst = profile_named("gh200").latency_model({1095, 1260});
  double top = 0;
  for (const auto& c : worst.clusters) top = std::max(top, c.center_ms);
  EXPECT_NEAR(top, 470, 10);
  // Target dominates: pairs sharing a target are closer than pairs sharing an initial clock.
  const auto& h = profile_named("h200");
  double same_target = 0, same_init = 0;
  for (Mhz x = 600; x <= 1800; x += 300) {
    same_target += std::abs(h.latency_model({x, 1005}).clusters[0].center_ms - h.latency_model({x + 15, 1005}).clusters[0].center_ms);
    same_init += std::abs(h.latency_model({1005, x}).clusters[0].center_ms - h.latency_model({1005, x + 15}).clusters[0].center_ms);
  }
  EXPECT_LT(same_target, same_init);
}

// Board power within each card's rating at its top clock (the A100 drew
// 590 W, rated 400 W), and lower at a low clock.
TEST(Sim, PowerStaysWithinTheCardsRating) {
  for (const auto& [profile, rated] : std::vector<std::pair<std::string, double>>{{"h200", 700}, {"a100", 400}, {"rtx6000", 260}}) {
    SimGpu gpu(profile_named(profile), 3);
    const double top = gpu.telemetry().power_w.value();
    EXPECT_LE(top, rated) << profile;
    gpu.request_clock(gpu.now(), profile_named(profile).clocks.front());
    gpu.advance_to(gpu.now() + 2'000'000'000);
    EXPECT_LT(gpu.telemetry().power_w.value(), top / 2) << profile;
  }
}

}  // namespace
}  // namespace latest::sim
