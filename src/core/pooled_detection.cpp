#include "core/pooled_detection.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <vector>

#include "core/pooled/boundaries.hpp"
#include "core/pooled/change_point.hpp"
#include "core/pooled/hinge_fit.hpp"
#include "core/pooled/interrupts.hpp"
#include "core/pooled/line_fit.hpp"
#include "core/pooled/pooled_hinges.hpp"
#include "core/pooled/pooled_scan.hpp"
#include "core/pooled/segment_scan.hpp"
#include "core/pooled/sm_state.hpp"
#include "core/pooled/stall.hpp"
#include "core/statistics.hpp"

namespace latest {
namespace {

using namespace pooled;

// What a window needs in memory (about 1.3 MB for a default window of 132
// SMs), kept by the thread for its next window: freed each time, the next
// window paid the page faults again. The states left here refer to the last
// window's records; the next pass clears them unread.
struct Scratch {
  std::vector<Boundaries::Marks> marks;  // one SM's Boundaries each
  std::vector<SmState::Fits> fits;       // and its fits
  std::vector<std::uint8_t> uneven;
  std::vector<SmState> all, sms;
  PooledHinges::Buffers hinges, wander;
};

// A step that ends the pass early says why; an empty one lets it go on.
using Refusal = std::optional<MeasurementOutcome>;

Measurement failed(MeasurementOutcome outcome) {
  Measurement m;
  m.outcome = outcome;
  return m;
}

// The largest gains the curved hinge and the tail's find where the records
// hold no change (the wander); -1 where the records end before them all.
struct WanderGains {
  double curved = -1, tail = -1;
};

// One pass of the detector over a window, in the steps of
// docs/methodology.md ("Pooled detector"):
//  1. segment_sms: per SM, the boundaries (interrupts out), the initial
//     segment before t_s and the final one at the window's end;
//  2. check_segments: the initial clock held before t_s, the target reached
//     at the end, and a boundary's own noise;
//  3. settle: a pooled scan for where the records last left the final line;
//  4. place_changes: per SM, the change point inside its mixed iteration,
//     and a stall before it that all SMs bound together;
//  5. estimate_arrival: the latest SM's change, with a floor from step 3;
//  6. refine_arrival: pooled hinges move it later while the clock is still
//     off the target there;
//  7. confirm: the segment after the arrival homogeneous across SMs;
//  8. date_departure: when the records first left the initial line;
//  9. result: misfits, stated uncertainty and the per-SM detections.
class DetectPass {
 public:
  DetectPass(const WindowRecords& records, Nanos request_gpu_ns, const ClockCalibration& initial,
             const ClockCalibration& target, double initial_tol_ns, double target_tol_ns, const PooledSettings& s,
             Scratch& scratch)
      : records_(records), request_(request_gpu_ns), initial_cal_(initial), target_cal_(target),
        initial_tol_ns_(initial_tol_ns), target_tol_ns_(target_tol_ns), s_(s), scratch_(scratch), sms_(scratch.sms) {}

  // `keep_later_before` per SM as remove_interrupts reads it; `interrupts`
  // gets the interrupts taken out.
  Measurement run(const std::vector<Nanos>& keep_later_before, std::vector<Interrupt>& interrupts) {
    if (Refusal r = segment_sms(keep_later_before, interrupts)) return failed(*r);
    if (Refusal r = check_segments()) return failed(*r);
    if (Refusal r = settle()) return failed(*r);
    if (Refusal r = place_changes()) return failed(*r);
    estimate_arrival();
    refine_arrival();
    if (Refusal r = confirm()) return failed(*r);
    return result(date_departure());
  }

 private:
  Nanos at(double after_request) const { return request_ + nearest(after_request); }

  // Step 1.
  Refusal segment_sms(const std::vector<Nanos>& keep_later_before, std::vector<Interrupt>& interrupts) {
    scratch_.marks.resize(std::max(scratch_.marks.size(), records_.sms.size()));
    scratch_.fits.resize(std::max(scratch_.fits.size(), records_.sms.size()));
    std::vector<SmState>& all = scratch_.all;
    all.clear();
    all.reserve(records_.sms.size());
    for (const auto& r : records_.sms)
      all.emplace_back(r, s_.long_iteration, scratch_.marks[all.size()], scratch_.uneven, scratch_.fits[all.size()]);
    interrupts = remove_interrupts(all, s_.global_share, keep_later_before);
    // Only while every SM still runs: once the first has finished its
    // window, the others' iterations change pace. One block of margin.
    Nanos common_end = std::numeric_limits<Nanos>::max();
    for (const auto& st : all)
      if (st.e.last() > 0) common_end = std::min(common_end, st.e.at(st.e.last()));
    for (auto& st : all) {
      if (st.e.last() <= 0) continue;
      const std::int64_t i = st.e.first_at_or_after(common_end);
      const std::int64_t keep = std::max<std::int64_t>(0, std::min(i, st.e.last()) - Boundaries::kBlock);
      st.e.end_at(keep);
    }
    sms_.clear();
    sms_.reserve(all.size());
    int short_windows = 0, no_precheck = 0;
    for (auto& st : all) {
      const SmRecords& r = records_.sms[static_cast<std::size_t>(&st - all.data())];
      const std::int64_t n = st.e.last();
      st.first = st.e.first_at_or_after(request_);
      const std::int64_t pre = std::min(s_.precheck_iterations, st.first);
      if (pre < 2) {
        ++no_precheck;
        continue;
      }
      const std::int64_t post = n - st.first;
      if (post < 2 * s_.min_confirmation_iterations) {
        ++short_windows;
        continue;
      }
      st.initial = fit_line(st.e, st.first - pre, st.first);
      st.final = st.fit(n - std::min(s_.line_iterations, post / 4), n);
      st.initial_mean = initial_cal_.band_for(r.sm).iteration.mean;
      st.target_mean = target_cal_.band_for(r.sm).iteration.mean;
      sms_.push_back(std::move(st));
    }
    if (sms_.empty())
      return no_precheck > short_windows ? MeasurementOutcome::initial_not_held : MeasurementOutcome::not_captured;
    return {};
  }

