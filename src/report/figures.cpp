#include "report/figures.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "core/statistics.hpp"
#include "results/atomic_file.hpp"

namespace latest::report {
namespace {
using nlohmann::json;

// One look for every figure: the page's font, readable axes, no frame.
json config() {
  return {{"font", "system-ui, sans-serif"},
          {"axis", {{"labelFontSize", 11}, {"titleFontSize", 12}, {"titleFontWeight", "normal"}}},
          {"legend", {{"labelFontSize", 11}, {"titleFontSize", 12}, {"titleFontWeight", "normal"}}},
          {"view", {{"stroke", nullptr}}}};
}

json with_config(json spec) {
  spec["config"] = config();
  return spec;
}

std::string pair_name(Mhz init, Mhz target) { return fmt::format("{} → {} MHz", init, target); }

// Initial clocks in rows, targets in columns, as in the paper; a cell's
// value in it where the cell is large enough to hold it. Gaps (pairs
// skipped or not yet measured) are grey, with the reason on hover.
json heatmap(const std::vector<Mhz>& clocks, const json& matrix, const std::map<std::pair<Mhz, Mhz>, std::string>& gaps,
             const std::string& legend) {
  const int n = static_cast<int>(clocks.size());
  // 3 clocks: 60 px cells; 110 clocks: 7 px, labels thinned to fit.
  const int cell = std::clamp(720 / std::max(n, 1), 7, 60);
  json cells = json::array(), holes = json::array();
  std::vector<double> values;  // the cells' ms
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      if (i == j) continue;
      const json& v = matrix.at(static_cast<std::size_t>(i)).at(static_cast<std::size_t>(j));
      const Mhz a = clocks[static_cast<std::size_t>(i)], b = clocks[static_cast<std::size_t>(j)];
      if (v.is_number()) {
        cells.push_back({{"init", a}, {"target", b}, {"ms", v}});
        values.push_back(v.get<double>());
      } else if (const auto g = gaps.find({a, b}); g != gaps.end()) {
        holes.push_back({{"init", a}, {"target", b}, {"note", g->second}});
      }
    }
  const json axis_common = {{"labelOverlap", "greedy"}, {"labelFontSize", n > 40 ? 8 : 11}};
  json x_axis = axis_common;
  x_axis["orient"] = "top";
  x_axis["labelAngle"] = n > 12 ? -90 : 0;
  const json x = {{"field", "target"}, {"type", "ordinal"}, {"title", "target clock (MHz)"},
                  {"scale", {{"domain", clocks}}}, {"axis", x_axis}};
  const json y = {{"field", "init"}, {"type", "ordinal"}, {"title", "initial clock (MHz)"},
                  {"scale", {{"domain", clocks}}}, {"axis", axis_common}};
  const json where = {{{"field", "init"}, {"title", "initial (MHz)"}}, {{"field", "target"}, {"title", "target (MHz)"}}};
  json value_tip = where;
  value_tip.push_back({{"field", "ms"}, {"title", "ms"}, {"format", ".3f"}});
  json layers = json::array();
  layers.push_back({{"name", "cells"},
                    {"data", {{"values", cells}}},
                    {"mark", {{"type", "rect"}}},
                    {"encoding",
                     {{"x", x},
                      {"y", y},
                      {"color", {{"field", "ms"}, {"type", "quantitative"}, {"title", legend},
                                 {"scale", {{"scheme", "viridis"}}},
                                 {"legend", {{"tickCount", 5}, {"format", ".1f"}}}}},
                      {"tooltip", value_tip}}}});
  if (!holes.empty()) {
    json gap_tip = where;
    gap_tip.push_back({{"field", "note"}, {"title", "no value"}});
    layers.push_back({{"name", "gaps"},
                      {"data", {{"values", holes}}},
                      {"mark", {{"type", "rect"}, {"color", "#e4e4e4"}}},
                      {"encoding", {{"x", x}, {"y", y}, {"tooltip", gap_tip}}}});
  }
  if (cell >= 34) {
    // Viridis runs from dark (short) to light (long): white labels on the
    // darker half of the range, black on the lighter.
    const auto [low, high] = std::minmax_element(values.begin(), values.end());
    const double middle = values.empty() ? 0.0 : (*low + *high) / 2;
    const json label_colour = {{"condition", {{"test", fmt::format("datum.ms < {}", middle)}, {"value", "white"}}},
                               {"value", "black"}};
    layers.push_back({{"name", "values"},
                      {"data", {{"values", cells}}},
                      {"mark", {{"type", "text"}, {"fontSize", 10}}},
                      {"encoding", {{"x", x}, {"y", y}, {"color", label_colour},
                                    {"text", {{"field", "ms"}, {"type", "quantitative"}, {"format", ".1f"}}}}}});
  }
  return with_config({{"width", cell * n}, {"height", cell * n}, {"layer", layers}});
}

// Each pair's worst case (without outliers), increasing against decreasing
// pairs: a violin of their density, and every pair as a point on it.
json violins(const analysis::GpuAnalysis& gpu) {
  json values = json::array();
  std::vector<double> all;
  for (const auto& p : gpu.pairs) {
    if (p.filtered.n == 0) continue;
    values.push_back({{"direction", p.pair.increasing() ? "increasing" : "decreasing"},
                      {"pair", pair_name(p.pair.init, p.pair.target)},
                      {"ms", p.filtered.max},
                      // A fixed spread of the points around the violin's axis.
                      {"jitter", static_cast<double>(static_cast<int>(all.size() * 37 % 21) - 10) / 40}});
    all.push_back(p.filtered.max);
  }
  // One bandwidth for both (Scott's rule over all pairs, never 0): a
  // direction with a single pair still has a shape.
  const Moments m = moments_of(all);
  const double spread = all.empty() ? 1 : *std::max_element(all.begin(), all.end()) - *std::min_element(all.begin(), all.end());
  const double bandwidth = std::max({1.06 * m.sd * std::pow(std::max<double>(1, static_cast<double>(all.size())), -0.2),
                                     spread / 50, 0.01 * std::abs(m.mean), 1e-3});
  const json y = {{"field", "ms"}, {"type", "quantitative"}, {"title", "worst-case switching latency (ms)"},
                  {"scale", {{"zero", false}}}};
  const json colour = {{"field", "direction"}, {"type", "nominal"}, {"title", "direction"},
                       {"scale", {{"domain", {"increasing", "decreasing"}}, {"range", {"#4c78a8", "#e45756"}}}}};
  const json area = {
      {"name", "violin"},
      {"transform", {{{"density", "ms"}, {"groupby", {"direction"}}, {"bandwidth", bandwidth}, {"as", {"ms", "density"}}}}},
      {"mark", {{"type", "area"}, {"orient", "horizontal"}, {"opacity", 0.45}}},
      {"encoding",
       {{"y", y},
        {"x", {{"field", "density"}, {"type", "quantitative"}, {"stack", "center"}, {"impute", nullptr}, {"title", nullptr},
               {"axis", nullptr}}},
        {"color", colour}}}};
  const json points = {
      {"name", "pairs"},
      {"mark", {{"type", "point"}, {"filled", true}, {"size", 22}, {"color", "#333"}}},
      {"encoding",
       {{"y", y},
        {"x", {{"field", "jitter"}, {"type", "quantitative"}, {"scale", {{"domain", {-1, 1}}}}, {"axis", nullptr}}},
        {"tooltip", {{{"field", "pair"}}, {{"field", "ms"}, {"title", "worst case, ms"}, {"format", ".3f"}}}}}}};
  return with_config({{"data", {{"values", values}}},
                      {"facet", {{"column", {{"field", "direction"}, {"type", "nominal"}, {"title", nullptr},
                                             {"sort", {"increasing", "decreasing"}}}}}},
                      {"spec", {{"width", 200}, {"height", 320}, {"layer", {area, points}},
                                {"resolve", {{"scale", {{"x", "independent"}}}}}}}});
}

// Every pair's measurements in order, coloured by DBSCAN cluster (outliers
// grey); a menu picks the pair.
json scatter(const analysis::GpuAnalysis& gpu, const std::vector<std::size_t>& shown) {
  static const char* const kPalette[] = {"#4c78a8", "#f58518", "#54a24b", "#b279a2", "#9d755d", "#ff9da6", "#72b7b2", "#eeca3b"};
  json values = json::array(), names = json::array(), clusters_of = json::object();
  int most_clusters = 0;
  for (std::size_t i : shown) {
    const auto& p = gpu.pairs[i];
    const auto& m = gpu.results->pairs.at({p.pair.init, p.pair.target});
    const std::string name = pair_name(p.pair.init, p.pair.target);
    names.push_back(name);
    most_clusters = std::max(most_clusters, p.clustering.clusters);
    std::set<std::string> present;
    for (std::size_t k = 0; k < m.switching_ms.size(); ++k) {
      const int label = p.clustering.labels[k];
      const std::string cluster = label < 0 ? std::string("outlier") : fmt::format("cluster {}", label + 1);
      present.insert(cluster);
      values.push_back({{"pair", name}, {"n", m.index[k]}, {"ms", std::round(m.switching_ms[k] * 1e4) / 1e4},
                        {"cluster", cluster}});
    }
    clusters_of[name] = present;  // the legend lists the chosen pair's own
  }
  json domain = json::array(), range = json::array();
  for (int c = 0; c < most_clusters; ++c) {
    domain.push_back(fmt::format("cluster {}", c + 1));
    range.push_back(kPalette[c % 8]);
  }
  domain.push_back("outlier");
  range.push_back("#aaaaaa");
  return with_config(
      {{"data", {{"values", values}}},
       {"params", {{{"name", "pair"}, {"value", names.empty() ? json("") : names[0]},
                    {"bind", {{"input", "select"}, {"options", names}, {"name", "pair "}}}},
                   {{"name", "clusters_of"}, {"value", clusters_of}}}},
       {"transform", {{{"filter", "datum.pair === pair"}}}},
       {"width", 640},
       {"height", 280},
       {"name", "points"},
       {"mark", {{"type", "point"}, {"filled", true}, {"size", 28}}},
       {"encoding",
        {{"x", {{"field", "n"}, {"type", "quantitative"}, {"title", "measurement number"}}},
         {"y", {{"field", "ms"}, {"type", "quantitative"}, {"title", "switching latency (ms)"}, {"scale", {{"zero", false}}}}},
         {"color", {{"field", "cluster"}, {"type", "nominal"}, {"title", "DBSCAN cluster"},
                    {"scale", {{"domain", domain}, {"range", range}}},
                    {"legend", {{"values", {{"expr", "clusters_of[pair]"}}}}}}},
         {"tooltip", {{{"field", "pair"}}, {{"field", "n"}, {"title", "measurement"}},
                      {{"field", "ms"}, {"format", ".4f"}}, {{"field", "cluster"}}}}}}});
}

// Measured against the truth: the error in µs against the true latency,
// per measurement (or, where the report summarises, each pair's median),
// coloured by pair where there are few enough to tell apart.
json accuracy(const analysis::GpuAnalysis& gpu, bool per_measurement, std::size_t& with_truth) {
  json values = json::array();
  with_truth = 0;
  for (const auto& p : gpu.pairs) {
    const auto& m = gpu.results->pairs.at({p.pair.init, p.pair.target});
    std::vector<double> errors, truths;
    for (std::size_t k = 0; k < m.switching_ms.size() && k < m.true_switching_ms.size(); ++k) {
      if (!std::isfinite(m.true_switching_ms[k])) continue;
      ++with_truth;
      errors.push_back((m.switching_ms[k] - m.true_switching_ms[k]) * 1e3);
      truths.push_back(m.true_switching_ms[k]);
      if (per_measurement)
        values.push_back({{"pair", pair_name(p.pair.init, p.pair.target)}, {"true_ms", m.true_switching_ms[k]},
                          {"error_us", std::round(errors.back() * 10) / 10}});
    }
    if (!per_measurement && !errors.empty())
      values.push_back({{"pair", pair_name(p.pair.init, p.pair.target)}, {"true_ms", quantile(truths, 0.5)},
                        {"error_us", std::round(quantile(errors, 0.5) * 10) / 10}});
  }
  json colour = {{"field", "pair"}, {"type", "nominal"}, {"title", "pair"}};
  if (gpu.pairs.size() > 12) colour = {{"value", "#4c78a8"}};
  const json points = {
      {"name", "errors"},
      {"mark", {{"type", "point"}, {"filled", true}, {"size", 20}, {"opacity", 0.7}}},
      {"encoding",
       {{"x", {{"field", "true_ms"}, {"type", "quantitative"}, {"title", "true switching latency (ms)"}, {"scale", {{"zero", false}}}}},
        {"y", {{"field", "error_us"}, {"type", "quantitative"},
               {"title", per_measurement ? "measured − true (µs)" : "median of measured − true (µs)"}}},
        {"color", colour},
        {"tooltip", {{{"field", "pair"}}, {{"field", "true_ms"}, {"title", "true, ms"}, {"format", ".4f"}},
                     {{"field", "error_us"}, {"title", "error, µs"}, {"format", ".1f"}}}}}}};
  const json zero = {{"name", "zero"},
                     {"data", {{"values", json::array({json::object()})}}},
                     {"mark", {{"type", "rule"}, {"color", "#555"}, {"strokeDash", {4, 3}}}},
                     {"encoding", {{"y", {{"datum", 0}, {"type", "quantitative"}}}}}};
  json with_data = points;
  with_data["data"] = {{"values", values}};
  return with_config({{"width", 640}, {"height", 260}, {"layer", {with_data, zero}}});
}

// The widest pairs across GPUs, one box per GPU (whiskers min to max).
json boxes(const json& model) {
  json values = json::array();
  for (const auto& w : model.at("widest")) {
    const std::string name = fmt::format("{}→{}", w.at("init").get<Mhz>(), w.at("target").get<Mhz>());
    for (std::size_t g = 0; g < w.at("per_gpu").size(); ++g)
      for (const auto& v : w.at("per_gpu")[g].at("values"))
        values.push_back({{"pair", name}, {"gpu", model.at("gpus")[g]}, {"ms", v}});
  }
  return with_config(
      {{"data", {{"values", values}}},
       {"width", {{"step", 28}}},
       {"height", 300},
       {"name", "boxes"},
       {"mark", {{"type", "boxplot"}, {"extent", "min-max"}, {"size", 18}}},
       {"encoding",
        {{"x", {{"field", "pair"}, {"type", "nominal"}, {"title", "pair (MHz)"}, {"sort", nullptr}}},
         {"xOffset", {{"field", "gpu"}, {"type", "nominal"}}},
         {"y", {{"field", "ms"}, {"type", "quantitative"}, {"title", "switching latency without outliers (ms)"},
                {"scale", {{"zero", false}}}}},
         {"color", {{"field", "gpu"}, {"type", "nominal"}, {"title", "GPU"}}}}}});
}

}  // namespace

