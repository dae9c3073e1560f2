// Host time per window on windows recorded on real H200s (emulated
// switching; tests/core/data/README.md gives the layout): the tree's pooled
// detector, the tree's paper detector and the paper detector of the day
// issue 9 was filed (9088a1a^, linked through paper_then.cpp), alternated
// window by window, each the minimum over rounds, with the tolerances the
// engine gives them. run.sh builds it where WINDOWS names folders of
// windows. Arguments: the rounds, then the folders.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/detection.hpp"
#include "core/pooled_detection.hpp"
#include "core/recorded_window.hpp"

extern "C" double paper_then(const void* window, long request_gpu_ns, const void* initial, const void* target,
                             double initial_tol_ns, double target_tol_ns);
using namespace latest;

namespace {
// Chained slices and paper windows, by the names the dumps gave them.
bool chained(const std::string& path) {
  return path.find("-c-") != std::string::npos || path.find("/dc/") != std::string::npos ||
         path.find("dumps-c/") != std::string::npos;
}
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s ROUNDS DIR...\n", argv[0]);
    return 2;
  }
  const int rounds = std::atoi(argv[1]);
  struct Kind {
    const char* name;
    double total[3] = {0, 0, 0};
    std::vector<double> ratios, accepted;  // pooled / paper then, per window; where the pooled one measured it
  } kinds[2] = {{"chained"}, {"paper"}};
  for (int a = 2; a < argc; ++a)
    for (const auto& path : recorded_windows_in(argv[a])) {
      const RecordedWindow w = load_recorded_window(path);
      if (!w.complete) {
        std::fprintf(stderr, "%s: incomplete, skipped\n", path.c_str());
        continue;
      }
      const double itol = recorded_tolerance_ns(w.initial), ttol = recorded_tolerance_ns(w.target);
      DetectionSettings d;
      d.initial_tol_ns = itol;
      d.target_tol_ns = ttol;
      double best[3] = {1e9, 1e9, 1e9};
      MeasurementOutcome outcome{};
      for (int r = 0; r < rounds; ++r)
        for (int v = 0; v < 3; ++v) {
          const auto t0 = std::chrono::steady_clock::now();
          if (v == 0) outcome = detect_switch_pooled(w.records, w.request_gpu_ns, w.initial, w.target, itol, ttol,
                                                     PooledSettings{}).outcome;
          if (v == 1) (void)detect_switch(w.records, w.request_gpu_ns, w.initial, w.target, d);
          if (v == 2) (void)paper_then(&w.records, w.request_gpu_ns, &w.initial, &w.target, itol, ttol);
          best[v] = std::min(best[v],
                             std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
      std::size_t iterations = 0;
      for (const auto& sm : w.records.sms) iterations += sm.duration_ns.size();
      Kind& k = kinds[chained(path.string()) ? 0 : 1];
      for (int v = 0; v < 3; ++v) k.total[v] += best[v];
      k.ratios.push_back(best[0] / best[2]);
      if (outcome == MeasurementOutcome::accepted) k.accepted.push_back(best[0] / best[2]);
      std::printf("%s (%s, %zu SMs x %zu iterations, pooled %s): pooled %.3f ms, paper %.3f, paper then %.3f; "
                  "pooled / paper then %.2f\n",
                  path.c_str(), k.name, w.records.sms.size(), iterations / std::max<std::size_t>(1, w.records.sms.size()),
                  to_string(outcome), best[0], best[1], best[2], best[0] / best[2]);
    }
  for (const Kind& k : kinds) {
    if (k.ratios.empty()) continue;
    std::printf("%s windows: %zu; pooled %.1f ms, paper %.1f, paper then %.1f in all: pooled / paper then %.2f; "
                "per window median %.2f, largest %.2f; the %zu the pooled one measured: median %.2f, largest %.2f\n",
                k.name, k.ratios.size(), k.total[0], k.total[1], k.total[2], k.total[0] / k.total[2], median(k.ratios),
                *std::max_element(k.ratios.begin(), k.ratios.end()), k.accepted.size(), median(k.accepted),
                k.accepted.empty() ? 0.0 : *std::max_element(k.accepted.begin(), k.accepted.end()));
  }
}