  // Step 2: which clocks the two segments run at, the pooled rates against
  // phase 1. Medians over SMs throughout: an interrupted iteration moves one
  // SM only.
  Refusal check_segments() {
    std::vector<double> initial_offsets, target_offsets, noises, slopes, initial_slopes;
    end_ = std::numeric_limits<Nanos>::min();
    for (const auto& st : sms_) {
      initial_offsets.push_back(st.initial.b - st.initial_mean);
      initial_slopes.push_back(st.initial.b);
      target_offsets.push_back(st.final.b - st.target_mean);
      noises.push_back(residual_sd(st.e, st.final, st.final.i0, st.e.last()));
      slopes.push_back(st.final.b);
      end_ = std::max(end_, st.e.at(st.e.last()));
    }
    const double initial_offset = median(initial_offsets), target_offset = median(target_offsets);
    slope_ = median(slopes);
    if (std::abs(initial_offset) > initial_tol_ns_) return MeasurementOutcome::initial_not_held;
    // Held, not still settling: the first and second half of the segment
    // before t_s run at one rate.
    std::vector<double> settling;
    for (const auto& st : sms_) {
      const std::int64_t half = (st.first - st.initial.i0) / 2;
      if (half < 2) continue;
      settling.push_back(fit_line(st.e, st.initial.i0, st.initial.i0 + half).b -
                         fit_line(st.e, st.first - half, st.first).b);
    }
    if (rate_changes(settling, s_.relevant_rate_share * initial_tol_ns_, s_.z))
      return MeasurementOutcome::initial_not_held;
    if (std::abs(target_offset) > target_tol_ns_) return MeasurementOutcome::not_captured;
    // A boundary's own noise (the timer tick and jitter), from the final segments.
    sigma_ = std::max(1.0, median(noises));
    relevant_target_ = s_.relevant_rate_share * target_tol_ns_;
    // What the scans for the arrival (and its tail hinge) take for a level
    // of the ramp: beyond that, and beyond a share of the whole change (in
    // the target clock's terms). A card's rate may move by less after a
    // switch and stay there for tens of ms; that is no level of the ramp.
    // The homogeneity test (step 7) keeps the stricter threshold, so a
    // window whose median SM still moves after the arrival is refused, not
    // dated early.
    const double change_ns = slope_ * std::abs(slope_ / median(initial_slopes) - 1);
    relevant_level_ = std::max(relevant_target_, s_.relevant_change_share * change_ns);
    // The SMs' common wander, measured where the records hold no change:
    // twice the largest that a fine scan's bins stray in the final
    // segments. A fine scan's bin counts only beyond it; with no wander it
    // is the mean of many SMs' noise, far below two boundary noises.
    wander_bar_ns_ = 2 * quiet_scan_mean(sms_, slope_);
    return {};
  }

  // Step 3: pass 1 finds the change against lines fitted on the window's
  // tail; pass 2 refits each final line on everything after it, so the
  // lines are exact near the change, and finds it again. Where either pass
  // settles on a stray of the rate after it held the target (kQuietBlocks),
  // the window is refused: the switch ended before, but the rate after it
  // did not stay.
  Refusal settle() {
    FineScanMemo memo;
    bool strayed = false;
    SegmentScan scan(sms_, &SmState::final, sigma_, slope_, wander_bar_ns_, s_.z, true);
    std::optional<Nanos> settled = scan.find(relevant_level_, request_, end_, &memo, target_tol_ns_, &strayed);
    if (!settled) return MeasurementOutcome::initial_not_held;  // never off the final line: no change seen
    if (strayed) return MeasurementOutcome::not_confirmed;
    for (auto& st : sms_) {
      const std::int64_t from = st.e.first_at_or_after(*settled + static_cast<Nanos>(2 * slope_));
      if (st.e.last() - from >= 2 * s_.min_confirmation_iterations)
        st.final = fit_line(st.e, from, st.e.last(), st.e.last() - from > 16 * Boundaries::kBlock);
    }
    settled = scan.find(relevant_level_, request_, end_, &memo, target_tol_ns_, &strayed);
    if (!settled) return MeasurementOutcome::initial_not_held;
    if (strayed) return MeasurementOutcome::not_confirmed;
    settled_ = *settled;
    return {};
  }

