#include "cli/run_session.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>

#include "cli/progress.hpp"
#include "cli/signals.hpp"
#include "cli/skip_reasons.hpp"
#include "core/error.hpp"
#include "results/output_lock.hpp"
#include "results/result_store.hpp"

namespace latest::cli {
namespace {

// Progress on stderr (`--progress`); everything else to the store.
class SessionObserver final : public RunObserver {
 public:
  SessionObserver(ResultStore& store, ProgressMode mode, const std::string& label)
      : store_(store), printer_(mode, stderr, 30, {}, label) {}
  void planned(const RunState& s) override { store_.planned(s); }
  void pair_started(ClockPair pair, std::size_t number, std::size_t count) override {
    printer_.started(pair, number, count);
  }
  void pair_finished(const PairResult& r, const RunState& s) override {
    store_.pair_finished(r, s);
    printer_.finished(r, r.reason.skipped() ? describe(r.reason) : std::string());
    results_.push_back(r);
  }
  void progress(const Progress& p) override { printer_.update(p); }
  void finished(const RunState& s) override { store_.finished(s); }
  void clear_line() const { printer_.clear_line(); }
  std::vector<PairResult> take_results() { return std::move(results_); }

 private:
  ResultStore& store_;
  ProgressPrinter printer_;
  std::vector<PairResult> results_;
};

// Whatever happens in its scope, the card gets its prior clocks back, on
// the main path.
struct RestoreOnExit {
  RunGuard* guard;
  ~RestoreOnExit() {
    if (!guard) return;
    try {
      guard->restore();
    } catch (const std::exception& e) {
      fmt::print(stderr, "latest: restoring the clocks failed: {} (run `latest reset`)\n", e.what());
    }
  }
};

}  // namespace

RunState plan_session(Backends& backends, const EngineSettings& settings, const std::string& progress) {
  // A line per pair of the sample as it finishes: the plan takes minutes.
  class PlanProgress final : public RunObserver {
   public:
    explicit PlanProgress(ProgressMode mode) : mode_(mode) {}
    void pair_finished(const PairResult& r, const RunState& st) override {
      if (mode_ == ProgressMode::none) return;
      ++finished_;
      fmt::print(stderr, "latest: plan: sample pair {} ({} -> {} MHz) {} after {} of GPU time\n", finished_,
                 r.pair.init, r.pair.target, r.reason.skipped() ? "skipped" : fmt::format("measured, n={}", r.rows.size()),
                 duration_text(st.cost.gpu_seconds));
    }

   private:
    ProgressMode mode_;
    int finished_ = 0;
  };
  const ProgressMode mode = parse_progress_mode(progress, isatty(STDERR_FILENO) != 0);
  PlanProgress observer(mode);
  if (mode != ProgressMode::none)
    fmt::print(stderr, "latest: plan: phase 1 and the pilot, then a sample of pairs measured to their stop (clocks "
                       "change as in a run and are restored)\n");
  install_stop_handlers();
  RestoreOnExit restore{backends.guard.get()};
  Engine engine(*backends.workload, *backends.clocks, settings, observer, stop_requested);
  return engine.plan();
}

RouteRun route_session(Backends& backends, const EngineSettings& settings, const std::vector<RouteRequest>& routes,
                       const std::vector<std::string>& names, const std::string& progress) {
  // A line per route as it finishes, named by its number.
  class RouteProgress final : public RunObserver {
   public:
    RouteProgress(const std::vector<std::string>& names, ProgressMode mode) : names_(names), mode_(mode) {}
    void pair_finished(const PairResult& r, const RunState&) override {
      const std::size_t n = r.number;
      if (mode_ == ProgressMode::none || n == 0 || n > names_.size()) return;
      if (r.reason.skipped())
        fmt::print(stderr, "latest: route {}/{} {}: skipped: {}\n", n, names_.size(), names_[n - 1], describe(r.reason));
      else
        fmt::print(stderr, "latest: route {}/{} {}: n={} RSE {:.1f}%\n", n, names_.size(), names_[n - 1], r.rows.size(),
                   r.rse * 100);
    }

   private:
    const std::vector<std::string>& names_;
    ProgressMode mode_;
  } observer(names, parse_progress_mode(progress, isatty(STDERR_FILENO) != 0));
  install_stop_handlers();
  RestoreOnExit restore{backends.guard.get()};
  Engine engine(*backends.workload, *backends.clocks, settings, observer, stop_requested);
  return engine.measure_routes(routes);
}

std::string duration_text(double seconds) {
  const auto s = static_cast<long>(std::lround(seconds));
  return s >= 3600 ? fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60) : fmt::format("{}:{:02}", s / 60, s % 60);
}

SessionResult run_session(Backends& backends, const EngineSettings& settings, const nlohmann::json& settings_doc,
                          const SessionOptions& options) {
  const std::string& output = options.output;
  std::string took_over;
  const OutputLock lock(output, options.break_lock, &took_over);
  if (!took_over.empty()) fmt::print(stderr, "latest: {}{}: {}\n", options.label, output, took_over);
  nlohmann::json run_key = settings_doc;
  run_key["device_uuid"] = backends.clocks->identity().uuid;
  run_key.erase("save_traces");  // what is kept, not what is measured
  run_key.erase("trace_first");
  run_key.erase("driver_version");  // conditions recorded, not settings
  run_key.erase("power_limit_w");
  // What was measured, not how it was asked for: the clocks as a set, the
  // backend as resolved (auto that chose the simulator is the simulator),
  // the card by its UUID (not the index or bus id that selected it).
  if (run_key.contains("freq_mhz") && run_key["freq_mhz"].is_array()) {
    auto freq = run_key["freq_mhz"].get<std::vector<Mhz>>();
    std::sort(freq.begin(), freq.end());
    run_key["freq_mhz"] = freq;
  }
  run_key["backend"] = backends.workload->info().backend;
  run_key.erase("device");
  ResultStore store(output, run_key, settings_doc, describe);
  const auto done = store.resume();
  if (!done.empty())
    fmt::print(stderr, "latest: {}resuming {}: {} {} already done\n", options.label, output, done.size(),
               done.size() == 1 ? "pair" : "pairs");
  SessionObserver observer(store, parse_progress_mode(options.progress, isatty(STDERR_FILENO) != 0 && options.label.empty()),
                           options.label);
  install_stop_handlers();
  RestoreOnExit restore{backends.guard.get()};
  SessionResult result;
  for (const auto& [init, target] : done) result.kept.push_back({init, target});
  try {
    Engine engine(*backends.workload, *backends.clocks, settings, observer, stop_requested);
    result.state = engine.run(done);
  } catch (const Error& e) {
    observer.clear_line();
    store.finish(e.kind() == ErrorKind::interrupted ? "interrupted" : "failed", e.what());
    if (e.kind() == ErrorKind::interrupted)
      throw Error(ErrorKind::interrupted, e.what(),
                  fmt::format("the clocks are restored; run the same command again to resume: the pairs finished in "
                              "{} are kept",
                              options.output));
    throw;
  } catch (const std::exception& e) {
    observer.clear_line();
    store.finish("failed", e.what());
    throw;
  }
  observer.clear_line();
  store.finish("complete");
  result.results = observer.take_results();
  return result;
}

}  // namespace latest::cli
