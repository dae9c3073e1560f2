// watch.html in headless Chromium: a watch of the simulator's power brake
// draws every figure with the marks its data calls for, and no errors.
#include "report/watch_report.hpp"

#include <fstream>
#include <regex>

#include <gtest/gtest.h>

#include "backends/sim/sim_backend.hpp"
#include "report/report.hpp"
#include "support/chromium.hpp"
#include "support/process.hpp"

namespace latest::report {
namespace {

int items_of(const std::string& dom, const std::string& id) {
  const std::regex item("data-figure=\"" + id + "\"[^>]*data-items=\"([0-9]+)\"");
  std::smatch m;
  return std::regex_search(dom, m, item) ? std::stoi(m[1]) : -1;
}

TEST(WatchReport, EveryFigureIsDrawnInChromium) {
  auto gpu = std::make_shared<sim::SimGpu>(sim::profile_named("h200"), 4);
  sim::SimWorkload workload(gpu);
  sim::SimClockControl clocks(gpu, 0);
  WatchSettings s;
  s.load_seconds = 4;
  s.iteration_fmas = 8192;
  sim::SimBrakeLoad load(gpu, s.load_seconds);
  const WatchRecording rec = record_watch(workload, load, clocks, s, [] { return false; });
  const WatchAnalysis analysis = analyse_watch(rec, StepSettings{});
  const auto judged = judge_detectors(rec.sms, analysis.steps, gpu->profile().clocks, s.iteration_fmas, 32, {});
  const auto figures = watch_figures(rec, analysis, judged);
  ASSERT_EQ(figures.size(), 5u);
  const auto dir = latest::testing::scratch("watch-report");
  std::filesystem::create_directories(dir);
  const auto html = dir / "watch.html";
  std::ofstream(html) << render_watch_report(figures, {{"device", {{"name", "Simulated <H200>"}}}, {"backend", "sim"}});
  if (!has_charting_library()) GTEST_SKIP() << "built without the charting library (scripts/setup.sh installs it)";
  const std::string dom = latest::testing::dump_dom(html);
  EXPECT_NE(dom.find("data-rendered=\"1\""), std::string::npos);
  EXPECT_EQ(dom.find("data-errors=\""), std::string::npos);
  EXPECT_NE(dom.find("Simulated &lt;H200&gt;"), std::string::npos);
  // The band's points, twice (area and median), NVML's readings, a rule a change.
  ASSERT_GE(analysis.steps.size(), 2u);
  const auto band = std::min(analysis.band.size(), kWatchBandPoints);
  EXPECT_GE(items_of(dom, "watch-clock"), static_cast<int>(band + analysis.steps.size()));
  EXPECT_GT(items_of(dom, "watch-steps"), 0);
  EXPECT_GT(items_of(dom, "watch-holds"), 0);
  EXPECT_GT(items_of(dom, "watch-spread"), 0);
  int accepted = 0;
  for (const JudgedChange& j : judged) accepted += (j.pooled_error_ns ? 1 : 0) + (j.paper_error_ns ? 1 : 0);
  EXPECT_GT(accepted, 0);
  EXPECT_EQ(items_of(dom, "watch-detectors"), accepted);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace latest::report
