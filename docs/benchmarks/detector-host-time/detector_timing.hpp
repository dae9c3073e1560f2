#pragma once
// What the host-time programs beside it share: the four detectors timed on
// one window, alternated (the tree's pooled detector, a base commit's
// linked as detect_switch_pooled_base, the tree's paper detector and the
// issue day's through paper_then.cpp), and a tally of many windows.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/detection.hpp"
#include "core/pooled_detection.hpp"
#include "core/statistics.hpp"

namespace latest {
Measurement detect_switch_pooled_base(const WindowRecords&, Nanos, const ClockCalibration&, const ClockCalibration&,
                                      double, double, const PooledSettings&);
}
extern "C" double paper_then(const void* window, long request_gpu_ns, const void* initial, const void* target,
                             double initial_tol_ns, double target_tol_ns);

namespace host_time {
using namespace latest;

enum { kPooled, kBase, kPaper, kPaperThen, kDetectors };

struct WindowTimes {
  double ms[kDetectors] = {1e9, 1e9, 1e9, 1e9};  // the minimum over rounds of a call's mean
  Measurement pooled, base;                      // the last answers of the two pooled detectors
  bool same() const {  // bitwise
    return pooled.outcome == base.outcome && pooled.misfits == base.misfits &&
           !std::memcmp(&pooled.switching_ms, &base.switching_ms, sizeof(double)) &&
           !std::memcmp(&pooled.transition_ms, &base.transition_ms, sizeof(double)) &&
           !std::memcmp(&pooled.uncertainty_us, &base.uncertainty_us, sizeof(double));
  }
};

// Each round times `calls` calls of each detector in turn, each round
// starting one detector further on: in a fixed order the detector that ran
// first each round ran 3.5 % faster than the same code run second (the
// tree's pooled detector against itself as the base, the minimum of three
// rounds on the 528 simulated windows, 2026-12-06).
inline WindowTimes time_detectors(const WindowRecords& w, Nanos request, const ClockCalibration& initial,
                                  const ClockCalibration& target, double initial_tol_ns, double target_tol_ns,
                                  int rounds, int calls = 1) {
  DetectionSettings d;
  d.initial_tol_ns = initial_tol_ns;
  d.target_tol_ns = target_tol_ns;
  WindowTimes t;
  for (int r = 0; r < rounds; ++r)
    for (int turn = 0; turn < kDetectors; ++turn) {
      const int v = (turn + r) % kDetectors;
      const auto t0 = std::chrono::steady_clock::now();
      for (int k = 0; k < calls; ++k) {
        if (v == kPooled)
          t.pooled = detect_switch_pooled(w, request, initial, target, initial_tol_ns, target_tol_ns, PooledSettings{});
        if (v == kBase)
          t.base = detect_switch_pooled_base(w, request, initial, target, initial_tol_ns, target_tol_ns, PooledSettings{});
        if (v == kPaper) (void)detect_switch(w, request, initial, target, d);
        if (v == kPaperThen) (void)paper_then(&w, request, &initial, &target, initial_tol_ns, target_tol_ns);
      }
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      t.ms[v] = std::min(t.ms[v], ms / calls);
    }
  return t;
}

// Many windows: totals, the pooled detector's time over the issue day's
// paper detector's per window, and the answers that differ from the base's.
struct Tally {
  double total[kDetectors] = {0, 0, 0, 0};
  std::vector<double> ratios, measured;  // per window; where the pooled detector measured it
  int differ = 0;
  void add(const WindowTimes& t) {
    for (int v = 0; v < kDetectors; ++v) total[v] += t.ms[v];
    const double ratio = t.ms[kPooled] / t.ms[kPaperThen];
    ratios.push_back(ratio);
    if (t.pooled.outcome == MeasurementOutcome::accepted) measured.push_back(ratio);
    differ += !t.same();
  }
  void print(const char* label) const {
    if (ratios.empty()) return;
    std::printf("%s: %zu windows; pooled %.1f ms (base %.1f), paper %.1f, paper then %.1f in all: pooled / paper "
                "then %.2f (base %.2f); per window median %.2f, p90 %.2f, largest %.2f, above 2: %zu; the %zu the "
                "pooled one measured: median %.2f, largest %.2f; answers differing from the base's: %d\n",
                label, ratios.size(), total[kPooled], total[kBase], total[kPaper], total[kPaperThen],
                total[kPooled] / total[kPaperThen], total[kBase] / total[kPaperThen], quantile(ratios, 0.5),
                quantile(ratios, 0.9), quantile(ratios, 1),
                static_cast<std::size_t>(std::count_if(ratios.begin(), ratios.end(), [](double r) { return r > 2; })),
                measured.size(), quantile(measured, 0.5),
                quantile(measured, 1), differ);
  }
};

}  // namespace host_time
