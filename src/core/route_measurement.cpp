// Routes measured end to end (--measure-route; docs/table.md, "Measuring a
// route"): the detour and the direct change it should beat take turns in one
// chained launch, so both meet the same card state.
#include <algorithm>

#include <fmt/format.h>

#include "core/engine.hpp"
#include "core/error.hpp"
#include "core/schedules/chained_schedule.hpp"

namespace latest {

RouteRun Engine::measure_routes(const std::vector<RouteRequest>& routes) {
  if (!core_.workload().can_stream())
    throw Error(ErrorKind::not_supported,
                "measuring a route needs the chained schedule, and this workload cannot stream its records",
                "measure routes with a workload that streams: the CUDA one or the simulator");
  if (routes.empty()) throw Error(ErrorKind::bad_argument, "no route to measure");
  const EngineSettings& s = core_.settings();
  RunState& state = core_.state();
  core_.start(Schedule::chained);
  const auto& supported = core_.supported();
  std::vector<Mhz> clocks;
  double longest = 0;
  for (const auto& r : routes) {
    clocks.push_back(r.pair.init);
    clocks.push_back(r.pair.target);
    for (const auto& hop : r.via) clocks.push_back(hop.clock);
    longest = std::max(longest, r.expected_ms);
  }
  for (Mhz f : clocks)
    if (std::find(supported.begin(), supported.end(), f) == supported.end())
      throw Error(ErrorKind::not_supported, fmt::format("{} MHz is not a clock this GPU supports", f));

  core_.measure_fma_cost(*std::max_element(clocks.begin(), clocks.end()));
  // The expected latencies stand in for the pilot: they size each route's
  // capture and the launch's iteration, as a pilot's would.
  state.capture_ms = s.plan.capture_ms.value_or(capture_from_pilot(longest, s.plan));
  state.iteration_fmas = s.plan.iteration_fmas.value_or(
      std::max(core_.iteration_for(state.capture_ms), core_.iteration_for(1.5 * (1 + s.settle_factor) * longest)));
  std::sort(clocks.begin(), clocks.end());
  clocks.erase(std::unique(clocks.begin(), clocks.end()), clocks.end());
  for (Mhz f : clocks) state.calibrations.push_back(core_.calibration(f, state.iteration_fmas));

  std::vector<PairProgress> progress(routes.size());
  for (std::size_t i = 0; i < routes.size(); ++i) {
    PairProgress& p = progress[i];
    p.result.pair = routes[i].pair;
    p.result.status = "measured";
    p.number = i + 1;
    p.capture_ms = p.usual_capture_ms = s.plan.capture_ms.value_or(capture_from_pilot(routes[i].expected_ms, s.plan));
    p.fmas = p.usual_fmas = state.iteration_fmas;
    p.via = routes[i].via;
    core_.observer().pair_started(routes[i].pair, p.number, routes.size());
  }
  state.cost.planning_gpu_seconds = core_.seconds_since_start();
  ChainedSchedule(core_).measure(progress, routes.size());
  RouteRun run;
  for (const auto& p : progress) run.results.push_back(p.result);
  state.cost.gpu_seconds = core_.seconds_since_start();
  core_.observer().finished(state);
  run.state = state;
  return run;
}

}  // namespace latest
