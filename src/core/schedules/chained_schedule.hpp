#pragma once
// The chained schedule (docs/methodology.md, "Schedules"): the pairs of a
// group in one launch, each request from where the one before left the
// clock: A->B, B->A, ... for the two directions of the plan's sample, A->B,
// B->C, C->A, ... over the clocks of a walk. Each request is issued as soon
// as the one before it is confirmed: the schedule drains the records while
// the kernel runs, waits until every SM has run the confirmation length at
// the target, and runs both detectors on the slice from the delay before
// the request to then (stream_request.hpp). The confirmation of one request
// is the delay of the next, and every request is a measurement kept, a
// direction whose stop is met measuring on while the other still needs its
// returns.
//
// Timer syncs: one right before each request and one at its detection, so a
// request's GPU time is interpolated over milliseconds, not over the launch.
#include <vector>

#include "core/measurement_core.hpp"
#include "core/schedules/pair_schedule.hpp"

namespace latest {

class ChainedSchedule : public PairSchedule {
 public:
  explicit ChainedSchedule(MeasurementCore& core);
  ~ChainedSchedule() override;

  std::vector<ClockPair> more_pilot_pairs(const std::vector<ClockPair>& pairs,
                                          const std::vector<ClockPair>& pilot) override;
  std::int64_t pair_iteration(ClockPair pair) override { return walk_fmas(pair); }
  void calibrate_for(const std::vector<ClockPair>& todo) override;
  std::vector<std::vector<ClockPair>> groups_after_sample(const std::vector<std::vector<ClockPair>>& groups) override;
  std::vector<PairResult> measure_group(const std::vector<ClockPair>& group, std::size_t first_number,
                                        std::size_t count) override;
  // Measures pairs already set up (routes: each with its hops) in one launch,
  // taking turns, until none needs more.
  std::vector<PairResult> measure(std::vector<PairProgress>& pairs, std::size_t count);

 private:
  // The walks over `todo`: pairs of one iteration length, among the clocks
  // of one block or between two blocks.
  std::vector<std::vector<ClockPair>> walks_of(const std::vector<ClockPair>& todo);
  // The iteration both directions of a pair of clocks run at.
  std::int64_t walk_fmas(ClockPair pair);
  // The iteration whose records hold a slice of (1 + settle_factor) x 1.5
  // the pilot's latency into the pair's target: the run's, or coarser for a
  // slow target.
  std::int64_t slice_fmas(ClockPair pair);
  double initial_capture_ms(ClockPair pair) const;

  // The next pair to request from where the clock is, or null.
  PairProgress* next_pair(std::vector<PairProgress>& pairs);
  // A launch at the iteration `next` needs, at its initial clock: true when
  // the request can go out now, false when it had to move the clock first
  // (a transit, or a failed one) and the walk chooses again.
  bool ready_for(PairProgress& next, std::vector<PairProgress>& pairs);
  // One request of `next` and what follows from it; false where it ended the pair.
  bool request_and_keep(PairProgress& next, std::size_t count);

  // One request and its detection (stream_request.hpp).
  Attempt request(ClockPair pair, const PairProgress& p, const std::vector<RouteHop>& via = {});
  void start_stream_at(Mhz init, std::int64_t fmas);
  // Every SM's last confirmation length of records (after `from`, per SM)
  // at this clock's calibrated rate, within half the step to its neighbour.
  bool settled_at(const std::vector<SmRecords>& sms, const std::vector<std::size_t>& from, Mhz mhz);
  WindowRecords drain();
  void stop_stream();

  MeasurementCore& core_;
  // The running launch: its clock (0 when none runs) and the newest records
  // of each SM, the start of the next request's slice.
  Mhz stream_clock_ = 0;
  std::int64_t stream_fmas_ = 0;
  std::vector<SmRecords> tail_;
  std::int64_t stream_bytes_ = 0;  // drained since the last request was measured
};

}  // namespace latest
