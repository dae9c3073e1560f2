#pragma once
// Emulated measurements with known answers, for the
// accuracy tests of core and results.
#include <cstdint>
#include <random>

#include "core/engine.hpp"

namespace latest::testing {

// Emulated measurements whose error is in-effect delay + `residual_iterations`
// target iterations + noise, as the method gives when t_e is found exactly.
inline PairResult emulated_pair(ClockPair pair, double target_ns, double residual_iterations, std::mt19937_64& rng) {
  PairResult r;
  r.pair = pair;
  r.iteration_fmas = 1024;
  std::uniform_real_distribution<double> latency_ms(1, 50), in_effect_us(3, 8), noise_us(-0.05, 0.05);
  for (int i = 0; i < 50; ++i) {
    MeasurementRow row;
    SwitchTruth t{latency_ms(rng)};
    t.delivery_us = 2.0;
    t.in_effect_us = in_effect_us(rng);
    row.switching_ms = t.switching_ms + (*t.in_effect_us + residual_iterations * target_ns / 1e3 + noise_us(rng)) / 1e3;
    row.sync_uncertainty_us = 1.1;
    row.target_iteration_ns = target_ns;
    row.truth = t;
    r.rows.push_back(row);
  }
  return r;
}

}  // namespace latest::testing
