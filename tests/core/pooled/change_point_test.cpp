// One SM's change point (src/core/pooled/change_point.hpp) against the
// hinge that made its residuals: exact where they hold no noise, close where
// they do, and never a worse fit than the best hinge a fine search over every
// place finds (the split costs are summed side by side, in vectors).
#include "core/pooled/change_point.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace latest::pooled {
namespace {

using Window = std::vector<std::pair<double, double>>;

// Boundaries from `first` on, `n` of them: before x each lags (or leads) by
// step per iteration still to go, less a stall; after x none does.
Window hinge(double first, std::size_t n, double x, double step, double stall, double noise, std::mt19937_64& rng) {
  std::normal_distribution<double> timer(0, noise);
  Window w;
  for (std::size_t q = 0; q < n; ++q) {
    const double i = first + static_cast<double>(q);
    w.emplace_back(i, (i < x ? step * (x - i) - stall : 0.0) + (noise > 0 ? timer(rng) : 0.0));
  }
  return w;
}

// The hinge's cost at x: the residuals against the lag it predicts.
double cost_at(const Window& w, double step, double x) {
  double cost = 0;
  for (const auto& [i, r] : w) {
    const double off = r - (i < x ? step * (x - i) : 0.0);
    cost += off * off;
  }
  return cost;
}

TEST(ChangePoint, NoiselessHingeIsPlacedExactly) {
  std::mt19937_64 rng(1);
  for (int k = 0; k < 500; ++k) {
    const std::size_t n = 6 + rng() % 40;
    const double first = static_cast<double>(rng() % 100'000);
    // Strictly inside the window, anywhere within an iteration.
    const double x = first + 1 + std::uniform_real_distribution<double>(0, static_cast<double>(n) - 2.001)(rng);
    const double step = (k % 2 ? 1 : -1) * std::uniform_real_distribution<double>(2, 3'000)(rng);
    const Window w = hinge(first, n, x, step, 0, 0, rng);
    std::size_t used = 0;
    const double found = best_change_point(w, step, used);
    EXPECT_NEAR(found, x, 1e-6) << "case " << k;
    EXPECT_EQ(used, static_cast<std::size_t>(std::ceil(x - first))) << "case " << k;
  }
}

TEST(ChangePoint, NoisyHingeIsNoWorseThanTheBestOfAFineSearch) {
  std::mt19937_64 rng(2);
  std::vector<double> errors;
  for (int k = 0; k < 300; ++k) {
    const std::size_t n = 8 + rng() % 30;
    const double x = 2 + std::uniform_real_distribution<double>(0, static_cast<double>(n) - 4)(rng);
    const double noise = 4;  // ns, a boundary's own
    // From a step of 2.5 boundary noises an iteration (close clocks) to 250.
    const double step = (k % 2 ? 1 : -1) * noise * std::uniform_real_distribution<double>(2.5, 250)(rng);
    const Window w = hinge(0, n, x, step, 0, noise, rng);
    std::size_t used = 0;
    const double found = best_change_point(w, step, used);
    double best = cost_at(w, step, -1);
    for (double at = -1; at <= static_cast<double>(n); at += 1e-3) best = std::min(best, cost_at(w, step, at));
    EXPECT_LE(cost_at(w, step, found), best * (1 + 1e-9) + 1e-9) << "case " << k;
    errors.push_back(std::abs(found - x) * std::abs(step) / noise);
  }
  // In boundary noises: the change is placed to about one noise in time.
  std::sort(errors.begin(), errors.end());
  EXPECT_LT(errors[errors.size() / 2], 0.7);
  EXPECT_LT(errors[errors.size() * 99 / 100], 3);
}

TEST(ChangePoint, StallAndChangeAreFixedTogetherAndTheChangeBracketed) {
  std::mt19937_64 rng(3);
  for (int k = 0; k < 500; ++k) {
    const std::size_t n = 6 + rng() % 40;
    const double x = 1.001 + std::uniform_real_distribution<double>(0, static_cast<double>(n) - 2.1)(rng);
    const double step = (k % 2 ? 1 : -1) * std::uniform_real_distribution<double>(50, 3'000)(rng);
    const double stall = std::uniform_real_distribution<double>(0, 0.5)(rng) * std::abs(step);
    const StallFit fit = best_change_with_stall(hinge(0, n, x, step, stall, 0, rng), step);
    EXPECT_NEAR(fit.u, step * x - stall, 1e-6 * std::abs(step) * static_cast<double>(n)) << "case " << k;
    EXPECT_LT(fit.x_lo, x) << "case " << k;
    EXPECT_GE(fit.x_hi, x) << "case " << k;
    EXPECT_EQ(fit.x_hi - fit.x_lo, 1) << "case " << k;
  }
}

}  // namespace
}  // namespace latest::pooled
