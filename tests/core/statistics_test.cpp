#include "core/statistics.hpp"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

namespace latest {
namespace {

TEST(Statistics, MomentsMatchTwoPassFormula) {
  std::mt19937_64 rng(42);
  std::normal_distribution<double> dist(2368.0, 16.0);
  std::vector<double> xs(10000);
  for (auto& x : xs) x = dist(rng);
  double mean = 0;
  for (double x : xs) mean += x;
  mean /= xs.size();
  double ss = 0;
  for (double x : xs) ss += (x - mean) * (x - mean);
  const Moments m = moments_of(xs);
  EXPECT_EQ(m.n, 10000);
  EXPECT_NEAR(m.mean, mean, 1e-9);
  EXPECT_NEAR(m.sd, std::sqrt(ss / (xs.size() - 1)), 1e-9);
}

TEST(Statistics, DifferenceIntervalUsesWelchStudentT) {
  // Worked example: n=10 each, means 5 and 3, sd 1 and 2.
  // se = sqrt(0.1 + 0.4) = 0.70711; dof = 0.25 / (0.01/9 + 0.16/9) = 13.2353;
  // t_0.975(13.2353) = 2.156471 (scipy.stats.t.ppf).
  const Interval ci = difference_interval({10, 5, 1}, {10, 3, 2});
  EXPECT_NEAR(ci.low, 0.4751447327, 1e-8);
  EXPECT_NEAR(ci.high, 3.5248552673, 1e-8);
}

// means_differ skips the t quantile where the normal's and that of the
// whole degrees of freedom below decide: it must give the interval's answer
// always, most of all right at the edge, where |diff| is within a few ulp
// of critical·se.
TEST(Statistics, MeansDifferIsTheIntervalsAnswerAtItsEdge) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> unit(0, 1);
  int differ = 0, cases = 0;
  for (const double confidence : {0.95, 0.99, 0.999})
    for (int k = 0; k < 1000; ++k) {
      Moments a{static_cast<std::int64_t>(2 + rng() % 3000), 2400, 0.5 + 40 * unit(rng)};
      Moments b{static_cast<std::int64_t>(k % 7 == 0 ? 2'000'000 : 2 + rng() % 3000), 2400, 0.5 + 40 * unit(rng)};
      // Place mean(a) − mean(b) at the interval's edge, then a few ulp
      // and a little either side of it.
      const Interval at0 = difference_interval(a, b, confidence);
      const double edge = (at0.high - at0.low) / 2;
      for (const double scale : {0.5, 0.999, 1.0, 1.001, 2.0}) {
        double diff = edge * scale;
        for (int ulp = -3; ulp <= 3; ++ulp) {
          double d = diff;
          for (int u = 0; u < std::abs(ulp); ++u) d = std::nextafter(d, ulp > 0 ? 1e300 : -1e300);
          for (const double sign : {1.0, -1.0}) {
            a.mean = b.mean + sign * d;
            const bool expected = !difference_interval(a, b, confidence).contains(0.0);
            ASSERT_EQ(means_differ(a, b, confidence), expected)
                << "n " << a.n << "/" << b.n << " sd " << a.sd << "/" << b.sd << " diff " << a.mean - b.mean;
            differ += expected;
            ++cases;
          }
        }
      }
    }
  EXPECT_EQ(cases, 3 * 1000 * 5 * 7 * 2);
  EXPECT_GT(differ, cases / 3);
  EXPECT_LT(differ, 2 * cases / 3);
}

TEST(Statistics, LargeSamplesUseTheNormalLimit) {
  const Interval ci = difference_interval({4'000'000, 2368, 16}, {4'000'000, 2386, 16});
  const double se = std::sqrt(2 * 256.0 / 4e6);
  EXPECT_NEAR(ci.high, -18 + 1.959964 * se, 1e-4);
  EXPECT_TRUE(means_differ({4'000'000, 2368, 16}, {4'000'000, 2386, 16}));
  EXPECT_FALSE(means_differ({50, 2368, 16}, {50, 2368.5, 16}));
}

TEST(Statistics, RelativeStandardError) {
  const std::vector<double> xs = {1, 2, 3, 4, 5};
  // sd = 1.5811, se = 0.70711, mean 3.
  EXPECT_NEAR(relative_standard_error(xs), 0.70711 / 3, 1e-5);
  EXPECT_TRUE(std::isinf(relative_standard_error(std::vector<double>{1.0})));
}

TEST(Statistics, QuantileMatchesNumpyLinear) {
  const std::vector<double> xs = {7, 1, 3, 5, 9, 2};
  // numpy.quantile([7,1,3,5,9,2], [0, .05, .5, .95, 1]) = 1, 1.25, 4, 8.5, 9
  EXPECT_DOUBLE_EQ(quantile(xs, 0.0), 1);
  EXPECT_DOUBLE_EQ(quantile(xs, 0.05), 1.25);
  EXPECT_DOUBLE_EQ(quantile(xs, 0.5), 4);
  EXPECT_DOUBLE_EQ(quantile(xs, 0.95), 8.5);
  EXPECT_DOUBLE_EQ(quantile(xs, 1.0), 9);
}

TEST(Statistics, BandOverlapIsIntersectionOverUnion) {
  EXPECT_DOUBLE_EQ(band_overlap({100, 100, 5}, {100, 100, 5}), 1.0);
  EXPECT_DOUBLE_EQ(band_overlap({100, 100, 5}, {100, 200, 5}), 0.0);
  // [90,110] and [100,120]: 10 / 30.
  EXPECT_NEAR(band_overlap({100, 100, 5}, {100, 110, 5}), 1.0 / 3.0, 1e-12);
}

}  // namespace
}  // namespace latest
