// latest --measure-route A,M,...,B --table FILE: a route measured end to end
// the way a runtime takes it, beside the direct change, against what the
// table predicts (docs/table.md, "Measuring a route"). Writes routes.json.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "cli/advisor_commands.hpp"
#include "cli/arguments.hpp"
#include "cli/measure_command.hpp"
#include "cli/run_session.hpp"
#include "cli/skip_reasons.hpp"
#include "core/error.hpp"
#include "report/route_report.hpp"
#include "results/atomic_file.hpp"
#include "results/output_lock.hpp"

namespace latest::cli {
namespace {
namespace fs = std::filesystem;

// A route as the table predicts it: the waits, and the band of its last hop.
struct PredictedRoute {
  std::vector<Mhz> clocks;
  RouteRequest request;
  double latency_ms = 0, low_ms = 0, high_ms = 0;
};

double latency(const LatencyTable& t, Mhz a, Mhz b, Statistic s) {
  try {
    return t.latency_ms(a, b, s);
  } catch (const TableError& e) {
    throw Error(ErrorKind::bad_argument,
                fmt::format("the table has no latency for the hop {} -> {} MHz ({})", a, b, latest_status_text(e.status())),
                "measure the pair and rebuild the table, or choose a route through measured pairs (latest route)");
  }
}

PredictedRoute predict(const LatencyTable& t, const std::vector<Mhz>& clocks, Statistic s) {
  PredictedRoute r;
  r.clocks = clocks;
  r.request.pair = {clocks.front(), clocks.back()};
  for (std::size_t h = 0; h + 2 < clocks.size(); ++h) {
    const double wait = latency(t, clocks[h], clocks[h + 1], s);
    r.request.via.push_back({clocks[h + 1], wait});
    r.latency_ms += wait;
  }
  const Mhz last_from = clocks[clocks.size() - 2];
  r.low_ms = r.latency_ms + latency(t, last_from, clocks.back(), Statistic::p05);
  r.high_ms = r.latency_ms + latency(t, last_from, clocks.back(), Statistic::p95);
  r.request.expected_ms = r.latency_ms + latency(t, last_from, clocks.back(), Statistic::max);
  r.latency_ms += latency(t, last_from, clocks.back(), s);
  return r;
}

std::string route_name(const std::vector<Mhz>& clocks) { return fmt::format("{} MHz", fmt::join(clocks, " -> ")); }

double statistic_of(const std::vector<double>& xs, Statistic s) {
  const Summary sum = summarise(xs);
  switch (s) {
    case Statistic::min: return sum.min;
    case Statistic::p05: return sum.p5;
    case Statistic::median: return sum.median;
    case Statistic::mean: return sum.mean;
    case Statistic::p95: return sum.p95;
    case Statistic::p99: return sum.p99;
    case Statistic::max: return sum.max;
  }
  return sum.p95;
}

}  // namespace

int run_measure_route(const MeasureOptions& o) {
  if (o.table.empty())
    throw Error(ErrorKind::bad_argument, "--measure-route needs --table: the latencies the waits between requests come from",
                "make one with `latest table RESULT_DIR -o table.json`");
  if (o.freq)
    throw Error(ErrorKind::bad_argument, "--measure-route takes its clocks from the route; --freq is not used with it",
                "leave out --freq");
  if (o.plan_only) throw Error(ErrorKind::bad_argument, "--plan does not plan a route measurement yet", "leave out --plan");
  validate(o);
  if (const std::string note = crowded_sm_note(o.backend.warps); !note.empty()) fmt::print(stderr, "latest: {}\n", note);
  const std::vector<Mhz> clocks = parse_route(o.measure_route);
  const Statistic s = statistic_named(o.statistic);
  const LatencyTable table = load_table(o.table);
  if (!directory_writable(o.output))
    throw Error(ErrorKind::bad_argument, unwritable_output(o.output), "choose a writable --output directory");

  // The route, and the direct change it should beat.
  std::vector<PredictedRoute> routes = {predict(table, clocks, s)};
  if (clocks.size() > 2) routes.push_back(predict(table, {clocks.front(), clocks.back()}, s));

  if (o.devices.all || o.devices.devices.size() != 1)
    throw Error(ErrorKind::bad_argument, "--measure-route measures one GPU", "name one with --device");
  BackendOptions one = o.backend;
  one.device = o.devices.devices.front();
  Backends backends = open_backends(one);
  if (!backends.notice.empty()) fmt::print(stderr, "{}\n", backends.notice);
  const DeviceIdentity id = backends.clocks->identity();
  if (!table.matches(id.name) && !table.matches(id.uuid))
    fmt::print(stderr, "latest: the table describes {}, this is {}: its waits may not fit this card\n", table.model(),
               id.name);
  std::vector<Mhz> sorted = clocks;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  check_supported(sorted, backends.clocks->supported_clocks());
  const OutputLock lock(o.output, o.break_lock);
  std::vector<RouteRequest> requests;
  std::vector<std::string> names;
  for (const auto& r : routes) {
    requests.push_back(r.request);
    names.push_back(route_name(r.clocks) + (names.empty() ? "" : " (direct)"));
  }
  const EngineSettings settings =
      engine_settings(o, sorted, {{clocks.front(), clocks.back()}}, backends.workload->info().backend == "sim");
  const RouteRun run = route_session(backends, settings, requests, names, o.progress);

  nlohmann::json doc = {{"kind", "latest measured routes"},
                        {"schema_version", 1},
                        {"table", fs::absolute(o.table).string()},
                        {"statistic", o.statistic},
                        {"gpu", {{"model", id.name}, {"uuid", id.uuid}}},
                        {"backend", backends.workload->info().backend},
                        {"gpu_seconds", run.state.cost.gpu_seconds},
                        {"launches", run.state.settle_ms.size()},
                        {"routes", nlohmann::json::array()}};
  fmt::print("{:<34} {:>5}  {:>30}  {:>10} {:>10}\n", "route", "n", fmt::format("predicted {} ms (p05-p95 band)", o.statistic),
             "median ms", fmt::format("{} ms", o.statistic));
  std::vector<double> measured_at(routes.size(), NAN);
  for (std::size_t i = 0; i < routes.size(); ++i) {
    const PredictedRoute& r = routes[i];
    const PairResult& result = run.results[i];
    std::vector<double> xs;
    for (const auto& row : result.rows) xs.push_back(row.switching_ms);
    nlohmann::json waits = nlohmann::json::array();
    for (const auto& hop : r.request.via) waits.push_back(hop.wait_ms);
    nlohmann::json entry = {{"from_mhz", r.clocks.front()},
                            {"clocks_mhz", std::vector<Mhz>(r.clocks.begin() + 1, r.clocks.end())},
                            {"wait_ms", waits},
                            {"predicted", {{"latency_ms", r.latency_ms}, {"band_ms", {r.low_ms, r.high_ms}}}},
                            {"status", result.status},
                            {"n", xs.size()},
                            {"transits", result.transits},
                            {"gpu_seconds", result.gpu_seconds}};
    const std::string& name = names[i];
    if (result.status != "measured" || xs.empty()) {
      entry["reason"] = describe(result.reason);
      fmt::print("{:<34} {:>5}  skipped: {}\n", name, xs.size(), describe(result.reason));
    } else {
      const Summary sum = summarise(xs);
      measured_at[i] = statistic_of(xs, s);
      entry["measured_ms"] = {{"min", sum.min},   {"p05", sum.p5},   {"median", sum.median}, {"mean", sum.mean},
                              {"p95", sum.p95},   {"p99", sum.p99},  {"max", sum.max}};
      entry["median_in_band"] = r.low_ms <= sum.median && sum.median <= r.high_ms;
      entry["switching_ms"] = xs;
      fmt::print("{:<34} {:>5}  {:>30}  {:>10.3f} {:>10.3f}\n", name, xs.size(),
                 fmt::format("{:.3f} ({:.3f}-{:.3f})", r.latency_ms, r.low_ms, r.high_ms), sum.median, measured_at[i]);
    }
    doc["routes"].push_back(entry);
  }
  if (routes.size() > 1 && std::isfinite(measured_at[0]) && std::isfinite(measured_at[1])) {
    const bool beats = measured_at[0] < measured_at[1];
    doc["route_beats_direct"] = beats;
    fmt::print("measured at {}: the route takes {:.3f} ms, the direct change {:.3f} ms: the route is {}\n", o.statistic,
               measured_at[0], measured_at[1], beats ? "faster" : "not faster");
  }
  fs::create_directories(o.output);
  write_file_atomically(fs::path(o.output) / "routes.json", doc.dump(1) + "\n");
  report::write_route_report(doc, fs::path(o.output) / "routes.html");
  fmt::print("results in {0}/routes.json, report in {0}/routes.html\n", o.output);
  return 0;
}

}  // namespace latest::cli
