// The pooled detector's boundaries (src/core/pooled/boundaries.hpp) held to
// plain running sums: every fast path there (the vector pass, the marks,
// the galloping search, the moments from chunks) must give what a loop over
// every record gives, on many random SMs, including records of 268 ms and
// more (the pass's 64-bit path), stalls of seconds (the marks' 64-bit
// offsets), interrupted iterations and SMs whose record count is no
// multiple of a block.
#include "core/pooled/boundaries.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "sm_boundaries.hpp"

namespace latest::pooled {
namespace {

// How long the longest records are: none beyond an interrupt's; now and
// then one beyond 2^28 ns (the pass's 64-bit sums); or runs of stalls of
// 1-4 s, so that a block's marks lie more than 2^32 ns past its start (the
// marks' 64-bit offsets).
enum class Huge { none, rare, stalls };

// Durations near 2.5 us with timer-like noise; now and then an interrupt
// (2-4 times as long), and the huge ones asked for.
SmRecords random_sm(std::mt19937_64& rng, std::int64_t n, Huge huge) {
  SmRecords sm;
  sm.first_start_ns = static_cast<Nanos>(rng() % 1'000'000'000);
  std::uniform_int_distribution<std::uint32_t> base(2'400, 2'600), odd(0, 999), stall(1'000'000'000, 4'200'000'000);
  int stalls_left = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint32_t d = base(rng);
    const std::uint32_t roll = odd(rng);
    if (roll < 4) d *= 2 + roll % 3;
    if (huge == Huge::rare && roll == 999) d = 300'000'000 + base(rng);
    if (huge == Huge::stalls && roll >= 990) stalls_left = 1 + static_cast<int>(roll % 6);
    if (stalls_left > 0) {
      d = stall(rng);
      --stalls_left;
    }
    sm.duration_ns.push_back(d);
  }
  return sm;
}

// Every third seed with rare huge records, every fifth with stalls.
Huge huge_for(std::uint64_t seed) { return seed % 5 == 0 ? Huge::stalls : seed % 3 == 0 ? Huge::rare : Huge::none; }

// The boundaries' times by a running sum: boundary i starts record i.
std::vector<Nanos> running_sums(const SmRecords& sm) {
  std::vector<Nanos> t{sm.first_start_ns};
  for (const std::uint32_t d : sm.duration_ns) t.push_back(t.back() + d);
  return t;
}

// Record counts around the block and mark sizes, and larger ones.
std::int64_t random_count(std::mt19937_64& rng) {
  static const std::int64_t kEdges[] = {1, 2, 15, 16, 17, 63, 64, 65, 127, 128, 129};
  const std::uint64_t pick = rng() % 20;
  return pick < std::size(kEdges) ? kEdges[pick] : 130 + static_cast<std::int64_t>(rng() % 4000);
}

TEST(Boundaries, EveryBoundaryIsTheRunningSumOfTheRecordsBeforeIt) {
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    std::mt19937_64 rng(seed);
    const SmBoundaries sm(random_sm(rng, random_count(rng), huge_for(seed)));
    const std::vector<Nanos> truth = running_sums(sm.records);
    ASSERT_EQ(sm.e.last(), static_cast<std::int64_t>(sm.records.duration_ns.size())) << seed;
    for (std::int64_t i = 0; i <= sm.e.last(); ++i) {
      ASSERT_EQ(sm.e.at(i), truth[static_cast<std::size_t>(i)]) << "seed " << seed << ", boundary " << i;
      if (i % Boundaries::kBlock == 0) {
        ASSERT_EQ(sm.e.at_block(i), truth[static_cast<std::size_t>(i)]) << seed;
      }
    }
  }
}

// The first boundary at or after t, found by looking at every one.
std::int64_t first_by_scan(const std::vector<Nanos>& truth, std::int64_t last, Nanos t) {
  for (std::int64_t i = 0; i <= last; ++i)
    if (truth[static_cast<std::size_t>(i)] >= t) return i;
  return last + 1;
}

TEST(Boundaries, SearchByTimeFindsWhatAScanFindsFromAnyValidHint) {
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    std::mt19937_64 rng(seed);
    SmBoundaries sm(random_sm(rng, random_count(rng), seed % 4 == 0 ? Huge::rare : huge_for(seed)));
    const std::vector<Nanos> truth = running_sums(sm.records);
    // Half the SMs end early, as a window's records do after end_at().
    if (seed % 2 == 0) sm.e.end_at(static_cast<std::int64_t>(rng() % (truth.size())));
    const std::int64_t last = sm.e.last();
    for (int k = 0; k < 300; ++k) {
      // Times on a boundary, between two and beyond either end.
      const auto j = static_cast<std::size_t>(rng() % truth.size());
      const Nanos t = truth[j] + static_cast<Nanos>(rng() % 3) - 1 + (k % 50 == 0 ? 10'000'000 : 0) -
                      (k % 50 == 1 ? 10'000'000 : 0);
      const std::int64_t want = first_by_scan(truth, last, t);
      // Any hint at or before the answer holds "every boundary before it lies before t".
      const std::int64_t hint = k % 4 == 0 ? 0 : k % 4 == 1 ? -5 : static_cast<std::int64_t>(rng() % (want + 1));
      Nanos time = -1;
      ASSERT_EQ(sm.e.first_at_or_after(t, hint, &time), want) << "seed " << seed << ", t " << t << ", hint " << hint;
      if (want <= last) {
        ASSERT_EQ(time, truth[static_cast<std::size_t>(want)]) << seed;
      }
    }
  }
}

