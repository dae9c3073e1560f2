#pragma once
// The report's figures as Vega-Lite specs, their data inline: the page draws
// them with the charting library (Vega-Lite, Vega, vega-embed; inlined into
// it), and `analysis/figures/` keeps each one for users to restyle.
#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/analysis.hpp"

namespace latest::report {

struct Figure {
  std::string id;       // heatmap-min-0, violin-0, scatter-0, accuracy-0, range-max-0, boxes-0, ...
  std::string caption;
  nlohmann::json spec;  // Vega-Lite, without $schema: the page names no address
};

// Which pairs' measurements the per-measurement figures (scatter,
// accuracy) carry: all of them, or where a report would grow too large
// (more than kDetailBudget measurements in all), the slowest pairs of each
// GPU whose measurements fit its share; accuracy then shows each pair's
// median error instead.
inline constexpr std::size_t kDetailBudget = 50000;
struct Detail {
  bool full = true;
  std::size_t per_gpu = 0;  // measurements a GPU's figures may carry when not full
};
Detail detail_for(const analysis::Analysis& analysis);
// The pairs (indices into gpu.pairs) a GPU's per-measurement figures show.
std::vector<std::size_t> detail_pairs(const analysis::GpuAnalysis& gpu, const Detail& detail);

// One GPU's figures: best- and worst-case heatmaps (`matrices` as
// matrices_json gives them), worst cases of increasing against decreasing
// pairs, the measurements of the pairs `detail` allows by cluster, and
// accuracy where the results carry a truth.
std::vector<Figure> gpu_figures(const analysis::GpuAnalysis& gpu, std::size_t index, const nlohmann::json& matrices,
                                const Detail& detail);

// Several GPUs of one model: the range matrices and the widest pairs (as
// report.cpp's models_json computes them).
std::vector<Figure> model_figures(const nlohmann::json& model, std::size_t index);

// Each figure as <dir>/<id>.vl.json, a complete spec with $schema.
void write_figures(const std::vector<Figure>& figures, const std::filesystem::path& dir);

}  // namespace latest::report
