#pragma once
// The pooled detector's records of one SM (pooled_detection.cpp): its
// iteration boundaries' times, kept as marks every kMark records and read
// from them, and exact integer moments of its durations, which the line
// fits (line_fit.hpp) are taken from. Internals of the detector, apart so
// that their tests (tests/core/pooled) can hold them to plain sums. Of
// internal linkage, as when they were part of pooled_detection.cpp: each
// includer compiles its own copy with its own flags (the detector's
// -fno-math-errno), and the detector's code stays as it was (the same
// answers and host time, docs/benchmarks.md).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <vector>

#include "core/pooled/numeric.hpp"
#include "core/types.hpp"

namespace latest::pooled {
namespace {

// Iterations a block of records holds (Boundaries), and between the
// boundaries whose times Boundaries keeps (a mark every kMark).
constexpr std::int64_t kRecordBlock = 64;
constexpr std::int64_t kMark = 16;

// A whole block of 64 records, read once in eight vectors: its shortest and
// longest record, and its four sums of 16 records, taken in 32 bits. Read
// apart, the extremes and the sums read the block twice, and summed each on
// its own, a sum of 16 added them one at a time. False where those sums
// need not be exact (a record of 268 ms or more): the caller then sums
// again in 64 bits.
static_assert(kRecordBlock == 64 && kMark == 16);
[[gnu::always_inline]] inline bool whole_block(const std::uint32_t* d, std::uint32_t& shortest,
                                               std::uint32_t& longest, std::uint32_t* sums16) {
  using Lanes = std::uint32_t __attribute__((vector_size(32)));
  Lanes v0, v1, v2, v3, v4, v5, v6, v7;  // not an array: one went through the stack
  std::memcpy(&v0, d, sizeof v0);
  std::memcpy(&v1, d + 8, sizeof v1);
  std::memcpy(&v2, d + 16, sizeof v2);
  std::memcpy(&v3, d + 24, sizeof v3);
  std::memcpy(&v4, d + 32, sizeof v4);
  std::memcpy(&v5, d + 40, sizeof v5);
  std::memcpy(&v6, d + 48, sizeof v6);
  std::memcpy(&v7, d + 56, sizeof v7);
  // Lane by lane (no helper taking vectors: their ABI differs without
  // AVX, and GCC warns of it), then folded across lanes by halves.
  Lanes lo = v0, hi = v0;
  lo = v1 < lo ? v1 : lo, hi = v1 > hi ? v1 : hi;
  lo = v2 < lo ? v2 : lo, hi = v2 > hi ? v2 : hi;
  lo = v3 < lo ? v3 : lo, hi = v3 > hi ? v3 : hi;
  lo = v4 < lo ? v4 : lo, hi = v4 > hi ? v4 : hi;
  lo = v5 < lo ? v5 : lo, hi = v5 > hi ? v5 : hi;
  lo = v6 < lo ? v6 : lo, hi = v6 > hi ? v6 : hi;
  lo = v7 < lo ? v7 : lo, hi = v7 > hi ? v7 : hi;
  // (__builtin_shufflevector: GCC from 12 and clang, the fuzzers' compiler.)
  Lanes other = __builtin_shufflevector(lo, lo, 4, 5, 6, 7, 0, 1, 2, 3);
  lo = other < lo ? other : lo;
  other = __builtin_shufflevector(lo, lo, 2, 3, 0, 1, 6, 7, 4, 5);
  lo = other < lo ? other : lo;
  other = __builtin_shufflevector(lo, lo, 1, 0, 3, 2, 5, 4, 7, 6);
  lo = other < lo ? other : lo;
  other = __builtin_shufflevector(hi, hi, 4, 5, 6, 7, 0, 1, 2, 3);
  hi = other > hi ? other : hi;
  other = __builtin_shufflevector(hi, hi, 2, 3, 0, 1, 6, 7, 4, 5);
  hi = other > hi ? other : hi;
  other = __builtin_shufflevector(hi, hi, 1, 0, 3, 2, 5, 4, 7, 6);
  hi = other > hi ? other : hi;
  shortest = lo[0];
  longest = hi[0];
  // Pairwise sums interleaved twice, then the two halves: lanes 0-3 hold the sums of 16.
  const Lanes s0 = v0 + v1, s1 = v2 + v3, s2 = v4 + v5, s3 = v6 + v7;
  const Lanes t0 = __builtin_shufflevector(s0, s1, 0, 8, 2, 10, 4, 12, 6, 14) +
                   __builtin_shufflevector(s0, s1, 1, 9, 3, 11, 5, 13, 7, 15);
  const Lanes t1 = __builtin_shufflevector(s2, s3, 0, 8, 2, 10, 4, 12, 6, 14) +
                   __builtin_shufflevector(s2, s3, 1, 9, 3, 11, 5, 13, 7, 15);
  const Lanes u = __builtin_shufflevector(t0, t1, 0, 1, 8, 9, 4, 5, 12, 13) +
                  __builtin_shufflevector(t0, t1, 2, 3, 10, 11, 6, 7, 14, 15);
  const Lanes sums = u + __builtin_shufflevector(u, u, 4, 5, 6, 7, 0, 1, 2, 3);
  for (int q = 0; q < 4; ++q) sums16[q] = sums[q];
  return static_cast<std::uint64_t>(longest) * kMark < (1ull << 32);
}


// The one pass over every record, in blocks: the block marks (the
// boundaries' times every kRecordBlock records, from `start` on, and the
// last boundary's where it falls on one), the three marks inside each block
// (every kMark records, or the last boundary) as offsets from its block
// mark in 32 bits, and whether a block's longest iteration exceeds
// `tenths`/10 times its shortest (its neighbours either side included).
// False where an offset does not fit 32 bits (a block whose first 48
// records last 4.3 s or more); the caller then takes them again in 64 bits.
// Offsets, not 64-bit times: the 64-bit marks' stores made the pass over a
// default window from memory 1.06-1.15 ms against 0.92-1.01. A third of the detector's host
// time at SSE2, so compiled for AVX2 too where the CPU has it
// (BM_DetectSwitchPooled 4.82-4.87 ms a window before, 3.66-3.91 after),
// and one call per SM, not per block. Integer sums and extremes: either
// path gives the same result.
LATEST_AVX2_CLONE bool block_pass(const std::uint32_t* d, std::int64_t n, std::uint64_t tenths, Nanos start,
                                  Nanos* block_marks, std::uint32_t* offsets, std::uint8_t* uneven) {
  std::uint64_t too_wide = 0;
  Nanos t = start;
  // A block's offsets from its sums of kMark records, then the next block
  // mark. In a short last block, those past the last boundary are not read.
  const auto add_sums = [&](std::int64_t b, const std::uint64_t* sums16) {
    std::uint64_t o = 0;
    for (int q = 0; q < 3; ++q) {
      o += sums16[q];
      offsets[3 * b + q] = static_cast<std::uint32_t>(o);
    }
    too_wide |= o >> 32;  // the largest offset
    t += static_cast<Nanos>(o + sums16[3]);
  };
  // Sums of kMark records in 64 bits, over records [from, to).
  const auto sum_records = [&](std::int64_t from, std::int64_t to, std::uint64_t* sums16) {
    for (int q = 0; q < 4; ++q) {
      sums16[q] = 0;
      for (std::int64_t i = from + q * kMark; i < std::min(from + (q + 1) * kMark, to); ++i) sums16[q] += d[i];
    }
  };
  const auto flag = [&](std::int64_t b, std::int64_t from, std::int64_t to, std::uint32_t shortest,
                        std::uint32_t longest) {
    if (from > 0) shortest = std::min(shortest, d[from - 1]);
    if (to < n) shortest = std::min(shortest, d[to]);
    uneven[b] = 10ull * longest > tenths * shortest;
  };
  std::int64_t from = 0, b = 0;
  for (; from + kRecordBlock <= n; from += kRecordBlock, ++b) {
    block_marks[b] = t;
    std::uint32_t shortest = 0, longest = 0, narrow[4];
    std::uint64_t sums16[4];
    if (whole_block(d + from, shortest, longest, narrow)) {
      for (int q = 0; q < 4; ++q) sums16[q] = narrow[q];
    } else {
      sum_records(from, from + kRecordBlock, sums16);
    }
    add_sums(b, sums16);
    flag(b, from, from + kRecordBlock, shortest, longest);
  }
  if (from < n) {
    // The last marks: every kMark records, then the last boundary.
    block_marks[b] = t;
    std::uint64_t sums16[4];
    sum_records(from, n, sums16);
    add_sums(b, sums16);
    flag(b, from, n, *std::min_element(d + from, d + n), *std::max_element(d + from, d + n));
    ++b;
  }
  // The last boundary, where it is a block's first.
  if ((n + kMark - 1) / kMark % (kRecordBlock / kMark) == 0) block_marks[b] = t;
  return too_wide == 0;
}

// Σ d_k, Σ k·d_k and Σ S_k·d_k (S_k = k(k+1)/2) over k = 0…n−1, n ≤ kMomentChunk,
// exact: the line fits' sums over every boundary (fit_line). Widening
// 32 × 32-bit products, which AVX2 takes four at a time.
struct DurationMoments {
  std::uint64_t m0 = 0, m1 = 0, m2 = 0;
};
constexpr std::int64_t kMomentChunk = 64;  // S_63 · 64 · 2^32 < 2^64: m2 stays exact
LATEST_AVX2_CLONE DurationMoments chunk_moments(const std::uint32_t* d, std::uint32_t n) {
  DurationMoments m;
  for (std::uint32_t k = 0; k < n; ++k) {
    m.m0 += d[k];
    m.m1 += static_cast<std::uint64_t>(k) * d[k];
    m.m2 += static_cast<std::uint64_t>(k * (k + 1) / 2) * d[k];
  }
  return m;
}

// An SM's iteration boundaries: boundary i starts iteration i, boundary n
// ends the last. Block sums, taken in one pass, make any boundary cheap and
// are the coarse scan's points.
class Boundaries {
 public:
  static constexpr std::int64_t kBlock = kRecordBlock;

