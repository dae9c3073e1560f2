#include "cli/analysis_commands.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include <fmt/format.h>

#include "analysis/analysis.hpp"
#include "cli/arguments.hpp"
#include "analysis/latency_table_json.hpp"
#include "core/error.hpp"
#include "report/report.hpp"
#include "results/atomic_file.hpp"

namespace latest::cli {
namespace fs = std::filesystem;

namespace {


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
    throw Error(ErrorKind::bad_argument, unwritable_output(where.string()), "choose a writable --output");
}

// A file name from a GPU model's name: "Simulated NVIDIA H200" -> "simulated-nvidia-h200".
std::string file_stem_for(const std::string& model) {
  std::string name;
  for (char c : model) name += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '-';
  return name.empty() ? std::string("gpu") : name;
}

// analyze writes the latency table beside its other files: latency_table.json,
// or latency_table-<model>.json per model when there are several.
void write_tables(const analysis::Analysis& a, const analysis::AdaptiveSettings& filter, const std::string& filter_name,
                  const fs::path& out) {
  const auto tables = analysis::latency_tables(a, filter, filter_name);
  for (const auto& [model, t] : tables) {
    const std::string name = tables.size() > 1 ? "latency_table-" + file_stem_for(model) + ".json" : "latency_table.json";
    write_file_atomically(out / name, t.dump(1) + "\n");
  }
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

void add_table_command(CLI::App& app, AnalyzeOptions& o) {
  auto* cmd = app.add_subcommand("table", "the latency table runtime systems load (docs/table.md): one versioned JSON "
                                          "file per GPU model, merging every card of it");
  cmd->add_option("dirs", o.dirs, "result directories, or directories holding them below")->required();
  cmd->add_option("-o,--output", o.output, "the table file; a directory (existing, or ending in /) for one file per GPU model")
      ->required();
  add_filter_option(*cmd, o);
}

namespace {

// A directory given, or the result directories below it (any with a manifest).
std::vector<fs::path> result_dirs(const std::vector<std::string>& given) {
  std::vector<fs::path> out;
  for (const fs::path dir : given) {
    if (!fs::exists(dir))
      throw Error(ErrorKind::not_found, fmt::format("{} does not exist", dir.string()), "give a result directory");
    // A result directory, or a file the reader will say is none.
    if (fs::exists(dir / "manifest.json") || !fs::is_directory(dir)) {
      out.push_back(dir);
      continue;
    }
    std::vector<fs::path> found;
    if (fs::is_directory(dir))
      for (const auto& e : fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied))
        if (e.is_regular_file() && e.path().filename() == "manifest.json") found.push_back(e.path().parent_path());
    if (found.empty())
      throw Error(ErrorKind::not_found, fmt::format("{} holds no result directory (no manifest.json in or below it)",
                                                    dir.string()),
                  "give the --output directory of a measurement run");
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  // A directory reached twice (given twice, or with one that holds it) is
  // read once: its measurements would otherwise count twice.
  std::vector<fs::path> unique;
  std::vector<fs::path> seen;
  for (const auto& d : out) {
    std::error_code ec;
    const fs::path canonical = fs::weakly_canonical(d, ec);
    const fs::path key = ec ? d : canonical;
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    unique.push_back(d);
  }
  return unique;
}

// -o names a directory when it exists as one or ends in '/' (created then),
// else the one table's file.
bool names_directory(const std::string& output) {
  return fs::is_directory(output) || (!output.empty() && output.back() == '/');
}

}  // namespace

int run_table(const AnalyzeOptions& o) {
  const analysis::AdaptiveSettings filter = outlier_filter(o.outlier_filter);
  const analysis::Analysis a = analysis::analyse(result_dirs(o.dirs), filter);
  const auto tables = analysis::latency_tables(a, filter, o.outlier_filter);
  const fs::path out(o.output);
  if (tables.size() == 1 && !names_directory(o.output)) {
    check_output(out.has_parent_path() ? out.parent_path() : fs::path("."));
    write_file_atomically(out, tables.begin()->second.dump(1) + "\n");
    fmt::print("latency table of {}: {}\n", tables.begin()->first, out.string());
    return 0;
  }
  if (!names_directory(o.output)) {
    std::vector<std::string> models;
    for (const auto& [m, _] : tables) models.push_back(m);
    const fs::path dir = out.parent_path() / out.stem();
    throw Error(ErrorKind::bad_argument,
                fmt::format("the results hold {} GPU models ({}): one table each, so -o must name a directory, "
                            "not the file {}",
                            tables.size(), fmt::join(models, ", "), out.string()),
                fmt::format("give -o {}/ (created if missing; the tables are named after the models)", dir.string()));
  }
  check_output(out);
  for (const auto& [model, t] : tables) {
    const fs::path file = out / (file_stem_for(model) + ".json");
    write_file_atomically(file, t.dump(1) + "\n");
    fmt::print("latency table of {}: {}\n", model, file.string());
  }
  return 0;
}

int run_analyze(const AnalyzeOptions& o) {
  const fs::path out = o.output.empty() ? fs::path(o.dirs.front()) / "analysis" : fs::path(o.output);
  const analysis::AdaptiveSettings filter = outlier_filter(o.outlier_filter);
  const analysis::Analysis a = analysis::analyse(result_dirs(o.dirs), filter);  // the inputs' faults first
  check_output(out);
  analysis::write_analysis(a, out);
  write_tables(a, filter, o.outlier_filter, out);
  report::write_figures(report::report_figures(a), out / "figures");
  fmt::print("{}analysis in {}\n", analysis::summary_text(a), out.string());
  return 0;
}

int run_report(const AnalyzeOptions& o) {
  const fs::path out = o.output.empty() ? fs::path(o.dirs.front()) / "report.html" : fs::path(o.output);
  const analysis::AdaptiveSettings filter = outlier_filter(o.outlier_filter);
  const analysis::Analysis a = analysis::analyse(result_dirs(o.dirs), filter);  // the inputs' faults first
  check_output(out.has_parent_path() ? out.parent_path() : fs::path("."));
  report::write_report(a, out);
  fmt::print("report: {}\n", out.string());
  if (!report::has_charting_library())
    fmt::print(stderr, "latest: this build has no charting library, so the report has tables but no figures: run "
                       "scripts/setup.sh (it installs the library with npm), rebuild, and run latest report again\n");
  return 0;
}

analysis::Analysis analyse_and_report(const std::string& dir) {
  analysis::Analysis a = analysis::analyse({fs::path(dir)});
  analysis::write_analysis(a, fs::path(dir) / "analysis");
  write_tables(a, {}, "settled", fs::path(dir) / "analysis");
  report::write_figures(report::report_figures(a), fs::path(dir) / "analysis" / "figures");
  report::write_report(a, fs::path(dir) / "report.html");
  return a;
}

}  // namespace latest::cli
