// Host time per default window (BM_DetectSwitch's: 132 SMs x 32,768
// iterations, 1980 -> 990 MHz), alternated in one process, minimum over
// rounds of three calls each: the pooled detector of the tree, the pooled
// detector of a base commit (linked as detect_switch_pooled_base by run.sh),
// the paper's detector of the tree, and the paper's as it was on the day
// issue 9 was filed (9088a1a^, before its own speedups; linked through
// paper_then.cpp as paper_then). Argument: the rounds (150).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/detection.hpp"
#include "core/pooled_detection.hpp"
#include "detection_case.hpp"

namespace latest {
Measurement detect_switch_pooled_base(const WindowRecords&, Nanos, const ClockCalibration&, const ClockCalibration&,
                                      double, double, const PooledSettings&);
}
extern "C" double paper_then(const void* window, long request_gpu_ns, const void* initial, const void* target,
                             double initial_tol_ns, double target_tol_ns);
using namespace latest;

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 150;
  const DetectionCase c = detection_case();
  DetectionSettings d;
  d.target_tol_ns = 20;
  d.initial_tol_ns = 10;
  double best[4] = {1e9, 1e9, 1e9, 1e9};
  Measurement pooled, base;
  for (int r = 0; r < rounds; ++r)
    for (int v = 0; v < 4; ++v) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int k = 0; k < 3; ++k) {
        if (v == 0) pooled = detect_switch_pooled(c.window, c.request_gpu, c.init, c.target, 10, 20, PooledSettings{});
        if (v == 1) base = detect_switch_pooled_base(c.window, c.request_gpu, c.init, c.target, 10, 20, PooledSettings{});
        if (v == 2) (void)detect_switch(c.window, c.request_gpu, c.init, c.target, d);
        if (v == 3) (void)paper_then(&c.window, c.request_gpu, &c.init, &c.target, 10, 20);
      }
      best[v] = std::min(best[v], std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / 3);
    }
  const bool same = std::memcmp(&pooled.switching_ms, &base.switching_ms, sizeof(double)) == 0 &&
                    std::memcmp(&pooled.uncertainty_us, &base.uncertainty_us, sizeof(double)) == 0;
  std::printf("pooled %.3f ms (base %.3f)  paper %.3f ms (then %.3f) | pooled / paper then %.2f (base %.2f)  "
              "pooled / paper %.2f | same answer as base: %s\n",
              best[0], best[1], best[2], best[3], best[0] / best[3], best[1] / best[3], best[0] / best[2],
              same ? "yes" : "NO");
}
