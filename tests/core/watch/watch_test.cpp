// A watch end to end on the simulator's power brake, whose steps are known:
// every step found on every recorded SM, each placed within a microsecond
// of its truth; the telemetry read every 20 ms; the recovery inside the tail.
#include "core/watch/watch.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "backends/sim/sim_backend.hpp"

namespace latest {
namespace {

struct SimWatch {
  std::shared_ptr<sim::SimGpu> gpu;
  WatchRecording recording;
  WatchAnalysis analysis;
  std::vector<Load::KnownChange> truth;
  std::shared_ptr<sim::SimBrakeLoad> load;
};

SimWatch watch_on_sim(std::uint64_t seed, const std::string& profile, const std::function<bool()>& interrupted) {
  SimWatch w;
  w.gpu = std::make_shared<sim::SimGpu>(sim::profile_named(profile), seed);
  sim::SimWorkload workload(w.gpu);
  sim::SimClockControl clocks(w.gpu, 0);
  WatchSettings s;
  s.load_seconds = 6;
  s.iteration_fmas = 8192;
  w.load = std::make_shared<sim::SimBrakeLoad>(w.gpu, s.load_seconds);
  w.recording = record_watch(workload, *w.load, clocks, s, interrupted);
  w.analysis = analyse_watch(w.recording, StepSettings{});
  w.truth = w.load->truth();
  return w;
}

TEST(Watch, FindsEveryBrakeStepOnEverySm) {
  std::vector<double> errors;
  for (const auto& [seed, profile] : std::vector<std::pair<std::uint64_t, std::string>>{
           {1, "h200"}, {2, "h200"}, {3, "a100"}, {4, "gh200"}, {5, "rtx6000"}}) {
    const SimWatch w = watch_on_sim(seed, profile, [] { return false; });
    const auto& steps = w.analysis.steps;
    ASSERT_EQ(steps.size(), w.truth.size()) << profile << " seed " << seed;
    ASSERT_GE(w.truth.size(), 3u);
    EXPECT_EQ(w.truth.back().to_mhz, w.gpu->profile().clocks.back()) << "the recovery ends at the top clock";
    EXPECT_LT(w.truth.back().gpu_ns, w.recording.end_gpu_ns);
    for (std::size_t k = 0; k < steps.size(); ++k) {
      ASSERT_EQ(steps[k].sms.size(), w.recording.sms.size());
      EXPECT_NEAR(steps[k].before_mhz(), w.truth[k].from_mhz, 0.5);
      EXPECT_NEAR(steps[k].after_mhz(), w.truth[k].to_mhz, 0.5);
      for (const SmStep& s : steps[k].sms) {
        const double err = static_cast<double>(s.arrival_ns) - static_cast<double>(w.truth[k].gpu_ns) -
                           w.load->sm_delay_ns(s.sm);
        EXPECT_LT(std::abs(err), 4 * s.arrival_uncertainty_ns + w.gpu->profile().timer_tick_ns)
            << profile << " seed " << seed << " step " << k << " SM " << s.sm;
        EXPECT_LT(std::abs(err), 2000) << profile << " seed " << seed << " step " << k << " SM " << s.sm;
        errors.push_back(std::abs(err));
      }
    }
  }
  // Half of them within 300 ns, on 15 MHz steps at 17 µs iterations.
  std::nth_element(errors.begin(), errors.begin() + static_cast<std::ptrdiff_t>(errors.size() / 2), errors.end());
  EXPECT_LT(errors[errors.size() / 2], 300);
}

TEST(Watch, ReadsTheDriverEveryPeriodAndStopsTheLoad) {
  const SimWatch w = watch_on_sim(7, "h200", [] { return false; });
  const auto& samples = w.recording.samples;
  ASSERT_GT(samples.size(), 2u);
  for (std::size_t i = 1; i < samples.size(); ++i) EXPECT_LE(samples[i].gpu_ns - samples[i - 1].gpu_ns, 21'000'000);
  // 1 s alone, 6 s of load, 5 s of tail.
  EXPECT_NEAR(static_cast<double>(w.recording.load_end_gpu_ns - w.recording.load_start_gpu_ns) / 1e9, 6, 0.05);
  EXPECT_GE(static_cast<double>(w.recording.end_gpu_ns - w.recording.load_end_gpu_ns) / 1e9, 5);
  EXPECT_NEAR(w.recording.load.seconds, 6, 0.05);
  // The driver names the power cap while the brake holds the clock down.
  bool capped = false;
  for (const TelemetrySample& s : samples) capped |= (s.telemetry.throttle.raw_reasons & 0x4) != 0;
  EXPECT_TRUE(capped);
  // Evidence that cycles read the clock: the chain's cycles do not move.
  EXPECT_LT(w.analysis.judge.cycles_p99 - w.analysis.judge.cycles_p01, 0.001 * w.analysis.judge.cycles_median);
  EXPECT_LT(std::abs(w.analysis.judge.nvml_minus_sms_median_mhz), 1);
}

TEST(Watch, AnInterruptStopsTheLoadAndKeepsWhatWasRecorded) {
  int polls = 0;
  const SimWatch w = watch_on_sim(8, "h200", [&] { return ++polls > 200; });  // about 3 s in
  EXPECT_TRUE(w.recording.interrupted);
  EXPECT_GT(w.recording.load_end_gpu_ns, w.recording.load_start_gpu_ns);
  ASSERT_FALSE(w.recording.sms.empty());
  EXPECT_GT(w.recording.sms.front().duration_ns.size(), 100'000u);
}

}  // namespace
}  // namespace latest
