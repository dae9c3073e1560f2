// The pooled detector's line fits (src/core/pooled/line_fit.hpp) held to
// least squares taken point by point in long double, on many random SMs and
// ranges: the fits from integer moments, the fits over block boundaries,
// the overlapping lines fitted together, and the residual sd.
#include "core/pooled/line_fit.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "sm_boundaries.hpp"

namespace latest::pooled {
namespace {

// A segment at one clock: iterations of `length` ns give or take the
// timer's few ns, and a slow wander of the SMs' common boundaries.
SmRecords segment(std::mt19937_64& rng, std::int64_t n, std::uint32_t length) {
  SmRecords sm;
  sm.first_start_ns = 5'000'000'000 + static_cast<Nanos>(rng() % 1'000'000);
  std::uniform_int_distribution<int> tick(-8, 8);
  for (std::int64_t i = 0; i < n; ++i)
    sm.duration_ns.push_back(static_cast<std::uint32_t>(static_cast<int>(length) + tick(rng) +
                                                        static_cast<int>(6 * std::sin(static_cast<double>(i) / 90))));
  return sm;
}

struct Points {
  std::vector<long double> x, y;  // index from `from`, time from `t0`
};

Points points(const Boundaries& e, std::int64_t from, std::int64_t to, Nanos t0, std::int64_t every = 1) {
  Points p;
  for (std::int64_t i = (from + every - 1) / every * every; i <= to; i += every) {
    p.x.push_back(static_cast<long double>(i - from));
    p.y.push_back(static_cast<long double>(e.at(i) - t0));
  }
  return p;
}

// Least squares y = a + b·x, point by point.
std::array<long double, 2> least_squares(const Points& p) {
  const auto n = static_cast<long double>(p.x.size());
  long double mx = 0, my = 0;
  for (std::size_t k = 0; k < p.x.size(); ++k) mx += p.x[k] / n, my += p.y[k] / n;
  long double sxx = 0, sxy = 0;
  for (std::size_t k = 0; k < p.x.size(); ++k) sxx += (p.x[k] - mx) * (p.x[k] - mx), sxy += (p.x[k] - mx) * (p.y[k] - my);
  const long double b = sxx > 0 ? sxy / sxx : 0;
  return {my - b * mx, b};
}

// The line's time at boundary i against the least-squares line's, in ns.
double gap_ns(const Line& l, const std::array<long double, 2>& ls, std::int64_t from, std::int64_t i) {
  const long double mine = static_cast<long double>(l.t0) + l.a + l.b * static_cast<long double>(i - l.i0);
  const long double theirs = static_cast<long double>(l.t0) + ls[0] + ls[1] * static_cast<long double>(i - from);
  return static_cast<double>(std::abs(mine - theirs));
}

TEST(LineFit, EveryBoundaryFitIsTheLeastSquaresLine) {
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    const SmBoundaries sm(segment(rng, 300 + static_cast<std::int64_t>(rng() % 5000), 2'000 + static_cast<std::uint32_t>(rng() % 20'000)));
    for (int k = 0; k < 30; ++k) {
      std::int64_t from = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(sm.e.last()));
      std::int64_t to = from + 2 + static_cast<std::int64_t>(rng() % 600);
      if (to > sm.e.last()) continue;
      const Line l = fit_line(sm.e, from, to);
      ASSERT_EQ(l.i0, from);
      ASSERT_EQ(l.t0, sm.e.at(from));
      const auto ls = least_squares(points(sm.e, from, to, l.t0));
      EXPECT_NEAR(l.b, static_cast<double>(ls[1]), 1e-9 * std::abs(l.b)) << seed;
      // Within a thousandth of a ns across the range and well beyond it.
      for (const std::int64_t i : {from, (from + to) / 2, to, to + 200})
        EXPECT_LT(gap_ns(l, ls, from, i), 1e-3) << "seed " << seed << ", [" << from << ", " << to << "] at " << i;
      const auto m = static_cast<double>(to - from);
      EXPECT_DOUBLE_EQ(l.mean_x, m / 2);
      EXPECT_DOUBLE_EQ(l.spread0, 1 + 1 / (m + 1));
      EXPECT_NEAR(l.per_sxx, 1 / (m * (m + 1) * (m + 2) / 12), 1e-12 / (m * m * m));
    }
  }
}