  // Step 4: per SM, the change point x (in iterations) that best explains
  // the residuals of the boundaries around a time: before x each lags the
  // final line by `step` per iteration still to go, after x none does. The
  // clock ratio across the change, which sets `step`, is the same on every
  // SM: pooled from the iterations just before each SM's change, it is
  // exact. Pass 1 centres every SM on the settled bin; pass 2 on the SM's
  // own change, since SMs can take it up at different moments.
  Refusal place_changes() {
    // SMs closer than this run in step (sm_spread_ns): ten ticks of a 32 ns
    // timer, above the spread of SMs a launch started together.
    constexpr double kInStepNs = 320;
    for (const bool own : {false, true}) {
      last_before_.clear();
      for (const auto& st : sms_)
        last_before_.push_back(own && st.off < 0 ? -1 : st.e.first_at_or_after(centre(st, own) - nearest(slope_)) - 1);
      // A ramp step shorter than the fitted stretch would bend the hinge:
      // then only the last few iterations before the change are used.
      const std::int64_t half = s_.points_per_sm / 4;
      const double near = pooled_ratio(own, 0, half), far = pooled_ratio(own, half, half);
      if (std::isnan(near)) return MeasurementOutcome::not_confirmed;
      const std::int64_t points =
          std::isnan(far) || std::abs(near - far) * slope_ > sigma_ ? half : s_.points_per_sm;
      const double ratio = points == half ? near : pooled_ratio(own, 0, points);
      last_ratio_ = ratio;
      changed_.clear();
      for (auto& st : sms_) {
        if (own && st.off < 0) continue;
        const Nanos c = centre(st, own);
        st.off = -1;
        if (place_on_sm(st, c, ratio, points)) changed_.push_back(&st);
      }
      in_step_ = !changed_.empty() && sm_spread_ns(changed_, slope_) < kInStepNs;
      stalled_ = place_after_stall(changed_, sigma_, request_, in_step_, open_stall_, least_stall_ns_,
                                   missed_stall_ns_);
    }
    if (changed_.empty()) return MeasurementOutcome::not_confirmed;
    std::sort(changed_.begin(), changed_.end(),
              [](const SmState* a, const SmState* b) { return a->change_ns < b->change_ns; });
    return {};
  }

  Nanos centre(const SmState& st, bool own) const { return own ? at(st.change_ns) : settled_; }

  // The iteration length over `span` iterations ending `gap` before each
  // SM's last boundary before the centre, over the final one; the median SM.
  double pooled_ratio(bool own, std::int64_t gap, std::int64_t span) const {
    std::vector<double> ratios;
    for (const auto& st : sms_) {
      if (own && st.off < 0) continue;
      const std::int64_t to = last_before_[static_cast<std::size_t>(&st - sms_.data())] - gap;
      const std::int64_t from = to - span;
      if (from < st.initial.i0 || to > st.e.last()) continue;  // before t_s is the initial clock
      ratios.push_back(static_cast<double>(st.e.at(to) - st.e.at(from)) / static_cast<double>(span) / st.final.b);
    }
    return median(ratios);
  }

  // One SM's change point around `c`, against the line of the iterations
  // just after it (not the whole final segment's: the boundaries' slow
  // wander stays out of the fit). False where this SM cannot place it.
  bool place_on_sm(SmState& st, Nanos c, double ratio, std::int64_t points) {
    const std::int64_t after_from = st.e.first_at_or_after(c + nearest(2 * slope_));
    if (after_from + 2 * s_.min_confirmation_iterations > st.e.last()) return false;
    const Line local = st.fit(after_from, after_from + 2 * s_.min_confirmation_iterations);
    const double step = local.b * (1 - ratio);
    const double before = local.b * ratio;
    if (std::abs(step) <= sigma_ / 4) return false;
    const std::int64_t from =
        std::max(st.initial.i0, st.e.first_at_or_after(c - nearest(static_cast<double>(points + 1) * before)));
    const std::int64_t to = std::min(st.e.last(), st.e.first_at_or_after(c + nearest(3 * slope_), after_from));
    if (to <= from) return false;
    window_.clear();
    Nanos t = st.e.at(from);
    for (std::int64_t i = from; i <= to; ++i) {
      window_.emplace_back(static_cast<double>(i), local.residual(i, t));
      if (i < st.e.last()) t += st.e.duration(i);
    }
    std::size_t used = 0;
    const double best_x = best_change_point(window_, step, used);
    const StallFit stall = best_change_with_stall(window_, step);
    st.local = local;
    st.step = step;
    st.stall_u = stall.u, st.x_lo = stall.x_lo, st.x_hi = stall.x_hi;
    st.change_ns =
        static_cast<double>(local.t0 - request_) + local.a + local.b * (best_x - static_cast<double>(local.i0));
    st.change_sd_ns = std::min(local.b, sigma_ * local.b / std::abs(step) /
                                            std::sqrt(static_cast<double>(std::max<std::size_t>(1, used))));
    st.off = static_cast<std::int64_t>(best_x);
    return true;
  }

