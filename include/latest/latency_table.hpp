// The C++ face of latency_table.h: value types and exceptions of its own
// (never a process exit). Header-only over the C API.
#pragma once
#include <latest/latency_table.h>

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace latest {

// The statistics a table holds per pair.
enum class Statistic { min, p05, median, mean, p95, p99, max };

inline const char* to_string(Statistic s) {
  switch (s) {
    case Statistic::min: return "min";
    case Statistic::p05: return "p05";
    case Statistic::median: return "median";
    case Statistic::mean: return "mean";
    case Statistic::p95: return "p95";
    case Statistic::p99: return "p99";
    case Statistic::max: return "max";
  }
  return "?";
}

// A call failed: the C status and its message.
class TableError : public std::runtime_error {
 public:
  TableError(int status, const std::string& what) : std::runtime_error(what), status_(status) {}
  int status() const noexcept { return status_; }

 private:
  int status_;
};

class LatencyTable {
 public:
  static LatencyTable load(const std::string& path) {
    char err[512] = {0};
    latest_table* t = nullptr;
    const int rc = latest_table_load(path.c_str(), &t, err, sizeof err);
    if (rc != LATEST_OK) throw TableError(rc, err);
    return LatencyTable(t);
  }

  // ms, without outliers.
  double latency_ms(unsigned init_mhz, unsigned target_mhz, Statistic s = Statistic::p95) const {
    double v = 0;
    check(latest_table_latency_ms(t_.get(), init_mhz, target_mhz, to_string(s), &v), init_mhz, target_mhz);
    return v;
  }
  double transition_ms(unsigned init_mhz, unsigned target_mhz, Statistic s = Statistic::p95) const {
    double v = 0;
    check(latest_table_transition_ms(t_.get(), init_mhz, target_mhz, to_string(s), &v), init_mhz, target_mhz);
    return v;
  }
  std::vector<unsigned> clocks() const {
    std::size_t n = 0;
    latest_table_clocks(t_.get(), nullptr, 0, &n);
    std::vector<unsigned> out(n);
    check(latest_table_clocks(t_.get(), out.data(), out.size(), &n), 0, 0);
    return out;
  }
  bool matches(const std::string& device, unsigned memory_mhz = 0) const {
    int m = 0;
    check(latest_table_matches_device(t_.get(), device.c_str(), memory_mhz, &m), 0, 0);
    return m != 0;
  }
  std::string model() const { return latest_table_model(t_.get()); }

 private:
  explicit LatencyTable(latest_table* t) : t_(t, &latest_table_free) {}
  static void check(int rc, unsigned a, unsigned b) {
    if (rc == LATEST_OK) return;
    std::string what = latest_status_text(rc);
    if (a || b) what += ": " + std::to_string(a) + " -> " + std::to_string(b) + " MHz";
    throw TableError(rc, what);
  }
  std::shared_ptr<latest_table> t_;
};

}  // namespace latest
