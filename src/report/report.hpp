#pragma once
// `latest report`: one self-contained HTML file (no network access) with the
// summary, heatmaps, violins, per-pair scatter, accuracy, calibration,
// throttle events, skipped pairs, run metadata, and multi-GPU comparisons.
// The page draws its figures (figures.hpp, Vega-Lite specs) with the
// charting library inlined into it (report_template.html).
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "analysis/analysis.hpp"
#include "report/figures.hpp"

namespace latest::report {

extern const char* const kTemplate;

nlohmann::json report_data(const analysis::Analysis& analysis);
std::string render_html(const analysis::Analysis& analysis);
void write_report(const analysis::Analysis& analysis, const std::filesystem::path& file);
// Every figure of the report, for analysis/figures/.
std::vector<Figure> report_figures(const analysis::Analysis& analysis);
// Whether this build inlines the charting library (else reports have no
// figures: scripts/setup.sh installs it, then rebuild).
bool has_charting_library();

}  // namespace latest::report