  // Step 5: every SM runs at the target from the latest SM's change on: the
  // latest change point sets the arrival, less what picking the latest of
  // noisy change points adds where all SMs changed together; never earlier
  // than the median SM. A latest one that no other SM comes near (within
  // four of its own sd) is one SM's misfit, not the clock: the next is used.
  void estimate_arrival() {
    std::vector<double> own_sd;
    for (const auto* st : changed_) own_sd.push_back(st->change_sd_ns);
    noise_ = median(own_sd);
    pick_ = changed_.back();
    const bool alone = changed_.size() > 2 && pick_->change_ns - changed_[changed_.size() - 2]->change_ns >
                                                  4 * std::max(noise_, pick_->change_sd_ns);
    if (alone) pick_ = changed_[changed_.size() - 2];
    selection_bias_ = noise_ * normal_quantile(1 - 1.0 / static_cast<double>(changed_.size() + 1));
    const double median_sm = changed_[changed_.size() / 2]->change_ns;
    // Where one SM places its change no better than to a quarter iteration
    // (a last step small against a boundary's noise), the latest SM is
    // noise: the median SM and the pooled hinges of step 6 date the change.
    imprecise_ = noise_ > slope_ / 4;
    per_sm_ = std::max(median_sm, pick_->change_ns - selection_bias_);
    // A floor: the pooled scan's latest significant bin still lagged the
    // final line, so the clock reached the target after that bin began (an
    // overshoot's mixed iterations can pull every SM's hinge before it).
    floor_ = static_cast<double>(settled_ - request_) - slope_;
    // Imprecise SMs still bound it by their median; SMs none of which could
    // place the change within an iteration (each σ at its cap) do not.
    unplaced_ = noise_ >= 0.95 * slope_;
    estimate_ = imprecise_ ? median_sm : per_sm_;
    arrival_ = unplaced_ ? floor_ : (floor_ > estimate_ && drift_only() ? estimate_ : std::max(floor_, estimate_));
  }

  // Whether the records between the SMs' estimate and the floor ran within
  // the relevance threshold of the target's rate: then the scan's late bin
  // is the records' own slow drift, not a level of the ramp, and the floor
  // does not bind. Where the floor lies within an iteration of the
  // estimate, that stretch holds no whole iteration: the records from the
  // estimate to the end of the scan's late bin are read instead.
  bool drift_only() const {
    const bool floor_near = floor_ < estimate_ + slope_;
    std::vector<double> rates;
    for (const SmState* st : changed_) {
      const std::int64_t from = st->e.first_at_or_after(at(floor_near ? estimate_ : estimate_ + slope_));
      const std::int64_t to = st->e.first_at_or_after(at(floor_near ? floor_ + slope_ : floor_));
      if (to - from < (floor_near ? 1 : 2) || to > st->e.last()) continue;
      rates.push_back(static_cast<double>(st->e.at(to) - st->e.at(from)) / static_cast<double>(to - from) -
                      st->final.b);
    }
    return !rates.empty() && std::abs(median(rates)) < relevant_level_;
  }

  // Step 6: pooled hinges move the arrival later while they find the clock
  // still off the target there, each round centred on the last, the lines
  // refitted after it:
  // - a curved one over a short stretch, where it explains the records
  //   clearly better: the SMs' hinges fit whole iterations, so where the
  //   last level lasts only a few (coarse iterations) they see the steeper
  //   step before it and place the change early;
  // - the arrival's own tail, a straight hinge over the points after it;
  // - a straight one over a long stretch where the SMs are imprecise, but
  //   not after a stall they placed: it does not model the stall's jump.
  // Where the SMs' estimate is later it stands: a pooled hinge dates the
  // mean of GPCs that follow the clock a few µs apart, the latest SM the
  // last of them.
  void refine_arrival() {
    // SMs in step sample the lag at the same moments, and their iterations
    // there move together: their points tell no more than one SM's, so a
    // hinge's gain is counted in one SM's boundary noise².
    hinge_sigma_ = in_step_ ? sigma_ * std::sqrt(static_cast<double>(changed_.size())) : sigma_;
    // Where the wander is above two boundary noises, the hinges' lines span
    // no more than the fine scans': longer lines bend with the wander.
    wandering_ = wander_bar_ns_ > 2 * sigma_;
    hinge_line_ = wandering_ ? std::min(2 * s_.min_confirmation_iterations, reference_length(slope_))
                             : 2 * s_.min_confirmation_iterations;
    // "Clearly": by 8 boundary noises² per SM, or by what the records' own
    // wander says once it is asked for (bar_for). Where the SMs are
    // imprecise the last step is small on every SM by definition, and z²
    // for all of them together is the bar until the wander is asked for.
    cap_ = kClearPerSm * static_cast<double>(changed_.size());
    clear_ = imprecise_ ? s_.z * s_.z : cap_;
    first_arrival_ = arrival_;
    // Whether the straight hinge over a long stretch runs: the others read
    // from kShort iterations before the arrival on, and the hinges collect
    // only the points they read.
    long_hinge_ = imprecise_ && (!stalled_ || unplaced_);
    for (int round = 0; round < kRounds; ++round)
      if (!hinge_round()) break;
    unsure_ = std::max(0.0, proposed_ - arrival_);
  }

