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

struct SessionOptions {
  std::string output;              // the result directory (placeholders expanded)
  std::string progress = "auto";   // auto | tty | lines | none (cli/progress.hpp)
  bool break_lock = false;         // take the directory's lock from another host (results/output_lock.hpp)
  std::string label;               // "GPU 1: " before each progress line, where several GPUs run; a label also
                                   // turns a terminal's one rewritten line into lines
};

// Takes the directory's lock (Error(in_use) when another run has it) for
// the whole run.
SessionResult run_session(Backends& backends, const EngineSettings& settings, const nlohmann::json& settings_doc,
                          const SessionOptions& options);

// Phase 1 and the pilot only, for `--plan`: the run's cost plan, the clocks
// restored after.
RunState plan_session(Backends& backends, const EngineSettings& settings, const std::string& progress);

// Routes measured end to end (--measure-route), with progress, stop
// signals and the clocks restored as for a run.
RouteRun route_session(Backends& backends, const EngineSettings& settings, const std::vector<RouteRequest>& routes,
                       const std::vector<std::string>& names, const std::string& progress = "auto");

std::string duration_text(double seconds);

}  // namespace latest::cli
