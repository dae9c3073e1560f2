#include "analysis/dbscan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/statistics.hpp"

namespace latest::analysis {

std::vector<int> dbscan_1d(const std::vector<double>& xs, double eps, int min_samples) {
  const std::size_t n = xs.size();
  std::vector<int> labels(n, -1);
  if (n == 0) return labels;
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return xs[a] < xs[b]; });
  std::vector<double> sorted(n);
  for (std::size_t k = 0; k < n; ++k) sorted[k] = xs[order[k]];
  // Neighbourhood of sorted[k]: the index range [lo[k], hi[k]) within eps.
  std::vector<std::size_t> lo(n), hi(n);
  std::vector<char> core(n);
  for (std::size_t k = 0, a = 0, b = 0; k < n; ++k) {
    while (sorted[k] - sorted[a] > eps) ++a;
    if (b < k) b = k;
    while (b < n && sorted[b] - sorted[k] <= eps) ++b;
    lo[k] = a;
    hi[k] = b;
    core[k] = static_cast<int>(b - a) >= min_samples;
  }
  // In 1-D, core points chain into one cluster exactly when consecutive core
  // points (in sorted order) are within eps of each other.
  std::vector<int> group(n, -1);
  int groups = 0;
  std::size_t last_core = n;
  for (std::size_t k = 0; k < n; ++k) {
    if (!core[k]) continue;
    if (last_core == n || sorted[k] - sorted[last_core] > eps) ++groups;
    group[k] = groups - 1;
    last_core = k;
  }
  // Number the groups as scikit-learn does: by their first core point in the input order.
  std::vector<std::size_t> first_index(static_cast<std::size_t>(groups), n);
  for (std::size_t k = 0; k < n; ++k)
    if (group[k] >= 0) first_index[static_cast<std::size_t>(group[k])] = std::min(first_index[static_cast<std::size_t>(group[k])], order[k]);
  std::vector<int> by_first(static_cast<std::size_t>(groups));
  std::iota(by_first.begin(), by_first.end(), 0);
  std::sort(by_first.begin(), by_first.end(), [&](int a, int b) { return first_index[static_cast<std::size_t>(a)] < first_index[static_cast<std::size_t>(b)]; });
  std::vector<int> rank(static_cast<std::size_t>(groups));
  for (int r = 0; r < groups; ++r) rank[static_cast<std::size_t>(by_first[static_cast<std::size_t>(r)])] = r;
  // Border points join the first-numbered cluster with a core point within eps:
  // only the nearest core point on each side can be (clusters are intervals).
  std::vector<std::size_t> prev_core(n, n), next_core(n, n);
  for (std::size_t k = 0, p = n; k < n; ++k) {
    if (core[k]) p = k;
    prev_core[k] = p;
  }
  for (std::size_t k = n, q = n; k-- > 0;) {
    if (core[k]) q = k;
    next_core[k] = q;
  }
  for (std::size_t k = 0; k < n; ++k) {
    int label = -1;
    if (core[k]) {
      label = rank[static_cast<std::size_t>(group[k])];
    } else {
      for (std::size_t c : {prev_core[k], next_core[k]}) {
        if (c == n || std::abs(sorted[k] - sorted[c]) > eps) continue;
        const int r = rank[static_cast<std::size_t>(group[c])];
        if (label < 0 || r < label) label = r;
      }
    }
    labels[order[k]] = label;
  }
  return labels;
}

double silhouette_1d(const std::vector<double>& xs, const std::vector<int>& labels) {
  int k = 0;
  for (int l : labels) k = std::max(k, l + 1);
  std::vector<std::vector<double>> members(static_cast<std::size_t>(k));
  for (std::size_t i = 0; i < xs.size(); ++i)
    if (labels[i] >= 0) members[static_cast<std::size_t>(labels[i])].push_back(xs[i]);
  int present = 0;
  for (const auto& m : members) present += !m.empty();
  if (present < 2) return std::numeric_limits<double>::quiet_NaN();
  // Sorted members and prefix sums give the summed distance from any x to a
  // cluster in O(log n).
  std::vector<std::vector<long double>> prefix(members.size());
  for (std::size_t c = 0; c < members.size(); ++c) {
    std::sort(members[c].begin(), members[c].end());
    prefix[c].assign(members[c].size() + 1, 0.0L);
    for (std::size_t j = 0; j < members[c].size(); ++j) prefix[c][j + 1] = prefix[c][j] + members[c][j];
  }
  const auto distance_sum = [&](std::size_t c, double x) {
    const auto& m = members[c];
    const auto below = static_cast<std::size_t>(std::upper_bound(m.begin(), m.end(), x) - m.begin());
    const long double lx = x;
    return lx * below - prefix[c][below] + (prefix[c][m.size()] - prefix[c][below]) - lx * (m.size() - below);
  };
  long double total = 0;
  std::size_t count = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (labels[i] < 0) continue;
    ++count;
    const auto own = static_cast<std::size_t>(labels[i]);
    if (members[own].size() < 2) continue;  // scikit-learn: s = 0 for singletons
    const long double a = distance_sum(own, xs[i]) / (members[own].size() - 1);
    long double b = std::numeric_limits<long double>::infinity();
    for (std::size_t c = 0; c < members.size(); ++c)
      if (c != own && !members[c].empty()) b = std::min(b, distance_sum(c, xs[i]) / members[c].size());
    const long double denom = std::max(a, b);
    total += denom > 0 ? (b - a) / denom : 0.0L;
  }
  return static_cast<double>(total / count);
}

std::vector<int> min_samples_schedule(std::size_t n, int floor) {
  const int start = std::max(floor, static_cast<int>(std::ceil(0.04 * static_cast<double>(n))));
  const int stop = static_cast<int>(std::floor(0.02 * static_cast<double>(n)));
  std::vector<int> out;
  for (int m = start; m > stop && m >= floor; m -= 2) out.push_back(m);
  if (out.empty()) out.push_back(floor);
  return out;
}

AdaptiveDbscan adaptive_dbscan(const std::vector<double>& xs, const AdaptiveSettings& s) {
  AdaptiveDbscan best;
  best.noise = std::numeric_limits<int>::max();
  if (xs.empty()) {
    best.noise = 0;
    best.silhouette = std::numeric_limits<double>::quiet_NaN();
    return best;
  }
  std::vector<double> sorted(xs);
  std::sort(sorted.begin(), sorted.end());
  // scikit-learn needs eps > 0; identical values then form one cluster.
  const double range = quantile_sorted(sorted, 0.95) - quantile_sorted(sorted, 0.05);
  const double n = static_cast<double>(xs.size());
  const double widening = s.widen_small_n && n < 100 ? std::sqrt(100 / n) : 1.0;
  const double eps = std::max(s.eps_multiplier * widening * range, 1e-12);
  for (int m : min_samples_schedule(xs.size(), s.min_samples_floor)) {
    auto labels = dbscan_1d(xs, eps, m);
    const int noise = static_cast<int>(std::count(labels.begin(), labels.end(), -1));
    if (noise < best.noise) {
      best.labels = std::move(labels);
      best.min_samples = m;
      best.eps = eps;
      best.noise = noise;
    }
    if (static_cast<double>(noise) <= s.max_noise_share * static_cast<double>(xs.size())) break;
  }
  best.flagged = static_cast<double>(best.noise) > s.max_noise_share * static_cast<double>(xs.size());
  for (int l : best.labels) best.clusters = std::max(best.clusters, l + 1);
  best.silhouette = silhouette_1d(xs, best.labels);
  return best;
}

}  // namespace latest::analysis
