#pragma once
// One engine run as every command needs it: the result directory (resumed
// when it holds the same run), progress on a terminal, stop signals, and the
// clocks restored on every way out.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/backend_factory.hpp"
#include "core/engine.hpp"

namespace latest::cli {

struct SessionResult {
  std::vector<PairResult> results;  // pairs finished by this run
  std::vector<ClockPair> kept;      // pairs an earlier run into the directory finished
  RunState state;
};

// progress: auto | tty | lines | none (cli/progress.hpp).
SessionResult run_session(Backends& backends, const EngineSettings& settings, const nlohmann::json& settings_doc,
                          const std::string& output, const std::string& progress = "auto");

// Phase 1 and the pilot only, for `--plan`: the run's cost plan, the clocks
// restored after.
RunState plan_session(Backends& backends, const EngineSettings& settings);

// Routes measured end to end (--measure-route), with progress, stop
// signals and the clocks restored as for a run.
RouteRun route_session(Backends& backends, const EngineSettings& settings, const std::vector<RouteRequest>& routes,
                       const std::vector<std::string>& names, const std::string& progress = "auto");

std::string duration_text(double seconds);

}  // namespace latest::cli