  // One round of step 6; whether it moved the arrival.
  bool hinge_round() {
    const PooledHinges hinges(changed_, request_, arrival_, slope_, long_hinge_ ? kLong : kShort, kAhead,
                              hinge_sigma_, hinge_line_, scratch_.hinges);
    double next = arrival_;
    const PooledHinges::Fit curved = hinges.hinge(kShort, kAhead - 1, true);
    // Where its best time is the last it can reach (two iterations on), the
    // change lies beyond what it saw, not there: it moves the arrival one
    // iteration, and the next round, which sees further, dates it.
    if (curved.gain > bar_for(curved))
      next = std::max(next, curved.at_reach ? std::min(curved.arrival, arrival_ + slope_) : curved.arrival);
    else
      proposed_ = std::max(proposed_, curved.arrival);
    // The tail hinge read from one iteration after the arrival on: each
    // SM's first iterations after its own change can run a few ns long for
    // reasons of the SM's own, and where the SMs' phases spread over the
    // iteration, a hinge in time reads those excesses as a lag still
    // closing. A lag that still shows an iteration on is the clock's. The
    // same hinge from the arrival on only widens the stated uncertainty.
    const PooledHinges::Fit tail = hinges.hinge(-1, kAhead, false, kTailEarliest);
    if (clear_tail(tail)) {
      next = std::max(next, tail.arrival);
    } else {
      const PooledHinges::Fit near = hinges.hinge(0, kAhead, false, kTailEarliest);
      if (clear_tail(near)) proposed_ = std::max(proposed_, near.arrival);
    }
    if (long_hinge_) next = std::max(next, hinges.hinge(kLong, kAhead, false).arrival);
    const bool moved = next > arrival_ + slope_ / 8;
    arrival_ = next;
    return moved;
  }

  // The bar a curved hinge's gain must clear. Where its gain lies between
  // z² and 8 per SM, or above 8 where its best time is the last it can
  // reach (it favours a time beyond what it sees: a change further on, or
  // the wander's curve), the wander is asked for: four times its largest
  // gain, at least z², is the bar from then on, for imprecise SMs too.
  double bar_for(const PooledHinges::Fit& fit) {
    const double gain = fit.gain;
    if (gain <= s_.z * s_.z || (gain > cap_ && !fit.at_reach) || bar_from_wander_) return clear_;
    bar_from_wander_ = true;
    if (wander_gains().curved >= 0) clear_ = std::max(kWanderFactor * wander_gains().curved, s_.z * s_.z);
    return clear_;
  }

  // Whether a tail hinge clearly explains the records better: short of the
  // last time it can reach (there the lag goes on beyond what it sees), the
  // lag growing faster than the relevance threshold, and its gain above z²
  // and four times the same hinge's largest gain where the records hold no
  // change (z² first: the wander's hinges are built only where they matter).
  bool clear_tail(const PooledHinges::Fit& tail) {
    return !tail.at_reach && tail.rate > relevant_level_ && tail.gain > s_.z * s_.z && wander_gains().tail >= 0 &&
           tail.gain > std::max(kWanderFactor * wander_gains().tail, s_.z * s_.z);
  }

  // The wander's largest gains, read once at kWanderPlaces places 16 to 352
  // iterations after the first arrival, where the records hold no change.
  const WanderGains& wander_gains() {
    if (wander_) return *wander_;
    wander_.emplace();
    // Each SM's lines and first boundaries for every place first, so that
    // its searches move on from the last place's.
    wander_lines_.resize(kWanderPlaces);
    for (auto& place : wander_lines_) place.resize(changed_.size());
    for (std::size_t k = 0; k < changed_.size(); ++k) wander_lines_of(k);
    for (int j = 0; j < kWanderPlaces; ++j) {
      const PooledHinges quiet(changed_, wander_lines_[j], request_, wander_place(j), slope_, kShort, kAhead,
                               hinge_sigma_, scratch_.wander);
      if (quiet.points() < 3 * changed_.size()) continue;  // the records end before it
      wander_->curved = std::max(wander_->curved, quiet.hinge(kShort, kAhead - 1, true).gain);
      wander_->tail = std::max(wander_->tail, quiet.hinge(0, kAhead, false, kTailEarliest).gain);
    }
    return *wander_;
  }

