#pragma once
// What a loaded latency table holds, shared by the loader
// (latency_table.cpp) and the advisor (advisor.cpp). Not installed.
#include <latest/latency_table.h>

#include <array>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace latest::table_detail {

inline constexpr std::array<const char*, 7> kStatistics = {"min", "p05", "median", "mean", "p95", "p99", "max"};
using Stats = std::array<double, kStatistics.size()>;
inline constexpr std::size_t kP05 = 1, kP95 = 4;

struct Entry {
  bool measured = false;
  unsigned flags = 0;  // LATEST_FLAG_*
  Stats switching{}, transition{};
};

// The pair's entry, measured: LATEST_OK, or why there is none.
int find_measured(const latest_table* t, unsigned a, unsigned b, const Entry** out);

// The index of a statistic's name in kStatistics, or -1.
int statistic_index(const char* name);

// A pair's statistic k: LATEST_OK, or why there is none.
int lookup(const latest_table* t, unsigned a, unsigned b, int k, double* out, bool transition);

}  // namespace latest::table_detail

struct latest_table {
  std::string model;
  std::vector<std::string> uuids;
  std::vector<unsigned> memory_mhz;
  std::vector<unsigned> clocks;
  std::map<std::pair<unsigned, unsigned>, latest::table_detail::Entry> pairs;
};
