#include "core/pooled_detection.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <vector>

#include "core/pooled/boundaries.hpp"
#include "core/pooled/change_point.hpp"
#include "core/pooled/hinge_fit.hpp"
#include "core/pooled/line_fit.hpp"
#include "core/pooled/pooled_scan.hpp"
#include "core/statistics.hpp"

namespace latest {
namespace {

using namespace pooled;

struct SmState {
  int sm = 0;
  Boundaries e;
  std::int64_t first = 0;  // first boundary at or after t_s
  Line initial, final;
  double initial_mean = 0, target_mean = 0;
  // The change point, where found.
  std::int64_t off = -1;   // the iteration the change fell in; -1: not placed
  // Times after the request, in ns: as doubles, absolute GPU times (near 2^61
  // on the H200) would keep only 256 ns.
  double change_ns = 0;
  double change_sd_ns = 0;
  double departure_ns = 0;
  // The fit with a stall (best_change_with_stall) and the line it is on.
  Line local;
  double step = 0, stall_u = 0, x_lo = 0, x_hi = 0;
  // The last few fits (fit()), kept by the caller from window to window
  // beside the state: in it, each state built and then moved into the
  // measured SMs' list copied 1.4 kB of them.
  class Fits {
    friend struct SmState;
    static constexpr std::size_t kFits = 16;
    struct Fit {
      std::int64_t from = 0, to = 0;
      Line line;
    };
    std::array<Fit, kFits> fit_;
    std::size_t fitted_ = 0;
  };
  // `fits`: emptied here.
  SmState(const SmRecords& r, double long_ratio, Boundaries::Marks& marks, std::vector<std::uint8_t>& uneven,
          Fits& fits)
      : sm(r.sm), e(r, long_ratio, marks, uneven), fits_(&fits) {
    fits.fitted_ = 0;
  }
  // The line of boundaries [from, to]. The scans and hinges refit the same
  // stretches round after round, so the last few fits are kept, the oldest
  // replaced first; only once the boundaries are final (interrupts out, the
  // end set).
  Line fit(std::int64_t from, std::int64_t to) const {
    Fits& f = *fits_;
    for (std::size_t k = 0; k < std::min(f.fitted_, Fits::kFits); ++k)
      if (f.fit_[k].from == from && f.fit_[k].to == to) return f.fit_[k].line;
    Fits::Fit& next = f.fit_[f.fitted_++ % Fits::kFits];
    next = {from, to, fit_line(e, from, to)};
    return next.line;
  }

