// `latest analyze` at full scale: the 110-clock matrix of an H200 (11,990
// ordered pairs) with 500 measurements each, 6 M measurements in all.
// Target: under 30 s on a 2-core machine (docs/benchmarks.md).
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/analysis.hpp"
#include "results/result_store.hpp"

namespace latest {
namespace {
namespace fs = std::filesystem;

// A result directory as a run would leave it, with latencies of one to three
// clusters and a few outliers per pair; written once and reused.
fs::path full_matrix_dir() {
  const fs::path dir = fs::temp_directory_path() / "latest-bench-full-matrix";
  if (fs::exists(dir / "manifest.json")) return dir;
  fs::create_directories(dir);
  std::mt19937_64 rng(1);
  std::vector<Mhz> clocks;
  for (Mhz f = 345; f <= 1980; f += 15) clocks.push_back(f);
  nlohmann::json pairs = nlohmann::json::array();
  const std::string host = host_name_for_files();
  for (Mhz a : clocks)
    for (Mhz b : clocks) {
      if (a == b) continue;
      std::vector<MeasurementRow> rows(500);
      const double base = 5 + 20 * std::uniform_real_distribution<double>(0, 1)(rng);
      const int clusters = 1 + static_cast<int>(rng() % 3);
      for (int i = 0; i < 500; ++i) {
        auto& r = rows[static_cast<std::size_t>(i)];
        r.index = i + 1;
        const int c = static_cast<int>(rng() % static_cast<unsigned>(clusters));
        r.switching_ms = base * (1 + 0.6 * c) + std::normal_distribution<double>(0, 0.05 * base)(rng);
        if (rng() % 100 == 0) r.switching_ms *= 4;
        r.transition_ms = 0.2 * r.switching_ms;
        r.accepted_sms = 132;
      }
      const std::string name = pair_file_name({a, b}, host, 0);
      std::ofstream(dir / name) << measurements_csv(rows);
      pairs.push_back({{"init_mhz", a}, {"target_mhz", b}, {"status", "measured"}, {"file", name}});
    }
  nlohmann::json manifest = {{"schema_version", kManifestSchemaVersion}, {"host", host},
                             {"device", {{"name", "NVIDIA H200"}, {"uuid", "GPU-bench"}, {"index", 0}}},
                             {"settings", {{"freq_mhz", clocks}}}, {"pairs", pairs}};
  std::ofstream(dir / "manifest.json") << manifest.dump();
  return dir;
}

void BM_AnalyzeFullMatrix(benchmark::State& state) {
  const fs::path dir = full_matrix_dir();
  for (auto _ : state) {
    const auto a = analysis::analyse({dir});
    analysis::write_analysis(a, fs::temp_directory_path() / "latest-bench-full-matrix-out");
    state.counters["pairs"] = static_cast<double>(a.gpus[0].pairs.size());
  }
}
BENCHMARK(BM_AnalyzeFullMatrix)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

// One pair of 500: the adaptive DBSCAN with its silhouette.
void BM_AdaptiveDbscan500(benchmark::State& state) {
  std::mt19937_64 rng(2);
  std::vector<double> xs(500);
  for (auto& x : xs) x = 10 * (1 + static_cast<double>(rng() % 3)) + std::normal_distribution<double>(0, 0.3)(rng);
  for (auto _ : state) benchmark::DoNotOptimize(analysis::adaptive_dbscan(xs));
}
BENCHMARK(BM_AdaptiveDbscan500)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace latest
