#pragma once
// `latest advise` and `latest route`: the table library's advisor and route
// search on the command line (docs/table.md, "Advisor").
#include <string>

#include <CLI/CLI.hpp>
#include <latest/latency_table.hpp>
#include <nlohmann/json.hpp>

namespace latest::cli {

struct AdvisorOptions {
  std::string table;
  unsigned from_mhz = 0, to_mhz = 0;
  double phase_ms = 0;
  std::string statistic = "p95";
  std::string rule = "break-even";
  double gain = 1, penalty = 1;
  double margin_ms = 0;
  bool json = false;
};
void add_advise_command(CLI::App& app, AdvisorOptions& options);
void add_route_command(CLI::App& app, AdvisorOptions& options);
int run_advise(const AdvisorOptions& options);
int run_route(const AdvisorOptions& options);

// Shared with --measure-route: a table, or an Error naming the file's problem.
LatencyTable load_table(const std::string& path);
Statistic statistic_named(const std::string& name);  // throws Error(bad_argument)
// A route the table predicts, from -> to; an Error naming the pair otherwise.
Route table_route(const LatencyTable& table, unsigned from_mhz, unsigned to_mhz, Statistic s, double margin_ms);
nlohmann::json route_json(unsigned from_mhz, const Route& r);
std::string route_text(unsigned from_mhz, const Route& r);

}  // namespace latest::cli
