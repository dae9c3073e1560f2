// `latest watch` as a user runs it on the simulator: every file, the steps
// against the simulator's known brake, the detectors judged, and refusals.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "results/watch_files.hpp"
#include "support/process.hpp"

namespace {
using namespace latest::testing;

std::vector<std::vector<std::string>> csv_rows(const fs::path& p) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(slurp(p));
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
    rows.push_back(cells);
  }
  return rows;
}

TEST(WatchCli, SimulatedBrakeIsFoundOnEverySmAndJudged) {
  const fs::path dir = scratch("watch-sim");
  const Result r = run({"watch", "--backend", "sim", "--seconds", "5", "--seed", "3", "--output", dir.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* f : {"steps.csv", "clock.csv", "telemetry.csv", "windows.bin", "judged.csv", "manifest.json"})
    EXPECT_TRUE(fs::exists(dir / f)) << f;
  const auto m = nlohmann::json::parse(slurp(dir / "manifest.json"));
  EXPECT_EQ(m["status"], "complete");
  EXPECT_EQ(m["backend"], "sim");
  const auto& truth = m["truth"]["changes"];
  ASSERT_GE(truth.size(), 2u);
  EXPECT_EQ(m["summary"]["card_steps"], truth.size());
  EXPECT_EQ(m["summary"]["sm_steps"], truth.size() * 16);
  // Each SM's arrival within 2 µs of the known step, late by its group's skew.
  for (const auto& row : csv_rows(dir / "steps.csv")) {
    const auto& change = truth[std::stoul(row[0])];
    const double expected = change["gpu_ns"].get<double>() + m["truth"]["sm_delay_ns"][row[1]].get<double>();
    EXPECT_NEAR(std::stod(row[17]), expected, 2000) << "step " << row[0] << " SM " << row[1];
  }
  // The pooled detector, on durations alone, within a target iteration.
  const auto& pooled = m["summary"]["detectors"]["pooled"];
  EXPECT_EQ(pooled["accepted"], m["summary"]["detectors"]["judged"]);
  EXPECT_LT(pooled["target_iterations"]["abs_p99"].get<double>(), 1.0);
  // The telemetry came every 20 ms or faster, and the windows read back.
  const auto telemetry = csv_rows(dir / "telemetry.csv");
  ASSERT_GT(telemetry.size(), 2u);
  for (std::size_t i = 1; i < telemetry.size(); ++i)
    EXPECT_LE(std::stod(telemetry[i][0]) - std::stod(telemetry[i - 1][0]), 21.0);
  const auto windows = latest::read_windows_bin(slurp(dir / "windows.bin"));
  EXPECT_EQ(windows.size(), truth.size());
  EXPECT_TRUE(m["nvml_identical"].get<bool>());
}

TEST(WatchCli, RefusesBadSettingsWithExitTwoAndNoFiles) {
  const fs::path dir = scratch("watch-refused");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--seconds", "0"}, "--seconds must be above 0"},
      {{"--sample-ms", "60"}, "every 50 ms or faster"},
      {{"--gemm-size", "100"}, "multiple of 64"},
      {{"--recorded-sms", "0"}, "at least 1"},
      {{"--iteration-fmas", "4"}, "at least 8"},
      {{"--tail-seconds", "-1"}, "0 or more"},
  };
  for (const auto& [args, message] : cases) {
    std::vector<std::string> argv{"watch", "--backend", "sim", "--output", dir.string()};
    argv.insert(argv.end(), args.begin(), args.end());
    const Result r = run(argv);
    EXPECT_EQ(r.code, 2) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir));
  }
}

TEST(WatchCli, EveryCardOfTheSimulatorHasItsDirectory) {
  const fs::path dir = scratch("watch-all");
  const Result r = run({"watch", "--backend", "sim", "--sim-gpus", "2", "--device", "all", "--seconds", "2",
                        "--tail-seconds", "1", "--output", (dir / "%i").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* card : {"0", "1"}) EXPECT_TRUE(fs::exists(dir / card / "manifest.json")) << card;
}

}  // namespace
