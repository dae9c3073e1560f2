#pragma once
// Where the records leave a segment's line, pooled over SMs
// (pooled_detection.cpp, steps 3 and 8): a coarse scan over blocks of
// records finds the block, a fine scan over every boundary around it the
// iteration. Of internal linkage, as boundaries.hpp says why.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "core/pooled/pooled_scan.hpp"
#include "core/pooled/sm_state.hpp"
#include "core/types.hpp"

namespace latest::pooled {
namespace {

// The iterations a fine scan's local line is fitted on: 200 at most, 32 at
// least, else as many as last half a millisecond.
inline std::int64_t reference_length(double slope) {
  return std::clamp<std::int64_t>(nearest(500'000 / slope), 32, 200);
}

// How far a fine scan's bins stray where the records hold no change: the
// largest pooled mean residual (ns) of the three one-iteration bins before
// a local line fitted as the scan fits its reference, at kPlaces places
// over the final segments. Timer noise averages out over the SMs; a wander
// they share does not.
inline double quiet_scan_mean(const std::vector<SmState>& sms, double slope) {
  constexpr int kPlaces = 8;
  constexpr int kBins = 3;
  const std::int64_t reference = reference_length(slope);
  Nanos begin = std::numeric_limits<Nanos>::min(), end = std::numeric_limits<Nanos>::max();
  for (const auto& st : sms) {
    begin = std::max<Nanos>(begin, st.e.at(st.final.i0) + nearest(kBins * slope));
    end = std::min(end, st.e.at(std::max(st.final.i0, st.e.last() - reference / 4)));
  }
  double largest = 0;
  // Each SM's searches gallop on from the last place's (the places ascend).
  std::vector<std::int64_t> searched(sms.size(), 0);
  for (int j = 0; j < kPlaces && end > begin; ++j) {
    const Nanos place = begin + (end - begin) * j / (kPlaces - 1);
    std::array<double, kBins> sum{};
    std::array<int, kBins> count{};
    for (const auto& st : sms) {
      std::int64_t& not_before = searched[static_cast<std::size_t>(&st - sms.data())];
      not_before = st.e.first_at_or_after(place - nearest(kBins * slope), not_before);
      const std::int64_t k = st.e.first_at_or_after(place, not_before);
      if (k + reference / 4 > st.e.last()) continue;
      // Not SmState::fit: read once, these lines would push out the scans' own.
      const Line line = fit_line(st.e, k, std::min(st.e.last(), k + reference));
      std::int64_t i = std::max(st.final.i0, not_before);
      for (Nanos t = st.e.at(i); i < k; t += st.e.duration(i), ++i) {
        const auto bin = static_cast<std::size_t>(static_cast<double>(place - t) / slope);
        if (bin >= kBins) continue;
        sum[bin] += line.residual(i, t);
        ++count[bin];
      }
    }
    for (int b = 0; b < kBins; ++b)
      if (count[b] > 0) largest = std::max(largest, std::abs(sum[b]) / count[b]);
  }
  return largest;
}

// Quiet blocks (within the relevance threshold of the target's rate) in a
// row after which a later stray from the target by less than half a clock
// step is no lasting change (PooledScan::stray): a card's rate can stray
// briefly long after a switch, and the switch had ended before it.
constexpr int kQuietBlocks = 8;

// What a scan's fine scans found, for a later scan of the same records
// with other segment lines (the arrival's second pass). Where its coarse
// scan bounds the change the same and no SM's fine scan read against the
// segment's line, the fine scans would read the same records against the
// same local lines, and find the same bin.
struct FineScanMemo {
  bool valid = false;
  Nanos lo = 0, hi = 0;
  std::optional<Nanos> found;
};

// Where the records leave the SMs' `line` (their final or initial one)
// within (from, to]: the end of the latest (`latest`), or the start of the
// earliest, time bin whose pooled deviation is significant at `z`.
// - The coarse scan: each block's mean iteration against the line's, beyond
//   `relevant` ns, so that a slow drift of the rate is no change.
// - The fine scan, in bins of one iteration (`slope`) around that block:
//   residuals against a line of each SM's iterations just beyond the range
//   (reference_length), where such drift cannot build up; a bin's mean
//   residual must also exceed `wander_bar_ns` (quiet_scan_mean).
class SegmentScan {
 public:
  SegmentScan(const std::vector<SmState>& sms, Line SmState::*line, double sigma, double slope, double wander_bar_ns,
              double z, bool latest)
      : sms_(sms), line_(line), sigma_(sigma), slope_(slope), wander_bar_ns_(wander_bar_ns), z_(z), latest_(latest) {}

  // Empty when no bin is significant. Looking for the latest, `strayed`
  // (where given) is set where that block strays less than `excursion` ns an
  // iteration after kQuietBlocks quiet ones (PooledScan::stray).
  std::optional<Nanos> find(double relevant, Nanos from, Nanos to, FineScanMemo* memo = nullptr,
                            double excursion = 0, bool* strayed = nullptr) {
    const Bounds b = coarse_scan(relevant, from, to, excursion, strayed);
    // The reference then moves to two iterations beyond the significant bin
    // and the scan runs again, until that bin stays where it is: the SMs'
    // common boundaries can wander by tens of ns within a millisecond, so a
    // line extrapolated over hundreds of iterations is off where the records
    // are not. Right at the change the reference runs at one clock, and the
    // bins beyond it are off by a whole step an iteration.
    constexpr int kRefits = 16;   // moves of the reference, at most
    constexpr double kNear = 16;  // iterations a refitted scan reads first
    std::optional<Nanos> found;
    if (memo && memo->valid && memo->lo == b.lo && memo->hi == b.hi) {
      found = memo->found;
    } else {
      segment_line_read_ = false;
      found = fine_scan(b.lo, b.hi, Boundaries::kBlock);
      for (int round = 0; found && round < kRefits; ++round) {
        const auto two = nearest(2 * slope_);
        const std::optional<Nanos> closer =
            latest_ ? fine_scan(b.lo, *found + two, kNear) : fine_scan(*found - two, b.hi, kNear);
        if (!closer || (latest_ ? *closer >= *found : *closer <= *found)) break;
        found = closer;
      }
      if (memo) *memo = {!segment_line_read_, b.lo, b.hi, found};
    }
    if (found) return *found;
    if (b.kc >= 0) return latest_ ? b.hi : b.lo;
    return std::nullopt;
  }

 private:
  struct Bounds {
    std::int64_t kc;  // the coarse scan's significant bin, -1 if none
    Nanos lo, hi;     // where the fine scan looks
  };
  struct Cursor {
    const SmState* sm;
    Line reference;
    std::int64_t next, stop;  // the next boundary to read; the last one to read
    Nanos t;                  // the next boundary's time
  };

  Bounds coarse_scan(double relevant, Nanos from, Nanos to, double excursion, bool* strayed) const {
    const double block = static_cast<double>(Boundaries::kBlock) * slope_;
    const double block_noise = sigma_ * std::sqrt(2.0) / static_cast<double>(Boundaries::kBlock);
    PooledScan coarse(to, block, static_cast<std::size_t>(static_cast<double>(to - from) / block) + 2, relevant);
    for (const auto& st : sms_) {
      const double b = (st.*line_).b;
      std::int64_t i = (st.first + Boundaries::kBlock - 1) / Boundaries::kBlock * Boundaries::kBlock;
      if (i + Boundaries::kBlock > st.e.last()) continue;
      // The whole blocks from boundary i on that start at or before `to`.
      const Nanos* marks = st.e.block_marks_from(i);
      const auto whole = static_cast<std::size_t>((st.e.last() - i) / Boundaries::kBlock);
      const auto count = static_cast<std::size_t>(std::upper_bound(marks, marks + whole, to) - marks);
      coarse.add_blocks(marks, count, static_cast<double>(Boundaries::kBlock), b, block_noise);
    }
    const std::int64_t kc = latest_ ? coarse.latest_significant(z_) : coarse.earliest_significant(z_);
    if (strayed && latest_ && kc >= 0 && coarse.stray(kc, z_, kQuietBlocks, excursion)) *strayed = true;
    // The change lies between the significant bin's samples and those of the
    // next bin that has any, on the side looked at; a block either way for
    // the boundaries' own lag. Coarse samples come a block of iterations
    // apart, so at a slower clock, or with the SMs in step, bins between may
    // be empty.
    Nanos lo = from, hi = latest_ ? from + nearest(3 * block) : to;
    if (kc >= 0) {
      const std::int64_t beyond = coarse.next_sampled(kc, latest_);
      const std::int64_t later = latest_ ? beyond : kc, earlier = latest_ ? kc : beyond;
      hi = later >= 0 ? coarse.bin_end(later) + nearest(block) : to;
      lo = earlier >= 0 ? coarse.bin_end(earlier + 1) - nearest(block) : from;
    } else if (!latest_) {
      lo = to - nearest(3 * block);
    }
    return {kc, std::max(lo, from), std::min(hi, to)};
  }

  // Per SM, the boundaries in [begin, end] and the line they are read
  // against: the SM's iterations just after the range (arrival) or just
  // before it (departure), else its whole segment's line.
  std::vector<Cursor> cursors(Nanos begin, Nanos end) {
    const std::int64_t reference_iterations = reference_length(slope_);
    std::vector<Cursor> cursors;
    cursors.reserve(sms_.size());
    for (const auto& st : sms_) {
      Nanos begin_time = 0, end_time = 0;  // the searches' boundaries' times
      const std::int64_t at_begin = st.e.first_at_or_after(begin, 0, &begin_time);
      const std::int64_t i_begin = std::max(st.first, at_begin);
      if (i_begin > st.e.last()) continue;
      Line reference = st.*line_;
      const std::int64_t k = st.e.first_at_or_after(end, begin <= end ? at_begin : 0, &end_time);
      if (latest_ && k + reference_iterations / 4 <= st.e.last())
        reference = st.fit(k, std::min(st.e.last(), k + reference_iterations));
      else if (!latest_ && i_begin - reference_iterations / 4 >= st.initial.i0)
        reference = st.fit(std::max(st.initial.i0, i_begin - reference_iterations), i_begin);
      else
        segment_line_read_ = true;
      // The boundaries in [begin, end]: i_begin up to the last at or before end.
      const std::int64_t i_end = std::min(st.e.last(), k <= st.e.last() && end_time == end ? k : k - 1);
      if (i_end < i_begin) continue;
      if (latest_) {
        const Nanos t = i_end == k ? end_time : k <= st.e.last() ? end_time - st.e.duration(k - 1) : st.e.at(i_end);
        cursors.push_back(Cursor{&st, reference, i_end, i_begin, t});
      } else {
        cursors.push_back(Cursor{&st, reference, i_begin, i_end, i_begin == at_begin ? begin_time : st.e.at(i_begin)});
      }
    }
    return cursors;
  }

  // Where the latest (or earliest) significant bin in (begin, end] ends.
  // Each SM's records are read from the side looked at outwards, `first`
  // iterations' worth, then kFurther more each time, until that bin lies
  // wholly within what was read (with a bin to spare): a bin depends on its
  // own records only, so a scan of every record would find the same one.
  std::optional<Nanos> fine_scan(Nanos begin, Nanos end, double first) {
    constexpr double kFurther = 16;
    std::vector<Cursor> cursors = this->cursors(begin, end);
    PooledScan fine(end, slope_, static_cast<std::size_t>(static_cast<double>(end - begin) / slope_) + 2,
                    wander_bar_ns_);
    const auto add = [&](const Line& reference, std::int64_t i, Nanos t) {
      const double r = reference.residual(i, t);
      fine.add(t, r / (sigma_ * reference.spread(i)), r);
    };
    for (double reach_iterations = first;; reach_iterations += kFurther) {
      const Nanos reach = latest_ ? end - nearest(reach_iterations * slope_) : begin + nearest(reach_iterations * slope_);
      bool all = true;
      for (Cursor& cur : cursors) {
        // The cursor's index and time kept in registers while its residuals are pooled.
        const Boundaries& e = cur.sm->e;
        const Line& reference = cur.reference;
        std::int64_t next = cur.next;
        const std::int64_t stop = cur.stop;
        Nanos t = cur.t;
        if (latest_) {
          while (next >= stop && t >= reach) {
            add(reference, next, t);
            if (--next >= stop) t -= e.duration(next);
          }
          all = all && next < stop;
        } else {
          while (next <= stop && t <= reach) {
            add(reference, next, t);
            if (next++ < stop) t += e.duration(next - 1);
          }
          all = all && next > stop;
        }
        cur.next = next;
        cur.t = t;
      }
      const std::int64_t kf = latest_ ? fine.latest_significant(z_) : fine.earliest_significant(z_);
      const bool complete = kf >= 0 && (latest_ ? fine.bin_end(kf + 1) - nearest(slope_) >= reach
                                                : fine.bin_end(kf) + nearest(slope_) <= reach);
      if (complete || all) {
        if (kf < 0) return std::nullopt;
        return latest_ ? fine.bin_end(kf) : fine.bin_end(kf + 1);
      }
    }
  }

  const std::vector<SmState>& sms_;
  Line SmState::*line_;
  double sigma_, slope_, wander_bar_ns_, z_;
  bool latest_;
  bool segment_line_read_ = false;  // some SM's fine scan read against its segment's line
};

}  // namespace
}  // namespace latest::pooled
