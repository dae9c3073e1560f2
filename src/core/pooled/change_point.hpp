#pragma once
// One SM's change point within its mixed iteration (pooled_detection.cpp):
// where a hinge (a lag growing by a known step per iteration before it,
// none after) best explains the residuals around the change, and the same
// with a stall before it. Internals of the detector, of internal linkage as
// boundaries.hpp says why.
#include <algorithm>
#include <cstddef>
#include <limits>
#include <utility>
#include <vector>

#include "core/pooled/numeric.hpp"

namespace latest::pooled {
namespace {

// The change point x, in iterations, that best explains the residuals of
// boundaries (index, residual), in ascending index: before x each is off its
// line by `step` per iteration still to go, after x none is. `used` counts
// the boundaries before it. Every split's cost is summed over the
// boundaries in their order, as one split after another would, but all
// splits side by side, boundary by boundary: independent sums that run in
// vectors and do not wait on each other (a split at a time, each sum a chain
// of dependent additions, it was a twentieth of the detector's host time on
// the side-by-side benchmark's windows).
LATEST_AVX2_CLONE void split_costs(const std::pair<double, double>* window, std::size_t n, double step,
                                   const double* xs, double* costs) {
  for (std::size_t split = 0; split <= n; ++split) costs[split] = 0;
  for (std::size_t q = 0; q < n; ++q) {
    const double index = window[q].first, residual = window[q].second;
    for (std::size_t split = 0; split <= n; ++split) {
      const double off = residual - (q < split ? step * (xs[split] - index) : 0.0);
      costs[split] += off * off;
    }
  }
}
inline double best_change_point(const std::vector<std::pair<double, double>>& window, double step, std::size_t& used) {
  thread_local std::vector<double> xs, costs;
  const std::size_t n = window.size();
  xs.resize(n + 1);
  costs.resize(n + 1);
  double sum = 0;  // over the boundaries before the split, added in order as it moves on
  for (std::size_t split = 0; split <= n; ++split) {
    if (split > 0) sum += window[split - 1].first + window[split - 1].second / step;
    const double lo = split == 0 ? window.front().first - 1 : window[split - 1].first;
    const double hi = split == n ? window.back().first + 1 : window[split].first;
    xs[split] = split == 0 ? lo : std::clamp(sum / static_cast<double>(split), lo, hi);
  }
  split_costs(window.data(), n, step, xs.data(), costs.data());
  double best_cost = std::numeric_limits<double>::infinity(), best_x = 0;
  for (std::size_t split = 0; split <= n; ++split)
    if (costs[split] < best_cost) best_cost = costs[split], best_x = xs[split], used = split;
  return best_x;
}

// The same fit where a stall S may come just before the change (every SM
// halted while the clock relocks, docs/methodology.md): before x each
// boundary is off by step·(x − i) − S. One SM's residuals fix only
// u = step·x − S, and that x lies between the last boundary before the change
// and the first after it; the stall, common to all SMs, is found across them.
struct StallFit {
  double u = 0, x_lo = 0, x_hi = 0;
};
inline StallFit best_change_with_stall(const std::vector<std::pair<double, double>>& window, double step) {
  StallFit best;
  double best_cost = std::numeric_limits<double>::infinity();
  double before_sum = 0, before_sq = 0, after_sq = 0;
  for (const auto& [i, r] : window) after_sq += r * r;
  for (std::size_t split = 1; split < window.size(); ++split) {
    const double v = window[split - 1].second + step * window[split - 1].first;
    before_sum += v;
    before_sq += v * v;
    after_sq -= window[split - 1].second * window[split - 1].second;
    const double u = before_sum / static_cast<double>(split);
    const double cost = before_sq - u * before_sum + after_sq;
    if (cost < best_cost) best_cost = cost, best = {u, window[split - 1].first, window[split].first};
  }
  return best;
}

}  // namespace
}  // namespace latest::pooled
