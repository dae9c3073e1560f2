#pragma once
// `latest analyze`, `latest report` and `latest table`.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "analysis/analysis.hpp"

namespace latest::cli {

struct AnalyzeOptions {
  std::vector<std::string> dirs;
  std::string outlier_filter = "settled";  // settled | paper
  std::string output;  // default: <first dir>/analysis (analyze), <first dir>/report.html (report)
};
void add_analyze_command(CLI::App& app, AnalyzeOptions& options);
void add_table_command(CLI::App& app, AnalyzeOptions& options);  // -o required: the table file or directory
int run_table(const AnalyzeOptions& options);
void add_report_command(CLI::App& app, AnalyzeOptions& options);
int run_analyze(const AnalyzeOptions& options);
int run_report(const AnalyzeOptions& options);

// What a measurement run does with its own output at the end; the analysis
// for the terminal's summary.
analysis::Analysis analyse_and_report(const std::string& dir);

}  // namespace latest::cli
