#include <cstdlib>
#include <cstdio>
#include <chrono>
#include "core/pooled_detection.hpp"
#include "detection_case.hpp"
using namespace latest;
int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 500;
  const DetectionCase c = detection_case();
  double best = 1e9, sink = 0;
  for (int r = 0; r < n; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    Measurement m = detect_switch_pooled(c.window, c.request_gpu, c.init, c.target, 10, 20, PooledSettings{});
    sink += m.switching_ms;
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::printf("best %.3f ms %g\n", best, sink);
}
