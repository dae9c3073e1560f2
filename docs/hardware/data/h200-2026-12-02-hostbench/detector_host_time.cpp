// Host time of the pooled detector at 02bfaf3 (linked as
// detect_switch_pooled_old by run.sh), the pooled detector of the tree and
// the paper's, alternated on BM_DetectSwitch's window: the minimum over
// rounds of three calls each, per detector. Argument: the rounds (40).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "core/detection.hpp"
#include "core/pooled_detection.hpp"
#include "detection_case.hpp"

namespace latest {
Measurement detect_switch_pooled_old(const WindowRecords&, Nanos, const ClockCalibration&, const ClockCalibration&,
                                     double, double, const PooledSettings&);
}
using namespace latest;

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 40;
  const DetectionCase c = detection_case();
  DetectionSettings d;
  d.target_tol_ns = 20;
  d.initial_tol_ns = 10;
  double best[3] = {1e9, 1e9, 1e9};
  Measurement ms[3];
  for (int r = 0; r < rounds; ++r)
    for (int v = 0; v < 3; ++v) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int k = 0; k < 3; ++k) {
        if (v == 0) ms[0] = detect_switch_pooled_old(c.window, c.request_gpu, c.init, c.target, 10, 20, PooledSettings{});
        if (v == 1) ms[1] = detect_switch_pooled(c.window, c.request_gpu, c.init, c.target, 10, 20, PooledSettings{});
        if (v == 2) ms[2] = detect_switch(c.window, c.request_gpu, c.init, c.target, d);
      }
      best[v] = std::min(best[v], std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / 3);
    }
  std::printf("old %.3f ms  new %.3f ms  paper %.3f ms   old/paper %.2f new/paper %.2f  same=%d\n", best[0], best[1],
              best[2], best[0] / best[2], best[1] / best[2], ms[0].switching_ms == ms[1].switching_ms);
}
