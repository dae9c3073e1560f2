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

TEST(RecordedWatch, Report) {
  for (const std::string& name : kWatches) {
    const RealWatch w = load(name);
    for (const RecordWindow& win : w.windows) {
      const auto steps = card_steps(win);
      std::vector<double> spreads;
      int full = 0;
      for (const CardStep& c : steps) {
        if (c.sms.size() == win.sms.size()) ++full, spreads.push_back(c.spread_ns() / 1e3);
      }
      const auto judged = judge_detectors(win.sms, steps, w.clocks(), w.fmas(), 32, {});
      int judged_n = 0;
      std::vector<double> errs;
      for (const auto& j : judged) {
        if (j.skipped.empty()) ++judged_n;
        if (j.pooled_error_ns) errs.push_back(*j.pooled_error_ns / 1e3);
      }
      const Summary sp = summarise(spreads);
      const Summary er = summarise(errs);
      std::cout << name << " window " << win.step << ": " << steps.size() << " changes, " << full << " on all SMs, spread median "
                << sp.median << " us max " << sp.max << "; judged " << judged_n << ", pooled accepted " << errs.size()
                << " error median " << er.median << " min " << er.min << " max " << er.max << "\n";
    }
  }
}

TEST(RecordedWatch, Dump) {
  const RealWatch w = load("load-start-4096");
  const RecordWindow& win = w.windows[0];
  for (std::size_t i : {0, 1, 8, 15}) {
    const SmRecords& r = win.sms[i];
    std::cout << "SM " << r.sm << " iterations " << r.duration_ns.size() << "\n";
    for (const SmStep& s : find_sm_steps(r, {}))
      if (s.departure_ns - win.sms[0].first_start_ns < 25e6 && s.departure_ns - win.sms[0].first_start_ns > 12e6)
        std::cout << "  " << (s.departure_ns - win.sms[0].first_start_ns) / 1e3 << " .. " << (s.arrival_ns - win.sms[0].first_start_ns) / 1e3 << " us: " << s.before_mhz << " -> " << s.after_mhz << " ramp levels " << s.ramp_levels_mhz.size() << "\n";
  }
}

}  // namespace
}  // namespace latest
