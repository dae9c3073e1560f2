#include "core/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

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

namespace {

// Welch's standard error of mean(a) − mean(b) and its Welch–Satterthwaite
// degrees of freedom (infinity where neither sample has a spread).
struct Welch {
  double se = 0, dof = 0;
};
Welch welch(const Moments& a, const Moments& b) {
  const double va = a.n > 0 ? a.sd * a.sd / static_cast<double>(a.n) : 0.0;
  const double vb = b.n > 0 ? b.sd * b.sd / static_cast<double>(b.n) : 0.0;
  const double denom = (a.n > 1 ? va * va / static_cast<double>(a.n - 1) : 0.0) +
                       (b.n > 1 ? vb * vb / static_cast<double>(b.n - 1) : 0.0);
  return {std::sqrt(va + vb), denom > 0 ? (va + vb) * (va + vb) / denom : std::numeric_limits<double>::infinity()};
}

// The normal limit once the degrees of freedom are large.
bool uses_students_t(double dof) { return std::isfinite(dof) && dof < 1e6; }

double students_t_critical(double dof, double alpha) {
  return boost::math::quantile(boost::math::complement(boost::math::students_t(std::max(dof, 1.0)), alpha / 2));
}
double normal_critical(double alpha) {
  return boost::math::quantile(boost::math::complement(boost::math::normal(), alpha / 2));
}

}  // namespace

Interval difference_interval(const Moments& a, const Moments& b, double confidence) {
  const Welch w = welch(a, b);
  const double alpha = 1.0 - confidence;
  const double critical = uses_students_t(w.dof) ? students_t_critical(w.dof, alpha) : normal_critical(alpha);
  const double diff = a.mean - b.mean;
  return {diff - critical * w.se, diff + critical * w.se};
}

// The answer of !difference_interval(a, b, confidence).contains(0), which is
// |diff| > critical·se, mostly without Student's t quantile: the paper's
// detector asks this of every candidate, and on windows where candidates
// fail one after another the quantile (long double, in Boost) was a third
// of the host time. The t quantile is above the normal's and falls as the
// degrees of freedom grow, so the normal's and that of the whole degrees of
// freedom below bound it; only between the two is it computed. Each bound
// is widened by 1e-12 (far above Boost's error, far below t − normal
// there), and c·se rounds monotonically in c, so the answer is the same.
bool means_differ(const Moments& a, const Moments& b, double confidence) {
  const Welch w = welch(a, b);
  const double alpha = 1.0 - confidence;
  const double diff = std::abs(a.mean - b.mean);
  thread_local double cached_alpha = std::numeric_limits<double>::quiet_NaN(), normal = 0;
  thread_local std::map<long, double> t_at_whole_dof;
  if (alpha != cached_alpha || t_at_whole_dof.size() > 4096) {  // bounded: degrees of freedom are continuous
    cached_alpha = alpha;
    normal = normal_critical(alpha);
    t_at_whole_dof.clear();
  }
  if (!uses_students_t(w.dof)) return !(diff <= normal * w.se);
  if (diff <= normal * (1 - 1e-12) * w.se) return false;
  const long whole = static_cast<long>(std::floor(std::max(w.dof, 1.0)));
  auto [it, fresh] = t_at_whole_dof.try_emplace(whole, 0.0);
  if (fresh) it->second = students_t_critical(static_cast<double>(whole), alpha);
  if (diff > it->second * (1 + 1e-12) * w.se) return true;
  return !(diff <= students_t_critical(w.dof, alpha) * w.se);
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
