#include "core/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>

namespace latest {

Moments MomentAccumulator::moments() const {
  Moments m;
  m.n = n_;
  m.mean = mean_;
  m.sd = n_ > 1 ? std::sqrt(m2_ / static_cast<double>(n_ - 1)) : 0.0;
  return m;
}

Moments moments_of(std::span<const double> xs) {
  MomentAccumulator acc;
  for (double x : xs) acc.add(x);
  return acc.moments();
}

Interval difference_interval(const Moments& a, const Moments& b, double confidence) {
  const double va = a.n > 0 ? a.sd * a.sd / static_cast<double>(a.n) : 0.0;
  const double vb = b.n > 0 ? b.sd * b.sd / static_cast<double>(b.n) : 0.0;
  const double se = std::sqrt(va + vb);
  const double diff = a.mean - b.mean;
  const double alpha = 1.0 - confidence;
  double critical;
  // Welch–Satterthwaite degrees of freedom; the normal limit once they are large.
  const double denom = (a.n > 1 ? va * va / static_cast<double>(a.n - 1) : 0.0) +
                       (b.n > 1 ? vb * vb / static_cast<double>(b.n - 1) : 0.0);
  const double dof = denom > 0 ? (va + vb) * (va + vb) / denom : std::numeric_limits<double>::infinity();
  if (std::isfinite(dof) && dof < 1e6) {
    boost::math::students_t dist(std::max(dof, 1.0));
    critical = boost::math::quantile(boost::math::complement(dist, alpha / 2));
  } else {
    critical = boost::math::quantile(boost::math::complement(boost::math::normal(), alpha / 2));
  }
  return {diff - critical * se, diff + critical * se};
}

bool means_differ(const Moments& a, const Moments& b, double confidence) {
  return !difference_interval(a, b, confidence).contains(0.0);
}

double relative_standard_error(std::span<const double> xs) {
  const Moments m = moments_of(xs);
  if (m.n < 2 || m.mean == 0) return std::numeric_limits<double>::infinity();
  return m.sd / std::sqrt(static_cast<double>(m.n)) / std::abs(m.mean);
}

double normal_quantile(double p) { return boost::math::quantile(boost::math::normal(), p); }

double quantile_sorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) return std::numeric_limits<double>::quiet_NaN();
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

double quantile(std::span<const double> xs, double q) {
  std::vector<double> copy(xs.begin(), xs.end());
  std::sort(copy.begin(), copy.end());
  return quantile_sorted(copy, q);
}

double band_overlap(const Moments& a, const Moments& b) {
  const double alo = a.mean - 2 * a.sd, ahi = a.mean + 2 * a.sd;
  const double blo = b.mean - 2 * b.sd, bhi = b.mean + 2 * b.sd;
  const double inter = std::min(ahi, bhi) - std::max(alo, blo);
  if (inter <= 0) return 0.0;
  const double uni = std::max(ahi, bhi) - std::min(alo, blo);
  return uni > 0 ? inter / uni : 1.0;
}

Summary summarise(std::vector<double> xs) {
  Summary s;
  s.n = xs.size();
  if (xs.empty()) {
    s.min = s.p5 = s.median = s.mean = s.p95 = s.p99 = s.max = std::numeric_limits<double>::quiet_NaN();
    return s;
  }
  std::sort(xs.begin(), xs.end());
  s.min = xs.front();
  s.max = xs.back();
  s.p5 = quantile_sorted(xs, 0.05);
  s.median = quantile_sorted(xs, 0.5);
  s.p95 = quantile_sorted(xs, 0.95);
  s.p99 = quantile_sorted(xs, 0.99);
  long double sum = 0;
  for (double x : xs) sum += x;
  s.mean = static_cast<double>(sum / xs.size());
  return s;
}

}  // namespace latest
