// Routes and the switch advisor over a loaded table (docs/table.md,
// "Advisor"). A route's cost is the sum of its hops' latencies at one
// statistic: a runtime requests the next clock once the hop's latency has
// passed, so each hop costs what the table says it takes.
#include <latest/latency_table.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <limits>
#include <vector>

#include "table/table_data.hpp"

namespace {
using namespace latest::table_detail;

constexpr double kNone = std::numeric_limits<double>::infinity();

bool valid_ms(double v) { return std::isfinite(v) && v >= 0; }

// The route of one hop: the direct change, measured.
int direct(const latest_table* t, unsigned from, unsigned to, int k, latest_route* out) {
  double ms = 0, low = 0, high = 0;
  if (const int rc = lookup(t, from, to, k, &ms, false); rc != LATEST_OK) return rc;
  lookup(t, from, to, static_cast<int>(kP05), &low, false);
  lookup(t, from, to, static_cast<int>(kP95), &high, false);
  *out = latest_route{};
  out->hops = 1;
  out->clocks_mhz[0] = to;
  out->wait_ms[0] = ms;
  out->latency_ms = out->direct_ms = ms;
  out->low_ms = low;
  out->high_ms = high;
  return LATEST_OK;
}

// The cheapest way with at most LATEST_ROUTE_MAX_HOPS requests: a shortest
// path bounded in hops (Bellman-Ford, one round per hop), over measured pairs
// only. Ties keep the route with fewer hops.
// Its clocks after `from`, and its cost.
std::pair<std::vector<unsigned>, double> cheapest(const latest_table* t, unsigned from, unsigned to, int k) {
  const std::vector<unsigned>& clocks = t->clocks;
  const std::size_t n = clocks.size();
  std::size_t source = n, sink = n;
  for (std::size_t i = 0; i < n; ++i) {
    if (clocks[i] == from) source = i;
    if (clocks[i] == to) sink = i;
  }
  std::vector<double> cost(n, kNone);
  std::vector<std::vector<std::size_t>> path(n);
  cost[source] = 0;
  for (int hop = 0; hop < LATEST_ROUTE_MAX_HOPS; ++hop) {
    std::vector<double> next_cost = cost;
    std::vector<std::vector<std::size_t>> next_path = path;
    for (std::size_t a = 0; a < n; ++a) {
      if (cost[a] == kNone) continue;
      for (std::size_t b = 0; b < n; ++b) {
        double ms = 0;
        if (a == b || lookup(t, clocks[a], clocks[b], k, &ms, false) != LATEST_OK) continue;
        if (cost[a] + ms < next_cost[b]) {
          next_cost[b] = cost[a] + ms;
          next_path[b] = path[a];
          next_path[b].push_back(b);
        }
      }
    }
    cost = std::move(next_cost);
    path = std::move(next_path);
  }
  std::vector<unsigned> route;
  for (std::size_t i : path[sink]) route.push_back(clocks[i]);
  return {route, cost[sink]};
}

int route(const latest_table* t, unsigned from, unsigned to, const char* statistic, double margin_ms, latest_route* out) {
  const int k = statistic_index(statistic);
  if (!t || !out || k < 0 || !valid_ms(margin_ms)) return LATEST_ERR_BAD_ARGUMENT;
  if (from == to) {
    if (!std::binary_search(t->clocks.begin(), t->clocks.end(), from)) return LATEST_ERR_UNKNOWN_PAIR;
    *out = latest_route{};
    return LATEST_OK;
  }
  if (const int rc = direct(t, from, to, k, out); rc != LATEST_OK) return rc;
  const auto [best, total] = cheapest(t, from, to, k);
  if (best.size() < 2 || !(total < out->direct_ms - margin_ms)) return LATEST_OK;
  const double direct_ms = out->direct_ms;
  *out = latest_route{};
  out->hops = best.size();
  out->direct_ms = direct_ms;
  unsigned at = from;
  for (std::size_t h = 0; h < best.size(); ++h) {
    double ms = 0;
    lookup(t, at, best[h], k, &ms, false);
    out->clocks_mhz[h] = best[h];
    out->wait_ms[h] = ms;
    out->latency_ms += ms;
    if (h + 1 < best.size()) {
      out->low_ms += ms;
      out->high_ms += ms;
    } else {
      double low = 0, high = 0;
      lookup(t, at, best[h], static_cast<int>(kP05), &low, false);
      lookup(t, at, best[h], static_cast<int>(kP95), &high, false);
      out->low_ms += low;
      out->high_ms += high;
    }
    at = best[h];
  }
  return LATEST_OK;
}

}  // namespace

extern "C" {

int latest_table_route(const latest_table* t, unsigned from_mhz, unsigned to_mhz, const char* statistic, double margin_ms,
                       latest_route* out) {
  return route(t, from_mhz, to_mhz, statistic, margin_ms, out);
}

int latest_table_advise(const latest_table* t, unsigned from_mhz, unsigned to_mhz, double phase_ms, const char* statistic,
                        latest_rule rule, const latest_cost_model* model, double margin_ms, latest_advice* out) {
  const latest_cost_model ratios = model ? *model : latest_cost_model{1, 1};
  if (!out || !valid_ms(phase_ms) || !(ratios.gain > 0) || !std::isfinite(ratios.gain) || !valid_ms(ratios.penalty) ||
      (rule != LATEST_RULE_BREAK_EVEN && rule != LATEST_RULE_THREE_X))
    return LATEST_ERR_BAD_ARGUMENT;
  latest_advice a{};
  a.rule = rule;
  if (const int rc = route(t, from_mhz, to_mhz, statistic, margin_ms, &a.route); rc != LATEST_OK) return rc;
  if (from_mhz != to_mhz) {
    // The way back counts for the break-even rule only; the 3x rule needs
    // no measured return.
    const int back = route(t, to_mhz, from_mhz, statistic, margin_ms, &a.back);
    if (back != LATEST_OK && rule == LATEST_RULE_BREAK_EVEN) return back;
  }
  a.latency_ms = a.route.latency_ms;
  // The phase spends the way there off the wanted clock (its gain is
  // forgone); after it, the way back runs at a clock nobody wants.
  a.min_interval_ms = rule == LATEST_RULE_THREE_X ? 3 * a.latency_ms
                                                  : a.latency_ms + ratios.penalty / ratios.gain * a.back.latency_ms;
  a.decision = from_mhz != to_mhz && phase_ms > a.min_interval_ms ? LATEST_SWITCH : LATEST_STAY;
  a.time_lost_ms = a.decision == LATEST_SWITCH ? a.latency_ms + a.back.latency_ms : from_mhz == to_mhz ? 0 : phase_ms;
  *out = a;
  return LATEST_OK;
}

}  // extern "C"
