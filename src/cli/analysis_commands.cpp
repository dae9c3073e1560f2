#include "cli/analysis_commands.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "analysis/analysis.hpp"
#include "core/error.hpp"
#include "report/report.hpp"
#include "results/atomic_file.hpp"

namespace latest::cli {
namespace fs = std::filesystem;

namespace {

std::vector<fs::path> paths(const std::vector<std::string>& dirs) { return {dirs.begin(), dirs.end()}; }

analysis::AdaptiveSettings outlier_filter(const std::string& name) {
  if (name == "settled") return {};
  if (name == "paper") return analysis::AdaptiveSettings::paper();
  throw Error(ErrorKind::bad_argument, fmt::format("unknown --outlier-filter '{}'", name),
              "use settled (the default: minPts at least 4, eps widened below 100 measurements) or paper "
              "(Algorithm 3 as published)");
}

void add_filter_option(CLI::App& cmd, AnalyzeOptions& o) {
  cmd.add_option("--outlier-filter", o.outlier_filter,
                 "settled (no phantom clusters at small n) or paper (Algorithm 3 as published)")
      ->capture_default_str();
}

void check_output(const fs::path& where) {
  if (!directory_writable(where))
    throw Error(ErrorKind::bad_argument, fmt::format("cannot write {}", where.string()), "choose a writable --output");
}

}  // namespace

void add_analyze_command(CLI::App& app, AnalyzeOptions& o) {
  auto* cmd = app.add_subcommand("analyze", "outliers (adaptive DBSCAN), per-pair statistics, min/max matrices and the "
                                            "paper's Table II for one or more result directories (several GPUs merge)");
  cmd->add_option("dirs", o.dirs, "result directories")->required();
  cmd->add_option("-o,--output", o.output, "where to write (default: DIR/analysis)");
  add_filter_option(*cmd, o);
}

void add_report_command(CLI::App& app, AnalyzeOptions& o) {
  auto* cmd = app.add_subcommand("report", "one self-contained HTML report (no network needed) for one or more result "
                                           "directories");
  cmd->add_option("dirs", o.dirs, "result directories")->required();
  cmd->add_option("-o,--output", o.output, "the HTML file (default: DIR/report.html)");
  add_filter_option(*cmd, o);
}

int run_analyze(const AnalyzeOptions& o) {
  const fs::path out = o.output.empty() ? fs::path(o.dirs.front()) / "analysis" : fs::path(o.output);
  const analysis::AdaptiveSettings filter = outlier_filter(o.outlier_filter);
  check_output(out);
  const analysis::Analysis a = analysis::analyse(paths(o.dirs), filter);
  analysis::write_analysis(a, out);
  fmt::print("{}analysis in {}\n", analysis::summary_text(a), out.string());
  return 0;
}

int run_report(const AnalyzeOptions& o) {
  const fs::path out = o.output.empty() ? fs::path(o.dirs.front()) / "report.html" : fs::path(o.output);
  const analysis::AdaptiveSettings filter = outlier_filter(o.outlier_filter);
  check_output(out.has_parent_path() ? out.parent_path() : fs::path("."));
  const analysis::Analysis a = analysis::analyse(paths(o.dirs), filter);
  report::write_report(a, out);
  fmt::print("report: {}\n", out.string());
  return 0;
}

void analyse_and_report(const std::string& dir) {
  const analysis::Analysis a = analysis::analyse({fs::path(dir)});
  analysis::write_analysis(a, fs::path(dir) / "analysis");
  report::write_report(a, fs::path(dir) / "report.html");
}

}  // namespace latest::cli
