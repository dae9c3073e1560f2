#pragma once
// The pooled detector's hinge (pooled_detection.cpp, PooledHinges): points
// (u, r), u in iterations from an origin and r a residual in ns, and the
// time T after which they lie on zero and before which they follow
// s·(T − u), or s·(T − u) + q·(T − u)², with the least squared residual.
// T runs on a grid of 1/64 iteration from the origin; each point's powers
// are summed in the cell of that grid it falls in, and the cells then added
// up, so that each candidate T costs the same however many points there
// are, and no point is sorted. Internals of the detector, of internal
// linkage as boundaries.hpp says why.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace latest::pooled {
namespace {

class HingeFit {
 public:
  static constexpr double kCellsPerIteration = 64;
  // Σu⁰…Σu⁴, Σr, Σu·r, Σu²·r and Σr² of some points.
  struct Sums {
    double u[5] = {}, ur[3] = {}, rr = 0;
    void add(double pu, double r) {
      double p = 1;
      for (int j = 0; j < 5; ++j, p *= pu) u[j] += p;
      ur[0] += r, ur[1] += pu * r, ur[2] += pu * pu * r, rr += r * r;
    }
    Sums operator-(const Sums& o) const {
      Sums d;
      for (int j = 0; j < 5; ++j) d.u[j] = u[j] - o.u[j];
      for (int j = 0; j < 3; ++j) d.ur[j] = ur[j] - o.ur[j];
      d.rr = rr - o.rr;
      return d;
    }
    Sums& operator+=(const Sums& o) {
      for (int j = 0; j < 5; ++j) u[j] += o.u[j];
      for (int j = 0; j < 3; ++j) ur[j] += o.ur[j];
      rr += o.rr;
      return *this;
    }
  };

  // Points within [−before, after], both whole cells (multiples of 1/64).
  // Cell 0 holds the points before −before (a boundary's time rounded to
  // the nanosecond can fall just before it), cell k those within
  // [−before + (k − 1)/64, −before + k/64), the last one those from after
  // on. `cells`: storage the caller keeps from fit to fit.
  HingeFit(double before, double after, std::vector<Sums>& cells)
      : first_cell_(std::floor(-before * kCellsPerIteration)), cells_(cells) {
    const auto count = static_cast<std::size_t>(std::floor(after * kCellsPerIteration) - first_cell_) + 2;
    cells_.assign(count + 1, Sums{});  // and one for the sums over every cell (close())
  }
  void add(double u, double r) {
    // u·64 is exact: the cell is where u lies against the grid's times.
    const double cell = std::clamp(std::floor(u * kCellsPerIteration) - first_cell_ + 1, 0.0,
                                   static_cast<double>(cells_.size() - 2));
    cells_[static_cast<std::size_t>(cell)].add(u, r);
    ++points_;
  }
  // After the last add(): from each cell's sums to those of the cells
  // before it.
  void close() {
    Sums below;
    for (Sums& cell : cells_) {
      const Sums own = cell;
      cell = below;
      below += own;
    }
  }
  std::size_t points() const { return points_; }

  struct Best {
    double T = 0;           // iterations from the origin
    double saved = 0;       // squared residual (ns²) saved against T = 0
    bool at_reach = false;  // T is the last the fit can reach
    double rate = 0;        // straight fits: |s|, ns an iteration
  };
  // The best T within [−before + earliest, after − 1] over the points of
  // [−before, after); each of them whole cells. Once closed.
  Best best(double before, double after, bool quadratic, double earliest) const {
    const std::size_t lo = index(-before), hi = index(after);
    // The points before T, with x = T − u: their sums, Σx² and Σx·r.
    struct BeforeT {
      Sums s;
      double x2, xr;
    };
    // `at`: index(T), the first cell at or after T.
    const auto before_T = [&](double T, std::size_t at) {
      const Sums s = cells_[std::max(lo, at)] - cells_[lo];
      return BeforeT{s, T * T * s.u[0] - 2 * T * s.u[1] + s.u[2], T * s.ur[0] - s.ur[1]};
    };
    const auto rss = [&](double T, std::size_t at) {
      const auto [s, x2, xr] = before_T(T, at);
      const double total = (cells_[hi] - cells_[lo]).rr;
      // And Σx³, Σx⁴, Σx²·r.
      const double T2 = T * T;
      if (!quadratic) return x2 > 0 ? total - xr * xr / x2 : total;
      const double x3 = T2 * T * s.u[0] - 3 * T2 * s.u[1] + 3 * T * s.u[2] - s.u[3];
      const double x4 = T2 * T2 * s.u[0] - 4 * T2 * T * s.u[1] + 6 * T2 * s.u[2] - 4 * T * s.u[3] + s.u[4];
      const double x2r = T2 * s.ur[0] - 2 * T * s.ur[1] + s.ur[2];
      const double det = x2 * x4 - x3 * x3;
      if (det <= 1e-9 * x2 * x4) return x2 > 0 ? total - xr * xr / x2 : total;
      return total - (xr * (xr * x4 - x2r * x3) + x2r * (x2 * x2r - x3 * xr)) / det;
    };
    double best_rss = std::numeric_limits<double>::infinity(), best_T = 0;
    constexpr double kStep = 1 / kCellsPerIteration;
    // T moves a cell a step.
    std::size_t at = index(-before + earliest);
    for (double T = -before + earliest; T <= after - 1; T += kStep, ++at) {
      const double r = rss(T, at);
      if (r < best_rss) best_rss = r, best_T = T;
    }
    Best b;
    b.T = best_T;
    b.at_reach = best_T > after - 1 - kStep;
    b.saved = rss(0, index(0)) - best_rss;
    if (!quadratic) {
      const BeforeT s = before_T(best_T, index(best_T));
      b.rate = s.x2 > 0 ? std::abs(s.xr) / s.x2 : 0;
    }
    return b;
  }

 private:
  // The first cell at or after u, a whole cell from the origin: once
  // closed, cells_[it] sums the points before u.
  std::size_t index(double u) const {
    const double cell = std::floor(u * kCellsPerIteration) - first_cell_ + 1;
    return static_cast<std::size_t>(std::clamp(cell, 0.0, static_cast<double>(cells_.size() - 1)));
  }
  double first_cell_;  // −before in cells
  std::vector<Sums>& cells_;
  std::size_t points_ = 0;
};

}  // namespace
}  // namespace latest::pooled
