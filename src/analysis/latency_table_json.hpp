#pragma once
// The latency table `latest table` and `latest analyze` write: one JSON
// document per GPU model, merging every card of that model, read by the
// latency-table library (include/latest/latency_table.h; docs/table.md).
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "analysis/analysis.hpp"

namespace latest::analysis {

inline constexpr int kLatencyTableSchemaVersion = 1;

// Model name -> its table. `filter_name` is recorded as the outlier filter used.
std::map<std::string, nlohmann::json> latency_tables(const Analysis& analysis, const AdaptiveSettings& filter,
                                                     const std::string& filter_name);

}  // namespace latest::analysis