  // Iterations more than `long_ratio` times both neighbours are listed: an
  // interrupt on one SM, or a stall of the whole GPU. A clock change never
  // makes one iteration stand out from both of its neighbours.
  // Storage the caller keeps from window to window: the block marks, and
  // the marks between as offsets from them (in 64 bits too where a block's
  // first 48 records last 4.3 s or more). The coarse scans and the block fits
  // read the block marks alone: a quarter of the memory (0.5 MB for a
  // default window) three times a window.
  struct Marks {
    std::vector<Nanos> blocks, wide;
    std::vector<std::uint32_t> offsets;
  };
  // `uneven`: storage as well.
  Boundaries(const SmRecords& sm, double long_ratio, Marks& marks, std::vector<std::uint8_t>& uneven)
      : d_(sm.duration_ns), block_marks_(marks.blocks), offsets_(marks.offsets), wide_(marks.wide) {
    const auto n = static_cast<std::int64_t>(d_.size());
    const std::int64_t count = (n + kBlock - 1) / kBlock;
    mark_count_ = static_cast<std::size_t>((n + kMark - 1) / kMark) + 1;
    // In whole numbers (the ratio in tenths). A block is searched for long
    // iterations only where its longest is that much above its shortest.
    const auto tenths = static_cast<std::uint64_t>(std::lround(long_ratio * 10));
    uneven.resize(static_cast<std::size_t>(count));
    block_marks_.resize((mark_count_ + kMarksPerBlock - 1) / kMarksPerBlock);  // every one written below
    offsets_.resize(3 * block_marks_.size());
    wide_.clear();
    if (!block_pass(d_.data(), n, tenths, sm.first_start_ns, block_marks_.data(), offsets_.data(), uneven.data())) {
      // Offsets beyond 32 bits: all of them again, in 64.
      wide_.resize(offsets_.size());
      for (std::size_t k = 1; k < mark_count_; ++k) {
        if (k % kMarksPerBlock == 0) continue;
        const std::size_t to = std::min(k * kMark, d_.size());
        Nanos o = 0;
        for (std::size_t i = k / kMarksPerBlock * kBlock; i < to; ++i) o += d_[i];
        wide_[offset_index(k)] = o;
      }
    }
    for (std::int64_t b = 0; b < count; ++b) {
      if (!uneven[static_cast<std::size_t>(b)]) continue;
      for (std::int64_t i = std::max<std::int64_t>(b * kBlock, 1); i < std::min((b + 1) * kBlock, n - 1); ++i) {
        const auto k = static_cast<std::size_t>(i);
        if (10ull * d_[k] > tenths * d_[k - 1] && 10ull * d_[k] > tenths * d_[k + 1]) {
          long_.push_back(i);
          long_ns_ = std::min(long_ns_, d_[k] - 1);
        }
      }
    }
  }
  const std::vector<std::int64_t>& long_iterations() const { return long_; }
  // Takes an interrupted iteration out: it lasts what the one before it did.
  // The timer kept real time through it, so one side of it moves by the
  // excess: the later boundaries where the change came before it, the
  // earlier ones where it came after (`keep_later`), so that the change
  // keeps its own time. Moving the later ones always dated an SM
  // interrupted before the request early by the excess (30.7 us for a 40 us
  // interrupt on an H200 window).
  void shorten(std::int64_t i, bool keep_later) {
    const std::uint32_t like = d_[static_cast<std::size_t>(i > 0 ? i - 1 : i + 1)];
    const Nanos delta = static_cast<Nanos>(d_[static_cast<std::size_t>(i)]) - like;
    fixed_[i] = like;
    const auto split = static_cast<std::size_t>(i / kMark) + 1;  // mark(split) is the first after it
    const std::size_t block_split = (split + kMarksPerBlock - 1) / kMarksPerBlock;
    if (keep_later) {
      for (std::size_t j = 0; j < block_split; ++j) block_marks_[j] += delta;
    } else {
      for (std::size_t j = block_split; j < block_marks_.size(); ++j) block_marks_[j] -= delta;
    }
    // In the block of the split, the marks after it move against its block
    // mark either way (those past the last boundary too, unread).
    for (std::size_t k = split; k < block_split * kMarksPerBlock; ++k) {
      if (wide_.empty()) {
        offsets_[offset_index(k)] -= static_cast<std::uint32_t>(delta);
      } else {
        wide_[offset_index(k)] -= delta;
      }
    }
  }
  std::int64_t last() const { return limit_; }
  // Ends the records at boundary n.
  void end_at(std::int64_t n) { limit_ = std::clamp<std::int64_t>(n, 0, limit_); }
  Nanos at(std::int64_t i) const {
    const std::int64_t k = i / kMark;
    Nanos t = mark(static_cast<std::size_t>(k));
    if (fixed_.empty()) {
      // Fewer than kMark, each one read in a row: vectors, no branches.
      for (std::int64_t j = k * kMark; j < i; ++j) t += d_[static_cast<std::size_t>(j)];
      return t;
    }
    for (std::int64_t j = k * kMark; j < i; ++j) t += duration(j);
    return t;
  }
  // Boundary i where it is a multiple of kBlock: its block mark, which
  // shorten() keeps exact.
  Nanos at_block(std::int64_t i) const { return block_marks_[static_cast<std::size_t>(i / kBlock)]; }
  // The block marks from boundary i's on (i a multiple of kBlock).
  const Nanos* block_marks_from(std::int64_t i) const { return block_marks_.data() + i / kBlock; }
  // The first boundary at or after `t` (last() + 1 if none). From the last
  // mark before `t`, found among the block marks first (a quarter of the
  // memory to search), then among that block's. Where the caller knows
  // that every boundary before `not_before` lies before `t` (a later time
  // than one it searched for), the search gallops on from there: the same
  // answer, from a few marks near it. `time`, where given: that boundary's
  // time (at()), where it is not last() + 1.
  std::int64_t first_at_or_after(Nanos t, std::int64_t not_before = 0, Nanos* time = nullptr) const {
    auto block = block_marks_.begin() + std::clamp<std::ptrdiff_t>(not_before / kBlock, 0, std::ssize(block_marks_));
    if (not_before <= 0) {
      block = std::lower_bound(block_marks_.begin(), block_marks_.end(), t);
    } else {
      std::ptrdiff_t reach = 1;
      while (reach < block_marks_.end() - block && block[reach] < t) reach *= 2;
      block = std::lower_bound(block + reach / 2, block + std::min(reach + 1, block_marks_.end() - block), t);
    }
    const auto before = std::max<std::ptrdiff_t>(0, (block - block_marks_.begin()) - 1);
    std::size_t k = static_cast<std::size_t>(before) * kMarksPerBlock;
    Nanos e = block_marks_[static_cast<std::size_t>(before)];
    for (const std::size_t stop = std::min(k + kMarksPerBlock, mark_count_); k + 1 < stop;) {
      const Nanos next = mark(k + 1);
      if (next >= t) break;
      e = next;
      ++k;
    }
    std::int64_t i = k * kMark;
    if (i > last()) return last() + 1;
    while (i <= last() && e < t) {
      if (i == last()) return last() + 1;
      e += duration(i++);
    }
    if (time) *time = e;
    return i;
  }
  std::uint32_t duration(std::int64_t i) const {
    const std::uint32_t d = d_[static_cast<std::size_t>(i)];
    if (fixed_.empty() || d <= long_ns_) return d;
    auto it = fixed_.find(i);
    return it == fixed_.end() ? d : it->second;
  }
  // Over boundaries [from, to], with y_i = t_i − t_from: Σ y_i and
  // Σ (i − from)·y_i, exact. With d_q the durations from `from` on
  // (q = 0…m−1, m = to − from) and S_k = k(k+1)/2, they are
  // m·Σd_q − Σq·d_q and S_m·Σd_q − ΣS_q·d_q: sums of the durations, taken
  // in chunks of 64 (the fits were a sixth of the detector's host time
  // when each boundary's time was built up in turn).
  struct RangeSums {
    std::int64_t y = 0;
    Wide xy = 0;
  };
  RangeSums range_sums(std::int64_t from, std::int64_t to) const { return range_sums(moments(from, to), to - from); }
  // Σd_q, Σq·d_q and ΣS_q·d_q over the durations from `from` on (q = 0…m−1).
  struct Moments {
    Wide d0 = 0, d1 = 0, d2 = 0;
    // Those of a stretch followed by `next`, which starts o durations on.
    Moments then(Wide o, const Moments& next) const {
      return {d0 + next.d0, d1 + o * next.d0 + next.d1, d2 + o * (o + 1) / 2 * next.d0 + o * next.d1 + next.d2};
    }
    // Those of the stretch from o durations on to the end of `longer`,
    // which starts where this one does and holds it: then(), undone.
    Moments rest_of(Wide o, const Moments& longer) const {
      Moments r;
      r.d0 = longer.d0 - d0;
      r.d1 = longer.d1 - d1 - o * r.d0;
      r.d2 = longer.d2 - d2 - o * (o + 1) / 2 * r.d0 - o * r.d1;
      return r;
    }
  };
  Moments moments(std::int64_t from, std::int64_t to) const {
    const std::int64_t m = to - from;
    Moments sum;
    for (std::int64_t o = 0; o < m; o += kMomentChunk) {
      const DurationMoments c =
          chunk_moments(d_.data() + from + o, static_cast<std::uint32_t>(std::min(kMomentChunk, m - o)));
      sum = sum.then(o, {c.m0, c.m1, c.m2});
    }
    // Interrupted iterations taken out (shorten): their fixed length, not the record's.
    for (auto it = fixed_.lower_bound(from); it != fixed_.end() && it->first < to; ++it) {
      const Wide delta = static_cast<Wide>(it->second) - d_[static_cast<std::size_t>(it->first)];
      sum = sum.then(it->first - from, {delta, 0, 0});
    }
    return sum;
  }
  // Σ (t_i − t_from)² over boundaries [from, to], in whole numbers: the
  // caller knows it stays below 2^64. One running time and one product a
  // boundary (residual_sd, line_fit.hpp).
  std::uint64_t squared_offsets(std::int64_t from, std::int64_t to) const {
    std::uint64_t y = 0, sum = 0;
    if (fixed_.empty()) {
      const std::uint32_t* d = d_.data();
      for (std::int64_t i = from; i < to; ++i) {
        y += d[i];
        sum += y * y;
      }
      return sum;
    }
    for (std::int64_t i = from; i < to; ++i) {
      y += duration(i);
      sum += y * y;
    }
    return sum;
  }
  static RangeSums range_sums(const Moments& sum, std::int64_t m) {
    const Wide sm = static_cast<Wide>(m) * (m + 1) / 2;
    return {static_cast<std::int64_t>(m * sum.d0 - sum.d1), sm * sum.d0 - sum.d2};
  }

