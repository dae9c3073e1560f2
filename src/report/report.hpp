#pragma once
// `latest report`: one self-contained HTML file (no network access) with the
// summary, heatmaps, violins, per-pair scatter, calibration, throttle events,
// skipped pairs, run metadata, and multi-GPU comparisons. The page draws its
// SVG figures from data embedded in it (report_template.html).
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "analysis/analysis.hpp"

namespace latest::report {

extern const char* const kTemplate;

nlohmann::json report_data(const analysis::Analysis& analysis);
std::string render_html(const analysis::Analysis& analysis);
void write_report(const analysis::Analysis& analysis, const std::filesystem::path& file);

}  // namespace latest::report
