#pragma once
// Accuracy against known truth (SPEC §5): the simulator's latencies, or the
// L of emulated switching on a real GPU. For emulation it also takes out the
// harness's own delay: the flip reaches the SMs over PCIe and each SM takes
// up the new length at its next iteration boundary. What is left is what the
// method adds, and by the definition of t_e (the end of the first clean
// iteration, SPEC §2) that is one target iteration.
#include <optional>
#include <vector>

#include "core/engine.hpp"

namespace latest {

struct Spread {
  std::size_t n = 0;
  double min = 0, median = 0, p95 = 0, p99 = 0, max = 0;
};
Spread spread_of(std::vector<double> xs);

// One accepted measurement against its truth.
struct TruthComparison {
  ClockPair pair;
  double true_ms = 0;
  double measured_ms = 0;
  double error_us = 0;                     // measured - true
  std::optional<double> target_iteration_ns;  // the target's calibrated iteration
  double sync_uncertainty_us = 0;
  std::optional<double> flip_bracket_us;  // emulation: how closely the host dated its flip
  std::optional<double> delivery_us;   // emulation: flip -> block 0's poll read it
  std::optional<double> in_effect_us;  // emulation: flip -> every SM runs the target length
  std::optional<double> residual_us;   // emulation: error - in_effect
  // Emulation's bound: one target iteration plus the sync uncertainty.
  std::optional<double> bound_us;
};

struct Accuracy {
  std::vector<TruthComparison> measurements;
  Spread error_us;
  std::optional<Spread> error_iterations;     // error in target iterations
  std::optional<Spread> delivery_us;
  std::optional<Spread> in_effect_us;
  std::optional<Spread> residual_us;
  std::optional<Spread> residual_iterations;  // residual in target iterations
  std::optional<Spread> excess_us;            // residual - bound
  // The selftest's criterion: the median residual is within the bound.
  bool within_bound() const { return excess_us && excess_us->median <= 0; }
};

// Every accepted measurement that carries a truth. A pair's target iteration
// comes from the calibration at the pair's own iteration length.
Accuracy accuracy_against_truth(const std::vector<PairResult>& results,
                                const std::vector<ClockCalibration>& calibrations);

}  // namespace latest
