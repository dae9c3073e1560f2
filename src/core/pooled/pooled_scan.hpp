#pragma once
// The pooled detector's scans (pooled_detection.cpp): many SMs' residuals
// pooled in time bins, and which bins are significant. Internals of the
// detector, of internal linkage as boundaries.hpp says why.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/pooled/numeric.hpp"
#include "core/types.hpp"

namespace latest::pooled {
namespace {

// Each SM's z is clipped at ±kZClip before it is pooled (PooledScan).
constexpr double kZClip = 8;

// add_blocks()'s arithmetic for n ≤ 256 blocks, four at a time: each
// block's bin (−1 where add() would drop it), clipped z and value, as add()
// computes them. Whole numbers below 2^52 become doubles exactly through
// the bits of 2^52 (AVX2 has no such conversion). `per_iteration`: one
// over a power of two, so that multiplying by it divides to the bit.
LATEST_AVX2_CLONE void blocks_ahead(const Nanos* times, std::size_t n, Nanos end, double per_width,
                                    double per_iteration, double b, double noise, double bins, std::int32_t* bin,
                                    double* z, double* value) {
  using Doubles = double __attribute__((vector_size(32)));
  using Longs = std::int64_t __attribute__((vector_size(32)));
  const Doubles low = {-kZClip, -kZClip, -kZClip, -kZClip}, high = {kZClip, kZClip, kZClip, kZClip};
  const Doubles two52 = {0x1p52, 0x1p52, 0x1p52, 0x1p52};
  std::size_t j = 0;
  for (; j + 4 <= n; j += 4) {
    Longs t, next;
    std::memcpy(&t, times + j, sizeof t);
    std::memcpy(&next, times + j + 1, sizeof next);
    const Longs length = next - t, before = end - t;
    const Longs large = (length | before) >= 0x10000000000000;
    if (large[0] | large[1] | large[2] | large[3]) break;  // 2^52 ns or more: one at a time below
    const Longs length_bits = length | 0x4330000000000000, before_bits = before | 0x4330000000000000;
    Doubles length_d, before_d;
    std::memcpy(&length_d, &length_bits, sizeof length_d);
    std::memcpy(&before_d, &before_bits, sizeof before_d);
    const Doubles off = (length_d - two52) * per_iteration - b;
    const Doubles k = (before_d - two52) * per_width;
    const Doubles over = off / noise;
    const Doubles above = over < low ? low : over;
    const Doubles clipped = high < above ? high : above;
    for (int q = 0; q < 4; ++q) {
      bin[j + q] = k[q] >= bins ? -1 : static_cast<std::int32_t>(k[q]);
      z[j + q] = clipped[q];
      value[j + q] = off[q];
    }
  }
  for (; j < n; ++j) {
    const double off = static_cast<double>(times[j + 1] - times[j]) * per_iteration - b;
    const double k = static_cast<double>(end - times[j]) * per_width;
    bin[j] = k >= bins ? -1 : static_cast<std::int32_t>(k);
    z[j] = std::min(std::max(off / noise, -kZClip), kZClip);
    value[j] = off;
  }
}

// Pooled residuals in time bins of width `w`, counted back from `end`: bin k
// covers (end − (k+1)·w, end − k·w]. Each SM's z is clipped at ±kClip
// before it is pooled, so one SM's interrupted iteration cannot make a bin
// significant; a clock change moves every SM at once.
class PooledScan {
 public:
  // `relevant`: where positive, a bin's mean value (not z) must also exceed it.
  PooledScan(Nanos end, double width, std::size_t bins, double relevant = 0)
      : end_(end), width_(width), per_width_(1 / width), relevant_(relevant), bins_(bins) {}
  static constexpr double kClip = kZClip;
  void add(Nanos t, double z, double value = 0) {
    if (t > end_) return;
    const double k = static_cast<double>(end_ - t) * per_width_;
    if (k >= static_cast<double>(bins_.size())) return;
    // min/max, not std::clamp: the faster of the two in BM_DetectSwitchPooled.
    Bin& bin = bins_[static_cast<std::size_t>(k)];
    bin.sum += std::min(std::max(z, -kClip), kClip);
    bin.raw += value;
    ++bin.count;
  }
  // add() for each of `count` blocks of `iterations` records (a power of
  // two: one division a block fewer, to the bit), block j from
  // times[j] to times[j + 1]: its mean iteration less `b` (the value), and
  // that over `noise` (z), as the coarse scans pool them. Every times[j] at
  // or before `end`. The same sums in the same order as add() block by
  // block; the arithmetic four blocks at a time first (blocks_ahead). The
  // scans, most of it the coarse ones, took a quarter of the detector's
  // host time on windows of 20 k iterations a SM (docs/benchmarks.md).
  void add_blocks(const Nanos* times, std::size_t count, double iterations, double b, double noise) {
    constexpr std::size_t kAhead = 256;
    alignas(32) std::int32_t bin[kAhead];
    alignas(32) double z[kAhead], value[kAhead];
    for (std::size_t from = 0; from < count; from += kAhead) {
      const std::size_t n = std::min(kAhead, count - from);
      blocks_ahead(times + from, n, end_, per_width_, 1 / iterations, b, noise, static_cast<double>(bins_.size()), bin,
                   z, value);
      for (std::size_t j = 0; j < n; ++j) {
        if (bin[j] < 0) continue;
        Bin& into = bins_[static_cast<std::size_t>(bin[j])];
        into.sum += z[j];
        into.raw += value[j];
        ++into.count;
      }
    }
  }
  // The same bins, to the bit (add_blocks' tests).
  bool operator==(const PooledScan&) const = default;
  std::int64_t earliest_significant(double z) const {
    for (std::size_t k = bins_.size(); k-- > 0;)
      if (significant(k, z)) return static_cast<std::int64_t>(k);
    return -1;
  }
  std::int64_t latest_significant(double z) const {
    for (std::size_t k = 0; k < bins_.size(); ++k)
      if (significant(k, z)) return static_cast<std::int64_t>(k);
    return -1;
  }
  Nanos bin_end(std::int64_t k) const { return end_ - nearest(static_cast<double>(k) * width_); }
  // Whether the significant bin k is a stray: an earlier significant bin
  // comes before a run of `quiet_bins` sampled bins whose mean values all
  // lie within `relevant`, and the bins from k back to that run stay within
  // `excursion`. The rate then held the target and strayed from it later.
  bool stray(std::int64_t k, double z, int quiet_bins, double excursion) const {
    std::int64_t quiet = 0;
    for (std::size_t j = static_cast<std::size_t>(k); j < bins_.size(); ++j) {
      const Bin& bin = bins_[j];
      if (bin.count == 0) continue;
      const double mean = std::abs(bin.raw) / bin.count;
      if (quiet >= quiet_bins) {
        if (significant(j, z)) return true;
      } else if (mean > excursion) {
        return false;
      }
      quiet = mean <= relevant_ ? quiet + 1 : 0;
    }
    return false;
  }
  // The nearest bin after (later: towards `end`) or before bin k that holds
  // any sample; -1 if none.
  std::int64_t next_sampled(std::int64_t k, bool later) const {
    // One unsigned comparison for both ends (j = -1 wraps beyond the bins).
    for (auto j = static_cast<std::size_t>(later ? k - 1 : k + 1); j < bins_.size(); later ? --j : ++j)
      if (bins_[j].count > 0) return static_cast<std::int64_t>(j);
    return -1;
  }

