#pragma once
// Result directories written by the engine on the simulator, for the
// analysis and report tests.
#include <filesystem>
#include <string>
#include <vector>

#include "backends/sim/sim_backend.hpp"
#include "core/engine.hpp"
#include "results/result_store.hpp"

namespace latest::testing {

inline void write_sim_results(const std::filesystem::path& dir, const std::string& profile, std::uint64_t seed,
                              std::vector<Mhz> clocks, int measurements = 25) {
  auto gpu = std::make_shared<sim::SimGpu>(sim::profile_named(profile), seed);
  sim::SimWorkload workload(gpu);
  sim::SimClockControl control(gpu, 0);
  EngineSettings s;
  s.clocks = clocks;
  for (Mhz a : clocks)
    for (Mhz b : clocks)
      if (a != b) s.pairs.push_back({a, b});
  s.min_measurements = s.max_measurements = measurements;
  s.plan.max_recorded_iterations = 8192;
  s.plan.calibration_iterations = 4096;
  ResultStore store(dir, {{"test", profile}}, {{"freq_mhz", clocks}}, [](const SkipReason& r) { return std::string(to_string(r.code)); });
  Engine engine(workload, control, s, store);
  engine.run();
  store.finish("complete");
}

}  // namespace latest::testing
