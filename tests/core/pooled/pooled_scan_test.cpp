// The pooled scans' bins (src/core/pooled/pooled_scan.hpp) against their
// definition, bin by bin from the samples kept aside: which bin a time falls
// in, the clip of each SM's z, and which bins are significant, many of them
// a hair either side of the bar (the scan refuses most bins by a product
// before the square root and divisions; that must never change an answer).
#include "core/pooled/pooled_scan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace latest::pooled {
namespace {

struct Sample {
  Nanos t;
  double z, value;
};

// The definition: bin k holds the samples in (end − (k+1)·w, end − k·w];
// it is significant where its clipped z sum over √n exceeds z, its mean
// clipped z exceeds 2 and, where `relevant` > 0, its mean value exceeds it.
std::vector<bool> significant_by_definition(const std::vector<Sample>& samples, Nanos end, Nanos width,
                                            std::size_t bins, double z, double relevant) {
  std::vector<double> sum(bins), raw(bins);
  std::vector<int> count(bins);
  for (const Sample& s : samples) {
    if (s.t > end) continue;
    const auto k = static_cast<std::size_t>((end - s.t) / width);
    if (k >= bins) continue;
    sum[k] += std::clamp(s.z, -8.0, 8.0);
    raw[k] += s.value;
    ++count[k];
  }
  std::vector<bool> out(bins);
  for (std::size_t k = 0; k < bins; ++k) {
    const double n = count[k];
    out[k] = count[k] > 0 && std::abs(sum[k]) / std::sqrt(n) > z && std::abs(sum[k]) / n > 2 &&
             (relevant <= 0 || std::abs(raw[k]) / n > relevant);
  }
  return out;
}

TEST(PooledScan, SignificantBinsAreThoseOfTheDefinitionEvenAtTheBar) {
  std::mt19937_64 rng(1);
  int at_bar = 0, found = 0;
  for (int round = 0; round < 400; ++round) {
    const Nanos width = 1 << (8 + rng() % 6);  // whole ns, a power of two: the bins' edges are exact
    const std::size_t bins = 5 + rng() % 60;
    const Nanos end = 1'000'000'000 + static_cast<Nanos>(rng() % 1'000'000);
    const double z = std::uniform_real_distribution<double>(3, 8)(rng);
    const double relevant = round % 3 == 0 ? 0 : std::uniform_real_distribution<double>(0.5, 3)(rng);
    std::vector<Sample> samples;
    for (std::size_t k = 0; k < bins + 2; ++k) {
      const int n = static_cast<int>(rng() % 40);
      // Every SM of a bin alike, placed so that the pooled z lands at the bar,
      // a hair over or under it, or far from it; the values likewise.
      const double target = z * std::sqrt(static_cast<double>(std::max(n, 1)));
      const double kind = static_cast<double>(rng() % 5);
      const double each = (kind == 0 ? target * (1 + 1e-15) : kind == 1 ? target * (1 - 1e-15) : kind == 2 ? target
                           : kind == 3 ? target * 0.5 : target * 2) / std::max(n, 1) * (rng() % 2 ? 1 : -1);
      const double value = relevant * (rng() % 2 ? 1.5 : 0.5);
      for (int s = 0; s < n; ++s) {
        const Nanos t = end - static_cast<Nanos>(k) * width - 1 - static_cast<Nanos>(rng() % width);
        samples.push_back({t, each, value});
      }
      at_bar += kind < 3;
    }
    PooledScan scan(end, static_cast<double>(width), bins, relevant);
    for (const Sample& s : samples) scan.add(s.t, s.z, s.value);
    const std::vector<bool> want = significant_by_definition(samples, end, width, bins, z, relevant);
    std::int64_t latest = -1, earliest = -1;
    for (std::size_t k = 0; k < bins; ++k) {
      if (!want[k]) continue;
      if (latest < 0) latest = static_cast<std::int64_t>(k);
      earliest = static_cast<std::int64_t>(k);
      ++found;
    }
    ASSERT_EQ(scan.latest_significant(z), latest) << "round " << round;
    ASSERT_EQ(scan.earliest_significant(z), earliest) << "round " << round;
    for (std::int64_t k = 0; k < static_cast<std::int64_t>(bins); ++k)
      ASSERT_EQ(scan.bin_end(k), end - k * width) << "round " << round;
  }
  EXPECT_GT(at_bar, 5'000);
  EXPECT_GT(found, 1'000);
}

// add_blocks() pools whole blocks of records as the coarse scans added
// them one at a time: each block's mean iteration less the SM's rate, and
// that over the block noise, clipped; the same bins to the bit. Runs of
// any length (four at a time, then the rest; past 256 a second batch),
// blocks that start before the first bin (dropped), z far beyond the clip,
// and blocks that start 2^52 ns or more before the end (the exact
// conversion's limit: taken one at a time).
TEST(PooledScan, WholeBlocksPoolAsBlockByBlock) {
  std::mt19937_64 rng(7);
  int dropped = 0, clipped = 0;
  for (int round = 0; round < 300; ++round) {
    const double slope = std::uniform_real_distribution<double>(300, 20'000)(rng);
    const double width = 64 * slope;
    const std::size_t bins = 3 + rng() % 400;
    const Nanos end = round % 50 == 0 ? (Nanos{1} << 53) + static_cast<Nanos>(rng() % 1'000'000)
                                      : 1'000'000'000 + static_cast<Nanos>(rng() % 1'000'000'000);
    const double noise = std::uniform_real_distribution<double>(0.01, 3)(rng);
    PooledScan one(end, width, bins, 0.5), whole(end, width, bins, 0.5);
    for (int sm = 0; sm < 1 + static_cast<int>(rng() % 20); ++sm) {
      const std::size_t count = rng() % 600;
      const double b = slope + std::uniform_real_distribution<double>(-3, 3)(rng);
      std::vector<Nanos> times{end - static_cast<Nanos>(width * std::uniform_real_distribution<double>(0, bins + 20)(rng))};
      if (round % 50 == 0 && sm == 0) times[0] = end - (Nanos{1} << 52) - static_cast<Nanos>(rng() % 1000);
      const bool changes = rng() % 3 == 0;  // some SMs far off their rate: their z is clipped
      for (std::size_t j = 0; j < count; ++j) {
        const double length = 64 * (changes ? 2 * slope : slope) + std::normal_distribution<double>(0, 40)(rng);
        times.push_back(times.back() + std::max<Nanos>(1, static_cast<Nanos>(length)));
      }
      // Only the blocks that start at or before the end, as the coarse scan takes them.
      const auto n = static_cast<std::size_t>(std::upper_bound(times.begin(), times.end() - 1, end) - times.begin());
      for (std::size_t j = 0; j < n; ++j) {
        const double off = static_cast<double>(times[j + 1] - times[j]) / 64.0 - b;
        one.add(times[j], off / noise, off);
        dropped += static_cast<double>(end - times[j]) / width >= static_cast<double>(bins);
        clipped += std::abs(off / noise) > PooledScan::kClip;
      }
      whole.add_blocks(times.data(), n, 64.0, b, noise);
    }
    ASSERT_TRUE(one == whole) << "round " << round;
  }
  // Blocks at a bin's very edge, the last bin's far edge among them (there
  // k is exactly the number of bins: dropped).
  for (std::size_t edge = 0; edge <= 4; ++edge) {
    PooledScan one(1 << 30, 32'768, 4, 0.5), whole(1 << 30, 32'768, 4, 0.5);
    std::vector<Nanos> times;
    for (Nanos j = 0; j < 9; ++j) times.push_back((1 << 30) - static_cast<Nanos>(edge) * 32'768 + j * 32'768);
    for (std::size_t j = 0; j + 1 < times.size() && times[j] <= (1 << 30); ++j) {
      const double off = static_cast<double>(times[j + 1] - times[j]) / 64.0 - 500;
      one.add(times[j], off / 0.5, off);
    }
    whole.add_blocks(times.data(), edge + 1, 64.0, 500, 0.5);
    ASSERT_TRUE(one == whole) << "edge " << edge;
    EXPECT_EQ(one.earliest_significant(3), std::min<std::int64_t>(3, static_cast<std::int64_t>(edge)));
  }
  EXPECT_GT(dropped, 1'000);
  EXPECT_GT(clipped, 1'000);
}

TEST(PooledScan, OneSmCannotMakeABinSignificant) {
  PooledScan scan(1'000'000, 1'000, 10);
  // One SM's interrupted iteration far off its line, beside 99 quiet SMs.
  scan.add(999'500, 1e6, 5'000);
  for (int s = 0; s < 99; ++s) scan.add(999'400, (s % 2 ? 1 : -1) * 0.5, 0);
  EXPECT_EQ(scan.latest_significant(6), -1);
  // Nine SMs lagging a little and one far off: clipped at 8, the pooled z is 5.9.
  PooledScan near(1'000'000, 1'000, 10);
  near.add(999'500, 1e6, 5'000);
  for (int s = 0; s < 9; ++s) near.add(999'400, 1.2, 0);
  EXPECT_EQ(near.latest_significant(6), -1);
  // The same lag on every SM is a change.
  PooledScan change(1'000'000, 1'000, 10);
  for (int s = 0; s < 100; ++s) change.add(999'400, 3, 10);
  EXPECT_EQ(change.latest_significant(6), 0);
}

TEST(PooledScan, AStrayIsASignificantBinAfterQuietOnesThatFollowAnEarlierChange) {
  // Bin k from the end: a change in bins 9-11, six quiet bins 3-8, in bin 2
  // a rate off the target by less than the excursion (not quiet), a stray in
  // bin 1 and a quiet bin 0.
  const auto scan = [](double stray_mean, double between_mean) {
    PooledScan s(1'000'000, 1'000, 12, /*relevant=*/1);
    for (int k = 0; k < 12; ++k) {
      const Nanos t = 1'000'000 - k * 1'000 - 500;
      const double mean = k >= 9 ? 50 : k == 1 ? stray_mean : k == 2 ? between_mean : 0.2;
      for (int sm = 0; sm < 100; ++sm) s.add(t, mean, mean);
    }
    return s;
  };
  const PooledScan with_stray = scan(3, 2);
  ASSERT_EQ(with_stray.latest_significant(6), 1);
  EXPECT_TRUE(with_stray.stray(1, 6, 6, 4));   // six quiet bins, then the change
  EXPECT_FALSE(with_stray.stray(1, 6, 7, 4));  // seven asked for
  // A bin between the stray and the quiet run beyond the excursion: the rate left for good.
  EXPECT_FALSE(scan(3, 5).stray(1, 6, 6, 4));
  EXPECT_EQ(with_stray.next_sampled(1, true), 0);
  EXPECT_EQ(with_stray.next_sampled(1, false), 2);
  EXPECT_EQ(with_stray.next_sampled(11, false), -1);
}

}  // namespace
}  // namespace latest::pooled