 private:
  // Pooled z beyond `z`, and a mean residual beyond kMinMean boundary
  // noises: the SMs share the clock and the timer, and on the H200 their
  // common boundaries wander ±12 ns about any straight line over tens of ms
  // (docs/hardware.md) — significant across 132 SMs, yet no change.
  static constexpr double kMinMean = 2;
  bool significant(std::size_t k, double z) const {
    const Bin& bin = bins_[k];
    if (bin.count == 0) return false;
    const auto n = static_cast<double>(bin.count);
    // Most bins lie far below the bar: there a product decides what the
    // square root and division below would, with a margin no rounding can
    // cross (the scans test every bin each time they read further).
    if (z > 0 && bin.sum * bin.sum < 0.98 * z * z * n) return false;
    return std::abs(bin.sum) / std::sqrt(n) > z && std::abs(bin.sum) / n > kMinMean &&
           (relevant_ <= 0 || std::abs(bin.raw) / n > relevant_);
  }

  Nanos end_;
  double width_, per_width_;  // a multiplication in add(), not a division: it runs on every record
  double relevant_;
  // A bin's clipped z sum, value sum and count side by side: add() touches
  // one cache line, not three.
  struct Bin {
    double sum = 0, raw = 0;
    int count = 0;
    bool operator==(const Bin&) const = default;
  };
  std::vector<Bin> bins_;
};

}  // namespace
}  // namespace latest::pooled
