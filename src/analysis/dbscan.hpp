#pragma once
// Outlier filtering of one pair's latencies (SPEC §3.5, the paper's
// Algorithm 3): DBSCAN on 1-D data with scikit-learn's semantics, the
// silhouette score, and the adaptive choice of minPts and eps.
#include <vector>

namespace latest::analysis {

// DBSCAN on values; labels[i] is the cluster of xs[i] (0, 1, ...) or -1 for
// noise. As scikit-learn: a point is core when at least `min_samples` points,
// itself included, lie within distance <= eps; clusters are numbered in the
// order of their first core point in `xs`, and a border point reachable from
// several clusters joins the one numbered first. O(n log n).
std::vector<int> dbscan_1d(const std::vector<double>& xs, double eps, int min_samples);

// scikit-learn's silhouette_score over the non-noise points (label >= 0);
// NaN unless there are at least two clusters among them.
double silhouette_1d(const std::vector<double>& xs, const std::vector<int>& labels);

struct AdaptiveDbscan {
  std::vector<int> labels;
  int min_samples = 0;
  double eps = 0;
  int clusters = 0;
  int noise = 0;
  bool flagged = false;  // no setting reached <= 10 % noise: the least noisy one is kept
  double silhouette = 0; // NaN with fewer than two clusters
};

// The default is settled for small n (docs/methodology.md, "Outliers"): with
// the paper's schedule, 25 measurements run at minPts 2, and single-mode data
// split into phantom clusters (61 % of 200 seeds at n = 25). So minPts never
// goes below 4, and below 100 measurements eps widens by sqrt(100 / n).
// paper() is Algorithm 3 as published (`--outlier-filter paper`).
struct AdaptiveSettings {
  double eps_multiplier = 0.15;  // eps = multiplier * (q95 - q05), widened as below
  double max_noise_share = 0.10;
  int min_samples_floor = 4;     // minPts never goes below this
  bool widen_small_n = true;     // eps *= sqrt(100 / n) for n < 100
  static AdaptiveSettings paper() { return {0.15, 0.10, 2, false}; }
};

// minPts from ceil(0.04 n) down by 2 while above floor(0.02 n), never below
// the floor; the first setting with at most 10 % noise wins.
AdaptiveDbscan adaptive_dbscan(const std::vector<double>& xs, const AdaptiveSettings& settings = {});

// The minPts values tried for n points, in order (the paper's floor is 2).
std::vector<int> min_samples_schedule(std::size_t n, int floor = 2);

}  // namespace latest::analysis
