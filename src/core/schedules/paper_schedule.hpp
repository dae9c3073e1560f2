#pragma once
// The paper's schedule: one switch per launch, after a wake-up at the
// initial clock, with a capture of 10x the longest pilot latency.
#include "core/measurement_core.hpp"
#include "core/schedules/pair_schedule.hpp"

namespace latest {

class PaperSchedule : public PairSchedule {
 public:
  explicit PaperSchedule(MeasurementCore& core) : core_(core) {}
  std::vector<ClockPair> more_pilot_pairs(const std::vector<ClockPair>&, const std::vector<ClockPair>&) override {
    return {};
  }
  std::int64_t pair_iteration(ClockPair pair) override { return core_.pair_fmas(pair); }
  void calibrate_for(const std::vector<ClockPair>&) override {}
  std::vector<std::vector<ClockPair>> groups_after_sample(const std::vector<std::vector<ClockPair>>& groups) override {
    return groups;
  }
  std::vector<PairResult> measure_group(const std::vector<ClockPair>& group, std::size_t first_number,
                                        std::size_t count) override;

 private:
  PairResult measure_pair(ClockPair pair, std::size_t number, std::size_t count);
  MeasurementCore& core_;
};

}  // namespace latest
