// The HTML report in headless Chromium: it loads with no console errors, and
// every figure, drawn by the charting library, has the right number of marks
// as the Vega view counts them (data-marks, written by the page).
#include "report/report.hpp"

#include <functional>
#include <regex>
#include <set>

#include <gtest/gtest.h>

#include "report/charting_library.hpp"
#include "support/chromium.hpp"
#include "support/process.hpp"
#include "support/sim_results.hpp"

namespace latest::report {
namespace {
using latest::testing::dump_dom;
using latest::testing::scratch;
using latest::testing::slurp;

// The report of a simulated run in `dir` whose manifest `edit` changed, as
// Chromium renders it.
std::string rendered_after_edit(const std::filesystem::path& dir, int measurements,
                                const std::function<void(nlohmann::json&)>& edit) {
  latest::testing::write_sim_results(dir, "h200", 6, {1980, 990}, measurements);
  auto m = nlohmann::json::parse(slurp(dir / "manifest.json"));
  edit(m);
  std::ofstream(dir / "manifest.json") << m.dump();
  const auto html = dir / "report.html";
  write_report(analysis::analyse({dir}), html);
  return dump_dom(html);
}

// The markup of one figure, from its data-figure attribute to </figure>.
std::string figure(const std::string& dom, const std::string& id) {
  const auto at = dom.find("data-figure=\"" + id + "\"");
  if (at == std::string::npos) return {};
  return dom.substr(at, dom.find("</figure>", at) - at);
}

// What the page counted through the Vega view API for a figure: per mark
// name, its items ("items") and its instances, one per facet ("instances").
nlohmann::json marks(const std::string& dom, const std::string& id) {
  const std::string f = figure(dom, id);
  const auto at = f.find("data-marks=\"");
  if (at == std::string::npos) return nlohmann::json::object();
  std::string text = f.substr(at + 12, f.find('"', at + 12) - at - 12);
  for (std::size_t p; (p = text.find("&quot;")) != std::string::npos;) text.replace(p, 6, "\"");
  return nlohmann::json::parse(text);
}

int items(const std::string& dom, const std::string& id, const std::string& mark) {
  return marks(dom, id)["items"].value(mark + "_marks", -1);
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

TEST(Report, RendersEveryFigureInChromium) {
  const auto dir = scratch("report");
  const auto a_dir = dir / "gpu-a", b_dir = dir / "gpu-b";
  latest::testing::write_sim_results(a_dir, "a100", 1, {1410, 1095, 705});
  latest::testing::write_sim_results(b_dir, "a100", 2, {1410, 705});  // second card, fewer pairs
  const analysis::Analysis a = analysis::analyse({a_dir, b_dir});
  const auto html = dir / "report.html";
  write_report(a, html);
  // Nothing is fetched: no addresses outside the inlined charting library
  // (whose code names some it never calls here), nothing linked.
  std::string page = slurp(html);
  const auto library = page.find(kChartingLibrary);
  ASSERT_NE(library, std::string::npos) << "the library is inlined";
  page.erase(library, std::string(kChartingLibrary).size());
  EXPECT_EQ(page.find("http://"), std::string::npos);
  EXPECT_EQ(page.find("https://"), std::string::npos);
  EXPECT_EQ(page.find("<script src"), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);

  const std::string dom = dump_dom(html);
  ASSERT_NE(dom.find("data-rendered=\"1\""), std::string::npos) << "the script did not finish";
  EXPECT_NE(dom.find("data-errors=\"0\""), std::string::npos) << "console errors on load";
  EXPECT_EQ(dom.find("data-no-charts=\"1\""), std::string::npos) << "this build inlines the charting library";
  for (std::size_t g = 0; g < a.gpus.size(); ++g) {
    const auto& gpu = a.gpus[g];
    const int pairs = static_cast<int>(gpu.pairs.size());
    const std::string n = std::to_string(g);
    EXPECT_EQ(items(dom, "heatmap-min-" + n, "cells"), pairs);
    EXPECT_EQ(items(dom, "heatmap-max-" + n, "cells"), pairs);
    EXPECT_EQ(items(dom, "heatmap-max-" + n, "values"), pairs) << "values in cells where they fit";
    EXPECT_EQ(items(dom, "violin-" + n, "pairs"), pairs);
    EXPECT_EQ(marks(dom, "violin-" + n)["instances"].value("violin_marks", 0), 2) << "increasing and decreasing";
    EXPECT_GT(items(dom, "violin-" + n, "violin"), 0);
    EXPECT_EQ(items(dom, "scatter-" + n, "points"), static_cast<int>(gpu.pairs.front().all.n)) << "the first pair";
    // Simulated results carry their truth: every measurement against it.
    int measured = 0;
    for (const auto& p : gpu.pairs) measured += static_cast<int>(p.all.n);
    EXPECT_EQ(items(dom, "accuracy-" + n, "errors"), measured);
  }
  // The second card lacks 1095 MHz: the two cards share 2 pairs.
  EXPECT_EQ(items(dom, "range-min-0", "cells"), 2);
  EXPECT_EQ(items(dom, "range-max-0", "cells"), 2);
  EXPECT_EQ(items(dom, "boxes-0", "boxes_layer_1"), 2 * 2) << "a box per pair and GPU: " << marks(dom, "boxes-0").dump();
  // Axes with titles, a colour legend, and export of every figure.
  EXPECT_NE(figure(dom, "heatmap-max-0").find("initial clock (MHz)"), std::string::npos);
  EXPECT_NE(figure(dom, "heatmap-max-0").find("worst case (ms)"), std::string::npos);
  EXPECT_NE(figure(dom, "scatter-0").find("measurement number"), std::string::npos);
  EXPECT_NE(figure(dom, "scatter-0").find("DBSCAN cluster"), std::string::npos);
  const std::vector<std::string> ids = {"heatmap-min-", "heatmap-max-", "violin-", "scatter-", "accuracy-"};
  int exports = 0;
  for (const std::string g : {"0", "1"})
    for (const auto& id : ids) exports += count(figure(dom, id + g), "Save as SVG") + count(figure(dom, id + g), "Save as PNG");
  for (const std::string id : {"range-min-0", "range-max-0", "boxes-0"})
    exports += count(figure(dom, id), "Save as SVG") + count(figure(dom, id), "Save as PNG");
  EXPECT_EQ(count(dom, "data-marks="), 2 * 5 + 3);
  EXPECT_EQ(exports, 2 * (2 * 5 + 3)) << "SVG and PNG of every figure";
  std::filesystem::remove_all(dir);
}

// analysis/figures/: each figure's spec with its data, to restyle.
TEST(Report, FigureSpecsAreWrittenForRestyling) {
  const auto dir = scratch("report-specs");
  latest::testing::write_sim_results(dir, "h200", 3, {1980, 990}, 10);
  const auto figures = report_figures(analysis::analyse({dir}));
  write_figures(figures, dir / "figures");
  ASSERT_EQ(figures.size(), 5u);
  for (const auto& f : figures) {
    const auto spec = nlohmann::json::parse(slurp(dir / "figures" / (f.id + ".vl.json")));
    EXPECT_EQ(spec.value("$schema", ""), "https://vega.github.io/schema/vega-lite/v6.json") << f.id;
    EXPECT_EQ(spec.value("description", ""), f.caption);
    EXPECT_TRUE(spec.contains("config")) << f.id;
  }
  const auto scatter = nlohmann::json::parse(slurp(dir / "figures" / "scatter-0.vl.json"));
  EXPECT_EQ(scatter["data"]["values"].size(), 20u) << "both pairs' measurements";
  // The legend lists the chosen pair's clusters only.
  EXPECT_EQ(scatter["encoding"]["color"]["legend"]["values"]["expr"], "clusters_of[pair]");
  EXPECT_EQ(scatter["params"][1]["value"].size(), 2u) << "a list of clusters for each pair";
  // Heatmaps: a colour-blind-safe scale, ticked between its ends, labels readable on dark cells.
  int heatmaps = 0;
  for (const auto& f : figures) {
    const std::string text = slurp(dir / "figures" / (f.id + ".vl.json"));
    if (text.find("\"cells\"") == std::string::npos) continue;
    ++heatmaps;
    EXPECT_NE(text.find("\"viridis\""), std::string::npos) << f.id;
    EXPECT_NE(text.find("\"tickCount\""), std::string::npos) << f.id;
    EXPECT_NE(text.find("\"white\""), std::string::npos) << f.id;
  }
  EXPECT_GE(heatmaps, 2);
  std::filesystem::remove_all(dir);
}

class ReportProfile : public ::testing::TestWithParam<std::string> {};

TEST_P(ReportProfile, RendersFromSimulatorOutput) {
  const auto dir = scratch("report-" + GetParam());
  const std::vector<Mhz> clocks = GetParam() == "a100" ? std::vector<Mhz>{1410, 705}
                                  : GetParam() == "rtx6000" ? std::vector<Mhz>{2100, 1050}
                                                            : std::vector<Mhz>{1980, 990};
  latest::testing::write_sim_results(dir, GetParam(), 8, clocks, 25);
  const auto html = dir / "report.html";
  write_report(analysis::analyse({dir}), html);
  const std::string dom = dump_dom(html);
  EXPECT_NE(dom.find("data-rendered=\"1\""), std::string::npos);
  EXPECT_NE(dom.find("data-errors=\"0\""), std::string::npos);
  EXPECT_EQ(items(dom, "heatmap-max-0", "cells"), 2);
  EXPECT_EQ(items(dom, "scatter-0", "points"), 25);
  EXPECT_NE(dom.find("data-terms=\"1\""), std::string::npos) << "the terms, explained once";
  EXPECT_NE(dom.find("from the set-clock request until every SM runs at the target clock for good"), std::string::npos);
  // What a reader sees (text, not scripts or markup) carries no raw
  // floating-point noise such as "1.1549654694851086".
  std::string text;
  for (std::size_t at = 0; at < dom.size();) {
    if (dom.compare(at, 7, "<script") == 0) {
      at = dom.find("</script>", at);
      if (at == std::string::npos) break;
      at += 9;
    } else if (dom[at] == '<') {
      at = dom.find('>', at);
      if (at == std::string::npos) break;
      ++at;
      text += ' ';
    } else {
      text += dom[at++];
    }
  }
  std::smatch noise;
  EXPECT_FALSE(std::regex_search(text, noise, std::regex("[0-9]\\.[0-9]{7,}"))) << noise.str();
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Sim, ReportProfile, ::testing::Values("h200", "gh200", "a100", "rtx6000"));

// Synthetic results of `gpus` cards: the pairs of `clocks` that `measured`
// picks (all by default), `n` measurements each, with a known truth unless
// `truth` is false; cards differ by a few per cent.
analysis::Analysis synthetic(int gpus, const std::vector<Mhz>& clocks, int n,
                             const std::function<bool(Mhz, Mhz)>& measured = [](Mhz, Mhz) { return true; },
                             bool truth = true) {
  analysis::Analysis a;
  for (int g = 0; g < gpus; ++g) {
    analysis::GpuResults r;
    r.host = "node";
    r.uuid = "GPU-card-" + std::to_string(g);
    r.name = "Simulated NVIDIA H200";
    r.requested_clocks = clocks;
    for (Mhz i : clocks)
      for (Mhz t : clocks) {
        if (i == t || !measured(i, t)) continue;
        analysis::PairMeasurements m;
        m.pair = {i, t};
        for (int k = 1; k <= n; ++k) {
          const double v = (1 + 0.02 * g) * (5 + static_cast<double>(t % 7)) + 0.001 * (k % 5);
          m.index.push_back(k);
          m.switching_ms.push_back(v);
          m.transition_ms.push_back(1);
          m.paper_switching_ms.push_back(NAN);
          m.true_switching_ms.push_back(truth ? v - 0.0005 : NAN);
        }
        r.pairs.emplace(std::make_pair(i, t), m);
      }
    a.results.push_back(r);
  }
  for (const auto& r : a.results) a.gpus.push_back(analysis::analyse_gpu(r));
  return a;
}

// The report of `a` as Chromium draws it, checked drawn without console
// errors; its scratch directory is gone after.
std::string rendered(const analysis::Analysis& a, const std::string& name) {
  const auto dir = scratch(name);
  std::filesystem::create_directories(dir);
  write_report(a, dir / "report.html");
  const std::string dom = dump_dom(dir / "report.html");
  EXPECT_NE(dom.find("data-rendered=\"1\""), std::string::npos) << "the script did not finish";
  EXPECT_NE(dom.find("data-errors=\"0\""), std::string::npos) << "console errors";
  std::filesystem::remove_all(dir);
  return dom;
}

// The H200's 110 clocks: the heatmaps stay within the page (7 px cells,
// labels thinned by the library), and every pair not yet measured is a grey
// gap with its reason on hover.
TEST(Report, HeatmapsOfAFullClockTableRenderInChromium) {
  std::vector<Mhz> clocks;
  for (Mhz f = 345; f <= 1980; f += 15) clocks.push_back(f);
  ASSERT_EQ(clocks.size(), 110u);
  // 40 measured pairs across the table, 5 measurements each, no truth.
  std::set<std::pair<Mhz, Mhz>> chosen;
  for (std::size_t k = 0; k < 40; ++k) chosen.insert({clocks[(k * 7) % 110], clocks[(k * 13 + 5) % 110]});
  const analysis::Analysis a =
      synthetic(1, clocks, 5, [&](Mhz i, Mhz t) { return chosen.count({i, t}) > 0; }, false);
  const int measured = static_cast<int>(a.results.front().pairs.size());
  for (const auto& f : report_figures(a))
    if (f.id == "heatmap-max-0") {
      EXPECT_EQ(f.spec["width"], 770);
      EXPECT_EQ(f.spec["layer"].size(), 2u) << "no values in 7 px cells";
    }
  const std::string dom = rendered(a, "report-full-table");
  EXPECT_EQ(items(dom, "heatmap-max-0", "cells"), measured);
  EXPECT_EQ(items(dom, "heatmap-max-0", "gaps"), 110 * 109 - measured);
  EXPECT_EQ(marks(dom, "accuracy-0"), nlohmann::json::object()) << "no truth, no accuracy figure";
}

// Past kDetailBudget measurements the report summarises, and says so: the
// scatter holds the slowest pairs that fit, accuracy each pair's median,
// the tables the notable pairs.
TEST(Report, LargeResultsAreSummarisedAndSaySo) {
  std::vector<Mhz> clocks;
  for (Mhz f = 1005; f <= 1980; f += 15) clocks.push_back(f);  // 66 clocks, 4290 pairs
  const analysis::Analysis a = synthetic(1, clocks, 15);          // 64350 measurements
  const Detail detail = detail_for(a);
  ASSERT_FALSE(detail.full);
  const auto shown = detail_pairs(a.gpus[0], detail);
  EXPECT_EQ(shown.size(), kDetailBudget / 15);
  for (std::size_t i = 1; i < shown.size(); ++i)
    EXPECT_GE(a.gpus[0].pairs[shown[i - 1]].filtered.max, a.gpus[0].pairs[shown[i]].filtered.max) << "slowest first";
  EXPECT_LT(render_html(a).size(), 8u << 20);
  const std::string dom = rendered(a, "report-summarised");
  EXPECT_NE(dom.find("this report summarises them"), std::string::npos);
  EXPECT_NE(dom.find("data-summarised=\"1\""), std::string::npos) << "the per-pair tables say they are cut";
  EXPECT_EQ(items(dom, "accuracy-0", "errors"), 4290) << "one point a pair";
  EXPECT_EQ(items(dom, "scatter-0", "points"), 15) << "the slowest pair's measurements";
  EXPECT_EQ(items(dom, "heatmap-max-0", "cells"), 4290);

}

// Many GPUs: the comparison is drawn at once, each GPU's figures when its
// section is opened.
TEST(Report, ManyGpusFoldTheirSections) {
  const std::string dom = rendered(synthetic(10, {990, 1980}, 10), "report-many");
  EXPECT_EQ(count(dom, "<details data-gpu="), 10);
  EXPECT_EQ(items(dom, "range-max-0", "cells"), 2);
  EXPECT_EQ(items(dom, "boxes-0", "boxes_layer_1"), 2 * 10);
  EXPECT_EQ(marks(dom, "heatmap-max-3"), nlohmann::json::object()) << "drawn on opening only";
  EXPECT_LT(dom.find("data-model=\"0\""), dom.find("<details data-gpu=\"0\"")) << "the comparison first";
}

TEST(Report, PartialRunShowsItsGaps) {
  const auto dir = scratch("report-partial");
  const std::string dom = rendered_after_edit(dir, 5, [](nlohmann::json& m) { m["pairs"].erase(0); });
  EXPECT_NE(dom.find("data-errors=\"0\""), std::string::npos);
  EXPECT_NE(dom.find("have no result yet"), std::string::npos);
  EXPECT_EQ(items(dom, "heatmap-max-0", "gaps"), 1);
  EXPECT_EQ(items(dom, "heatmap-max-0", "cells"), 1);
  std::filesystem::remove_all(dir);
}

// Both detectors side by side, the events (discards, retries) and the
// records that did not fit the model with their trace files, as the
// manifest lists them.
TEST(Report, ShowsBothDetectorsAndTheMisfits) {
  const auto dir = scratch("report-misfits");
  const std::string dom = rendered_after_edit(dir, 10, [](nlohmann::json& m) {
    m["pairs"][0]["misfits"] = {{"stall", {{"count", 2}, {"measurements", {1, 2}}}}};
    m["pairs"][0]["trace_file"] = "traces/first.csv";
    m["pairs"][0]["discarded"] = {{"thermal", 5}};
    m["pairs"][0]["failed"] = {{"not_confirmed", 3}};
  });
  EXPECT_NE(dom.find("data-errors=\"0\""), std::string::npos);
  EXPECT_NE(dom.find("paper − this run's, µs"), std::string::npos);
  EXPECT_NE(dom.find("stall: 2"), std::string::npos);
  EXPECT_NE(dom.find("<p class=\"note\">stall: every SM halted"), std::string::npos);
  EXPECT_NE(dom.find("5 discarded thermal, 3 retried not_confirmed"), std::string::npos) << "events in view";
  EXPECT_NE(dom.find((dir / "traces/first.csv").string()), std::string::npos);
  std::filesystem::remove_all(dir);
  // With no misfit, no red paragraph explaining them.
  const auto clean = scratch("report-no-misfits");
  const std::string plain = rendered_after_edit(clean, 10, [](nlohmann::json&) {});
  EXPECT_EQ(plain.find("<p class=\"note\">stall: every SM halted"), std::string::npos);
  EXPECT_NE(plain.find("none, and no traces kept"), std::string::npos);
  std::filesystem::remove_all(clean);
}

}  // namespace
}  // namespace latest::report
