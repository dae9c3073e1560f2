#pragma once
// `latest analyze`, `latest report` and `latest table`.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace latest::cli {

struct AnalyzeOptions {
  std::vector<std::string> dirs;
  std::string outlier_filter = "settled";  // settled | paper
  std::string output;  // default: <first dir>/analysis (analyze), <first dir>/report.html (report)
};
struct TableOptions {
  std::vector<std::string> dirs;
  std::string outlier_filter = "settled";
  std::string output;
};
void add_analyze_command(CLI::App& app, AnalyzeOptions& options);
void add_table_command(CLI::App& app, TableOptions& options);
int run_table(const TableOptions& options);
void add_report_command(CLI::App& app, AnalyzeOptions& options);
int run_analyze(const AnalyzeOptions& options);
int run_report(const AnalyzeOptions& options);

// What a measurement run does with its own output at the end.
void analyse_and_report(const std::string& dir);

}  // namespace latest::cli
