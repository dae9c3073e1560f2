#pragma once
// Statistics the methodology needs: moments, the confidence interval of a
// difference of means, relative standard error, quantiles and the overlap of
// two ±2σ bands.
#include <cstdint>
#include <span>
#include <vector>

namespace latest {

struct Moments {
  std::int64_t n = 0;
  double mean = 0;
  double sd = 0;  // sample standard deviation (n - 1)
};

// Welford's update, so long runs of samples need no second pass.
class MomentAccumulator {
 public:
  void add(double x) {
    ++n_;
    const double d = x - mean_;
    mean_ += d / static_cast<double>(n_);
    m2_ += d * (x - mean_);
  }
  Moments moments() const;

 private:
  std::int64_t n_ = 0;
  double mean_ = 0;
  double m2_ = 0;
};

Moments moments_of(std::span<const double> xs);

struct Interval {
  double low = 0;
  double high = 0;
  bool contains(double x) const { return low <= x && x <= high; }
};

// Welch's confidence interval of mean(a) - mean(b) at `confidence`.
Interval difference_interval(const Moments& a, const Moments& b, double confidence = 0.95);

// The pair-validity test of phase 1 (Algorithm 1, as SPEC §3.3 settles it):
// the means differ when the interval of their difference excludes 0. Also
// the paper detector's test of a candidate's mean against a band; the same
// answer as difference_interval, most often without its t quantile.
bool means_differ(const Moments& a, const Moments& b, double confidence = 0.95);

// Standard error of the mean over the mean; infinity for n < 2 or mean 0.
double relative_standard_error(std::span<const double> xs);

// A sample's order statistics and mean; NaN when it is empty. Quantiles as
// below.
struct Summary {
  std::size_t n = 0;
  double min = 0, p5 = 0, median = 0, mean = 0, p95 = 0, p99 = 0, max = 0;
};
Summary summarise(std::vector<double> xs);

// The standard normal distribution's quantile at p in (0, 1).
double normal_quantile(double p);

// Linear-interpolation quantile (numpy's default), q in [0, 1]. Sorts a copy.
double quantile(std::span<const double> xs, double q);
double quantile_sorted(std::span<const double> sorted, double q);

// How much [a.mean ± 2 a.sd] and [b.mean ± 2 b.sd] overlap: the length of
// their intersection over the length of their union (0 = disjoint,
// 1 = identical). This is the separability figure of SPEC §3.2.
double band_overlap(const Moments& a, const Moments& b);

}  // namespace latest
