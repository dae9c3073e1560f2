// Routes measured end to end (--measure-route; docs/table.md, "Measuring a
// route"): the detour and the direct change it should beat take turns in one
// chained launch, so both meet the same card state.
#include <algorithm>

#include <fmt/format.h>

#include "core/engine.hpp"
#include "core/error.hpp"

namespace latest {

RouteRun Engine::measure_routes(const std::vector<RouteRequest>& routes) {
  if (!workload_.can_stream())
    throw Error(ErrorKind::not_supported,
                "measuring a route needs the chained schedule, and this workload cannot stream its records",
                "measure routes with a workload that streams: the CUDA one or the simulator");
  if (routes.empty()) throw Error(ErrorKind::bad_argument, "no route to measure");
  started_ns_ = workload_.time().now_ns();
  state_.device = clocks_.identity();
  state_.detector = settings_.detector;
  state_.schedule = Schedule::chained;
  state_.workload = workload_.info();
  supported_ = clocks_.supported_clocks();
  std::vector<Mhz> clocks;
  double longest = 0;
  for (const auto& r : routes) {
    clocks.push_back(r.pair.init);
    clocks.push_back(r.pair.target);
    for (const auto& hop : r.via) clocks.push_back(hop.clock);
    longest = std::max(longest, r.expected_ms);
  }
  for (Mhz f : clocks)
    if (std::find(supported_.begin(), supported_.end(), f) == supported_.end())
      throw Error(ErrorKind::not_supported, fmt::format("{} MHz is not a clock this GPU supports", f));

  const Mhz fastest = *std::max_element(clocks.begin(), clocks.end());
  const std::int64_t probe_fmas = settings_.plan.iteration_fmas.value_or(settings_.plan.min_iteration_fmas);
  const auto& probe = calibration(fastest, probe_fmas);
  ns_per_fma_ = probe.pooled.iteration.mean / static_cast<double>(probe_fmas);
  // The expected latencies stand in for the pilot: they size each route's
  // capture and the launch's iteration, as a pilot's would.
  state_.capture_ms = settings_.plan.capture_ms.value_or(capture_from_pilot(longest, settings_.plan));
  state_.iteration_fmas = settings_.plan.iteration_fmas.value_or(
      std::max(iteration_for(state_.capture_ms), iteration_for(1.5 * (1 + settings_.settle_factor) * longest)));
  std::sort(clocks.begin(), clocks.end());
  clocks.erase(std::unique(clocks.begin(), clocks.end()), clocks.end());
  for (Mhz f : clocks) state_.calibrations.push_back(calibration(f, state_.iteration_fmas));

  std::vector<PairProgress> progress(routes.size());
  for (std::size_t i = 0; i < routes.size(); ++i) {
    PairProgress& p = progress[i];
    p.result.pair = routes[i].pair;
    p.result.status = "measured";
    p.number = i + 1;
    p.capture_ms = p.usual_capture_ms = settings_.plan.capture_ms.value_or(capture_from_pilot(routes[i].expected_ms, settings_.plan));
    p.fmas = p.usual_fmas = state_.iteration_fmas;
    p.via = routes[i].via;
    observer_.pair_started(routes[i].pair, p.number, routes.size());
  }
  state_.cost.planning_gpu_seconds = seconds_since_start();
  run_chained(progress, routes.size());
  RouteRun run;
  for (const auto& p : progress) run.results.push_back(p.result);
  state_.cost.gpu_seconds = seconds_since_start();
  observer_.finished(state_);
  run.state = state_;
  return run;
}

}  // namespace latest