  double wander_place(int j) const { return first_arrival_ + (16 + 48 * j) * slope_; }

  // SM k's lines at every wander place. Not SmState::fit: these lines are
  // read once, and would push out the rounds' own; the places' lines
  // overlap, and are fitted together.
  void wander_lines_of(std::size_t k) {
    std::int64_t not_before = 0;
    std::array<std::int64_t, kWanderPlaces> from;
    std::array<int, kWanderPlaces> place;
    std::array<Line, kWanderPlaces> lines;
    std::size_t count = 0;
    for (int j = 0; j < kWanderPlaces; ++j) {
      const PooledHinges::ArrivalStart a = PooledHinges::arrival_start(*changed_[k], request_, wander_place(j), slope_,
                                                                       kShort, hinge_line_, not_before);
      wander_lines_[j][k].first = a.first;
      wander_lines_[j][k].first_time = a.first_time;
      if (a.first >= 0) from[count] = a.line_from, place[count++] = j;
    }
    fit_overlapping_lines(changed_[k]->e, from, count, hinge_line_, lines);
    for (std::size_t c = 0; c < count; ++c) wander_lines_[place[c]][k].line = lines[c];
  }

  // Step 7: the segment after the arrival, long enough on every SM, and
  // homogeneous: its rate just after the arrival equals its rate at the
  // end, across SMs.
  Refusal confirm() {
    arrival_at_ = at(arrival_);
    std::vector<double> slope_changes;
    for (const auto& st : sms_) {
      const std::int64_t a =
          st.e.first_at_or_after(std::max(arrival_at_, st.off >= 0 ? at(st.change_ns) : arrival_at_) + 1);
      const std::int64_t left = st.e.last() - a;
      if (left < s_.min_confirmation_iterations) return MeasurementOutcome::not_captured;
      const std::int64_t len = std::min(s_.line_iterations, left / 2);
      const Line early = st.fit(a + 1, a + len);
      const Line late = st.fit(st.e.last() - len, st.e.last());
      slope_changes.push_back(early.b - late.b);
    }
    if (rate_changes(slope_changes, s_.relevant_rate_share * target_tol_ns_, s_.z))
      return MeasurementOutcome::not_confirmed;
    return {};
  }

  // Step 8: the departure, when the records first left their SMs' initial
  // lines: the earliest significant bin of a pooled scan from t_s; then per
  // SM a mirrored hinge fit places it (sm_departures); then pooled hinges,
  // mirrored in time, move it while they explain the records clearly
  // better: each SM's hinge assumes one rate from its departure on, where a
  // ramp's first levels lag less than the later ones its ratio was taken
  // over (a linear ramp's lag starts as a parabola), and would date the
  // departure late.
  double date_departure() {
    initial_slope_ = 0;
    for (const auto& st : sms_) initial_slope_ += st.initial.b / static_cast<double>(sms_.size());
    SegmentScan scan(sms_, &SmState::initial, sigma_, initial_slope_, wander_bar_ns_, s_.z, false);
    left_at_ = scan.find(s_.relevant_rate_share * initial_tol_ns_, request_, arrival_at_)
                   .value_or(std::max<Nanos>(request_,
                                             arrival_at_ - nearest(2.0 * Boundaries::kBlock * initial_slope_)));
    double departure = median(sm_departures());
    std::vector<SmState*> every_sm;
    for (auto& st : sms_) every_sm.push_back(&st);
    constexpr double kDepartureReach = 4;  // iterations either side a round reads
    for (int round = 0; round < kRounds; ++round) {
      const PooledHinges hinges(every_sm, request_, departure, initial_slope_, kDepartureReach, kDepartureReach + 1,
                                hinge_sigma_, 2 * s_.min_confirmation_iterations, scratch_.hinges,
                                PooledHinges::Side::departure);
      if (hinges.points() < 3 * every_sm.size()) break;
      const PooledHinges::Fit fit = hinges.hinge(kDepartureReach, kDepartureReach + 1, true);
      if (fit.gain <= s_.z * s_.z) break;
      const double next = std::clamp(fit.arrival, 0.0, arrival_);
      const bool moved = std::abs(next - departure) > initial_slope_ / 8;
      departure = next;
      if (!moved) break;
    }
    return departure;
  }

  Nanos since_left(double iterations) const { return left_at_ + nearest(iterations * initial_slope_); }