 private:
  Fits* fits_;
};

double median(std::vector<double> xs) {
  if (xs.empty()) return std::numeric_limits<double>::quiet_NaN();
  const auto mid = xs.begin() + static_cast<std::ptrdiff_t>(xs.size() / 2);
  std::nth_element(xs.begin(), mid, xs.end());
  return *mid;
}

// Whether the per-SM differences of two rates exceed `relevant` (ns per
// iteration), pooled: the median against its standard error from the median
// absolute deviation, so the power grows with the number of SMs and one odd
// SM does not decide. The SMs share the timer too, so a difference far below
// any clock step, common to all of them, is the timer's and never counts.
bool rate_changes(const std::vector<double>& differences, double relevant, double z) {
  if (differences.size() < 2) return false;
  const double mid = median(differences);
  std::vector<double> deviations;
  for (double x : differences) deviations.push_back(std::abs(x - mid));
  const double se = 1.2533 * 1.4826 * median(deviations) / std::sqrt(static_cast<double>(differences.size()));
  const double excess = std::abs(mid) - relevant;
  return excess > 0 && (se <= 0 || excess / se > z);
}

// An interrupt taken out (Boundaries::shorten): its SM's place among the
// window's records, when it began and the length it was given.
struct Interrupt {
  std::size_t sm = 0;
  Nanos start = 0;
  Nanos like = 0;
};

// Long iterations on one SM are interrupts: they move that SM's
// boundaries on one side, not the clock, and are taken out, keeping the
// later boundaries where the interrupt began before `keep_later_before[sm]`
// (the SM's change is after it), else the earlier ones. Long iterations on
// many SMs at once (a stall while the clock relocks) are the clock's and
// stay. Returns the interrupts taken out.
std::vector<Interrupt> remove_interrupts(std::vector<SmState>& sms, double global_share,
                                         const std::vector<Nanos>& keep_later_before) {
  struct Long {
    Nanos start;
    SmState* sm;
    std::int64_t index;
  };
  std::vector<Long> longs;
  for (auto& st : sms)
    for (std::int64_t i : st.e.long_iterations()) longs.push_back({st.e.at(i), &st, i});
  std::sort(longs.begin(), longs.end(), [](const Long& a, const Long& b) { return a.start < b.start; });
  const double needed = global_share * static_cast<double>(sms.size());
  std::vector<const Long*> interrupts;
  for (std::size_t a = 0; a < longs.size(); ++a) {
    // Others that began a long iteration within one such iteration of this one.
    const Nanos span = longs[a].sm->e.duration(longs[a].index);
    std::size_t near = 0;
    for (std::size_t b = a; b-- > 0 && longs[a].start - longs[b].start <= span;) ++near;
    for (std::size_t b = a + 1; b < longs.size() && longs[b].start - longs[a].start <= span; ++b) ++near;
    if (static_cast<double>(near + 1) < needed) interrupts.push_back(&longs[a]);
  }
  std::vector<Interrupt> taken;
  for (const Long* l : interrupts) {
    const auto sm = static_cast<std::size_t>(l->sm - sms.data());
    l->sm->e.shorten(l->index, l->start < keep_later_before[sm]);
    taken.push_back({sm, l->start, l->sm->e.duration(l->index)});
  }
  return taken;
}

// The iterations a fine scan's local line is fitted on (pooled_departure):
// 200 at most, 32 at least, else as many as last half a millisecond.
std::int64_t reference_length(double slope) {
  return std::clamp<std::int64_t>(nearest(500'000 / slope), 32, 200);
}

// How far a fine scan's bins stray where the records hold no change: the
// largest pooled mean residual (ns) of the three one-iteration bins before
// a local line fitted as the scan fits its reference, at kPlaces places
// over the final segments (after any arrival the detector accepts: it
// leaves min_confirmation_iterations after it). Timer noise averages out
// over the SMs; a wander they share does not.
double quiet_scan_mean(const std::vector<SmState>& sms, double slope) {
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
      // Not SmState::fit: these lines are read once, and would push out the
      // scans' and hinges' own.
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
// step is no lasting change (PooledScan::stray). On one H200 (GPU-8dc209b2,
// round 23 of docs/hardware/h200.md) the rate of 2 ms stretches after the
// switch stayed within 1 ns of its mean, while single blocks (0.6 ms)
// strayed 1.5-2.0 ns an iteration, past the threshold's 1.4, every 10-40
// ms: the scan settled on the last stray, 22-62 ms after the switch, after
// 22-86 quiet blocks. No ramp of the simulator holds a quiet block before
// its last level.
constexpr int kQuietBlocks = 8;

// What a scan's fine scans found, for a later scan of the same records
// with other segment lines (the arrival's second pass). Where its coarse
// scan bounds the change the same and no SM's fine scan read against the
// segment's line, the fine scans would read the same records against the
// same local lines, and find the same bin: a third of their host time.
struct FineScanMemo {
  bool valid = false;
  Nanos lo = 0, hi = 0;
  std::optional<Nanos> found;
};

// Where the records leave the SMs' `line` (their final or initial one)
// within (from, to]: the end of the latest, or the start of the earliest,
// time bin whose pooled deviation is significant. A coarse scan over blocks
// finds the block: each block's mean iteration against the line's, beyond
// `relevant` ns, so that a slow drift of the rate (some H200s: the windows'
// tails extrapolated back were off by microseconds) is no change. A fine scan
// over every boundary around it, in bins of one iteration (`slope`), finds
// the iteration: residuals against a line of each SM's iterations just
// beyond the range (at most half a millisecond of them), where that drift
// cannot build up; a fine bin's mean residual must also exceed
// `wander_bar_ns` (the records' own wander, quiet_scan_mean). Empty when no
// bin is. Looking for the latest, `strayed` (where given) is set where that
// block strays less than `excursion` ns an iteration after kQuietBlocks
// quiet ones (PooledScan::stray).
std::optional<Nanos> pooled_departure(const std::vector<SmState>& sms, Line SmState::*line, double sigma, double slope,
                                      double relevant, double wander_bar_ns, Nanos from, Nanos to, double z, bool latest,
                                      FineScanMemo* memo = nullptr, double excursion = 0, bool* strayed = nullptr) {
  constexpr int kRefits = 16;                 // moves of the reference, at most (below)
  constexpr double kNear = 16;                // iterations a refitted scan reads first (below)
  // ... and any scan reads further each time: doubling read 1.5 times as
  // many records a default window (116 k against 77 k) for the same bins.
  constexpr double kFurther = 16;
  const double block = static_cast<double>(Boundaries::kBlock) * slope;
  const double block_noise = sigma * std::sqrt(2.0) / static_cast<double>(Boundaries::kBlock);
  PooledScan coarse(to, block, static_cast<std::size_t>(static_cast<double>(to - from) / block) + 2, relevant);
  for (const auto& st : sms) {
    const double b = (st.*line).b;
    std::int64_t i = (st.first + Boundaries::kBlock - 1) / Boundaries::kBlock * Boundaries::kBlock;
    if (i + Boundaries::kBlock > st.e.last()) continue;
    // The whole blocks from boundary i on that start at or before `to`.
    const Nanos* marks = st.e.block_marks_from(i);
    const auto whole = static_cast<std::size_t>((st.e.last() - i) / Boundaries::kBlock);
    const auto count = static_cast<std::size_t>(std::upper_bound(marks, marks + whole, to) - marks);
    coarse.add_blocks(marks, count, static_cast<double>(Boundaries::kBlock), b, block_noise);
  }
  const std::int64_t kc = latest ? coarse.latest_significant(z) : coarse.earliest_significant(z);
  if (strayed && latest && kc >= 0 && coarse.stray(kc, z, kQuietBlocks, excursion)) *strayed = true;
  // The change lies between the significant bin's samples and those of the
  // next bin that has any, on the side looked at; a block either way for the
  // boundaries' own lag. Coarse samples come a block of iterations apart, so
  // at a slower clock, or with the SMs in step, bins between may be empty.
  Nanos lo = from, hi = latest ? from + nearest(3 * block) : to;
  if (kc >= 0) {
    const std::int64_t beyond = coarse.next_sampled(kc, latest);
    const std::int64_t later = latest ? beyond : kc, earlier = latest ? kc : beyond;
    hi = later >= 0 ? coarse.bin_end(later) + nearest(block) : to;
    lo = earlier >= 0 ? coarse.bin_end(earlier + 1) - nearest(block) : from;
  } else if (!latest) {
    lo = to - nearest(3 * block);
  }
  hi = std::min(hi, to);
  lo = std::max(lo, from);
  const std::int64_t reference_iterations = reference_length(slope);
  // Where the latest (or earliest) significant bin in (begin, end] ends.
  // Each SM's records are read from the side looked at outwards, `first`
  // iterations' worth, then kFurther more each time, until that bin lies
  // wholly within what was read (with a bin to spare): a bin depends on its
  // own records only, so a scan of every record would find the same one.
  // The scans after the first mostly find it within a few iterations.
  bool segment_line_read = false;
  const auto fine_scan = [&](Nanos begin, Nanos end, double first) -> std::optional<Nanos> {
    struct Cursor {
      const SmState* sm;
      Line reference;
      std::int64_t next, stop;  // the next boundary to read; the last one to read
      Nanos t;                  // the next boundary's time
    };
    std::vector<Cursor> cursors;
    cursors.reserve(sms.size());
    for (const auto& st : sms) {
      Nanos begin_time = 0, end_time = 0;  // the searches' boundaries' times
      const std::int64_t at_begin = st.e.first_at_or_after(begin, 0, &begin_time);
      const std::int64_t i_begin = std::max(st.first, at_begin);
      if (i_begin > st.e.last()) continue;
      // The reference: the SM's iterations just after the range (arrival) or
      // just before it (departure), else its whole segment's line.
      Line reference = st.*line;
      const std::int64_t k = st.e.first_at_or_after(end, begin <= end ? at_begin : 0, &end_time);
      if (latest && k + reference_iterations / 4 <= st.e.last())
        reference = st.fit(k, std::min(st.e.last(), k + reference_iterations));
      else if (!latest && i_begin - reference_iterations / 4 >= st.initial.i0)
        reference = st.fit(std::max(st.initial.i0, i_begin - reference_iterations), i_begin);
      else
        segment_line_read = true;
      // The boundaries in [begin, end]: i_begin up to the last at or before end.
      const std::int64_t i_end = std::min(st.e.last(), k <= st.e.last() && end_time == end ? k : k - 1);
      if (i_end < i_begin) continue;
      if (latest) {
        const Nanos t = i_end == k ? end_time : k <= st.e.last() ? end_time - st.e.duration(k - 1) : st.e.at(i_end);
        cursors.push_back(Cursor{&st, reference, i_end, i_begin, t});
      } else {
        cursors.push_back(Cursor{&st, reference, i_begin, i_end, i_begin == at_begin ? begin_time : st.e.at(i_begin)});
      }
    }
    PooledScan fine(end, slope, static_cast<std::size_t>(static_cast<double>(end - begin) / slope) + 2, wander_bar_ns);
    // A cursor's next boundaries up to the reach, its index and time kept
    // in registers while its residuals are pooled.
    const auto add = [&](const Line& reference, std::int64_t i, Nanos t) {
      const double r = reference.residual(i, t);
      fine.add(t, r / (sigma * reference.spread(i)), r);
    };
    for (double reach_iterations = first;; reach_iterations += kFurther) {
      const Nanos reach = latest ? end - nearest(reach_iterations * slope)
                                 : begin + nearest(reach_iterations * slope);
      bool all = true;
      for (Cursor& cur : cursors) {
        const Boundaries& e = cur.sm->e;
        const Line& reference = cur.reference;
        std::int64_t next = cur.next;
        const std::int64_t stop = cur.stop;
        Nanos t = cur.t;
        if (latest) {
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
      const std::int64_t kf = latest ? fine.latest_significant(z) : fine.earliest_significant(z);
      const bool complete = kf >= 0 && (latest ? fine.bin_end(kf + 1) - nearest(slope) >= reach
                                               : fine.bin_end(kf) + nearest(slope) <= reach);
      if (complete || all) {
        if (kf < 0) return std::nullopt;
        return latest ? fine.bin_end(kf) : fine.bin_end(kf + 1);
      }
    }
  };
  // The reference then moves to two iterations beyond the significant bin
  // (after it towards the arrival, before it towards the departure), and
  // the scan runs again, until that bin stays where it is. On some H200s
  // the SMs' common boundaries wander by tens of ns within a millisecond
  // (round 12 of docs/hardware/h200.md): a line extrapolated over hundreds
  // of iterations is then off where the records are not, and the scan
  // settled milliseconds late (departed milliseconds early). Right at the
  // change the reference runs at one clock, and the bins beyond it are off
  // by a whole step an iteration.
  std::optional<Nanos> found;
  if (memo && memo->valid && memo->lo == lo && memo->hi == hi) {
    found = memo->found;
  } else {
    found = fine_scan(lo, hi, Boundaries::kBlock);
    for (int round = 0; found && round < kRefits; ++round) {
      const auto two = nearest(2 * slope);
      const std::optional<Nanos> closer = latest ? fine_scan(lo, *found + two, kNear) : fine_scan(*found - two, hi, kNear);
      if (!closer || (latest ? *closer >= *found : *closer <= *found)) break;
      found = closer;
    }
    if (memo) *memo = {!segment_line_read, lo, hi, found};
  }
  if (found) return *found;
  if (kc >= 0) return latest ? hi : lo;
  return std::nullopt;
}

// How far apart the SMs run: the shortest stretch, on the circle of one
// iteration of `slope` ns, that holds 80 % of the boundaries ending each
// SM's mixed iteration (by its line after the change), in ns. A launch a
// measurement (the paper's schedule) starts every SM together; on the H200
// 80 % of them then stay within 0 or 256 ns of each other through the
// window (round 20 of docs/hardware/h200.md). A chained stream's SMs drift
// apart; the simulator starts its SMs up to 1 µs apart.
double sm_spread_ns(const std::vector<SmState*>& changed, double slope) {
  const Nanos origin = changed.front()->local.t0;
  std::vector<double> at;
  for (const SmState* st : changed) {
    const Line& l = st->local;
    const double t = static_cast<double>(l.t0 - origin) + l.a + l.b * (st->x_hi - static_cast<double>(l.i0));
    at.push_back(t - slope * std::floor(t / slope));
  }
  std::sort(at.begin(), at.end());
  const std::size_t n = at.size(), held = std::max<std::size_t>(1, (8 * n + 9) / 10);
  double spread = slope;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t last = k + held - 1;
    spread = std::min(spread, last < n ? at[last] - at[k] : at[last - n] + slope - at[k]);
  }
  return spread;
}

// A stall before the change: each SM's fit bounds it between the stalls that
// put the change at either end of its mixed iteration; all SMs' bounds
// together fix it, and with it each SM's change. A stall of a few boundary
// noises or less is none: the fit without one stands. Where none is
// placed, `open_iterations` is how much later (in iterations) the largest
// stall the bounds still allow would put the change, where at least a
// quarter, else 0. Where one is placed, `least_ns` is the least stall the
// SMs' bounds agree on, else 0. Where the bounds miss each other (some SMs
// need a stall that others rule out), `missed_ns` is by how much, else 0.
bool place_after_stall(const std::vector<SmState*>& changed, double sigma, Nanos request_gpu_ns, bool in_step,
                       double& open_iterations, double& least_ns, double& missed_ns) {
  constexpr double kNoises = 4;
  open_iterations = 0;
  least_ns = 0;
  missed_ns = 0;
  if (changed.size() < 8) return false;
  std::vector<double> lows, highs;
  for (const SmState* st : changed) {
    const double a = st->step * st->x_lo - st->stall_u, b = st->step * st->x_hi - st->stall_u;
    lows.push_back(std::min(a, b));
    highs.push_back(std::max(a, b));
  }
  // Not the extremes: one SM's noise would move them. A stall only where the
  // SMs together rule out none: without one each SM's bounds straddle zero,
  // and where SMs take the change at different points of their iterations
  // (emulated switching) the bounds' middle alone can sit well off zero
  // (the H200: 320 ns, which as a stall moved arrivals a fifth of an
  // iteration early).
  const double lo = quantile(lows, 0.9), hi = quantile(highs, 0.1);
  if (lo > hi + kNoises * sigma) missed_ns = lo - hi;
  if (lo < kNoises * sigma || lo > hi + kNoises * sigma) {
    // The records then allow a stall up to `hi` (or the middle of bounds
    // that miss each other), and a stall S moves the change later by
    // S / step iterations: stated, not taken. Where the SMs' phases cluster
    // (coarse iterations: the simulator's SMs start within 1 us of each
    // other) their bounds leave most of the iteration open, and a stall
    // taken as none dated the simulator's stalls up to 0.46 iteration early
    // with a few ns stated; where bounds that miss each other by a little
    // were taken as no stall, up to 1.3 iterations late (EveryRampShape,
    // seeds 31-83: 26 of 816 beyond three times the stated uncertainty, now
    // 3). Under a quarter iteration (spread phases leave about a tenth of
    // the step open either side) it is not stated: stating every such
    // stall made the median stated uncertainty of the default ramp six
    // times as large (0.014 to 0.087 iterations).
    constexpr double kOpenShare = 0.25;
    const double largest = lo <= hi ? hi : (lo + hi) / 2;
    const double step = std::abs(changed.front()->step);
    if (largest > kNoises * sigma && largest > kOpenShare * step) open_iterations = largest / step;
    return false;
  }
  // SMs in step each bound the stall by the same iteration, so together
  // they leave most of it open: the records cannot tell a longer stall and
  // an earlier change from a shorter one and a later change. There the
  // smallest stall they need is taken. The middle dated the H200's in-step
  // windows 990 -> 1980 about 1 us (0.4 iteration) early and some
  // 1980 -> 990 ones 2-5 us late (round 20 of docs/hardware/h200.md).
  const double stall = in_step ? lo : (lo + hi) / 2;
  least_ns = lo;
  for (SmState* st : changed) {
    const double x = std::clamp((st->stall_u + stall) / st->step, st->x_lo, st->x_hi);
    const Line& l = st->local;
    st->change_ns = static_cast<double>(l.t0 - request_gpu_ns) + l.a + l.b * (x - static_cast<double>(l.i0));
    st->change_sd_ns = std::min(l.b, std::hypot(st->change_sd_ns, std::abs(hi - lo) / 2 * l.b / std::abs(st->step)));
    st->off = static_cast<std::int64_t>(x);
  }
  return true;
}

// Pooled over SMs, on the time axis: every SM's boundary residual against
// its line after the change is the lag the clock still owed at that moment,
// R(t), the same function on every SM. The SMs'
// iterations start at different moments, so together they sample R finely,
// even where a ramp level lasts less than an iteration. From the arrival T on
// R is 0; just before it R follows s·(T − t), or s·(T − t) + q·(T − t)² where
// the rate still moves. A hinge is the T with the least squared residual over
// the points of a stretch (HingeFit, pooled/hinge_fit.hpp).
class PooledHinges {
 public:
  // The cells' sums, kept by the caller for the next hinges: a window
  // builds up to 16 of them, and their tens of kB, freed and taken again
  // each time, went back to the kernel in between.
  struct Buffers {
    std::vector<HingeFit::Sums> cells;
  };
  // Which end of the change a hinge dates. At the arrival the records are
  // on the target's line after T; at the departure, mirrored in time, on
  // the initial clock's line before it, so that u runs backwards and the
  // same fit applies.
  enum class Side { arrival, departure };
  // Residuals against each SM's line over `line_iterations` from two
  // iterations beyond `origin` (a tentative arrival, or departure) on the
  // steady side: near the change, so the boundaries' slow common wander
  // cannot build up, and clear of it, so no level of the ramp tilts the line.
  // `before` and `after`: whole cells (multiples of 1/64).
  PooledHinges(const std::vector<SmState*>& sms, Nanos request_gpu_ns, double origin, double slope, double before,
               double after, double sigma, std::int64_t line_iterations, Buffers& buffers,
               Side side = Side::arrival)
      : PooledHinges(origin, side == Side::arrival ? slope : -slope, before, after, sigma, buffers) {
    const auto at = [&](double iterations) { return request_gpu_ns + nearest(origin + iterations * slope_); };
    for (const SmState* st : sms) {
      if (side == Side::arrival) {
        std::int64_t not_before = 0;
        const ArrivalStart a = arrival_start(*st, request_gpu_ns, origin, slope, before, line_iterations, not_before);
        if (a.first >= 0)
          add_points(st->e, st->fit(a.line_from, a.line_from + line_iterations), a.first, a.first_time, request_gpu_ns,
                     before, after, true);
        continue;
      }
      // Mirrored, u = after comes first in time.
      Nanos i_time = 0;
      const std::int64_t i = st->e.first_at_or_after(at(after), 0, &i_time);
      const std::int64_t to = st->e.first_at_or_after(at(2), after >= 2 ? i : 0) - 1;
      const std::int64_t from = std::max(st->initial.i0, to - line_iterations);
      if (to - from < 4 || to > st->e.last()) continue;
      if (i <= st->e.last()) add_points(st->e, st->fit(from, to), i, i_time, request_gpu_ns, before, after, false);
    }
    fit_.close();
  }
  // An SM's line for the arrival's side and the first boundary it reads (at
  // u = −before), as the constructor above finds them; `first` −1 where
  // that SM adds no points.
  struct SmLine {
    Line line;
    std::int64_t first = -1;
    Nanos first_time = 0;  // boundary `first`'s
  };
  // The same on the arrival's side, with each SM's line and first boundary
  // given (`lines`, one per SM of `sms`).
  PooledHinges(const std::vector<SmState*>& sms, const std::vector<SmLine>& lines, Nanos request_gpu_ns, double origin,
               double slope, double before, double after, double sigma, Buffers& buffers)
      : PooledHinges(origin, slope, before, after, sigma, buffers) {
    for (std::size_t k = 0; k < sms.size(); ++k)
      if (lines[k].first >= 0)
        add_points(sms[k]->e, lines[k].line, lines[k].first, lines[k].first_time, request_gpu_ns, before, after, true);
    fit_.close();
  }
  // Where an SM's points and line for a hinge at `origin` on the arrival's
  // side begin: its first boundary from `before` iterations before it, and
  // its line's (over `line_iterations`) from two iterations after it; −1
  // both where it adds no points. Each search starts from `not_before` and
  // moves it on.
  struct ArrivalStart {
    std::int64_t first = -1, line_from = -1;
    Nanos first_time = 0;  // boundary `first`'s
  };
  static ArrivalStart arrival_start(const SmState& st, Nanos request_gpu_ns, double origin, double slope, double before,
                                    std::int64_t line_iterations, std::int64_t& not_before) {
    const auto at = [&](double iterations) { return request_gpu_ns + nearest(origin + iterations * slope); };
    Nanos first_time = 0;
    const std::int64_t first = st.e.first_at_or_after(at(-before), not_before, &first_time);
    not_before = std::min(first, st.e.last());
    const std::int64_t from = st.e.first_at_or_after(at(2), not_before);
    not_before = std::min(from, st.e.last());
    if (from + line_iterations > st.e.last() || first > st.e.last()) return {};
    return {first, from, first_time};
  }

 private:
  PooledHinges(double origin, double slope, double before, double after, double sigma, Buffers& buffers)
      : origin_(origin), slope_(slope), noise2_(sigma * sigma), fit_(before, after, buffers.cells) {}
  // The boundaries of one SM from boundary i at time e (at u ≥ −before, or ≤ after
  // mirrored) to u = after (−before), in time order.
  void add_points(const Boundaries& b, const Line& line, std::int64_t i, Nanos e, Nanos request_gpu_ns, double before,
                  double after, bool forward) {
    for (; i <= b.last(); e += b.duration(i), ++i) {
      const double u = (static_cast<double>(e - request_gpu_ns) - origin_) / slope_;
      if (forward ? u > after : u < -before) break;
      fit_.add(u, line.residual(i, e));
      if (i == b.last()) break;
    }
  }

 public:
  std::size_t points() const { return fit_.points(); }
  struct Fit {
    double arrival = 0;  // ns after the request (mirrored: the departure)
    double gain = 0;     // squared residual saved against T = origin, in boundary noises²
    bool at_reach = false;  // the best T is the last the fit can reach
    double rate = 0;        // straight fits: |s|, the lag the records gained an iteration before T, ns
  };
  // The best T within (origin − before + earliest, origin + after − 1)
  // iterations, over the points of (origin − before, origin + after); each
  // of them whole cells.
  Fit hinge(double before, double after, bool quadratic, double earliest = 0.25) const {
    const HingeFit::Best b = fit_.best(before, after, quadratic, earliest);
    return {origin_ + b.T * slope_, b.saved / noise2_, b.at_reach, b.rate};
  }

 private:
  double origin_, slope_, noise2_;
  HingeFit fit_;
};

struct Scratch {
  std::vector<Boundaries::Marks> marks;  // one SM's Boundaries each
  std::vector<SmState::Fits> fits;       // and its fits
  std::vector<std::uint8_t> uneven;
  std::vector<SmState> all, sms;
  PooledHinges::Buffers hinges, wander;
};

Measurement failed(MeasurementOutcome outcome) {
  Measurement m;
  m.outcome = outcome;
  return m;
}

// One pass of the detector; `keep_later_before` per SM as remove_interrupts
// reads it, and the interrupts it took out.
Measurement detect_pass(const WindowRecords& records, Nanos request_gpu_ns, const ClockCalibration& initial,
                        const ClockCalibration& target, double initial_tol_ns, double target_tol_ns,
                        const PooledSettings& s, const std::vector<Nanos>& keep_later_before,
                        std::vector<Interrupt>& interrupts) {
  // What a window needs in memory (about 1.3 MB for a default window of 132
  // SMs), kept by the thread for its next window: freed each time, glibc
  // gave it back to the kernel and the next window paid the page faults
  // again (8 % of the detector's samples, docs/benchmarks.md). The states
  // left here refer to the last window's records; the next call clears
  // them unread.
  thread_local Scratch scratch;
  scratch.marks.resize(std::max(scratch.marks.size(), records.sms.size()));
  scratch.fits.resize(std::max(scratch.fits.size(), records.sms.size()));
  std::vector<SmState>& all = scratch.all;
  all.clear();
  all.reserve(records.sms.size());
  for (const auto& r : records.sms)
    all.emplace_back(r, s.long_iteration, scratch.marks[all.size()], scratch.uneven, scratch.fits[all.size()]);
  interrupts = remove_interrupts(all, s.global_share, keep_later_before);
  // Only while every SM still runs: once the first has finished its window,
  // the others' iterations change pace (the H200: a late "change" in the
  // last block of many windows). One block of margin.
  Nanos common_end = std::numeric_limits<Nanos>::max();
  for (const auto& st : all)
    if (st.e.last() > 0) common_end = std::min(common_end, st.e.at(st.e.last()));
  for (auto& st : all) {
    if (st.e.last() <= 0) continue;
    const std::int64_t i = st.e.first_at_or_after(common_end);
    const std::int64_t keep = std::max<std::int64_t>(0, std::min(i, st.e.last()) - Boundaries::kBlock);
    st.e.end_at(keep);
  }

  std::vector<SmState>& sms = scratch.sms;
  sms.clear();
  sms.reserve(all.size());
  int short_windows = 0, no_precheck = 0;
  for (auto& st : all) {
    const SmRecords& r = records.sms[static_cast<std::size_t>(&st - all.data())];
    const std::int64_t n = st.e.last();
    st.first = st.e.first_at_or_after(request_gpu_ns);
    const std::int64_t pre = std::min(s.precheck_iterations, st.first);
    if (pre < 2) {
      ++no_precheck;
      continue;
    }
    const std::int64_t post = n - st.first;
    if (post < 2 * s.min_confirmation_iterations) {
      ++short_windows;
      continue;
    }
    st.initial = fit_line(st.e, st.first - pre, st.first);
    st.final = st.fit(n - std::min(s.line_iterations, post / 4), n);
    st.initial_mean = initial.band_for(r.sm).iteration.mean;
    st.target_mean = target.band_for(r.sm).iteration.mean;
    sms.push_back(std::move(st));
  }
  if (sms.empty()) return failed(no_precheck > short_windows ? MeasurementOutcome::initial_not_held
                                                             : MeasurementOutcome::not_captured);
  const auto count = static_cast<double>(sms.size());

  // Which clocks the two segments run at: the pooled rates against phase 1.
  // Medians over SMs throughout: an interrupted iteration moves one SM only.
  std::vector<double> initial_offsets, target_offsets, noises, slopes, initial_slopes;
  Nanos end = std::numeric_limits<Nanos>::min();
  for (const auto& st : sms) {
    initial_offsets.push_back(st.initial.b - st.initial_mean);
    initial_slopes.push_back(st.initial.b);
    target_offsets.push_back(st.final.b - st.target_mean);
    noises.push_back(residual_sd(st.e, st.final, st.final.i0, st.e.last()));
    slopes.push_back(st.final.b);
    end = std::max(end, st.e.at(st.e.last()));
  }
  const double initial_offset = median(initial_offsets), target_offset = median(target_offsets);
  const double slope = median(slopes);
  if (std::abs(initial_offset) > initial_tol_ns) return failed(MeasurementOutcome::initial_not_held);
  // Held, not still settling: the first and second half of the segment
  // before t_s run at one rate.
  std::vector<double> settling;
  for (const auto& st : sms) {
    const std::int64_t half = (st.first - st.initial.i0) / 2;
    if (half < 2) continue;
    settling.push_back(fit_line(st.e, st.initial.i0, st.initial.i0 + half).b - fit_line(st.e, st.first - half, st.first).b);
  }
  if (rate_changes(settling, s.relevant_rate_share * initial_tol_ns, s.z))
    return failed(MeasurementOutcome::initial_not_held);
  if (std::abs(target_offset) > target_tol_ns) return failed(MeasurementOutcome::not_captured);
  // A boundary's own noise (the timer tick and jitter), from the final segments.
  const double sigma = std::max(1.0, median(noises));

  // Pass 1 finds the change against lines fitted on the window's tail;
  // pass 2 refits each final line on everything after it, so the lines are
  // exact near the change, and finds it again.
  const double relevant_target = s.relevant_rate_share * target_tol_ns;
  // What the scans for the arrival (and its tail hinge and floor, below)
  // take for a level of the ramp: beyond that, and beyond a share of the
  // whole change (in the target clock's terms: a level that share of the
  // way from the target to the initial clock). The card's own rate may move
  // by less and stay there for tens of ms: on one H100 (round 27 of
  // docs/hardware/h200.md, 1980 -> 990 at 1024 FMAs) some SMs ran up to
  // 13 ns of 4,824 slower for 60 ms after the switch, then at the target's
  // rate again; the scans took that return for the end of the switch, 60
  // ms late. The homogeneity test below keeps the stricter threshold, so a
  // window whose median SM still moves after the arrival is refused, not
  // dated early.
  const double change_ns = slope * std::abs(slope / median(initial_slopes) - 1);
  const double relevant_level = std::max(relevant_target, s.relevant_change_share * change_ns);
  // The SMs' common wander, measured where the records hold no change:
  // twice the largest that a fine scan's bins stray in the final segments.
  // A fine scan's bin counts only beyond it. Under 100 ns RMS of wander
  // (the simulator's boundary_wander_ns: six sinusoids of 0.5-8 ms) the
  // bar of two boundary noises alone let the wander's bins pass: the scans
  // settled 6-11 ms after the switch and the floor below held the arrival
  // there, with ~0.6 ms of stated uncertainty (seed 5 of
  // PairRefusedOnEveryTryMovesToACoarserIteration). With no wander it is
  // the mean of many SMs' noise, far below two boundary noises.
  const double wander_bar_ns = 2 * quiet_scan_mean(sms, slope);
  // Where either pass settles on a stray of the rate after it held the
  // target (kQuietBlocks), the window is refused: the switch ended before,
  // but the rate after it did not stay. Measured from the earlier change
  // instead, the simulator's windows under 100 ns RMS of wander came out
  // up to 1.4 target iterations early
  // (PairRefusedOnEveryTryMovesToACoarserIteration, seed 7).
  FineScanMemo memo;
  bool strayed = false;
  std::optional<Nanos> settled = pooled_departure(sms, &SmState::final, sigma, slope, relevant_level, wander_bar_ns,
                                                  request_gpu_ns, end, s.z, true, &memo, target_tol_ns, &strayed);
  if (!settled) return failed(MeasurementOutcome::initial_not_held);  // never off the final line: no change seen
  if (strayed) return failed(MeasurementOutcome::not_confirmed);
  for (auto& st : sms) {
    const std::int64_t from = st.e.first_at_or_after(*settled + static_cast<Nanos>(2 * slope));
    if (st.e.last() - from >= 2 * s.min_confirmation_iterations)
      st.final = fit_line(st.e, from, st.e.last(), st.e.last() - from > 16 * Boundaries::kBlock);
  }
  settled = pooled_departure(sms, &SmState::final, sigma, slope, relevant_level, wander_bar_ns, request_gpu_ns, end,
                             s.z, true, &memo, target_tol_ns, &strayed);
  if (!settled) return failed(MeasurementOutcome::initial_not_held);
  if (strayed) return failed(MeasurementOutcome::not_confirmed);

  // Per SM, the change point x (in iterations) that best explains the
  // residuals of the boundaries around a time: before x each lags the final
  // line by `step` per iteration still to go, after x none does. The clock
  // ratio across the change, which sets `step`, is the same on every SM:
  // pooled from the iterations just before each SM's change, it is exact.
  // Pass 1 centres every SM on the settled bin; pass 2 on the SM's own
  // change, since SMs can take it up at different moments (emulated
  // switching reads a flag at each SM's own iteration boundary).
  std::vector<std::pair<double, double>> window;  // boundary index, residual
  const auto at = [&](double after_request) -> Nanos { return request_gpu_ns + nearest(after_request); };
  const auto centre = [&](const SmState& st, bool own) {
    return own ? at(st.change_ns) : *settled;
  };
  std::vector<SmState*> changed;
  std::int64_t points = s.points_per_sm;
  bool stalled = false, in_step = false;
  double open_stall = 0;  // iterations (place_after_stall)
  double least_stall_ns = 0;
  double missed_stall_ns = 0;
  // SMs closer than this run in step (sm_spread_ns): ten ticks of the
  // H200's timer, above its in-step windows' 0 and 256 ns. The simulator
  // starts its SMs up to 1 µs apart: on twelve seeds of EveryRampShape,
  // every shape, no window is in step.
  constexpr double kInStepNs = 320;
  double last_ratio = 1;  // before the change over after it, as the hinge used it
  std::vector<std::int64_t> last_before;  // by SM (pooled_ratio, below)
  for (const bool own : {false, true}) {
    // The iteration length over `span` iterations ending `gap` before the centre, over the final one.
    // Each SM's last boundary an iteration before the centre, searched for once a pass.
    last_before.clear();
    for (const auto& st : sms)
      last_before.push_back(own && st.off < 0 ? -1 : st.e.first_at_or_after(centre(st, own) - nearest(slope)) - 1);
    const auto pooled_ratio = [&](std::int64_t gap, std::int64_t span) {
      std::vector<double> ratios;
      for (const auto& st : sms) {
        if (own && st.off < 0) continue;
        const std::int64_t to = last_before[static_cast<std::size_t>(&st - sms.data())] - gap;
        const std::int64_t from = to - span;
        if (from < st.initial.i0 || to > st.e.last()) continue;  // before t_s is the initial clock
        ratios.push_back(static_cast<double>(st.e.at(to) - st.e.at(from)) / static_cast<double>(span) / st.final.b);
      }
      return median(ratios);
    };
    // A ramp step shorter than the fitted stretch would bend the hinge: then
    // only the last few iterations before the change are used.
    const std::int64_t half = s.points_per_sm / 4;
    const double near = pooled_ratio(0, half), far = pooled_ratio(half, half);
    if (std::isnan(near)) return failed(MeasurementOutcome::not_confirmed);
    points = std::isnan(far) || std::abs(near - far) * slope > sigma ? half : s.points_per_sm;
    const double ratio = points == half ? near : pooled_ratio(0, points);
    last_ratio = ratio;
    changed.clear();
    for (auto& st : sms) {
      if (own && st.off < 0) continue;
      const Nanos c = centre(st, own);
      st.off = -1;
      // The line of the iterations just after the change, not the whole
      // final segment's: the boundaries' slow wander stays out of the fit.
      const std::int64_t after_from = st.e.first_at_or_after(c + nearest(2 * slope));
      if (after_from + 2 * s.min_confirmation_iterations > st.e.last()) continue;
      const Line local = st.fit(after_from, after_from + 2 * s.min_confirmation_iterations);
      const double step = local.b * (1 - ratio);
      const double before = local.b * ratio;
      if (std::abs(step) <= sigma / 4) continue;  // this SM cannot place it
      const std::int64_t from =
          std::max(st.initial.i0, st.e.first_at_or_after(c - nearest(static_cast<double>(points + 1) * before)));
      const std::int64_t to = std::min(st.e.last(), st.e.first_at_or_after(c + nearest(3 * slope), after_from));
      if (to <= from) continue;
      window.clear();
      Nanos t = st.e.at(from);
      for (std::int64_t i = from; i <= to; ++i) {
        window.emplace_back(static_cast<double>(i), local.residual(i, t));
        if (i < st.e.last()) t += st.e.duration(i);
      }
      std::size_t used = 0;
      const double best_x = best_change_point(window, step, used);
      const StallFit stall = best_change_with_stall(window, step);
      st.local = local;
      st.step = step;
      st.stall_u = stall.u, st.x_lo = stall.x_lo, st.x_hi = stall.x_hi;
      st.change_ns = static_cast<double>(local.t0 - request_gpu_ns) + local.a +
                     local.b * (best_x - static_cast<double>(local.i0));
      st.change_sd_ns = std::min(local.b, sigma * local.b / std::abs(step) /
                                              std::sqrt(static_cast<double>(std::max<std::size_t>(1, used))));
      st.off = static_cast<std::int64_t>(best_x);
      changed.push_back(&st);
    }
    in_step = !changed.empty() && sm_spread_ns(changed, slope) < kInStepNs;
    stalled = place_after_stall(changed, sigma, request_gpu_ns, in_step, open_stall, least_stall_ns, missed_stall_ns);
  }
  if (changed.empty()) return failed(MeasurementOutcome::not_confirmed);
  std::sort(changed.begin(), changed.end(),
            [](const SmState* a, const SmState* b) { return a->change_ns < b->change_ns; });
  // Every SM runs at the target from the latest SM's change on: the
  // latest change point sets the arrival, less what picking the latest of
  // noisy change points adds where all SMs changed together; never earlier
  // than the median SM. A latest one that no other SM comes near (within
  // four of its own sd) is one SM's misfit, not the clock: the next is used.
  std::vector<double> own_sd;
  for (const auto* st : changed) own_sd.push_back(st->change_sd_ns);
  const double noise = median(own_sd);
  const SmState* pick = changed.back();
  const bool alone =
      changed.size() > 2 && pick->change_ns - changed[changed.size() - 2]->change_ns > 4 * std::max(noise, pick->change_sd_ns);
  if (alone) pick = changed[changed.size() - 2];
  const double selection_bias = noise * normal_quantile(1 - 1.0 / static_cast<double>(changed.size() + 1));
  const double median_sm = changed[changed.size() / 2]->change_ns;
  // Where one SM places its change no better than to a quarter iteration (a
  // last step small against a boundary's noise), the latest SM is noise: the
  // median SM and the pooled hinges below date the change.
  const bool imprecise = noise > slope / 4;
  const double per_sm = std::max(median_sm, pick->change_ns - selection_bias);
  // A floor: the pooled scan's latest significant bin still lagged the final
  // line, so the clock reached the target after that bin began (an
  // overshoot's mixed iterations can pull every SM's hinge before it).
  const double floor = static_cast<double>(*settled - request_gpu_ns) - slope;
  // Imprecise SMs still bound it by their median; SMs none of which could
  // place the change within an iteration (each σ at its cap) do not.
  const bool unplaced = noise >= 0.95 * slope;
  const double estimate = imprecise ? median_sm : per_sm;
  // Where the records between the SMs' estimate and the floor ran within
  // half a percent of the change of the target's rate (the median SM's),
  // the scan's late bin is the records' own slow drift, not a level of the
  // ramp, and the floor does not bind: on one H200 the first 15 target
  // iterations after an emulated switch ran 3-5 ns long (of 9,287), their
  // lag reached the scan's bar 4.6 iterations after the switch, and the
  // floor dated it 33 us late where the SMs placed it within 0.3 us (round
  // 23 of docs/hardware/h200.md, base-c4096s43/w14).
  // Where the floor lies within an iteration of the estimate, that stretch
  // holds no whole iteration: the records from the SMs' estimate to the end
  // of the scan's late bin are read instead. Left unread, the floor bound:
  // on one H100 every SM placed its change 0.4-0.6 us before the in-effect
  // time, the first target iteration after the emulated switch lagged the
  // final line by a few ns, its bin ended 1.2 iterations on, and the floor
  // dated the switch 3.6 us late (round 43 of docs/hardware/h200.md,
  // RealH100WindowWithAFloorWithinAnIteration).
  const bool floor_near = floor < estimate + slope;
  const auto drift_only = [&] {
    std::vector<double> rates;
    for (const SmState* st : changed) {
      const std::int64_t from = st->e.first_at_or_after(at(floor_near ? estimate : estimate + slope));
      const std::int64_t to = st->e.first_at_or_after(at(floor_near ? floor + slope : floor));
      if (to - from < (floor_near ? 1 : 2) || to > st->e.last()) continue;
      rates.push_back(static_cast<double>(st->e.at(to) - st->e.at(from)) / static_cast<double>(to - from) - st->final.b);
    }
    return !rates.empty() && std::abs(median(rates)) < relevant_level;
  };
  double arrival = unplaced ? floor : (floor > estimate && drift_only() ? estimate : std::max(floor, estimate));
  // Pooled hinges then move the arrival later while they find the clock
  // still off the target there, each round centred on the last, the lines
  // refitted after it:
  // - a curved one over a short stretch, where it explains the records
  //   clearly better: the SMs' hinges fit whole iterations, so where the
  //   last level lasts only a few (coarse iterations) they see the steeper
  //   step before it and place the change early;
  // - a straight one over a long stretch where the SMs are imprecise, but
  //   not after a stall they placed: it does not model the stall's jump.
  // Where the SMs' estimate is later it stands: a pooled hinge dates the
  // mean of GPCs that follow the clock a few µs apart, the latest SM the
  // last of them. "Clearly": by 8 boundary noises² per SM, or by what the
  // records' own wander says once it is asked for (below). A real
  // change moves every SM; on the H200 the iterations after an emulated
  // switch drift slightly, and a bar of z² for all SMs together let that
  // pull the curved hinge 16 iterations late (up to 2.3 per SM there, round
  // 9 of docs/hardware/h200.md). The last level of a linear ramp at 4096
  // FMAs gives 9 to 30 per SM on the simulator; two clock steps apart at
  // 2048 FMAs 0.6 to 13 (rtx6000, 930 <-> 960 MHz). Where the SMs are
  // imprecise the last step is small on every SM by definition, and z² for
  // all of them together is the bar until the wander is asked for.
  // Apart: the wander's hinges are built while a round's are still read.
  // SMs in step sample R at the same moments, and on the H200 their
  // iterations there move together (the first target iterations of every
  // SM 6 to 12 ns long, the rest within 5 ns of each other): their points
  // tell no more than one SM's, so a hinge's gain is counted in one SM's
  // boundary noise². Counted in all of them, the H200's in-step windows
  // marched the arrival two iterations a round, 3 to 22 us late (round 20).
  const double hinge_sigma = in_step ? sigma * std::sqrt(static_cast<double>(changed.size())) : sigma;
  PooledHinges::Buffers& hinge_buffers = scratch.hinges;
  PooledHinges::Buffers& wander_buffers = scratch.wander;
  // Where that wander is above two boundary noises, the hinges' lines span
  // no more than the fine scans' (half a millisecond, at least 32
  // iterations): 200 iterations of 17.6 us (3.5 ms) under 50 ns RMS of
  // wander bent them so that the curved hinge marched an arrival four
  // iterations late (80 us, 50 stated; 1980->1890, seed 6). Not elsewhere:
  // the shorter lines put 17 of 840 measurements of the stall shape
  // (EveryRampShape, seeds 97-137) beyond three times their uncertainty,
  // against 15.
  const bool wandering = wander_bar_ns > 2 * sigma;
  const std::int64_t hinge_line = wandering ? std::min(2 * s.min_confirmation_iterations, reference_length(slope))
                                            : 2 * s.min_confirmation_iterations;
  constexpr int kRounds = 8;
  constexpr double kShort = 1.5, kLong = 8, kAhead = 4;
  constexpr double kClearPerSm = 8;
  const double cap = kClearPerSm * static_cast<double>(changed.size());
  double clear = imprecise ? s.z * s.z : cap;
  // The wander: the largest gain the same curved hinge finds where the
  // records hold no change, at eight places 16 to 352 iterations after the
  // first arrival. Four times it, at least z², is the bar, for imprecise SMs
  // too: there a wander they cannot tell from a last small step let z² march
  // the arrival two iterations a round (12 ns of simulated wander: 142.7 us
  // late). Asked for where a hinge's gain lies between z² and 8 per SM, and
  // above 8 where the hinge's best time is the last it can reach (it
  // favours a time beyond what it sees: a change further on, or the
  // wander's curve): where the wander's own gains reach 2 per SM, a bar of
  // 8 let it march the arrival two iterations a round, 94 and 152 us late on
  // two of 40 seeds (WanderingBoundariesAreNoChange, seeds 33 and 45).
  // Asking for it above 8 everywhere did the same, but cost 12 % more host
  // time on the side-by-side benchmark's windows (docs/benchmarks.md). On
  // the 93 dumped H200 windows of rounds 12 and 13 the wander's gains are 15
  // to 4,600, and every answer stays as it was; on the simulator's linear
  // ramps the earliest error goes from −3.49 to −1.64 target iterations
  // (EveryRampShape).
  constexpr int kWanderPlaces = 8;
  constexpr double kWanderFactor = 4;
  constexpr double kTailEarliest = 1.0 / 64;  // the arrival's tail hinge (below)
  const double first_arrival = arrival;
  // The wander's largest gains, for the curved hinge and the tail's (below),
  // read once at the same places; -1 where the records end before them all.
  struct WanderGains {
    double curved = -1, tail = -1;
  };
  std::optional<WanderGains> wander;
  std::vector<std::vector<PooledHinges::SmLine>> wander_lines;  // by place, then SM
  const auto wander_gains = [&]() -> const WanderGains& {
    if (wander) return *wander;
    wander.emplace();
    // Each SM's lines and first boundaries for every place first, so that
    // its searches move on from the last place's.
    wander_lines.resize(kWanderPlaces);
    for (auto& place : wander_lines) place.resize(changed.size());
    // Not SmState::fit: these lines are read once, and would push out the
    // rounds' own; the places' lines overlap, and are fitted together.
    for (std::size_t k = 0; k < changed.size(); ++k) {
      std::int64_t not_before = 0;
      std::array<std::int64_t, kWanderPlaces> from;
      std::array<int, kWanderPlaces> place;
      std::array<Line, kWanderPlaces> lines;
      std::size_t count = 0;
      for (int j = 0; j < kWanderPlaces; ++j) {
        const PooledHinges::ArrivalStart a = PooledHinges::arrival_start(
            *changed[k], request_gpu_ns, first_arrival + (16 + 48 * j) * slope, slope, kShort, hinge_line, not_before);
        wander_lines[j][k].first = a.first;
        wander_lines[j][k].first_time = a.first_time;
        if (a.first >= 0) from[count] = a.line_from, place[count++] = j;
      }
      fit_overlapping_lines(changed[k]->e, from, count, hinge_line, lines);
      for (std::size_t c = 0; c < count; ++c) wander_lines[place[c]][k].line = lines[c];
    }
    for (int j = 0; j < kWanderPlaces; ++j) {
      const PooledHinges quiet(changed, wander_lines[j], request_gpu_ns, first_arrival + (16 + 48 * j) * slope, slope,
                               kShort, kAhead, hinge_sigma, wander_buffers);
      if (quiet.points() < 3 * changed.size()) continue;  // the records end before it
      wander->curved = std::max(wander->curved, quiet.hinge(kShort, kAhead - 1, true).gain);
      wander->tail = std::max(wander->tail, quiet.hinge(0, kAhead, false, kTailEarliest).gain);
    }
    return *wander;
  };
  bool bar_from_wander = false;
  const auto bar_for = [&](const PooledHinges::Fit& fit) {
    const double gain = fit.gain;
    if (gain <= s.z * s.z || (gain > cap && !fit.at_reach) || bar_from_wander) return clear;
    bar_from_wander = true;
    if (wander_gains().curved >= 0) clear = std::max(kWanderFactor * wander_gains().curved, s.z * s.z);
    return clear;
  };
  // The latest arrival a curved hinge proposed where its gain stayed under
  // the bar: the records favour that later time, not clearly.
  // On a linear ramp two steps apart the last level lags by less than a
  // boundary's noise; before the wander's bar such arrivals were dated up to
  // 3.5 iterations early with a tenth of that as their uncertainty
  // (EveryRampShape: 44 of 276 beyond three times it; with this term none).
  double proposed = 0;
  // Whether the straight hinge over a long stretch runs (below): the
  // others read from kShort iterations before the arrival on, and the
  // hinges collect only the points they read.
  const bool long_hinge = imprecise && (!stalled || unplaced);
  for (int round = 0; round < kRounds; ++round) {
    const PooledHinges hinges(changed, request_gpu_ns, arrival, slope, long_hinge ? kLong : kShort, kAhead,
                              hinge_sigma, hinge_line, hinge_buffers);
    double next = arrival;
    const PooledHinges::Fit curved = hinges.hinge(kShort, kAhead - 1, true);
    // Where its best time is the last it can reach (two iterations on), the
    // change lies beyond what it saw, not there: it moves the arrival one
    // iteration, and the next round, which sees further, dates it. Moved
    // to the reach, linear ramps (32 levels about 1 MHz apart) were dated
    // up to 0.7 iteration late (h200 seed 71 1200 -> 1170 at 16384 FMAs,
    // EveryRampShape: per-pair median 23.9 us against a bound of 22.5; now
    // 19.6); half an iteration a round marched them later still.
    if (curved.gain > bar_for(curved))
      next = std::max(next, curved.at_reach ? std::min(curved.arrival, arrival + slope) : curved.arrival);
    else
      proposed = std::max(proposed, curved.arrival);
    // The arrival's own tail: a straight hinge over the points after it
    // alone. Where a ramp's last level lags far less than the one before it
    // (an overshoot settling 0.05-0.12 % off the target after a level
    // 0.8 % off: close pairs at coarse iterations), the curved hinge, which
    // spans both, dates the end of the steeper one, and the change most of
    // the last level early (rtx6000 1920 -> 1950 at 65536 FMAs: up to
    // 154 us, beyond one iteration; EveryRampShape, seed 137). Its bar: four
    // times the same hinge's largest gain where the records hold no change,
    // at least z²; its best time short of the last it can reach (there the
    // lag goes on beyond what it sees: the wander of
    // WanderingBoundariesAreNoChange, 12 to 17 ns an iteration, marched the
    // arrivals three iterations a round, up to 155 us late); and the lag it
    // finds growing faster than the relevance threshold (a rate change
    // below it is none, as for the segments' rates; no test's window
    // reaches this: without it EveryRampShape on twelve seeds and the
    // wander test print the same rows). It moves the arrival only as read
    // from one iteration after the arrival on: each SM's first iterations
    // after its own change can run a few ns long for reasons of the SM's
    // own (the emulated switch's code path: on one H100, 10-20 ns in the
    // first one or two of 9.3 and 18.4 us; round 22 of
    // docs/hardware/h200.md), and where the SMs' phases spread over the
    // iteration, those excesses spread over the iteration after the
    // arrival, which a hinge in time reads as a lag still closing: read
    // from the arrival on, it dated 104 of the 112 dumped staggered windows
    // there 2.3-50 us (up to 2.7 target iterations) late; from one
    // iteration on, none. A lag that still shows an iteration on is the
    // clock's; one that ends sooner leaves the arrival less than an
    // iteration early, within its bound. The same hinge from the arrival on
    // then only widens the stated uncertainty (`proposed`): the simulator's
    // stalls keep their lag on the few SMs at the arrival, and without it
    // the stall shape had 25 of 840 beyond three times their uncertainty
    // (EveryRampShape, seeds 97-137; with it 15, from the arrival on 14).
    // The bar of either is the wander's largest gain for the hinge from
    // the arrival on, the larger: from one iteration on at the quiet places
    // too, it let three more windows of two machines through, 23-33 us late
    // (rounds 22 and 23). One window of round 23 that the hinge from the
    // arrival on left at +0.8 us this one dates +18 us (1.9 iterations,
    // 20 us stated; `warmup/w17` of that round's kept windows). Four
    // clustered 1980 -> 990 windows of one H200 that the hinge from the
    // arrival on moved by -0.2 to +1.9 us now stand at -0.5 to -0.4 us
    // after their in-effect time (RealH200ChainedWindows).
    // (z² before the wander: its hinges are built only where they can matter.)
    const auto clear_tail = [&](const PooledHinges::Fit& tail) {
      return !tail.at_reach && tail.rate > relevant_level && tail.gain > s.z * s.z && wander_gains().tail >= 0 &&
             tail.gain > std::max(kWanderFactor * wander_gains().tail, s.z * s.z);
    };
    const PooledHinges::Fit tail = hinges.hinge(-1, kAhead, false, kTailEarliest);
    if (clear_tail(tail)) {
      next = std::max(next, tail.arrival);
    } else {
      const PooledHinges::Fit near = hinges.hinge(0, kAhead, false, kTailEarliest);
      if (clear_tail(near)) proposed = std::max(proposed, near.arrival);
    }
    if (long_hinge) next = std::max(next, hinges.hinge(kLong, kAhead, false).arrival);
    const bool moved = next > arrival + slope / 8;
    arrival = next;
    if (!moved) break;
  }
  const double unsure = std::max(0.0, proposed - arrival);
  const Nanos arrival_at = request_gpu_ns + nearest(arrival);

  // The segment after the arrival: long enough on every SM, and homogeneous
  // (its rate just after the arrival equals its rate at the end, across SMs).
  std::vector<double> slope_changes;
  for (const auto& st : sms) {
    const std::int64_t a = st.e.first_at_or_after(std::max(arrival_at, st.off >= 0 ? at(st.change_ns) : arrival_at) + 1);
    const std::int64_t left = st.e.last() - a;
    if (left < s.min_confirmation_iterations) return failed(MeasurementOutcome::not_captured);
    const std::int64_t len = std::min(s.line_iterations, left / 2);
    const Line early = st.fit(a + 1, a + len);
    const Line late = st.fit(st.e.last() - len, st.e.last());
    slope_changes.push_back(early.b - late.b);
  }
  if (rate_changes(slope_changes, s.relevant_rate_share * target_tol_ns, s.z))
    return failed(MeasurementOutcome::not_confirmed);

  // Departure: when the records first left their SMs' initial lines (the
  // earliest significant bin of a pooled scan from t_s); then per SM a
  // mirrored hinge fit places it; the median SM sets it.
  const double initial_slope = [&] {
    double b = 0;
    for (const auto& st : sms) b += st.initial.b / count;
    return b;
  }();
  // Mirrored: after the departure each boundary leads or lags the initial
  // line by the first step's rate per iteration since; before it none does.
  const Nanos left_at =
      pooled_departure(sms, &SmState::initial, sigma, initial_slope, s.relevant_rate_share * initial_tol_ns,
                       wander_bar_ns, request_gpu_ns, arrival_at, s.z, false)
          .value_or(std::max<Nanos>(request_gpu_ns, arrival_at - nearest(2.0 * Boundaries::kBlock * initial_slope)));
  const auto since_left = [&](double iterations) { return left_at + nearest(iterations * initial_slope); };
  std::vector<double> after_ratios;
  // Each SM's first boundary from three iterations before it left, for its
  // hinge below; the searches after it gallop on from there.
  std::vector<std::int64_t> left_from;
  for (const auto& st : sms) {
    left_from.push_back(st.e.first_at_or_after(since_left(-3)));
    const std::int64_t from = st.e.first_at_or_after(since_left(2), left_from.back());
    const std::int64_t to = from + s.points_per_sm;
    if (from < st.first || to > st.e.last()) continue;
    after_ratios.push_back(static_cast<double>(st.e.at(to) - st.e.at(from)) / static_cast<double>(to - from) / st.initial.b);
  }
  const double after_ratio = after_ratios.empty() ? 1.0 : median(after_ratios);
  std::vector<double> departures;
  for (auto& st : sms) {
    st.departure_ns = arrival;
    const double step = st.initial.b * (after_ratio - 1);
    const std::int64_t first_after = left_from[static_cast<std::size_t>(&st - sms.data())];
    const std::int64_t from = std::max(st.first, first_after);
    const std::int64_t to = std::min(
        st.e.last(), st.e.first_at_or_after(since_left(static_cast<double>(s.points_per_sm + 1)), first_after));
    if (std::abs(step) > sigma / 4 && to > from) {
      window.clear();
      Nanos t = st.e.at(to);
      for (std::int64_t i = to; i >= from; --i) {  // mirrored: index -i, ascending
        window.emplace_back(-static_cast<double>(i), -st.initial.residual(i, t));
        if (i > 0) t -= st.e.duration(i - 1);
      }
      std::size_t used = 0;
      const double x = -best_change_point(window, -step, used);
      st.departure_ns = static_cast<double>(st.initial.t0 - request_gpu_ns) + st.initial.a +
                        st.initial.b * (x - static_cast<double>(st.initial.i0));
    }
    departures.push_back(std::min(st.departure_ns, arrival));
  }
  // Then pooled, as the arrival, mirrored in time: each SM's hinge assumes
  // one rate from its departure on, where a ramp's first levels lag less
  // than the later ones its ratio was taken over (a linear ramp's lag
  // starts as a parabola), and dated the departure late: the transition
  // of linear ramps was short by 1.5 to 6 slower iterations (EveryRampShape,
  // docs/methodology.md). A curved hinge over the SMs' boundaries around it
  // moves it while it explains the records clearly better.
  double departure = median(departures);
  std::vector<SmState*> every_sm;
  for (auto& st : sms) every_sm.push_back(&st);
  constexpr double kDepartureReach = 4;  // iterations either side a round reads
  for (int round = 0; round < kRounds; ++round) {
    const PooledHinges hinges(every_sm, request_gpu_ns, departure, initial_slope, kDepartureReach, kDepartureReach + 1,
                              hinge_sigma, 2 * s.min_confirmation_iterations, hinge_buffers, PooledHinges::Side::departure);
    if (hinges.points() < 3 * every_sm.size()) break;
    const PooledHinges::Fit fit = hinges.hinge(kDepartureReach, kDepartureReach + 1, true);
    if (fit.gain <= s.z * s.z) break;
    const double next = std::clamp(fit.arrival, 0.0, arrival);
    const bool moved = std::abs(next - departure) > initial_slope / 8;
    departure = next;
    if (!moved) break;
  }

  Measurement m;
  m.outcome = MeasurementOutcome::accepted;
  m.switching_ms = arrival / 1e6;
  m.transition_ms = std::max(0.0, arrival - departure) / 1e6;
  m.accepted_sms = static_cast<int>(changed.size());
  m.max_sm = pick->sm;
  m.sm_spread_ms = (changed.back()->change_ns - changed.front()->change_ns) / 1e6;
  // Misfits. SMs may take a change up to an iteration of the initial clock
  // apart (each at its own boundary) and GPCs a few µs apart; beyond two
  // iterations of the slower clock and 5 µs they disagree. Past the target:
  // just before the change the iterations were on the far side of the final
  // length from the initial one, by more than the relevance threshold.
  // A stall, or the latest SMs' changes apart from the rest, is a misfit
  // only from kMaterialNs on. On the lent H100s every emulated switch's own
  // code path halted the SMs' mixed iterations together by 50-90 ns, which
  // the detector places as a stall, and the latest SM often stood 14-34 ns
  // (four of its own noises) from the next: with the placement's bars
  // alone, 10-33 % of the 1980 -> 990 windows at 1024 FMAs were flagged a
  // stall and a fifth of the 990 -> 1980 ones at 4096 FMAs SMs that
  // disagree (rounds 33, 34 and 38 of docs/hardware/h200.md), none of which
  // a user should send us. Below it a misfit moves the answer by less than
  // the timer sync's own uncertainty (1.1-1.4 us there). The latest SMs are
  // set apart where the latest changed that much, and four of the SMs'
  // own noises, after the SM a tenth from the end: fewer SMs than a GPC
  // holds (8 GPCs on the Hopper cards; their own skew moves whole GPCs).
  // In 172 emulated windows at one warp per SM that gap was at most 555 ns;
  // in the ten dumped windows at eight warps, which a few SMs dated 1.6-58
  // us late, 1.0-46 us (round 36). Without the noises, a quarter of the
  // simulator's linear ramps, whose SMs each place the change only to a
  // few µs, were flagged.
  constexpr double kMaterialNs = 1'000;
  const double slower_ns = std::max(initial_slope, slope);
  if (stalled && least_stall_ns >= kMaterialNs) m.misfits |= static_cast<unsigned>(Misfit::stall);
  const double tenth_from_end = changed[changed.size() - 1 - changed.size() / 10]->change_ns;
  const bool apart = changed.back()->change_ns - tenth_from_end >= std::max(kMaterialNs, 4 * noise);
  // And where the SMs' stall bounds miss each other by kMaterialNs or more
  // (place_after_stall): some SMs halted at the change while others ran on.
  // On one H200 half the SMs (pairs of neighbours) ran one iteration 5-32
  // us long at four emulated switches, and the detector dated them after
  // the halts (where the latency's truth lies: the SMs stay at the target
  // only from then), 13-37 us after the in-effect time, one without a flag
  // (round 51 of docs/hardware/h200.md). It flags
  // no other of 256 real windows (rounds 12-51) nor of the 216 simulated
  // ones of same_answers.cpp, every ramp shape (docs/benchmarks.md).
  if (apart || m.sm_spread_ms * 1e6 > 2 * slower_ns + 5'000 || missed_stall_ns >= kMaterialNs)
    m.misfits |= static_cast<unsigned>(Misfit::sms_disagree);
  const double initial_ratio = initial_slope / slope;
  if ((last_ratio - 1) * (initial_ratio - 1) < 0 && std::abs(last_ratio - 1) * slope > relevant_target)
    m.misfits |= static_cast<unsigned>(Misfit::non_monotone);
  // The latest SM's own precision, what the correction for picking it may
  // miss, half of what the pooled hinge moved the arrival, and what a
  // curved hinge would have moved it further.
  // And where the wander is above two boundary noises, the wander: the
  // lines each SM's change is fitted against may be off by the scans' bar,
  // which moves the change by it over the step an iteration. Without it, 3
  // of 120 measurements under 50 ns RMS of wander lay beyond three times
  // their uncertainty (0.5 iterations late, 0.12 stated); with it none of
  // 240 under 50 and 100 ns (seeds 3-8, docs/methodology.md).
  const double wander_term = wandering && std::abs(1 - last_ratio) > 0 ? wander_bar_ns / std::abs(1 - last_ratio) : 0;
  // And a stall the SMs' bounds leave open (at most an iteration).
  const double open_stall_term = std::min(1.0, open_stall) * slope;
  // And where the latest SMs stand apart from the rest (the misfit above),
  // how far the arrival lies after the SM a tenth from the end: the records
  // cannot tell a few SMs that changed late from a few that misplaced their
  // change. At eight warps per SM on an H100, six such windows came out
  // 1.6-5.4 us late stating 0.03-0.41 us (round 36 of
  // docs/hardware/h200.md).
  const double apart_term = apart ? std::max(0.0, arrival - tenth_from_end) : 0;
  m.uncertainty_us = std::hypot(std::hypot(pick->change_sd_ns, selection_bias / 2, (arrival - per_sm) / 2),
                                std::hypot(unsure, open_stall_term, apart_term), wander_term) /
                     1e3;
  for (const auto& st : sms) {
    SmDetection d;
    d.sm = st.sm;
    d.outcome = st.off >= 0 ? SmOutcome::accepted : SmOutcome::no_candidate;
    d.arrival_ns = request_gpu_ns + nearest(st.change_ns);
    d.departure_ns = request_gpu_ns + nearest(st.departure_ns);
    m.per_sm.push_back(d);
  }
  return m;
}

}  // namespace

Measurement detect_switch_pooled(const WindowRecords& records, Nanos request_gpu_ns,
                                 const ClockCalibration& initial, const ClockCalibration& target,
                                 double initial_tol_ns, double target_tol_ns, const PooledSettings& s) {
  // Which side of an interrupt keeps its time depends on where the SM's
  // change lies, known only after a pass: the first keeps the later side of
  // interrupts before the request. Where an SM was interrupted after the
  // request and its change came more than two target iterations after the
  // interrupted one (as the first pass dated it: taking the excess out of
  // the later side dates the change early by it, never before the
  // interrupt began), a second pass keeps that SM's later side, so its own
  // change keeps its time. Not where the long iteration holds the change
  // itself, as a stall's does on the SMs that saw it alone.
  std::vector<Nanos> keep_later_before(records.sms.size(), request_gpu_ns);
  std::vector<Interrupt> interrupts;
  Measurement m = detect_pass(records, request_gpu_ns, initial, target, initial_tol_ns, target_tol_ns, s,
                              keep_later_before, interrupts);
  if (m.outcome != MeasurementOutcome::accepted) return m;
  std::map<int, Nanos> change_of;  // SM id: its change, as this pass dated it
  for (const SmDetection& d : m.per_sm)
    if (d.outcome == SmOutcome::accepted) change_of[d.sm] = d.arrival_ns;
  const auto target_iteration_ns = nearest(target.pooled.iteration.mean);
  bool again = false;
  for (const Interrupt& i : interrupts) {
    const auto change = change_of.find(records.sms[i.sm].sm);
    if (i.start < request_gpu_ns || change == change_of.end() ||
        i.start + i.like + 2 * target_iteration_ns >= change->second)
      continue;
    keep_later_before[i.sm] = change->second;
    again = true;
  }
  if (!again) return m;
  return detect_pass(records, request_gpu_ns, initial, target, initial_tol_ns, target_tol_ns, s, keep_later_before,
                     interrupts);
}

}  // namespace latest
