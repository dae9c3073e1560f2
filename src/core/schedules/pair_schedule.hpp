#pragma once
// How the pairs are measured (docs/methodology.md, "Schedules"): the
// paper's schedule, one switch per launch (paper_schedule.hpp), or the
// chained one, many switches per launch (chained_schedule.hpp). The engine
// plans the run and hands each group of pairs to its schedule.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/run_state.hpp"

namespace latest {

class PairSchedule {
 public:
  virtual ~PairSchedule() = default;
  // The pilot pairs beyond the paper's three that this schedule's plan needs.
  virtual std::vector<ClockPair> more_pilot_pairs(const std::vector<ClockPair>& pairs,
                                                  const std::vector<ClockPair>& pilot) = 0;
  // The iteration a pair runs at, as the plan prices it.
  virtual std::int64_t pair_iteration(ClockPair pair) = 0;
  // Phase 1 at every iteration the pairs `todo` will need, before the plan.
  virtual void calibrate_for(const std::vector<ClockPair>& todo) = 0;
  // The groups the pairs past the plan's sample are measured in, from the
  // groups of both directions of a pair of clocks.
  virtual std::vector<std::vector<ClockPair>> groups_after_sample(
      const std::vector<std::vector<ClockPair>>& groups) = 0;
  // Measures one group to its stops, pairs numbered from `first_number` of
  // `count`, telling the observer as each starts and finishes.
  virtual std::vector<PairResult> measure_group(const std::vector<ClockPair>& group, std::size_t first_number,
                                                std::size_t count) = 0;
};

}  // namespace latest
