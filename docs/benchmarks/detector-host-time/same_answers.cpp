// The same answers, old against new: the pooled detector of a base commit
// (linked as detect_switch_pooled_base) and the tree's, on 216 simulated
// windows (h200, a100, rtx6000; six ramp shapes; seeds 1-3, seed 3 with
// 12 ns of boundary wander; 1024 and 4096 FMAs; a pair two clock steps apart
// and a random one), every result compared bitwise, then both timed over
// the windows. From the repository root, with a Release build in build/:
//   git show BASE:src/core/pooled_detection.cpp |
//     sed 's/^Measurement detect_switch_pooled(/Measurement detect_switch_pooled_base(/' >/tmp/base.cpp
//   g++ -std=c++20 -O3 -DNDEBUG -fno-math-errno -Isrc -c /tmp/base.cpp -o /tmp/base.o
//   g++ -std=c++20 -O3 -DNDEBUG -fno-math-errno -Isrc -c src/core/pooled_detection.cpp -o /tmp/tree.o
//   g++ -std=c++20 -O3 -DNDEBUG -Isrc docs/benchmarks/detector-host-time/same_answers.cpp /tmp/tree.o \
//     /tmp/base.o build/liblatest_sim.a build/liblatest_core.a -lfmt -lpthread -o /tmp/same_answers
//   /tmp/same_answers   # "216 windows, N differ", one DIFF line each
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include "backends/sim/sim_gpu.hpp"
#include "core/calibration.hpp"
#include "core/pooled_detection.hpp"
namespace latest {
Measurement detect_switch_pooled_base(const WindowRecords&, Nanos, const ClockCalibration&, const ClockCalibration&, double, double, const PooledSettings&);
}
using namespace latest;
struct Case { WindowRecords w; Nanos req; ClockCalibration a, b; std::string name; };
int main() {
  std::vector<Case> cases;
  for (const char* prof : {"h200", "a100", "rtx6000"})
    for (auto shape : sim::kRampShapes)
      for (int seed = 1; seed <= 3; ++seed)
        for (int fmas : {1024, 4096})
          for (int pair = 0; pair < 2; ++pair) {
            sim::Injection inj; inj.ramp_shape = shape; if (seed == 3) inj.boundary_wander_ns = 12;
            const auto& p = sim::profile_named(prof);
            sim::SimGpu gpu(p, seed, inj);
            const auto& c = p.clocks; std::mt19937 g(seed * 100 + fmas + pair);
            Mhz from = c[c.size() - 1], to = c[c.size() - 3];
            if (pair) { from = c[g() % c.size()]; do to = c[g() % c.size()]; while (to == from); }
            const std::int64_t iters = 32768 * 1024 / fmas * 2;
            gpu.request_clock(gpu.now(), from); gpu.advance_to(gpu.now() + 1'000'000'000);
            gpu.launch({fmas, 0, 8192}); const auto ca = calibrate_from_records(from, fmas, gpu.collect(), 32);
            gpu.request_clock(gpu.now(), to); gpu.advance_to(gpu.now() + 1'000'000'000);
            gpu.launch({fmas, 0, 8192}); const auto cb = calibrate_from_records(to, fmas, gpu.collect(), 32);
            gpu.request_clock(gpu.now(), from); gpu.advance_to(gpu.now() + 1'000'000'000);
            const Nanos launched = gpu.launch({fmas, 0, iters});
            gpu.advance_to(launched + 2'000'000);
            const Nanos request = gpu.now(); gpu.request_clock(request, to);
            Case k; k.w = gpu.collect(); k.req = gpu.synchronize().to_gpu(request); k.a = ca; k.b = cb;
            k.name = std::string(prof) + " " + sim::to_string(shape) + " s" + std::to_string(seed) + " f" + std::to_string(fmas) + " " + std::to_string(from) + "->" + std::to_string(to);
            cases.push_back(std::move(k));
          }
  int diff = 0;
  for (const auto& k : cases) {
    const Measurement x = detect_switch_pooled(k.w, k.req, k.a, k.b, 10, 20, PooledSettings{});
    const Measurement y = detect_switch_pooled_base(k.w, k.req, k.a, k.b, 10, 20, PooledSettings{});
    const bool same = x.outcome == y.outcome && !std::memcmp(&x.switching_ms, &y.switching_ms, 8) && !std::memcmp(&x.transition_ms, &y.transition_ms, 8) && !std::memcmp(&x.uncertainty_us, &y.uncertainty_us, 8) && x.misfits == y.misfits;
    if (!same) { ++diff; std::printf("DIFF %s: %d %.6f %.6f | %d %.6f %.6f\n", k.name.c_str(), (int)x.outcome, x.switching_ms, x.uncertainty_us, (int)y.outcome, y.switching_ms, y.uncertainty_us); }
  }
  std::printf("%zu windows, %d differ\n", cases.size(), diff);
  double t[2] = {0, 0};
  for (int r = 0; r < 3; ++r) for (int v = 0; v < 2; ++v) {
    auto t0 = std::chrono::steady_clock::now();
    for (const auto& k : cases) (void)(v ? detect_switch_pooled_base : detect_switch_pooled)(k.w, k.req, k.a, k.b, 10, 20, PooledSettings{});
    t[v] += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  std::printf("tree %.1f ms, base %.1f ms over 3 passes\n", t[0], t[1]);
}