TEST(Boundaries, LongIterationsAreThoseLongerThanBothNeighboursByTheRatio) {
  int found = 0;
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    std::mt19937_64 rng(seed);
    const SmBoundaries sm(random_sm(rng, random_count(rng), huge_for(seed)));
    const auto& d = sm.records.duration_ns;
    std::vector<std::int64_t> want;
    for (std::size_t i = 1; i + 1 < d.size(); ++i)
      // More than 1.3 times (the detector's default), in whole numbers: 10·d > 13·d'.
      if (10ull * d[i] > 13ull * d[i - 1] && 10ull * d[i] > 13ull * d[i + 1]) want.push_back(static_cast<std::int64_t>(i));
    EXPECT_EQ(sm.e.long_iterations(), want) << seed;
    found += static_cast<int>(want.size());
  }
  EXPECT_GT(found, 100);  // the draw holds interrupts to find
}

TEST(Boundaries, AnInterruptTakenOutMovesOnlyTheSideAskedFor) {
  int shortened = 0;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    const Huge huge = seed % 3 == 0 ? Huge::stalls : Huge::none;  // stalls: the 64-bit offsets move too
    SmBoundaries sm(random_sm(rng, 200 + static_cast<std::int64_t>(rng() % 3000), huge));
    const std::vector<std::int64_t> long_ones = sm.e.long_iterations();
    if (long_ones.empty()) continue;
    // The records as they read once those iterations last what the one before each did.
    SmRecords fixed = sm.records;
    const std::vector<Nanos> before = running_sums(sm.records);
    const bool keep_later = seed % 2 == 0;
    for (const std::int64_t i : long_ones) {
      const auto k = static_cast<std::size_t>(i);
      fixed.duration_ns[k] = sm.records.duration_ns[k - 1];
      sm.e.shorten(i, keep_later);
      ++shortened;
    }
    std::vector<Nanos> want = running_sums(fixed);
    // Anchored at the end where the later side keeps its times, else at the start.
    const Nanos shift = keep_later ? before.back() - want.back() : 0;
    for (Nanos& t : want) t += shift;
    for (std::int64_t i = 0; i <= sm.e.last(); ++i) {
      ASSERT_EQ(sm.e.at(i), want[static_cast<std::size_t>(i)]) << "seed " << seed << ", boundary " << i;
      if (i < sm.e.last()) {
        ASSERT_EQ(sm.e.duration(i), fixed.duration_ns[static_cast<std::size_t>(i)]) << seed;
      }
      if (i % Boundaries::kBlock == 0) {
        ASSERT_EQ(sm.e.at_block(i), want[static_cast<std::size_t>(i)]) << seed;
      }
    }
  }
  EXPECT_GT(shortened, 50);
}

TEST(Boundaries, RangeSumsAreThoseOfEveryBoundary) {
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    std::mt19937_64 rng(seed);
    SmBoundaries sm(random_sm(rng, random_count(rng), huge_for(seed)));
    // With interrupts taken out on every other SM: the moments read their fixed lengths.
    if (seed % 2 == 0)
      for (const std::int64_t i : sm.e.long_iterations()) sm.e.shorten(i, seed % 4 == 0);
    std::vector<Nanos> truth;
    for (std::int64_t i = 0; i <= sm.e.last(); ++i) truth.push_back(sm.e.at(i));
    for (int k = 0; k < 100; ++k) {
      std::int64_t from = static_cast<std::int64_t>(rng() % truth.size());
      std::int64_t to = static_cast<std::int64_t>(rng() % truth.size());
      if (to < from) std::swap(from, to);
      Wide y = 0, xy = 0;
      for (std::int64_t i = from; i <= to; ++i) {
        const Wide yi = truth[static_cast<std::size_t>(i)] - truth[static_cast<std::size_t>(from)];
        y += yi;
        xy += (i - from) * yi;
      }
      const Boundaries::RangeSums sums = sm.e.range_sums(from, to);
      ASSERT_TRUE(sums.y == y && sums.xy == xy) << "seed " << seed << ", [" << from << ", " << to << "]";
    }
  }
}

}  // namespace
}  // namespace latest::pooled
