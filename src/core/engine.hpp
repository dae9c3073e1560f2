#pragma once
// The methodology end to end (SPEC §3.1–§3.4): calibration, pair validity,
// pilot, the measurement loop with its stopping and throttling rules. Written
// only against the Workload and ClockControl interfaces.
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/clock_control.hpp"
#include "core/measurement_core.hpp"
#include "core/run_state.hpp"
#include "core/schedules/pair_schedule.hpp"
#include "core/workload.hpp"

namespace latest {

// The run end to end: phase 1, the pilot, the pair checks, the plan's
// sample, then every other pair in its schedule's groups.
class Engine {
 public:
  // `stop` is polled between windows; when it turns non-empty the engine
  // throws Interrupted with its text.
  Engine(Workload& workload, ClockControl& clocks, EngineSettings settings, RunObserver& observer,
         std::function<std::string()> stop = [] { return std::string(); });
  ~Engine();

  // Measures every pair not in `done`. Returns the state the manifest records.
  RunState run(const std::set<std::pair<Mhz, Mhz>>& done = {});
  // Phase 1, the pilot, the pair checks and the plan's sample of pairs
  // (measured to their stop and reported like a run's): the state with its
  // cost plan (RunState::cost).
  RunState plan(const std::set<std::pair<Mhz, Mhz>>& done = {});
  // Measures routes in one chained launch, taking turns, each to the RSE
  // stop. Needs a workload that streams (ErrorKind::not_supported else).
  RouteRun measure_routes(const std::vector<RouteRequest>& routes);

 private:
  // Everything before the pairs are measured; returns those to measure.
  std::vector<ClockPair> prepare(const std::set<std::pair<Mhz, Mhz>>& done);
  std::vector<ClockPair> check_pairs();
  // Neighbours in the supported clock table.
  bool adjacent(ClockPair pair) const;
  // Pilot measurements of each pair; the first `capture_pairs` set the
  // capture (10x their longest latency), which it returns.
  double run_pilot(const std::vector<ClockPair>& pilot, std::size_t capture_pairs);
  // The plan of the pairs still to measure: their measurement counts from
  // `counts` (the sample's) or else from the pilot's spread.
  void plan_cost(const std::vector<ClockPair>& measured, const std::vector<double>& counts);
  // Both directions of a pair of clocks, as one group (the plan's sample,
  // and every group of the paper's schedule).
  static std::vector<std::vector<ClockPair>> groups_of(const std::vector<ClockPair>& todo);
  // Measures a sample of the groups to their stop and plans the rest from
  // it; returns the sample's indices.
  std::vector<std::size_t> measure_sample(const std::vector<std::vector<ClockPair>>& groups, std::size_t count);

  MeasurementCore core_;
  // Chained where the workload can stream and the settings ask for it,
  // else the paper's (said in the run state).
  const Schedule schedule_kind_;
  std::unique_ptr<PairSchedule> schedule_;
};

}  // namespace latest
