#pragma once
// A fixed set of simulated switch windows for replaying a detector: three
// profiles, every ramp shape, seeds 1-3 (seed 3 with 12 ns of boundary
// wander), 1024 and 4096 FMAs, a pair two clock steps apart and a random
// one, 32 MiB of records at most. The detector's stored answers
// (detector_answers_test.cpp) read them.
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "backends/sim/sim_gpu.hpp"
#include "core/calibration.hpp"
#include "core/types.hpp"

namespace latest::test {

struct SimWindow {
  std::string name;
  WindowRecords records;
  Nanos request_gpu_ns = 0;
  ClockCalibration initial, target;
};

// The profiles the set covers.
inline constexpr const char* kFixedWindowProfiles[] = {"h200", "a100", "rtx6000"};

// Each window of one profile in turn (together they would hold gigabytes
// of records).
inline void for_each_fixed_sim_window(const std::string& profile, const std::function<void(const SimWindow&)>& use) {
    for (auto shape : sim::kRampShapes)
      for (int seed = 1; seed <= 3; ++seed)
        for (int fmas : {1024, 4096})
          for (int pair = 0; pair < 2; ++pair) {
            sim::Injection injection;
            injection.ramp_shape = shape;
            if (seed == 3) injection.boundary_wander_ns = 12;
            const auto& p = sim::profile_named(profile);
            sim::SimGpu gpu(p, seed, injection);
            const auto& c = p.clocks;
            std::mt19937 draw(static_cast<unsigned>(seed * 100 + fmas + pair));
            Mhz from = c[c.size() - 1], to = c[c.size() - 3];
            if (pair) {
              from = c[draw() % c.size()];
              do to = c[draw() % c.size()];
              while (to == from);
            }
            const auto calibrate = [&](Mhz mhz) {
              gpu.request_clock(gpu.now(), mhz);
              gpu.advance_to(gpu.now() + 1'000'000'000);
              gpu.launch({fmas, 0, 2048});
              return calibrate_from_records(mhz, fmas, gpu.collect(), 32);
            };
            SimWindow w;
            w.initial = calibrate(from);
            w.target = calibrate(to);
            gpu.request_clock(gpu.now(), from);
            gpu.advance_to(gpu.now() + 1'000'000'000);
            const Nanos launched = gpu.launch({fmas, 0, std::int64_t{32768} * 1024 / fmas});
            gpu.advance_to(launched + 2'000'000);
            const Nanos request = gpu.now();
            gpu.request_clock(request, to);
            w.records = gpu.collect();
            w.request_gpu_ns = gpu.synchronize().to_gpu(request);
            w.name = profile + " " + sim::to_string(shape) + " s" + std::to_string(seed) + " f" +
                     std::to_string(fmas) + " " + std::to_string(from) + "->" + std::to_string(to);
            use(w);
          }
}

}  // namespace latest::test