 private:
  const std::vector<std::uint32_t>& d_;
  std::int64_t limit_ = static_cast<std::int64_t>(d_.size());
  std::uint32_t long_ns_ = std::numeric_limits<std::uint32_t>::max();  // shorter ones are never fixed
  static constexpr std::size_t kMarksPerBlock = kBlock / kMark;
  // Mark k (boundary k·kMark, or the last one): its block's mark and its offset.
  static std::size_t offset_index(std::size_t k) { return k / kMarksPerBlock * 3 + k % kMarksPerBlock - 1; }
  Nanos mark(std::size_t k) const {
    const Nanos block = block_marks_[k / kMarksPerBlock];
    if (k % kMarksPerBlock == 0) return block;
    return block + (wide_.empty() ? static_cast<Nanos>(offsets_[offset_index(k)]) : wide_[offset_index(k)]);
  }
  std::size_t mark_count_ = 0;            // the marks: boundary k·kMark for k below the last, and the last boundary
  std::vector<Nanos>& block_marks_;       // mark(k·kMarksPerBlock)
  std::vector<std::uint32_t>& offsets_;   // mark(k) − its block's mark, three a block
  std::vector<Nanos>& wide_;              // the same in 64 bits, where one of those does not fit 32
  std::vector<std::int64_t> long_;
  std::map<std::int64_t, std::uint32_t> fixed_;
};

}  // namespace
}  // namespace latest::pooled
