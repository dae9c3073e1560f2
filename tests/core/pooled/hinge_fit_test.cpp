// The pooled hinge (src/core/pooled/hinge_fit.hpp) against least squares
// taken point by point at every T of its grid: the same best T, the same
// squared residual saved; the hinge that made noiseless points found on its
// own cell; points outside the range read by no fit.
#include "core/pooled/hinge_fit.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <utility>
#include <vector>

namespace latest::pooled {
namespace {

using Points = std::vector<std::pair<double, double>>;  // (u, r)

constexpr double kCell = 1 / HingeFit::kCellsPerIteration;

// A point of many SMs' boundaries: anywhere within [−before, after), a
// tenth of them exactly on the grid (SMs in step).
double draw_u(std::mt19937_64& rng, double before, double after) {
  if (rng() % 10 == 0)
    return -before + kCell * static_cast<double>(rng() % static_cast<std::uint64_t>((before + after) / kCell));
  return std::uniform_real_distribution<double>(-before, after)(rng);
}

// The lag before T: s·x, or s·x + q·x², x = T − u.
double lag(double u, double T, double s, double q) {
  const double x = T - u;
  return u < T ? s * x + q * x * x : 0.0;
}

// `n` points of a hinge at T with timer noise of sd `noise`.
Points noisy_hinge(std::mt19937_64& rng, double before, double after, int n, double T, double s, double q,
                   double noise) {
  std::normal_distribution<double> timer(0, noise);
  Points points;
  for (int j = 0; j < n; ++j) {
    const double u = draw_u(rng, before, after);
    points.emplace_back(u, lag(u, T, s, q) + timer(rng));
  }
  return points;
}

// The squared residual of the points of [−before, after) against the best
// hinge at T, by least squares over the points themselves (long double).
long double rss_at(const Points& points, double before, double after, double T, bool quadratic) {
  long double x2 = 0, x3 = 0, x4 = 0, xr = 0, x2r = 0, rr = 0;
  for (const auto& [u, r] : points) {
    if (u < -before || u >= after) continue;
    rr += static_cast<long double>(r) * r;
    if (u >= T) continue;
    const long double x = static_cast<long double>(T) - u;
    x2 += x * x, x3 += x * x * x, x4 += x * x * x * x, xr += x * r, x2r += x * x * r;
  }
  if (x2 <= 0) return rr;
  const long double det = x2 * x4 - x3 * x3;
  if (!quadratic || det <= 1e-9L * x2 * x4) return rr - xr * xr / x2;
  return rr - (xr * (xr * x4 - x2r * x3) + x2r * (x2 * x2r - x3 * xr)) / det;
}

HingeFit::Best fit_points(const Points& points, double before, double after, std::vector<HingeFit::Sums>& cells,
                          double fit_before, double fit_after, bool quadratic, double earliest) {
  HingeFit fit(before, after, cells);
  for (const auto& [u, r] : points) fit.add(u, r);
  fit.close();
  EXPECT_EQ(fit.points(), points.size());
  return fit.best(fit_before, fit_after, quadratic, earliest);
}

TEST(HingeFit, NoiselessHingeIsFoundOnItsCell) {
  std::mt19937_64 rng(1);
  std::vector<HingeFit::Sums> cells;
  for (int k = 0; k < 200; ++k) {
    const double before = k % 3 == 0 ? 8 : k % 3 == 1 ? 1.5 : 4;
    const double after = 3 + static_cast<double>(k % 3);
    const bool quadratic = k % 2;
    // On the grid, where the fit can reach it and with points either side.
    const double earliest = 0.25;
    const auto cells_open = static_cast<std::uint64_t>((before + after - 1 - earliest) / kCell) - 2;
    const double T = -before + earliest + kCell * static_cast<double>(1 + rng() % cells_open);
    const double s = (k % 4 < 2 ? 1 : -1) * std::uniform_real_distribution<double>(2, 500)(rng);
    const double q = quadratic ? std::uniform_real_distribution<double>(-0.2, 0.2)(rng) * std::abs(s) : 0;
    Points points;
    for (int j = 0; j < 1'500; ++j) {
      const double u = draw_u(rng, before, after);
      points.emplace_back(u, lag(u, T, s, q));
    }
    const HingeFit::Best b = fit_points(points, before, after, cells, before, after, quadratic, earliest);
    EXPECT_EQ(b.T, T) << "case " << k;
    EXPECT_FALSE(b.at_reach) << "case " << k;
    const long double at_zero = rss_at(points, before, after, 0, quadratic);
    EXPECT_NEAR(b.saved, static_cast<double>(at_zero), 1e-9 * static_cast<double>(at_zero) + 1e-6) << "case " << k;
    if (!quadratic) {
      EXPECT_NEAR(b.rate, std::abs(s), 1e-9 * std::abs(s)) << "case " << k;
    }
  }
}

TEST(HingeFit, BestIsTheLeastSquaresMinimumOverItsGrid) {
  std::mt19937_64 rng(2);
  std::vector<HingeFit::Sums> cells;
  for (int k = 0; k < 60; ++k) {
    const double before = 8, after = 4;
    const double T = std::uniform_real_distribution<double>(-6, 3)(rng);
    const double s = std::uniform_real_distribution<double>(-40, 40)(rng);
    const double q = std::uniform_real_distribution<double>(-5, 5)(rng);
    const double noise = std::uniform_real_distribution<double>(1, 30)(rng);
    const Points points = noisy_hinge(rng, before, after, 1'200, T, s, q, noise);
    // Each of the detector's fits of a stretch within the one collected.
    struct Ask {
      double before, after;
      bool quadratic;
      double earliest;
    };
    for (const Ask a : {Ask{1.5, 3, true, 0.25}, Ask{0, 4, false, kCell}, Ask{-1, 4, false, kCell},
                        Ask{8, 4, false, 0.25}, Ask{4, 4, true, 0.25}}) {
      const HingeFit::Best b = fit_points(points, before, after, cells, a.before, a.after, a.quadratic, a.earliest);
      long double least = std::numeric_limits<long double>::infinity();
      double least_T = 0;
      for (double t = -a.before + a.earliest; t <= a.after - 1; t += kCell) {
        const long double r = rss_at(points, a.before, a.after, t, a.quadratic);
        if (r < least) least = r, least_T = t;
      }
      const long double at_zero = rss_at(points, a.before, a.after, 0, a.quadratic);
      // The moments of every point about the origin, in doubles: they lose
      // about 1e-8 of the total to rounding at T four iterations out.
      const double scale = static_cast<double>(at_zero) * 1e-7 + 1e-6;
      // Its T fits as well as the least squares' best (ties either way).
      EXPECT_NEAR(static_cast<double>(rss_at(points, a.before, a.after, b.T, a.quadratic)), static_cast<double>(least),
                  scale)
          << "case " << k << ", T " << b.T << " against " << least_T;
      EXPECT_NEAR(b.saved, static_cast<double>(at_zero - least), scale) << "case " << k;
      EXPECT_EQ(b.at_reach, b.T > a.after - 1 - kCell) << "case " << k;
      EXPECT_GE(b.T, -a.before + a.earliest) << "case " << k;
      EXPECT_LE(b.T, a.after - 1) << "case " << k;
    }
  }
}

TEST(HingeFit, PointsOutsideTheStretchAreReadByNoFit) {
  std::mt19937_64 rng(3);
  std::vector<HingeFit::Sums> cells;
  for (int k = 0; k < 40; ++k) {
    const double before = 1.5, after = 4;
    const double T = std::uniform_real_distribution<double>(-1, 2.5)(rng);
    const Points points = noisy_hinge(rng, before, after, 800, T, 25, 0, 5);
    const HingeFit::Best alone = fit_points(points, before, after, cells, 1.5, 3, true, 0.25);
    // Just before the stretch (a boundary rounded to the ns), at its end and beyond.
    Points more = points;
    for (const double u : {std::nextafter(-before, -10.0), -before - 0.3, after, after + 0.01, after + 7})
      more.emplace_back(u, 1e6);
    const HingeFit::Best with = fit_points(more, before, after, cells, 1.5, 3, true, 0.25);
    EXPECT_EQ(with.T, alone.T) << "case " << k;
    EXPECT_NEAR(with.saved, alone.saved, 1e-6 * std::abs(alone.saved) + 1e-6) << "case " << k;
  }
}

TEST(HingeFit, AChangeBeyondItsReachIsAtReach) {
  std::mt19937_64 rng(4);
  std::vector<HingeFit::Sums> cells;
  Points points;
  for (int j = 0; j < 1'000; ++j) {
    const double u = draw_u(rng, 1.5, 4);
    points.emplace_back(u, lag(u, 5.5, 30, 0));  // the lag still closing at the stretch's end
  }
  const HingeFit::Best b = fit_points(points, 1.5, 4, cells, 0, 4, false, kCell);
  EXPECT_EQ(b.T, 3);
  EXPECT_TRUE(b.at_reach);
  // A cell short of it is within reach.
  for (auto& [u, r] : points) r = lag(u, 3 - kCell, 30, 0);
  const HingeFit::Best within = fit_points(points, 1.5, 4, cells, 0, 4, false, kCell);
  EXPECT_EQ(within.T, 3 - kCell);
  EXPECT_FALSE(within.at_reach);
}

// Where several T explain the points as well (points on zero throughout),
// the earliest stands: a later one would move the arrival for nothing.
TEST(HingeFit, TiesGoToTheEarliestT) {
  std::mt19937_64 rng(5);
  std::vector<HingeFit::Sums> cells;
  Points points;
  for (int j = 0; j < 500; ++j) points.emplace_back(draw_u(rng, 1.5, 4), 0.0);
  for (const bool quadratic : {false, true}) {
    const HingeFit::Best b = fit_points(points, 1.5, 4, cells, 1.5, 3, quadratic, 0.25);
    EXPECT_EQ(b.T, -1.25);
    EXPECT_EQ(b.saved, 0);
  }
}

}  // namespace
}  // namespace latest::pooled
