#pragma once
// The pooled detector's scans (pooled_detection.cpp): many SMs' residuals
// pooled in time bins, and which bins are significant. Internals of the
// detector, of internal linkage as boundaries.hpp says why.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/pooled/numeric.hpp"
#include "core/types.hpp"

namespace latest::pooled {
namespace {

// Pooled residuals in time bins of width `w`, counted back from `end`: bin k
// covers (end − (k+1)·w, end − k·w]. Each SM's z is clipped at ±kClip
// before it is pooled, so one SM's interrupted iteration cannot make a bin
// significant; a clock change moves every SM at once.
class PooledScan {
 public:
  // `relevant`: where positive, a bin's mean value (not z) must also exceed it.
  PooledScan(Nanos end, double width, std::size_t bins, double relevant = 0)
      : end_(end), width_(width), per_width_(1 / width), relevant_(relevant), bins_(bins) {}
  static constexpr double kClip = 8;
  void add(Nanos t, double z, double value = 0) {
    if (t > end_) return;
    const double k = static_cast<double>(end_ - t) * per_width_;
    if (k >= static_cast<double>(bins_.size())) return;
    // min/max, not std::clamp: BM_DetectSwitchPooled 3.42-3.56 ms against
    // 3.72-3.79 with clamp (alternated in one loop, 2026-12-01).
    Bin& bin = bins_[static_cast<std::size_t>(k)];
    bin.sum += std::min(std::max(z, -kClip), kClip);
    bin.raw += value;
    ++bin.count;
  }
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
  // (docs/hardware/h200.md) — significant across 132 SMs, yet no change.
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
  };
  std::vector<Bin> bins_;
};

}  // namespace
}  // namespace latest::pooled