  // Per SM, mirrored: after the departure each boundary leads or lags the
  // initial line by the first step's rate per iteration since; before it
  // none does. Each SM's departure, never after the arrival.
  std::vector<double> sm_departures() {
    std::vector<double> after_ratios;
    // Each SM's first boundary from three iterations before it left, for
    // its hinge below; the searches after it gallop on from there.
    std::vector<std::int64_t> left_from;
    for (const auto& st : sms_) {
      left_from.push_back(st.e.first_at_or_after(since_left(-3)));
      const std::int64_t from = st.e.first_at_or_after(since_left(2), left_from.back());
      const std::int64_t to = from + s_.points_per_sm;
      if (from < st.first || to > st.e.last()) continue;
      after_ratios.push_back(static_cast<double>(st.e.at(to) - st.e.at(from)) / static_cast<double>(to - from) /
                             st.initial.b);
    }
    const double after_ratio = after_ratios.empty() ? 1.0 : median(after_ratios);
    std::vector<double> departures;
    for (auto& st : sms_) {
      st.departure_ns = arrival_;
      const double step = st.initial.b * (after_ratio - 1);
      const std::int64_t first_after = left_from[static_cast<std::size_t>(&st - sms_.data())];
      const std::int64_t from = std::max(st.first, first_after);
      const std::int64_t to = std::min(
          st.e.last(), st.e.first_at_or_after(since_left(static_cast<double>(s_.points_per_sm + 1)), first_after));
      if (std::abs(step) > sigma_ / 4 && to > from) {
        window_.clear();
        Nanos t = st.e.at(to);
        for (std::int64_t i = to; i >= from; --i) {  // mirrored: index -i, ascending
          window_.emplace_back(-static_cast<double>(i), -st.initial.residual(i, t));
          if (i > 0) t -= st.e.duration(i - 1);
        }
        std::size_t used = 0;
        const double x = -best_change_point(window_, -step, used);
        st.departure_ns = static_cast<double>(st.initial.t0 - request_) + st.initial.a +
                          st.initial.b * (x - static_cast<double>(st.initial.i0));
      }
      departures.push_back(std::min(st.departure_ns, arrival_));
    }
    return departures;
  }

  // Step 9.
  Measurement result(double departure) const {
    Measurement m;
    m.outcome = MeasurementOutcome::accepted;
    m.switching_ms = arrival_ / 1e6;
    m.transition_ms = std::max(0.0, arrival_ - departure) / 1e6;
    m.accepted_sms = static_cast<int>(changed_.size());
    m.max_sm = pick_->sm;
    m.sm_spread_ms = (changed_.back()->change_ns - changed_.front()->change_ns) / 1e6;
    const bool apart = latest_apart();
    m.misfits = misfits(m.sm_spread_ms * 1e6, apart);
    m.uncertainty_us = uncertainty_ns(apart) / 1e3;
    for (const auto& st : sms_) {
      SmDetection d;
      d.sm = st.sm;
      d.outcome = st.off >= 0 ? SmOutcome::accepted : SmOutcome::no_candidate;
      d.arrival_ns = request_ + nearest(st.change_ns);
      d.departure_ns = request_ + nearest(st.departure_ns);
      m.per_sm.push_back(d);
    }
    return m;
  }

  double tenth_from_end() const { return changed_[changed_.size() - 1 - changed_.size() / 10]->change_ns; }

  // Whether the latest SMs stand apart from the rest: the latest changed
  // kMaterialNs or more, and four of the SMs' own noises, after the SM a
  // tenth from the end (fewer SMs than a GPC holds, whose own skew moves
  // whole GPCs).
  bool latest_apart() const {
    return changed_.back()->change_ns - tenth_from_end() >= std::max(kMaterialNs, 4 * noise_);
  }

