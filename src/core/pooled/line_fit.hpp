#pragma once
// Straight lines through an SM's iteration boundaries (boundaries.hpp),
// least squares from exact integer sums, and the spread about them.
// Internals of the pooled detector (pooled_detection.cpp), of internal
// linkage as boundaries.hpp says why.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

#include "core/pooled/boundaries.hpp"

namespace latest::pooled {
namespace {

// time ≈ t0 + a + b·(i − i0) over a segment's boundaries.
struct Line {
  std::int64_t i0 = 0;
  Nanos t0 = 0;
  double a = 0, b = 0;
  // For spread(), which runs on every record a fine scan reads: the mean x
  // of the line's points, 1 + 1/points and 1/Σ(x − mean x)², kept rather
  // than divided by there (the divisions were that loop's longest chain).
  double mean_x = 0, spread0 = 1, per_sxx = 1;
  double residual(std::int64_t i, Nanos t) const {
    return static_cast<double>(t - t0) - (a + b * static_cast<double>(i - i0));
  }
  // A new boundary's residual sd over a boundary's own noise: the line's
  // own error grows as it is extrapolated away from its points.
  double spread(std::int64_t i) const {
    const double x = static_cast<double>(i - i0) - mean_x;
    return std::sqrt(spread0 + x * x * per_sxx);
  }
};

// Least squares over boundaries [from, to]; `blocks_only` fits the block
// boundaries among them (every 64th, each read at once), for long segments
// where every boundary would cost host time and add nothing to the slope.
// Over every boundary, x runs 0, 1, …, m, so Σx and Σx² are known and the
// sums over y (whole nanoseconds) are taken in integers: exact, and no chain
// of floating-point additions to wait on (the fits were a fifth of the
// detector's host time).
// The line through n points with those sums, from boundary `from` at `t0` on.
inline Line line_through(std::int64_t from, Nanos t0, double n, double sx, double sy, double sxx, double sxy) {
  Line l;
  l.i0 = from;
  l.t0 = t0;
  n = std::max(n, 1.0);
  const double den = n * sxx - sx * sx;
  l.b = den > 0 ? (n * sxy - sx * sy) / den : 0;
  l.a = (sy - l.b * sx) / n;
  l.mean_x = sx / n;
  l.spread0 = 1 + 1 / n;
  l.per_sxx = 1 / std::max(1.0, sxx - sx * sx / n);
  return l;
}

// Over every boundary of [from, from + m], from their sums.
inline Line line_through(const Boundaries& e, std::int64_t from, std::int64_t m, const Boundaries::RangeSums& sums) {
  const auto x = static_cast<double>(m);
  return line_through(from, e.at(from), x + 1, x * (x + 1) / 2, static_cast<double>(sums.y),
                      x * (x + 1) * (2 * x + 1) / 6, static_cast<double>(sums.xy));
}

inline Line fit_line(const Boundaries& e, std::int64_t from, std::int64_t to, bool blocks_only = false) {
  if (!blocks_only && to >= from) return line_through(e, from, to - from, e.range_sums(from, to));
  const Nanos t0 = e.at(from);
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  const std::int64_t first = (from + Boundaries::kBlock - 1) / Boundaries::kBlock * Boundaries::kBlock;
  if (blocks_only && first <= to) {
    // In whole numbers where every sum stays below 2^52: x and y are never
    // negative (the boundaries ascend), so no partial sum exceeds the last,
    // and the doubles' sums below are then exact too, the same to the bit.
    // Integer sums avoid four chains of dependent additions in doubles, about
    // half of this fit's host time.
    const std::int64_t last = first + (to - first) / Boundaries::kBlock * Boundaries::kBlock;
    const auto count = static_cast<double>((last - first) / Boundaries::kBlock + 1);
    const auto x_last = static_cast<double>(last - from), y_last = static_cast<double>(e.at_block(last) - t0);
    if (count * x_last * std::max(x_last, y_last) < 0x1p52) {
      std::int64_t isx = 0, isy = 0, isxx = 0, isxy = 0;
      for (std::int64_t i = first; i <= to; i += Boundaries::kBlock) {
        const std::int64_t x = i - from, y = e.at_block(i) - t0;
        isx += x;
        isy += y;
        isxx += x * x;
        isxy += x * y;
      }
      return line_through(from, t0, count, static_cast<double>(isx), static_cast<double>(isy),
                          static_cast<double>(isxx), static_cast<double>(isxy));
    }
    for (std::int64_t i = first; i <= to; i += Boundaries::kBlock) {
      const auto x = static_cast<double>(i - from);
      const auto y = static_cast<double>(e.at_block(i) - t0);
      sx += x;
      sy += y;
      sxx += x * x;
      sxy += x * y;
      ++n;
    }
  }
  return line_through(from, t0, n, sx, sy, sxx, sxy);
}

// The lines over [from[k], from[k] + m] for ascending from[k], as fit_line
// gives them, where they overlap: each stretch between two of their ends is
// summed once, and each line's sums taken from those (in whole numbers, so
// the same). The wander's eight places overlap by three quarters.
// The first `count` of `from` are read, and of `out` written.
template <std::size_t N>
void fit_overlapping_lines(const Boundaries& e, const std::array<std::int64_t, N>& from, std::size_t count,
                           std::int64_t m, std::array<Line, N>& out) {
  count = std::min(count, N);
  std::array<std::int64_t, 2 * N> ends;         // every line's first and last boundary, ascending
  std::array<Boundaries::Moments, 2 * N> upto;  // over [ends[0], ends[j])
  std::size_t n = 0;
  for (std::size_t a = 0, b = 0; a < count || b < count;) {
    const std::int64_t next = b >= count || (a < count && from[a] <= from[b] + m) ? from[a++] : from[b++] + m;
    if (n == 0 || ends[n - 1] != next) ends[n++] = next;
  }
  upto[0] = {};
  for (std::size_t j = 1; j < n; ++j)
    upto[j] = upto[j - 1].then(ends[j - 1] - ends[0], e.moments(ends[j - 1], ends[j]));
  const auto end_at = [&](std::int64_t i) {
    return static_cast<std::size_t>(std::lower_bound(ends.begin(), ends.begin() + n, i) - ends.begin());
  };
  for (std::size_t k = 0; k < count; ++k) {
    const Boundaries::Moments own = upto[end_at(from[k])].rest_of(from[k] - ends[0], upto[end_at(from[k] + m)]);
    out[k] = line_through(e, from[k], m, Boundaries::range_sums(own, m));
  }
}

// The sd of boundaries [from, to] about the line fitted on them, in the
// form the fits always used, Σy² − aΣy − bΣxy. The exact sum of squared
// residuals differs from it in the fifth digit, and that alone moved the
// earliest slow-approach measurement from −1.87 to −2.27 target iterations
// (EveryRampShape; docs/methodology.md): that row moves with any change.
inline double residual_sd(const Boundaries& e, const Line& l, std::int64_t from, std::int64_t to) {
  if (to < from) return 0;
  const Nanos first = e.at(from);
  const auto count = static_cast<double>(to - from + 1);
  const auto last_y = static_cast<double>(e.at(to) - l.t0);
  // In whole numbers where every sum stays below 2^53 (y ≥ 0 from the
  // line's origin on): the doubles' sums are then exact as well, so the two
  // agree to the bit. There Σy and Σxy come from the durations' exact
  // moments (range_sums), and Σy² from y = y' + c, with y' = t − t_from and
  // c = t_from − t0: Σy'² + 2cΣy' + n·c². Three sums boundary by boundary
  // were a twelfth of the detector's host time on long windows.
  double sy = 0, sxy = 0, syy = 0;
  if (first >= l.t0 && count * last_y * std::max(last_y, count) < 0x1p53) {
    const std::int64_t m = to - from;
    const auto c = static_cast<std::uint64_t>(first - l.t0), n = static_cast<std::uint64_t>(m + 1);
    const Boundaries::RangeSums r = e.range_sums(from, to);
    const auto ry = static_cast<std::uint64_t>(r.y), rxy = static_cast<std::uint64_t>(r.xy);
    sy = static_cast<double>(ry + n * c);
    sxy = static_cast<double>(rxy + c * (n * (n - 1) / 2));
    syy = static_cast<double>(e.squared_offsets(from, to) + 2 * c * ry + n * c * c);
  } else {  // in doubles, boundary by boundary
    Nanos t = first;
    for (std::int64_t i = from; i <= to; ++i) {
      if (i > from) t += e.duration(i - 1);
      const auto x = static_cast<double>(i - from);
      const auto y = static_cast<double>(t - l.t0);
      sy += y;
      sxy += x * y;
      syy += y * y;
    }
  }
  const double rss = std::max(0.0, syy - l.a * sy - l.b * sxy);
  return std::sqrt(rss / static_cast<double>(std::max<std::int64_t>(1, to - from - 1)));
}

}  // namespace
}  // namespace latest::pooled
