#pragma once
// Phase 3 and the summaries (SPEC §3.5–§3.6): outliers per pair by adaptive
// DBSCAN, per-pair statistics with and without them, best- and worst-case
// matrices per GPU, and the paper's Table II.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/dbscan.hpp"
#include "analysis/result_reader.hpp"
#include "core/statistics.hpp"

namespace latest::analysis {


struct PairAnalysis {
  ClockPair pair;
  AdaptiveDbscan clustering;       // on the switching latencies
  Summary all, filtered;            // switching latency with and without outliers
  Summary transition_filtered;      // transition latency of the non-outliers
};

struct Extreme {
  double value = 0;
  ClockPair pair;
};
// Table II for one quantity: over pairs, the min, mean and max of the
// per-pair worst case (max) and best case (min), each with its pair.
struct CaseSummary {
  Extreme min, max;
  double mean = 0;
};
struct TableTwo {
  CaseSummary worst, best;
  std::size_t pairs = 0;
};

struct GpuAnalysis {
  const GpuResults* results = nullptr;
  std::vector<PairAnalysis> pairs;
  std::vector<Mhz> clocks;  // matrix axes: every clock in a measured or requested pair
  TableTwo switching, transition;
  // The pair's analysis, or nullptr when it was not measured.
  const PairAnalysis* find(Mhz init, Mhz target) const;

 private:
  friend GpuAnalysis analyse_gpu(const GpuResults&, const AdaptiveSettings&);
  std::map<std::pair<Mhz, Mhz>, std::size_t> index_;
};

GpuAnalysis analyse_gpu(const GpuResults& results, const AdaptiveSettings& settings = {});

// Why a measured pair's numbers need a look, by the names the latency table
// gives: "noisy" (no DBSCAN setting left 10 % or less of it in noise) and
// "target_not_reached" (a run's manifest: the card ran nearer another clock).
std::vector<std::string> pair_flags(const GpuResults& results, const PairAnalysis& pair);
// The flag for people: "noise > 10 %", "target not reached".
std::string flag_text(const std::string& flag);

struct Analysis {
  std::vector<GpuResults> results;
  std::vector<GpuAnalysis> gpus;
};
Analysis analyse(const std::vector<std::filesystem::path>& dirs, const AdaptiveSettings& settings = {});

// measurements.csv, pairs.csv, matrix_min.csv, matrix_max.csv, matrices.json,
// summary.txt and summary.json, each written atomically into `out`.
void write_analysis(const Analysis& analysis, const std::filesystem::path& out);

nlohmann::json matrices_json(const Analysis& analysis);
nlohmann::json summary_json(const Analysis& analysis);
std::string summary_text(const Analysis& analysis);

}  // namespace latest::analysis
