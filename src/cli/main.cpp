// latest: GPU SM frequency switching latency, per pair of clocks.
// The CLI only parses, dispatches and maps errors to exit codes.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/advisor_commands.hpp"
#include "cli/analysis_commands.hpp"
#include "cli/device_commands.hpp"
#include "cli/measure_command.hpp"
#include "cli/parse_errors.hpp"
#include "cli/watch_command.hpp"
#include "cli/exit_codes.hpp"
#include "core/error.hpp"

namespace {

constexpr const char* kDescription =
    "LATEST measures how long an NVIDIA GPU takes to run at a new SM clock after the CPU asks for it\n"
    "(the frequency switching latency), for every pair of the clocks you list, with the statistics\n"
    "to trust the numbers. Without a GPU it runs on a simulated one.\n\n"
    "Examples:\n"
    "  latest --freq 600,900,1200,1500 --device 0 --rse 0.03   measure all 12 pairs\n"
    "  latest --freq 1980,990 --plan                          the plan and GPU time (measures a sample: clocks change)\n"
    "  latest --backend sim --sim-profile a100 --freq 1410,705 --output a100-run\n"
    "  latest info                                            the GPU, its clocks and timer; changes nothing\n"
    "  latest selftest                                        emulated switching: measure a known latency\n"
    "  latest watch --seconds 20                              the card's own clock changes under load; sets nothing\n"
    "  latest reset                                           restore clocks after a killed run\n"
    "  latest analyze DIR... / latest report DIR...           outliers, matrices, Table II; an HTML report\n"
    "  latest table DIR... -o FILE                            the latency table runtime systems load\n"
    "  latest advise --table T --from 1980 --to 990 --phase-ms 50   does a 50 ms phase pay the change?\n"
    "  latest route --table T --from 1095 --to 1260            the fastest way, through other clocks if faster\n\n"
    "Exit codes: 0 ok, 1 internal error, 2 bad argument, 3 not supported, 4 no permission,\n"
    "6 not found (device, file or directory), 9 driver or NVML missing, 15 GPU lost, 19 GPU in use by another run or\n"
    "process, 130 interrupted (clocks restored).";

}  // namespace

int main(int argc, char** argv) {
  using latest::Error;
  using latest::cli::ExitCode;
  CLI::App app{kDescription, "latest"};
  app.set_version_flag("--version", std::string("latest ") + LATEST_VERSION);
  latest::cli::MeasureOptions measure;
  latest::cli::add_measure_options(app, measure);
  latest::cli::ResetOptions reset;
  latest::cli::add_reset_command(app, reset);
  latest::cli::InfoOptions info;
  latest::cli::add_info_command(app, info);
  latest::cli::SelftestOptions selftest;
  latest::cli::add_selftest_command(app, selftest);
  latest::cli::AnalyzeOptions analyze, report;
  latest::cli::add_analyze_command(app, analyze);
  latest::cli::add_report_command(app, report);
  latest::cli::AnalyzeOptions table;
  latest::cli::add_table_command(app, table);
  latest::cli::WatchOptions watch;
  latest::cli::add_watch_command(app, watch);
  latest::cli::AdvisorOptions advise, route;
  latest::cli::add_advise_command(app, advise);
  latest::cli::add_route_command(app, route);
  // After the subcommands: they would inherit it, and it is the measurement's.
  app.footer("Results: one CSV per pair (<init>_<target>_<host>_<gpu>.csv) and manifest.json in --output.");
  app.require_subcommand(0, 1);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    const auto [message, hint] = latest::cli::parse_error_text(e, app);
    fmt::print(stderr, "latest: error: {}\nlatest: hint: {}\n", message, hint);
    return static_cast<int>(ExitCode::usage);
  } catch (const Error& e) {  // an option's value, parsed into its type at the edge
    fmt::print(stderr, "latest: error: {}\n", e.what());
    if (!e.hint().empty()) fmt::print(stderr, "latest: hint: {}\n", e.hint());
    return static_cast<int>(latest::cli::exit_code_for(e.kind()));
  }
  try {
    if (app.got_subcommand("reset")) return latest::cli::run_reset(reset);
    if (app.got_subcommand("info")) return latest::cli::run_info(info);
    if (app.got_subcommand("selftest")) return latest::cli::run_selftest(selftest);
    if (app.got_subcommand("watch")) return latest::cli::run_watch(watch);
    if (app.got_subcommand("analyze")) return latest::cli::run_analyze(analyze);
    if (app.got_subcommand("report")) return latest::cli::run_report(report);
    if (app.got_subcommand("table")) return latest::cli::run_table(table);
    if (app.got_subcommand("advise")) return latest::cli::run_advise(advise);
    if (app.got_subcommand("route")) return latest::cli::run_route(route);
    return latest::cli::run_measure(measure);
  } catch (const Error& e) {
    fmt::print(stderr, "latest: error: {}\n", e.what());
    if (!e.hint().empty()) fmt::print(stderr, "latest: hint: {}\n", e.hint());
    return static_cast<int>(latest::cli::exit_code_for(e.kind()));
  } catch (const std::exception& e) {
    fmt::print(stderr, "latest: internal error: {}\n", e.what());
    return static_cast<int>(ExitCode::internal);
  }
}
