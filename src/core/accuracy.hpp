#pragma once
// Accuracy against known truth (SPEC §5): the simulator's latencies, or the
// L of emulated switching on a real GPU. For emulation it also takes out the
// harness's own delay: the flip reaches the SMs over PCIe and each SM takes
// up the new length one iteration after it reads it. What is left is what the
// method adds: about nothing for the pooled detector, one target iteration
// for the paper's (t_e ends the first clean iteration, SPEC §2).
#include <optional>
#include <vector>

#include "core/engine.hpp"
#include "core/statistics.hpp"

namespace latest {

// One accepted measurement against its truth.
struct TruthComparison {
  ClockPair pair;
  double true_ms = 0;
  double measured_ms = 0;
  double error_us = 0;                     // measured - true
  std::optional<double> target_iteration_ns;  // the target's calibrated iteration
  double sync_uncertainty_us = 0;
  std::optional<double> flip_bracket_us;  // emulation: how closely the host dated its write
  std::optional<double> delivery_us;   // emulation: the host's write -> block 0's poll read it
  std::optional<double> in_effect_us;  // emulation: the switch's time -> every SM runs the target length
  std::optional<double> residual_us;   // emulation: error - in_effect
  // Emulation's bound: one target iteration plus the sync uncertainty.
  std::optional<double> bound_us;
};

struct Accuracy {
  std::vector<TruthComparison> measurements;
  Summary error_us;
  std::optional<Summary> error_iterations;     // error in target iterations
  std::optional<Summary> delivery_us;
  std::optional<Summary> in_effect_us;
  std::optional<Summary> residual_us;
  std::optional<Summary> residual_iterations;  // residual in target iterations
  std::optional<Summary> excess_us;            // |residual| - bound
  std::optional<double> early_share;           // residual below minus the sync uncertainty
  // Residual beyond the bound (one target iteration + the sync uncertainty).
  std::optional<double> late_share;
  // The selftest's criterion, two-sided: the median |residual| is within the
  // bound, at most 1 % of measurements are early beyond the sync
  // uncertainty, and at most 1 % late beyond the bound.
  bool within_bound() const {
    return excess_us && excess_us->median <= 0 && early_share && *early_share <= 0.01 && late_share &&
           *late_share <= 0.01;
  }
};

// Every accepted measurement that carries a truth, each against its own
// target iteration, the misfits taken again included (outcomes before
// retries).
Accuracy accuracy_against_truth(const std::vector<PairResult>& results);

}  // namespace latest
