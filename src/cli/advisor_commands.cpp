#include "cli/advisor_commands.hpp"

#include <fmt/format.h>

#include "cli/parse_errors.hpp"
#include "core/error.hpp"

namespace latest::cli {
namespace {

constexpr const char* kStatistics = "min, p05, median, mean, p95, p99 or max";

void add_pair_options(CLI::App& cmd, AdvisorOptions& o) {
  cmd.add_option("--table", o.table, "the latency table (latest table, docs/table.md)")->required();
  cmd.add_option("--from", o.from_mhz, "the current clock, MHz")->required();
  cmd.add_option("--to", o.to_mhz, "the wanted clock, MHz")->required();
  cmd.add_option("--statistic", o.statistic, std::string("the latency to plan with: ") + kStatistics)
      ->capture_default_str();
  cmd.add_option("--margin-ms", o.margin_ms, "take a detour only when it beats the direct change by more than this")
      ->capture_default_str()
      ->check(non_negative_number());
  cmd.add_flag("--json", o.json, "print JSON");
}

// Why a pair has no answer, with the way out.
Error pair_error(const TableError& e, const LatencyTable& table, unsigned from, unsigned to) {
  if (e.status() == LATEST_ERR_UNKNOWN_PAIR) {
    std::vector<unsigned> clocks = table.clocks();
    return Error(ErrorKind::bad_argument, fmt::format("the table does not list {} MHz", from == to || 
                 std::find(clocks.begin(), clocks.end(), from) == clocks.end() ? from : to),
                 fmt::format("use one of its clocks: {}", fmt::join(clocks, ", ")));
  }
  if (e.status() == LATEST_ERR_NOT_MEASURED)
    return Error(ErrorKind::bad_argument, fmt::format("the table has no latency for {} -> {} MHz (skipped or not measured)", from, to),
                 "measure the pair (latest --freq " + std::to_string(from) + "," + std::to_string(to) +
                     ") and rebuild the table, or ask for a pair it lists as measured");
  return Error(ErrorKind::bad_argument, e.what(), "see latest advise --help");
}

std::string ms(double v) { return fmt::format("{:.3f} ms", v); }

}  // namespace

LatencyTable load_table(const std::string& path) {
  try {
    return LatencyTable::load(path);
  } catch (const TableError& e) {
    throw Error(e.status() == LATEST_ERR_UNREADABLE ? ErrorKind::not_found : ErrorKind::bad_argument, e.what(),
                "give a table that `latest table` wrote, e.g. `latest table RESULT_DIR -o table.json` (docs/table.md)");
  }
}

Statistic statistic_named(const std::string& name) {
  for (Statistic s : {Statistic::min, Statistic::p05, Statistic::median, Statistic::mean, Statistic::p95, Statistic::p99,
                      Statistic::max})
    if (name == to_string(s)) return s;
  throw Error(ErrorKind::bad_argument, fmt::format("unknown --statistic '{}'", name), std::string("use ") + kStatistics);
}

Route table_route(const LatencyTable& table, unsigned from, unsigned to, Statistic s, double margin_ms) {
  try {
    return table.route(from, to, s, margin_ms);
  } catch (const TableError& e) {
    throw pair_error(e, table, from, to);
  }
}

// As the library's route: the clocks to request (the start is from_mhz).
nlohmann::json route_json(unsigned from_mhz, const Route& r) {
  return {{"from_mhz", from_mhz},     {"clocks_mhz", r.clocks_mhz}, {"wait_ms", r.wait_ms}, {"latency_ms", r.latency_ms},
          {"band_ms", {r.low_ms, r.high_ms}}, {"direct_ms", r.direct_ms}, {"detour", r.detour()}};
}

std::string route_text(unsigned from_mhz, const Route& r) {
  std::string text = std::to_string(from_mhz);
  for (std::size_t h = 0; h < r.clocks_mhz.size(); ++h) {
    text += fmt::format(" -> {}", r.clocks_mhz[h]);
    if (h + 1 < r.clocks_mhz.size()) text += fmt::format(" (wait {})", ms(r.wait_ms[h]));
  }
  return text + " MHz";
}

void add_route_command(CLI::App& app, AdvisorOptions& o) {
  auto* cmd = app.add_subcommand("route", "the fastest way from one clock to another at a statistic of the table, "
                                          "through other clocks where that is faster (changes nothing)");
  add_pair_options(*cmd, o);
}

void add_advise_command(CLI::App& app, AdvisorOptions& o) {
  auto* cmd = app.add_subcommand("advise", "whether a coming phase is long enough to pay a clock change "
                                           "(docs/table.md, \"Advisor\"; changes nothing)");
  add_pair_options(*cmd, o);
  cmd->add_option("--phase-ms", o.phase_ms, "how long the coming phase lasts, ms")->required()->check(non_negative_number());
  cmd->add_option("--rule", o.rule, "break-even (the phase repays the change and the change back) or 3x (the phase "
                                    "lasts 3x the change)")
      ->capture_default_str()
      ->check(CLI::IsMember({"break-even", "3x"}));
  cmd->add_option("--gain", o.gain, "what a ms at the wanted clock gains (any unit; only gain : penalty counts)")
      ->capture_default_str()
      ->check(positive_number());
  cmd->add_option("--penalty", o.penalty, "what a ms at a clock nobody wants costs, while changing back (same unit)")
      ->capture_default_str()
      ->check(non_negative_number());
}

int run_route(const AdvisorOptions& o) {
  const LatencyTable table = load_table(o.table);
  const Statistic s = statistic_named(o.statistic);
  const Route r = table_route(table, o.from_mhz, o.to_mhz, s, o.margin_ms);
  if (o.json) {
    nlohmann::json out = route_json(o.from_mhz, r);
    out["statistic"] = o.statistic;
    out["margin_ms"] = o.margin_ms;
    fmt::print("{}\n", out.dump(1));
    return 0;
  }
  fmt::print("{}: {} at {} (predicted band {} to {})\n", route_text(o.from_mhz, r), ms(r.latency_ms), o.statistic,
             ms(r.low_ms), ms(r.high_ms));
  if (r.detour())
    fmt::print("the direct change takes {}: the detour saves {}\n", ms(r.direct_ms), ms(r.direct_ms - r.latency_ms));
  else if (o.from_mhz != o.to_mhz)
    fmt::print("no detour beats the direct change by more than {}\n", ms(o.margin_ms));
  return 0;
}

int run_advise(const AdvisorOptions& o) {
  const LatencyTable table = load_table(o.table);
  const Statistic s = statistic_named(o.statistic);
  const Rule rule = o.rule == "3x" ? Rule::three_x : Rule::break_even;
  Advice a;
  try {
    a = table.advise(o.from_mhz, o.to_mhz, o.phase_ms, s, rule, {o.gain, o.penalty}, o.margin_ms);
  } catch (const TableError& e) {
    // The way back is what break-even needs beyond the route.
    const bool back = e.status() == LATEST_ERR_NOT_MEASURED && rule == Rule::break_even;
    if (back) table_route(table, o.from_mhz, o.to_mhz, s, o.margin_ms);  // throws if the way there is the missing one
    Error why = pair_error(e, table, back ? o.to_mhz : o.from_mhz, back ? o.from_mhz : o.to_mhz);
    if (back) throw Error(ErrorKind::bad_argument, why.what() + std::string(": the break-even rule needs the way back"),
                          "measure it, or use --rule 3x, which needs only the way there");
    throw why;
  }
  if (o.json) {
    nlohmann::json out = {{"from_mhz", o.from_mhz},      {"to_mhz", o.to_mhz},
                          {"phase_ms", o.phase_ms},      {"statistic", o.statistic},
                          {"rule", to_string(a.rule)},   {"decision", a.decision()},
                          {"route", route_json(o.from_mhz, a.route)},
                          {"latency_ms", a.latency_ms},  {"time_lost_ms", a.time_lost_ms},
                          {"min_interval_ms", a.min_interval_ms},
                          {"gain", o.gain},              {"penalty", o.penalty}};
    out["back"] = a.back.clocks_mhz.empty() ? nlohmann::json() : route_json(o.to_mhz, a.back);
    fmt::print("{}\n", out.dump(1));
    return 0;
  }
  fmt::print("{}: {} ({} rule, {})\n", a.decision(), route_text(o.from_mhz, a.route), to_string(a.rule), o.statistic);
  if (o.from_mhz == o.to_mhz) {
    fmt::print("already at {} MHz\n", o.to_mhz);
    return 0;
  }
  fmt::print("  there {}{}", ms(a.latency_ms), a.route.detour() ? fmt::format(" (direct {})", ms(a.route.direct_ms)) : "");
  if (!a.back.clocks_mhz.empty()) fmt::print(", back {} ({})", ms(a.back.latency_ms), route_text(o.to_mhz, a.back));
  fmt::print("\n  a change pays for phases longer than {}; this one lasts {}; time lost {}\n", ms(a.min_interval_ms),
             ms(o.phase_ms), ms(a.time_lost_ms));
  return 0;
}

}  // namespace latest::cli
