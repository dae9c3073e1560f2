// The HTML report in headless Chromium: it loads with no console errors, and
// every figure has the right number of cells and marks.
#include "report/report.hpp"

#include <functional>
#include <regex>

#include <gtest/gtest.h>

#include "support/process.hpp"
#include "support/sim_results.hpp"

namespace latest::report {
namespace {
using latest::testing::scratch;
using latest::testing::slurp;

std::string dump_dom(const std::filesystem::path& html) {
  const auto out = html.parent_path() / "dom.html";
  const auto profile = html.parent_path() / "chromium-profile";
  const std::string cmd =
      "timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
      "--disable-background-networking --disable-component-update --disable-sync --user-data-dir=" +
      profile.string() + " --virtual-time-budget=5000 --dump-dom file://" + html.string() + " > " + out.string() +
      " 2>/dev/null";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << "needs Debian's chromium: " << cmd;
  return slurp(out);
}

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
  const std::string page = slurp(html);
  EXPECT_EQ(page.find("http://"), page.find("http://www.w3.org/2000/svg")) << "nothing is fetched";
  EXPECT_EQ(page.find("https://"), std::string::npos);
  EXPECT_EQ(page.find("<script src"), std::string::npos);

  const std::string dom = dump_dom(html);
  ASSERT_NE(dom.find("data-rendered=\"1\""), std::string::npos) << "the script did not finish";
  EXPECT_NE(dom.find("data-errors=\"0\""), std::string::npos) << "console errors on load";
  for (std::size_t g = 0; g < a.gpus.size(); ++g) {
    const auto& gpu = a.gpus[g];
    const int pairs = static_cast<int>(gpu.pairs.size());
    const std::string n = std::to_string(g);
    EXPECT_EQ(count(figure(dom, "heatmap-min-" + n), "class=\"cell\""), pairs);
    EXPECT_EQ(count(figure(dom, "heatmap-max-" + n), "class=\"cell\""), pairs);
    EXPECT_EQ(count(figure(dom, "violin-" + n), "class=\"mark\""), pairs);
    EXPECT_EQ(count(figure(dom, "violin-" + n), "class=\"violin\""), 2);
    EXPECT_EQ(count(figure(dom, "scatter-" + n), "class=\"point\""), static_cast<int>(gpu.pairs.front().all.n));
    EXPECT_NE(figure(dom, "heatmap-min-" + n).find("<title>"), std::string::npos) << "values on hover";
  }
  // The second card lacks 1095 MHz: the two cards share 2 pairs.
  EXPECT_EQ(count(figure(dom, "range-min-0"), "class=\"cell\""), 2);
  EXPECT_EQ(count(figure(dom, "range-max-0"), "class=\"cell\""), 2);
  EXPECT_EQ(count(figure(dom, "boxes-0"), "class=\"box\""), 2 * 2);
  EXPECT_EQ(count(dom, "Save SVG"), 2 * 4 + 1 + 3);
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
  EXPECT_EQ(count(figure(dom, "heatmap-max-0"), "class=\"cell\""), 2);
  EXPECT_EQ(count(figure(dom, "scatter-0"), "class=\"point\""), 25);
  EXPECT_NE(dom.find("data-terms=\"1\""), std::string::npos) << "the terms, explained once";
  EXPECT_NE(dom.find("from the set-clock request until every SM runs at the target clock for good"), std::string::npos);
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Sim, ReportProfile, ::testing::Values("h200", "gh200", "a100", "rtx6000"));

TEST(Report, PartialRunShowsItsGaps) {
  const auto dir = scratch("report-partial");
  const std::string dom = rendered_after_edit(dir, 5, [](nlohmann::json& m) { m["pairs"].erase(0); });
  EXPECT_NE(dom.find("data-errors=\"0\""), std::string::npos);
  EXPECT_NE(dom.find("have no result yet"), std::string::npos);
  EXPECT_EQ(count(figure(dom, "heatmap-max-0"), "class=\"gap\""), 1);
  EXPECT_EQ(count(figure(dom, "heatmap-max-0"), "class=\"cell\""), 1);
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
  EXPECT_NE(dom.find("5 discarded thermal, 3 retried not_confirmed"), std::string::npos) << "events in view";
  EXPECT_NE(dom.find((dir / "traces/first.csv").string()), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace latest::report