  // Records that do not fit the model. SMs may take a change up to an
  // iteration of the initial clock apart (each at its own boundary) and
  // GPCs a few µs apart; beyond two iterations of the slower clock and
  // 5 µs they disagree, as where the SMs' stall bounds miss each other
  // (some SMs halted at the change while others ran on). Past the target:
  // just before the change the iterations were on the far side of the final
  // length from the initial one, by more than the relevance threshold. A
  // stall, or SMs apart, is a misfit only from kMaterialNs on: below it a
  // misfit moves the answer by less than the timer sync's own uncertainty.
  unsigned misfits(double spread_ns, bool apart) const {
    unsigned bits = 0;
    const double slower_ns = std::max(initial_slope_, slope_);
    if (stalled_ && least_stall_ns_ >= kMaterialNs) bits |= static_cast<unsigned>(Misfit::stall);
    if (apart || spread_ns > 2 * slower_ns + 5'000 || missed_stall_ns_ >= kMaterialNs)
      bits |= static_cast<unsigned>(Misfit::sms_disagree);
    const double initial_ratio = initial_slope_ / slope_;
    if ((last_ratio_ - 1) * (initial_ratio - 1) < 0 && std::abs(last_ratio_ - 1) * slope_ > relevant_target_)
      bits |= static_cast<unsigned>(Misfit::non_monotone);
    return bits;
  }

  // The stated uncertainty: the latest SM's own precision, what the
  // correction for picking it may miss, half of what the pooled hinges
  // moved the arrival, and what a hinge would have moved it further; where
  // the wander is above two boundary noises, the wander (the lines each
  // SM's change is fitted against may be off by the scans' bar, which moves
  // the change by it over the step an iteration); a stall the SMs' bounds
  // leave open (at most an iteration); and where the latest SMs stand apart,
  // how far the arrival lies after the SM a tenth from the end: the records
  // cannot tell a few SMs that changed late from a few that misplaced their
  // change.
  double uncertainty_ns(bool apart) const {
    const double wander_term =
        wandering_ && std::abs(1 - last_ratio_) > 0 ? wander_bar_ns_ / std::abs(1 - last_ratio_) : 0;
    const double open_stall_term = std::min(1.0, open_stall_) * slope_;
    const double apart_term = apart ? std::max(0.0, arrival_ - tenth_from_end()) : 0;
    return std::hypot(std::hypot(pick_->change_sd_ns, selection_bias_ / 2, (arrival_ - per_sm_) / 2),
                      std::hypot(unsure_, open_stall_term, apart_term), wander_term);
  }

  static constexpr int kRounds = 8;  // hinge rounds, at most
  // Hinge stretches in iterations: before the arrival (short, long) and after it.
  static constexpr double kShort = 1.5, kLong = 8, kAhead = 4;
  static constexpr double kClearPerSm = 8;
  static constexpr int kWanderPlaces = 8;
  static constexpr double kWanderFactor = 4;
  static constexpr double kTailEarliest = 1.0 / 64;  // the arrival's tail hinge
  static constexpr double kMaterialNs = 1'000;       // a stall or SMs apart from this on is a misfit

  const WindowRecords& records_;
  const Nanos request_;
  const ClockCalibration& initial_cal_;
  const ClockCalibration& target_cal_;
  const double initial_tol_ns_, target_tol_ns_;
  const PooledSettings& s_;
  Scratch& scratch_;
  std::vector<SmState>& sms_;  // the SMs with records on both sides of t_s
  std::vector<std::pair<double, double>> window_;  // boundary index, residual (one SM's fits)
  // Steps 2 and 3.
  Nanos end_ = 0;
  double slope_ = 0, sigma_ = 0, relevant_target_ = 0, relevant_level_ = 0, wander_bar_ns_ = 0;
  Nanos settled_ = 0;
  // Step 4.
  std::vector<std::int64_t> last_before_;  // by SM (pooled_ratio)
  std::vector<SmState*> changed_;          // the SMs that placed the change, by change_ns
  bool stalled_ = false, in_step_ = false;
  double open_stall_ = 0, least_stall_ns_ = 0, missed_stall_ns_ = 0;  // place_after_stall
  double last_ratio_ = 1;  // before the change over after it, as the hinge used it
  // Step 5.
  const SmState* pick_ = nullptr;
  double noise_ = 0, selection_bias_ = 0, per_sm_ = 0, floor_ = 0, estimate_ = 0, arrival_ = 0;
  bool imprecise_ = false, unplaced_ = false;
  // Step 6.
  double hinge_sigma_ = 0, cap_ = 0, clear_ = 0, first_arrival_ = 0;
  std::int64_t hinge_line_ = 0;
  bool wandering_ = false, long_hinge_ = false, bar_from_wander_ = false;
  // The latest arrival a curved hinge (or the tail's from the arrival on)
  // proposed where its gain stayed under the bar: the records favour that
  // later time, not clearly; it widens the stated uncertainty.
  double proposed_ = 0, unsure_ = 0;
  std::optional<WanderGains> wander_;
  std::vector<std::vector<PooledHinges::SmLine>> wander_lines_;  // by place, then SM
  // Steps 7 and 8.
  Nanos arrival_at_ = 0, left_at_ = 0;
  double initial_slope_ = 0;
};

Measurement detect_pass(const WindowRecords& records, Nanos request_gpu_ns, const ClockCalibration& initial,
                        const ClockCalibration& target, double initial_tol_ns, double target_tol_ns,
                        const PooledSettings& s, const std::vector<Nanos>& keep_later_before,
                        std::vector<Interrupt>& interrupts) {
  thread_local Scratch scratch;
  return DetectPass(records, request_gpu_ns, initial, target, initial_tol_ns, target_tol_ns, s, scratch)
      .run(keep_later_before, interrupts);
}

}  // namespace

Measurement detect_switch_pooled(const WindowRecords& records, Nanos request_gpu_ns,
                                 const ClockCalibration& initial, const ClockCalibration& target,
                                 double initial_tol_ns, double target_tol_ns, const PooledSettings& s) {
  // Which side of an interrupt keeps its time depends on where the SM's
  // change lies, known only after a pass: the first keeps the later side of
  // interrupts before the request. Where an SM was interrupted after the
  // request and its change came more than two target iterations after the
  // interrupted one (taking the excess out of the later side dates the
  // change early by it, never before the interrupt began), a second pass
  // keeps that SM's later side, so its own change keeps its time. Not where
  // the long iteration holds the change itself, as a stall's does on the
  // SMs that saw it alone.
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
