#pragma once
// Pooled hinges (pooled_detection.cpp, steps 6 and 8): one fit of the lag
// the clock still owed, over every SM's boundaries on one time axis. Of
// internal linkage, as boundaries.hpp says why.
#include <cstdint>
#include <vector>

#include "core/pooled/hinge_fit.hpp"
#include "core/pooled/sm_state.hpp"
#include "core/types.hpp"

namespace latest::pooled {
namespace {

// Pooled over SMs, on the time axis: every SM's boundary residual against
// its line after the change is the lag the clock still owed at that moment,
// R(t), the same function on every SM. The SMs'
// iterations start at different moments, so together they sample R finely,
// even where a ramp level lasts less than an iteration. From the arrival T on
// R is 0; just before it R follows s·(T − t), or s·(T − t) + q·(T − t)² where
// the rate still moves. A hinge is the T with the least squared residual over
// the points of a stretch (HingeFit, pooled/hinge_fit.hpp).
class PooledHinges {
 public:
  // The cells' sums, kept by the caller for the next hinges: a window
  // builds up to 16 of them, and their tens of kB, freed and taken again
  // each time, went back to the kernel in between.
  struct Buffers {
    std::vector<HingeFit::Sums> cells;
  };
  // Which end of the change a hinge dates. At the arrival the records are
  // on the target's line after T; at the departure, mirrored in time, on
  // the initial clock's line before it, so that u runs backwards and the
  // same fit applies.
  enum class Side { arrival, departure };
  // Residuals against each SM's line over `line_iterations` from two
  // iterations beyond `origin` (a tentative arrival, or departure) on the
  // steady side: near the change, so the boundaries' slow common wander
  // cannot build up, and clear of it, so no level of the ramp tilts the line.
  // `before` and `after`: whole cells (multiples of 1/64).
  PooledHinges(const std::vector<SmState*>& sms, Nanos request_gpu_ns, double origin, double slope, double before,
               double after, double sigma, std::int64_t line_iterations, Buffers& buffers,
               Side side = Side::arrival)
      : PooledHinges(origin, side == Side::arrival ? slope : -slope, before, after, sigma, buffers) {
    const auto at = [&](double iterations) { return request_gpu_ns + nearest(origin + iterations * slope_); };
    for (const SmState* st : sms) {
      if (side == Side::arrival) {
        std::int64_t not_before = 0;
        const ArrivalStart a = arrival_start(*st, request_gpu_ns, origin, slope, before, line_iterations, not_before);
        if (a.first >= 0)
          add_points(st->e, st->fit(a.line_from, a.line_from + line_iterations), a.first, a.first_time, request_gpu_ns,
                     before, after, true);
        continue;
      }
      // Mirrored, u = after comes first in time.
      Nanos i_time = 0;
      const std::int64_t i = st->e.first_at_or_after(at(after), 0, &i_time);
      const std::int64_t to = st->e.first_at_or_after(at(2), after >= 2 ? i : 0) - 1;
      const std::int64_t from = std::max(st->initial.i0, to - line_iterations);
      if (to - from < 4 || to > st->e.last()) continue;
      if (i <= st->e.last()) add_points(st->e, st->fit(from, to), i, i_time, request_gpu_ns, before, after, false);
    }
    fit_.close();
  }
  // An SM's line for the arrival's side and the first boundary it reads (at
  // u = −before), as the constructor above finds them; `first` −1 where
  // that SM adds no points.
  struct SmLine {
    Line line;
    std::int64_t first = -1;
    Nanos first_time = 0;  // boundary `first`'s
  };
  // The same on the arrival's side, with each SM's line and first boundary
  // given (`lines`, one per SM of `sms`).
  PooledHinges(const std::vector<SmState*>& sms, const std::vector<SmLine>& lines, Nanos request_gpu_ns, double origin,
               double slope, double before, double after, double sigma, Buffers& buffers)
      : PooledHinges(origin, slope, before, after, sigma, buffers) {
    for (std::size_t k = 0; k < sms.size(); ++k)
      if (lines[k].first >= 0)
        add_points(sms[k]->e, lines[k].line, lines[k].first, lines[k].first_time, request_gpu_ns, before, after, true);
    fit_.close();
  }
  // Where an SM's points and line for a hinge at `origin` on the arrival's
  // side begin: its first boundary from `before` iterations before it, and
  // its line's (over `line_iterations`) from two iterations after it; −1
  // both where it adds no points. Each search starts from `not_before` and
  // moves it on.
  struct ArrivalStart {
    std::int64_t first = -1, line_from = -1;
    Nanos first_time = 0;  // boundary `first`'s
  };
  static ArrivalStart arrival_start(const SmState& st, Nanos request_gpu_ns, double origin, double slope, double before,
                                    std::int64_t line_iterations, std::int64_t& not_before) {
    const auto at = [&](double iterations) { return request_gpu_ns + nearest(origin + iterations * slope); };
    Nanos first_time = 0;
    const std::int64_t first = st.e.first_at_or_after(at(-before), not_before, &first_time);
    not_before = std::min(first, st.e.last());
    const std::int64_t from = st.e.first_at_or_after(at(2), not_before);
    not_before = std::min(from, st.e.last());
    if (from + line_iterations > st.e.last() || first > st.e.last()) return {};
    return {first, from, first_time};
  }

 private:
  PooledHinges(double origin, double slope, double before, double after, double sigma, Buffers& buffers)
      : origin_(origin), slope_(slope), noise2_(sigma * sigma), fit_(before, after, buffers.cells) {}
  // The boundaries of one SM from boundary i at time e (at u ≥ −before, or ≤ after
  // mirrored) to u = after (−before), in time order.
  void add_points(const Boundaries& b, const Line& line, std::int64_t i, Nanos e, Nanos request_gpu_ns, double before,
                  double after, bool forward) {
    for (; i <= b.last(); e += b.duration(i), ++i) {
      const double u = (static_cast<double>(e - request_gpu_ns) - origin_) / slope_;
      if (forward ? u > after : u < -before) break;
      fit_.add(u, line.residual(i, e));
      if (i == b.last()) break;
    }
  }

 public:
  std::size_t points() const { return fit_.points(); }
  struct Fit {
    double arrival = 0;  // ns after the request (mirrored: the departure)
    double gain = 0;     // squared residual saved against T = origin, in boundary noises²
    bool at_reach = false;  // the best T is the last the fit can reach
    double rate = 0;        // straight fits: |s|, the lag the records gained an iteration before T, ns
  };
  // The best T within (origin − before + earliest, origin + after − 1)
  // iterations, over the points of (origin − before, origin + after); each
  // of them whole cells.
  Fit hinge(double before, double after, bool quadratic, double earliest = 0.25) const {
    const HingeFit::Best b = fit_.best(before, after, quadratic, earliest);
    return {origin_ + b.T * slope_, b.saved / noise2_, b.at_reach, b.rate};
  }

 private:
  double origin_, slope_, noise2_;
  HingeFit fit_;
};

}  // namespace
}  // namespace latest::pooled