Detail detail_for(const analysis::Analysis& a) {
  std::size_t total = 0;
  for (const auto& r : a.results)
    for (const auto& [k, m] : r.pairs) total += m.switching_ms.size();
  if (total <= kDetailBudget) return {};
  return {false, kDetailBudget / std::max<std::size_t>(1, a.gpus.size())};
}

std::vector<std::size_t> detail_pairs(const analysis::GpuAnalysis& gpu, const Detail& detail) {
  std::vector<std::size_t> order(gpu.pairs.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (detail.full) return order;
  // The slowest worst cases first: the pairs a runtime most needs to see.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t l, std::size_t r) {
    const double a = gpu.pairs[l].filtered.n ? gpu.pairs[l].filtered.max : 0, b = gpu.pairs[r].filtered.n ? gpu.pairs[r].filtered.max : 0;
    return a > b;
  });
  std::vector<std::size_t> shown;
  std::size_t used = 0;
  for (std::size_t i : order) {
    const std::size_t n = gpu.pairs[i].all.n;
    if (!shown.empty() && used + n > detail.per_gpu) break;
    shown.push_back(i);
    used += n;
  }
  return shown;
}

std::vector<Figure> gpu_figures(const analysis::GpuAnalysis& gpu, std::size_t index, const json& matrices,
                                const Detail& detail) {
  const analysis::GpuResults& r = *gpu.results;
  std::map<std::pair<Mhz, Mhz>, std::string> gaps;
  for (Mhz a : r.requested_clocks)
    for (Mhz b : r.requested_clocks)
      if (a != b && !r.pairs.count({a, b}) && !r.skipped.count({a, b})) gaps[{a, b}] = "not measured yet";
  for (const auto& [k, why] : r.skipped) gaps[k] = "skipped: " + why;
  const std::string n = std::to_string(index);
  const std::vector<std::size_t> shown = detail_pairs(gpu, detail);
  std::vector<Figure> out = {
      {"heatmap-min-" + n, "Best case: the minimum switching latency of each pair, without outliers (rows initial, columns target)",
       heatmap(gpu.clocks, matrices.at("min_ms"), gaps, "best case (ms)")},
      {"heatmap-max-" + n, "Worst case: the maximum switching latency of each pair, without outliers (rows initial, columns target)",
       heatmap(gpu.clocks, matrices.at("max_ms"), gaps, "worst case (ms)")},
      {"violin-" + n, "Worst-case switching latency of increasing against decreasing pairs (one point a pair, without outliers)",
       violins(gpu)},
      {"scatter-" + n,
       detail.full ? "One pair's measurements in order, coloured by DBSCAN cluster (grey: outliers; all measurements)"
                   : fmt::format("One pair's measurements in order, coloured by DBSCAN cluster (grey: outliers). This report "
                                 "summarises: the menu holds the {} slowest of {} pairs; every measurement is in the result "
                                 "directory's CSVs",
                                 shown.size(), gpu.pairs.size()),
       scatter(gpu, shown)}};
  std::size_t with_truth = 0;
  json acc = accuracy(gpu, detail.full, with_truth);
  if (with_truth > 0)
    out.push_back({"accuracy-" + n,
                   detail.full ? fmt::format("Accuracy: each measurement against the known truth ({} measurements, outliers "
                                             "included)", with_truth)
                               : fmt::format("Accuracy: each pair's median error against the known truth ({} measurements, "
                                             "outliers included)", with_truth),
                   std::move(acc)});
  return out;
}

std::vector<Figure> model_figures(const json& model, std::size_t index) {
  const std::string n = std::to_string(index);
  const auto clocks = model.at("clocks").get<std::vector<Mhz>>();
  return {{"range-min-" + n, "Range over GPUs (max − min) of each pair's best case", heatmap(clocks, model.at("range_min"), {}, "range of best case (ms)")},
          {"range-max-" + n, "Range over GPUs (max − min) of each pair's worst case", heatmap(clocks, model.at("range_max"), {}, "range of worst case (ms)")},
          {"boxes-" + n, "The pairs whose worst case differs most across GPUs: one box per GPU (whiskers min to max)", boxes(model)}};
}

void write_figures(const std::vector<Figure>& figures, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  for (const auto& f : figures) {
    json spec = f.spec;
    spec["$schema"] = "https://vega.github.io/schema/vega-lite/v6.json";
    spec["description"] = f.caption;
    write_file_atomically(dir / (f.id + ".vl.json"), spec.dump(1) + "\n");
  }
}

}  // namespace latest::report
