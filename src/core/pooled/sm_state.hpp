#pragma once
// One SM as the pooled detector sees it (pooled_detection.cpp): its
// boundaries, the lines of its segments before and after the change, and
// where it placed the change. Of internal linkage, as boundaries.hpp says why.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/pooled/boundaries.hpp"
#include "core/pooled/line_fit.hpp"
#include "core/types.hpp"

namespace latest::pooled {
namespace {

struct SmState {
  int sm = 0;
  Boundaries e;
  std::int64_t first = 0;  // first boundary at or after t_s
  Line initial, final;
  double initial_mean = 0, target_mean = 0;
  // The change point, where found.
  std::int64_t off = -1;  // the iteration the change fell in; -1: not placed
  // Times after the request, in ns: as doubles, absolute GPU times (near 2^61
  // on the H200) would keep only 256 ns.
  double change_ns = 0;
  double change_sd_ns = 0;
  double departure_ns = 0;
  // The fit with a stall (best_change_with_stall) and the line it is on.
  Line local;
  double step = 0, stall_u = 0, x_lo = 0, x_hi = 0;
  // The last few fits (fit()), kept by the caller from window to window
  // beside the state, so that moving a state copies none of them.
  class Fits {
    friend struct SmState;
    static constexpr std::size_t kFits = 16;
    struct Fit {
      std::int64_t from = 0, to = 0;
      Line line;
    };
    std::array<Fit, kFits> fit_;
    std::size_t fitted_ = 0;
  };
  // `fits`: emptied here.
  SmState(const SmRecords& r, double long_ratio, Boundaries::Marks& marks, std::vector<std::uint8_t>& uneven,
          Fits& fits)
      : sm(r.sm), e(r, long_ratio, marks, uneven), fits_(&fits) {
    fits.fitted_ = 0;
  }
  // The line of boundaries [from, to]. The scans and hinges refit the same
  // stretches round after round, so the last few fits are kept, the oldest
  // replaced first; only once the boundaries are final (interrupts out, the
  // end set).
  Line fit(std::int64_t from, std::int64_t to) const {
    Fits& f = *fits_;
    for (std::size_t k = 0; k < std::min(f.fitted_, Fits::kFits); ++k)
      if (f.fit_[k].from == from && f.fit_[k].to == to) return f.fit_[k].line;
    Fits::Fit& next = f.fit_[f.fitted_++ % Fits::kFits];
    next = {from, to, fit_line(e, from, to)};
    return next.line;
  }

 private:
  Fits* fits_;
};

inline double median(std::vector<double> xs) {
  if (xs.empty()) return std::numeric_limits<double>::quiet_NaN();
  const auto mid = xs.begin() + static_cast<std::ptrdiff_t>(xs.size() / 2);
  std::nth_element(xs.begin(), mid, xs.end());
  return *mid;
}

// Whether the per-SM differences of two rates exceed `relevant` (ns per
// iteration), pooled: the median against its standard error from the median
// absolute deviation, so the power grows with the number of SMs and one odd
// SM does not decide. The SMs share the timer too, so a difference far below
// any clock step, common to all of them, is the timer's and never counts.
inline bool rate_changes(const std::vector<double>& differences, double relevant, double z) {
  if (differences.size() < 2) return false;
  const double mid = median(differences);
  std::vector<double> deviations;
  for (double x : differences) deviations.push_back(std::abs(x - mid));
  const double se = 1.2533 * 1.4826 * median(deviations) / std::sqrt(static_cast<double>(differences.size()));
  const double excess = std::abs(mid) - relevant;
  return excess > 0 && (se <= 0 || excess / se > z);
}

}  // namespace
}  // namespace latest::pooled
