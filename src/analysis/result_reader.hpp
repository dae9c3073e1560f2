#pragma once
// Reads result directories written by a measurement run (any backend): the
// manifest and one CSV per pair. Bad input gives Error(usage) naming the
// file and line.
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/types.hpp"

namespace latest::analysis {

struct PairMeasurements {
  ClockPair pair;
  std::vector<int> index;
  std::vector<double> switching_ms;   // the run's detector
  std::vector<double> transition_ms;
  // The paper's detector on the same records (schema 2 on; NaN where it found
  // nothing, and for schema 1, whose detector was the paper's).
  std::vector<double> paper_switching_ms;
  // The known truth where the backend had one (the simulator, emulated
  // switching); NaN elsewhere.
  std::vector<double> true_switching_ms;
  // Measurements set aside (schema 3: misfits after every retry): in the
  // file, out of every statistic.
  std::vector<int> set_aside;
};

// Everything measured on one GPU (one host and UUID), possibly from several
// directories.
struct GpuResults {
  std::string host;
  std::string uuid;
  std::string name;
  int gpu_index = 0;
  std::vector<std::filesystem::path> dirs;
  std::vector<nlohmann::json> manifests;
  std::map<std::pair<Mhz, Mhz>, PairMeasurements> pairs;
  std::map<std::pair<Mhz, Mhz>, std::string> skipped;  // pair -> reason
  std::set<std::pair<Mhz, Mhz>> target_not_reached;    // pairs a run found nearer another clock (manifest)
  std::vector<Mhz> requested_clocks;                   // union of the runs' --freq
  std::string key() const { return host + "/" + uuid; }
};

std::vector<GpuResults> read_results(const std::vector<std::filesystem::path>& dirs);

// One CSV, for tests and tools: throws Error(usage) with "file:line: why".
PairMeasurements read_pair_csv(const std::filesystem::path& file, ClockPair pair);

}  // namespace latest::analysis
