#pragma once
// The SMs' spread and a stall before the change (pooled_detection.cpp,
// step 4): how far apart the SMs run, and a halt of every SM that the
// per-SM change points can bound together. Of internal linkage, as
// boundaries.hpp says why.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/pooled/sm_state.hpp"
#include "core/statistics.hpp"
#include "core/types.hpp"

namespace latest::pooled {
namespace {

// How far apart the SMs run: the shortest stretch, on the circle of one
// iteration of `slope` ns, that holds 80 % of the boundaries ending each
// SM's mixed iteration (by its line after the change), in ns. A launch per
// measurement (the paper's schedule) starts every SM together, and they can
// stay within a timer tick or two of each other through the window; a
// chained stream's SMs drift apart.
inline double sm_spread_ns(const std::vector<SmState*>& changed, double slope) {
  const Nanos origin = changed.front()->local.t0;
  std::vector<double> at;
  for (const SmState* st : changed) {
    const Line& l = st->local;
    const double t = static_cast<double>(l.t0 - origin) + l.a + l.b * (st->x_hi - static_cast<double>(l.i0));
    at.push_back(t - slope * std::floor(t / slope));
  }
  std::sort(at.begin(), at.end());
  const std::size_t n = at.size(), held = std::max<std::size_t>(1, (8 * n + 9) / 10);
  double spread = slope;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t last = k + held - 1;
    spread = std::min(spread, last < n ? at[last] - at[k] : at[last - n] + slope - at[k]);
  }
  return spread;
}

// A stall before the change: each SM's fit bounds it between the stalls that
// put the change at either end of its mixed iteration; all SMs' bounds
// together fix it, and with it each SM's change. A stall of a few boundary
// noises or less is none: the fit without one stands. Where none is
// placed, `open_iterations` is how much later (in iterations) the largest
// stall the bounds still allow would put the change, where at least a
// quarter, else 0. Where one is placed, `least_ns` is the least stall the
// SMs' bounds agree on, else 0. Where the bounds miss each other (some SMs
// need a stall that others rule out), `missed_ns` is by how much, else 0.
inline bool place_after_stall(const std::vector<SmState*>& changed, double sigma, Nanos request_gpu_ns, bool in_step,
                              double& open_iterations, double& least_ns, double& missed_ns) {
  constexpr double kNoises = 4;
  open_iterations = 0;
  least_ns = 0;
  missed_ns = 0;
  if (changed.size() < 8) return false;
  std::vector<double> lows, highs;
  for (const SmState* st : changed) {
    const double a = st->step * st->x_lo - st->stall_u, b = st->step * st->x_hi - st->stall_u;
    lows.push_back(std::min(a, b));
    highs.push_back(std::max(a, b));
  }
  // Not the extremes: one SM's noise would move them. A stall only where the
  // SMs together rule out none: without one each SM's bounds straddle zero,
  // and where SMs take the change at different points of their iterations
  // the bounds' middle alone can sit well off zero.
  const double lo = quantile(lows, 0.9), hi = quantile(highs, 0.1);
  if (lo > hi + kNoises * sigma) missed_ns = lo - hi;
  if (lo < kNoises * sigma || lo > hi + kNoises * sigma) {
    // The records then allow a stall up to `hi` (or the middle of bounds
    // that miss each other), and a stall S moves the change later by
    // S / step iterations: stated, not taken. Where the SMs' phases cluster
    // their bounds leave most of the iteration open, and a stall taken as
    // none would date the change early with a few ns stated. Under a quarter
    // iteration (spread phases leave about a tenth of the step open either
    // side) it is not stated, or every default ramp would state several
    // times the uncertainty it has.
    constexpr double kOpenShare = 0.25;
    const double largest = lo <= hi ? hi : (lo + hi) / 2;
    const double step = std::abs(changed.front()->step);
    if (largest > kNoises * sigma && largest > kOpenShare * step) open_iterations = largest / step;
    return false;
  }
  // SMs in step each bound the stall by the same iteration, so together
  // they leave most of it open: the records cannot tell a longer stall and
  // an earlier change from a shorter one and a later change. There the
  // smallest stall they need is taken; elsewhere the middle of the bounds.
  const double stall = in_step ? lo : (lo + hi) / 2;
  least_ns = lo;
  for (SmState* st : changed) {
    const double x = std::clamp((st->stall_u + stall) / st->step, st->x_lo, st->x_hi);
    const Line& l = st->local;
    st->change_ns = static_cast<double>(l.t0 - request_gpu_ns) + l.a + l.b * (x - static_cast<double>(l.i0));
    st->change_sd_ns = std::min(l.b, std::hypot(st->change_sd_ns, std::abs(hi - lo) / 2 * l.b / std::abs(st->step)));
    st->off = static_cast<std::int64_t>(x);
  }
  return true;
}

}  // namespace
}  // namespace latest::pooled
