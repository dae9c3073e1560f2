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

// How to reach a clock (latest_route): the clocks to request in order and
// the wait after each; latency_ms the sum of the waits.
struct Route {
  std::vector<unsigned> clocks_mhz;
  std::vector<double> wait_ms;
  double latency_ms = 0;
  double low_ms = 0, high_ms = 0;  // predicted band: the waits but the last, plus its p05 / p95
  double direct_ms = 0;
  bool detour() const { return clocks_mhz.size() > 1; }
};

enum class Rule { break_even = LATEST_RULE_BREAK_EVEN, three_x = LATEST_RULE_THREE_X };
inline const char* to_string(Rule r) { return r == Rule::three_x ? "3x" : "break-even"; }

// Ratios in one unit (latest_cost_model): only gain : penalty counts.
struct CostModel {
  double gain = 1;
  double penalty = 1;
};

struct Advice {
  bool change = false;  // "switch"; false: "stay"
  Rule rule = Rule::break_even;
  Route route;          // the way there
  Route back;           // the way back (empty where the 3x rule did without one)
  double latency_ms = 0;
  double time_lost_ms = 0;
  double min_interval_ms = 0;
  const char* decision() const { return change ? "switch" : "stay"; }
};

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
  // LATEST_FLAG_* bits: why the pair's numbers need a look (0: none).
  unsigned flags(unsigned init_mhz, unsigned target_mhz) const {
    unsigned f = 0;
    check(latest_table_flags(t_.get(), init_mhz, target_mhz, &f), init_mhz, target_mhz);
    return f;
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

  // The fastest route at a statistic; a detour only when it beats the
  // direct change by more than margin_ms.
  Route route(unsigned from_mhz, unsigned to_mhz, Statistic s = Statistic::p95, double margin_ms = 0) const {
    latest_route r{};
    check(latest_table_route(t_.get(), from_mhz, to_mhz, to_string(s), margin_ms, &r), from_mhz, to_mhz);
    return from_c(r);
  }
  Advice advise(unsigned from_mhz, unsigned to_mhz, double phase_ms, Statistic s = Statistic::p95,
                Rule rule = Rule::break_even, CostModel model = {}, double margin_ms = 0) const {
    latest_advice a{};
    const latest_cost_model m{model.gain, model.penalty};
    check(latest_table_advise(t_.get(), from_mhz, to_mhz, phase_ms, to_string(s), static_cast<latest_rule>(rule), &m,
                              margin_ms, &a),
          from_mhz, to_mhz);
    Advice out;
    out.change = a.decision == LATEST_SWITCH;
    out.rule = static_cast<Rule>(a.rule);
    out.route = from_c(a.route);
    out.back = from_c(a.back);
    out.latency_ms = a.latency_ms;
    out.time_lost_ms = a.time_lost_ms;
    out.min_interval_ms = a.min_interval_ms;
    return out;
  }

 private:
  explicit LatencyTable(latest_table* t) : t_(t, &latest_table_free) {}
  static Route from_c(const latest_route& r) {
    Route out;
    out.clocks_mhz.assign(r.clocks_mhz, r.clocks_mhz + r.hops);
    out.wait_ms.assign(r.wait_ms, r.wait_ms + r.hops);
    out.latency_ms = r.latency_ms;
    out.low_ms = r.low_ms;
    out.high_ms = r.high_ms;
    out.direct_ms = r.direct_ms;
    return out;
  }
  static void check(int rc, unsigned a, unsigned b) {
    if (rc == LATEST_OK) return;
    std::string what = latest_status_text(rc);
    if (a || b) what += ": " + std::to_string(a) + " -> " + std::to_string(b) + " MHz";
    throw TableError(rc, what);
  }
  std::shared_ptr<latest_table> t_;
};

}  // namespace latest
