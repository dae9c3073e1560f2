// Real clock changes replayed: windows that `latest watch` kept on a lent
// H100 under a cuBLAS GEMM load (core/data/README.md). The silicon gives no
// truth, so these tests hold the judge to what the records must show if
// cycles over time read the SM clock, and the pooled detector to the judge.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/statistics.hpp"
#include "core/watch/clock_steps.hpp"
#include "core/watch/detector_judge.hpp"
#include "results/watch_files.hpp"

namespace latest {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct RealWatch {
  nlohmann::json manifest;
  std::vector<RecordWindow> windows;
  std::int64_t fmas() const { return manifest["settings"]["iteration_fmas"].get<std::int64_t>(); }
  std::vector<Mhz> clocks() const { return manifest["settings"]["supported_clocks_mhz"].get<std::vector<Mhz>>(); }
};

RealWatch load(const std::string& name) {
  const std::string dir = LATEST_H100_WATCH_WINDOWS;
  RealWatch w;
  w.manifest = nlohmann::json::parse(slurp(dir + "/" + name + ".json"));
  w.windows = read_windows_bin(slurp(dir + "/" + name + ".bin"));
  return w;
}

const std::vector<std::string> kWatches = {"load-start-4096"};

std::vector<CardStep> card_steps(const RecordWindow& w) {
  std::vector<SmStep> all;
  for (const SmRecords& r : w.sms)
    for (const SmStep& s : find_sm_steps(r, {})) all.push_back(s);
  return group_card_steps(all, {});
}

// Evidence that cycles over time read the SM clock: every iteration of the
// dependent FMA chain takes the same cycles while its duration in ns moves
// with the load's brake. Contention for issue slots would add cycles.
TEST(RecordedWatch, IterationsKeepTheirCyclesWhileTheirDurationMoves) {
  for (const std::string& name : kWatches) {
    const RealWatch w = load(name);
    for (const RecordWindow& win : w.windows)
      for (const SmRecords& r : win.sms) {
        std::vector<double> cycles(r.cycles.begin(), r.cycles.end()), mhz;
        for (std::size_t i = 0; i < r.cycles.size(); ++i)
          if (r.duration_ns[i] > 0) mhz.push_back(1e3 * r.cycles[i] / r.duration_ns[i]);
        const Summary c = summarise(cycles);
        EXPECT_LE(quantile(cycles, 0.99) - quantile(cycles, 0.01), 0.001 * c.median) << name << " SM " << r.sm;
        EXPECT_GT(quantile(mhz, 0.99) / quantile(mhz, 0.01), 1.2) << name << " SM " << r.sm << ": the clock moves";
      }
  }
}

// The load's start on the H100 (1980 MHz to about 1400 within 60 us): every
// recorded SM takes it, within a few us of each other, and the many changes
// after it are found on most SMs together.
TEST(RecordedWatch, EverySmTakesTheLoadsBrakeWithinMicroseconds) {
  const RealWatch w = load("load-start-4096");
  const RecordWindow& win = w.windows.front();
  const std::vector<CardStep> steps = card_steps(win);
  const auto start = std::find_if(steps.begin(), steps.end(), [](const CardStep& c) {
    return c.before_mhz() > 1970 && c.after_mhz() < 1450;
  });
  ASSERT_NE(start, steps.end());
  EXPECT_EQ(start->sms.size(), win.sms.size());
  EXPECT_LE(start->spread_ns(), 5'000);
  EXPECT_NEAR(start->after_mhz(), 1405, 15);
  int on_all = 0;
  std::vector<double> spreads;
  for (const CardStep& c : steps)
    if (c.sms.size() == win.sms.size()) ++on_all, spreads.push_back(static_cast<double>(c.spread_ns()));
  EXPECT_GE(on_all, 30) << "of " << steps.size();
  EXPECT_LE(summarise(spreads).median, 12'000) << "about one iteration of 4096 FMAs at 1500 MHz";
}

}  // namespace
}  // namespace latest