TEST(LineFit, BlockFitIsTheLeastSquaresLineOfTheBlockBoundaries) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    const SmBoundaries sm(segment(rng, 3'000 + static_cast<std::int64_t>(rng() % 20'000), 2'500));
    const std::int64_t from = static_cast<std::int64_t>(rng() % 500);
    const std::int64_t to = sm.e.last() - static_cast<std::int64_t>(rng() % 500);
    const Line l = fit_line(sm.e, from, to, true);
    const auto ls = least_squares(points(sm.e, from, to, l.t0, Boundaries::kBlock));
    EXPECT_NEAR(l.b, static_cast<double>(ls[1]), 1e-9 * l.b) << seed;
    for (const std::int64_t i : {from, (from + to) / 2, to}) EXPECT_LT(gap_ns(l, ls, from, i), 1e-3) << seed;
  }
}

// The block fit sums in whole numbers where every sum stays below 2^52, and
// block by block in doubles elsewhere: either way the bits of the sums in
// doubles. Ranges of every length on SMs of ordinary iterations, of
// iterations near the 4.3 s a record can hold (there the doubles' sums
// round, and only the second way gives their bits), and with interrupts
// taken out.
TEST(LineFit, BlockFitTakesTheDoublesSumsBits) {
  int inexact = 0;  // ranges whose Σxy in doubles is not the whole number
  const auto in_doubles = [&](const Boundaries& e, std::int64_t from, std::int64_t to) {
    const Nanos t0 = e.at(from);
    double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    __extension__ __int128 exact = 0;
    for (std::int64_t i = (from + Boundaries::kBlock - 1) / Boundaries::kBlock * Boundaries::kBlock; i <= to;
         i += Boundaries::kBlock) {
      const auto x = static_cast<double>(i - from), y = static_cast<double>(e.at_block(i) - t0);
      sx += x, sy += y, sxx += x * x, sxy += x * y, ++n;
      exact += static_cast<__int128>(i - from) * (e.at_block(i) - t0);
    }
    inexact += static_cast<__int128>(sxy) != exact;
    return line_through(from, t0, n, sx, sy, sxx, sxy);
  };
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    std::mt19937_64 rng(seed);
    SmRecords r = segment(rng, 200 + static_cast<std::int64_t>(rng() % 20'000), 2'000 + static_cast<std::uint32_t>(rng() % 20'000));
    if (seed % 3 == 0)
      for (auto& d : r.duration_ns) d = 4'000'000'000u + static_cast<std::uint32_t>(rng() % 200'000'000);
    SmBoundaries sm(std::move(r));
    for (const std::int64_t i : sm.e.long_iterations()) sm.e.shorten(i, rng() % 2 == 0);
    for (int k = 0; k < 40; ++k) {
      const std::int64_t from = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(sm.e.last()));
      const std::int64_t to = std::min(sm.e.last(), from + static_cast<std::int64_t>(rng() % 30'000));
      const Line mine = fit_line(sm.e, from, to, true), theirs = in_doubles(sm.e, from, to);
      ASSERT_EQ(mine.a, theirs.a) << "seed " << seed << ", [" << from << ", " << to << "]";
      ASSERT_EQ(mine.b, theirs.b) << "seed " << seed << ", [" << from << ", " << to << "]";
      ASSERT_EQ(mine.mean_x, theirs.mean_x);
      ASSERT_EQ(mine.spread0, theirs.spread0);
      ASSERT_EQ(mine.per_sxx, theirs.per_sxx);
    }
  }
  EXPECT_GT(inexact, 200);
}

TEST(LineFit, OverlappingLinesAreTheLinesFittedAlone) {
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    const SmBoundaries sm(segment(rng, 4'000, 2'000 + static_cast<std::uint32_t>(rng() % 5'000)));
    constexpr std::size_t kLines = 8;
    const std::int64_t m = 20 + static_cast<std::int64_t>(rng() % 300);
    // Ascending starts, some the same, some a line apart or more.
    std::array<std::int64_t, kLines> from{};
    const std::size_t count = 1 + rng() % kLines;
    std::int64_t at = static_cast<std::int64_t>(rng() % 100);
    for (std::size_t k = 0; k < count; ++k) {
      from[k] = at;
      at += static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(2 * m));
    }
    std::array<Line, kLines> lines;
    fit_overlapping_lines(sm.e, from, count, m, lines);
    for (std::size_t k = 0; k < count; ++k) {
      const Line alone = fit_line(sm.e, from[k], from[k] + m);
      // Both from the same whole-number sums: the same bits.
      EXPECT_EQ(lines[k].a, alone.a) << "seed " << seed << ", line " << k;
      EXPECT_EQ(lines[k].b, alone.b) << "seed " << seed << ", line " << k;
      EXPECT_EQ(lines[k].t0, alone.t0);
      EXPECT_EQ(lines[k].i0, alone.i0);
    }
  }
}

TEST(LineFit, ResidualSdIsThatOfTheResidualsAboutTheFit) {
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    const SmBoundaries sm(segment(rng, 1'000 + static_cast<std::int64_t>(rng() % 4'000), 2'000 + static_cast<std::uint32_t>(rng() % 20'000)));
    const std::int64_t from = static_cast<std::int64_t>(rng() % 200);
    const std::int64_t to = sm.e.last() - static_cast<std::int64_t>(rng() % 200);
    // Fitted on the range itself (as the detector's final lines are) and on a part of it.
    for (const std::int64_t fit_from : {from, (from + to) / 2}) {
      const Line l = fit_line(sm.e, fit_from, to);
      long double rss = 0;
      for (std::int64_t i = fit_from; i <= to; ++i) {
        const long double r = static_cast<long double>(sm.e.at(i) - l.t0) - (l.a + l.b * static_cast<long double>(i - l.i0));
        rss += r * r;
      }
      const double truth = static_cast<double>(std::sqrt(rss / static_cast<long double>(to - fit_from - 1)));
      // Σy² − aΣy − bΣxy, as the detector has always taken it: close to, not
      // exactly, the residuals' own sum of squares (here within 5.3e-5 of it;
      // one degree of freedom more or less moves it by 1/(2n), 1e-4 to 1e-3).
      EXPECT_NEAR(residual_sd(sm.e, l, fit_from, to), truth, 1e-4 * truth) << "seed " << seed;
    }
  }
  // An exact line: no residual beyond the doubles' rounding.
  SmRecords even;
  even.duration_ns.assign(5'000, 2'561);
  const SmBoundaries sm(even);
  const Line l = fit_line(sm.e, 0, sm.e.last());
  EXPECT_NEAR(l.b, 2'561, 1e-9);
  EXPECT_NEAR(l.a, 0, 1e-6);
  EXPECT_LT(residual_sd(sm.e, l, 0, sm.e.last()), 1e-3);
}

// The form residual_sd takes, Σy² − aΣy − bΣxy over y = t − t0 and
// x = i − from, is taken from whole-number sums: the same to the bit as
// those sums taken boundary by boundary (128-bit here), with the line's
// origin before the range too (y = y' + c) and with iterations shortened
// (Boundaries::shorten), whose fixed lengths the sums must read.
TEST(LineFit, ResidualSdIsItsFormToTheBit) {
  int shortened = 0, whole = 0;
  for (std::uint64_t seed = 1; seed <= 80; ++seed) {
    std::mt19937_64 rng(seed);
    SmRecords r = segment(rng, 200 + static_cast<std::int64_t>(rng() % 400), 500 + static_cast<std::uint32_t>(rng() % 2'500));
    if (seed % 3 == 0)  // two interrupts, taken out below
      for (int k = 0; k < 2; ++k) r.duration_ns[1 + rng() % (r.duration_ns.size() - 2)] *= 3;
    SmBoundaries sm(r);
    for (const std::int64_t i : sm.e.long_iterations()) sm.e.shorten(i, rng() % 2 == 0), ++shortened;
    const std::int64_t from = static_cast<std::int64_t>(rng() % 60);
    const std::int64_t to = sm.e.last() - static_cast<std::int64_t>(rng() % 60);
    for (const std::int64_t fit_from : {from, from / 2, (from + to) / 2}) {
      const Line l = fit_line(sm.e, fit_from, to);
      __extension__ using Sum = __int128;
      Sum sy = 0, sxy = 0, syy = 0;
      for (std::int64_t i = from; i <= to; ++i) {
        const Sum y = sm.e.at(i) - l.t0, x = i - from;
        sy += y;
        sxy += x * y;
        syy += y * y;
      }
      const double rss = std::max(0.0, static_cast<double>(syy) - l.a * static_cast<double>(sy) -
                                           l.b * static_cast<double>(sxy));
      const double want = std::sqrt(rss / static_cast<double>(to - from - 1));
      // Where its sums stay below 2^53 by the bound residual_sd takes (all
      // but the line from the middle): there the doubles' sums would be exact too.
      const auto count = static_cast<double>(to - from + 1), last_y = static_cast<double>(sm.e.at(to) - l.t0);
      if (l.t0 <= sm.e.at(from) && count * last_y * std::max(last_y, count) < 0x1p53) {
        EXPECT_EQ(residual_sd(sm.e, l, from, to), want) << "seed " << seed << ", line from " << fit_from;
        ++whole;
      }
    }
  }
  EXPECT_GT(shortened, 20);
  EXPECT_GT(whole, 150);
}

}  // namespace
}  // namespace latest::pooled
