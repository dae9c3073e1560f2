// Host time per window on the windows of the side-by-side benchmark
// (BM_DetectorsOnTheSameRecords, bench/engine_bench.cpp: the engine on the
// simulated h200, seed 7, every ordered pair of 1980, 1890, 1500 and 990
// MHz, 40 measurements each, the default chained schedule): as the engine
// reads each window, the tree's pooled and paper detectors and the paper
// detector of the day issue 9 was filed (9088a1a^, through paper_then.cpp)
// are timed on it, alternated, the minimum of three rounds each. run.sh
// builds it where ENGINE=1. Argument: the seed (7).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <vector>

#include "backends/sim/sim_backend.hpp"
#include "core/detection.hpp"
#include "core/engine.hpp"
#include "core/pooled_detection.hpp"

extern "C" double paper_then(const void* window, long request_gpu_ns, const void* initial, const void* target,
                             double initial_tol_ns, double target_tol_ns);
using namespace latest;

namespace {
struct Timing final : RunObserver {
  double total[3] = {0, 0, 0};
  std::vector<double> ratios, accepted;  // pooled / paper then, per window; where the pooled one measured it
  std::size_t records = 0, sm_windows = 0;  // for the mean iterations a SM
  std::map<std::pair<Mhz, Mhz>, std::vector<double>> pairs;  // windows, pooled, paper then, in ms
  void window_read(const WindowRead& w) override {
    DetectionSettings d;
    d.initial_tol_ns = w.initial_tol_ns;
    d.target_tol_ns = w.target_tol_ns;
    double best[3] = {1e9, 1e9, 1e9};
    MeasurementOutcome outcome{};
    for (int r = 0; r < 3; ++r)
      for (int v = 0; v < 3; ++v) {
        const auto t0 = std::chrono::steady_clock::now();
        if (v == 0)
          outcome = detect_switch_pooled(w.records, w.request_gpu_ns, w.initial, w.target, w.initial_tol_ns,
                                         w.target_tol_ns, PooledSettings{}).outcome;
        if (v == 1) (void)detect_switch(w.records, w.request_gpu_ns, w.initial, w.target, d);
        if (v == 2)
          (void)paper_then(&w.records, w.request_gpu_ns, &w.initial, &w.target, w.initial_tol_ns, w.target_tol_ns);
        best[v] = std::min(best[v],
                           std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
    for (int v = 0; v < 3; ++v) total[v] += best[v];
    auto& p = pairs[{w.pair.init, w.pair.target}];
    p.resize(3);
    p[0] += 1, p[1] += best[0], p[2] += best[2];
    ratios.push_back(best[0] / best[2]);
    if (outcome == MeasurementOutcome::accepted) accepted.push_back(best[0] / best[2]);
    for (const auto& sm : w.records.sms) records += sm.duration_ns.size();
    sm_windows += w.records.sms.size();
  }
};
double quantile_of(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}
}  // namespace

int main(int argc, char** argv) {
  const std::uint64_t seed = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 7;
  auto gpu = std::make_shared<sim::SimGpu>(sim::profile_named("h200"), seed);
  sim::SimWorkload workload(gpu);
  sim::SimClockControl control(gpu, 0);
  EngineSettings s;
  s.clocks = {1980, 1890, 1500, 990};
  s.pairs = ordered_pairs(s.clocks);
  s.min_measurements = s.max_measurements = 40;
  Timing timing;
  Engine(workload, control, s, timing).run();
  for (const auto& [pair, p] : timing.pairs)
    std::printf("%4d -> %4d: %3.0f windows, pooled %.3f ms a window, paper then %.3f: %.2f\n", pair.first,
                pair.second, p[0], p[1] / p[0], p[2] / p[0], p[1] / p[2]);
  std::printf("%zu windows (mean %.0f iterations a SM): pooled %.1f ms, paper %.1f, paper then %.1f in all; "
              "pooled / paper then %.2f; per window median %.2f, p90 %.2f, largest %.2f; the %zu the pooled one "
              "measured: median %.2f, largest %.2f\n",
              timing.ratios.size(), static_cast<double>(timing.records) / static_cast<double>(timing.sm_windows), timing.total[0], timing.total[1],
              timing.total[2], timing.total[0] / timing.total[2], quantile_of(timing.ratios, 0.5),
              quantile_of(timing.ratios, 0.9), quantile_of(timing.ratios, 1), timing.accepted.size(),
              quantile_of(timing.accepted, 0.5), quantile_of(timing.accepted, 1));
}
