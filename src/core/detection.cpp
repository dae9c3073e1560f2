#include "core/detection.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "core/statistics.hpp"

namespace latest {

const char* to_string(SmOutcome outcome) {
  switch (outcome) {
    case SmOutcome::accepted: return "accepted";
    case SmOutcome::initial_not_held: return "initial_not_held";
    case SmOutcome::no_candidate: return "no_candidate";
    case SmOutcome::short_confirmation: return "short_confirmation";
    case SmOutcome::confirmation_failed: return "confirmation_failed";
  }
  return "?";
}

const char* to_string(MeasurementOutcome outcome) {
  switch (outcome) {
    case MeasurementOutcome::accepted: return "accepted";
    case MeasurementOutcome::initial_not_held: return "initial_not_held";
    case MeasurementOutcome::not_captured: return "not_captured";
    case MeasurementOutcome::not_confirmed: return "not_confirmed";
  }
  return "?";
}

const char* to_string(Misfit misfit) {
  switch (misfit) {
    case Misfit::stall: return "stall";
    case Misfit::non_monotone: return "non_monotone";
    case Misfit::sms_disagree: return "sms_disagree";
  }
  return "?";
}

const char* to_string(Detector detector) {
  return detector == Detector::paper ? "paper" : "pooled";
}

namespace {

// The answer from the exact mean and sd, where it is the same however the
// two are rounded: it holds with the mean moved by far more than the
// running mean's rounding (about n·eps·Σd) and the sd by a millionth either
// way. Else empty.
std::optional<bool> clear_answer(std::int64_t sum, BandTest::Wide squares, std::size_t n, const Band& band, double tol_ns,
                                 double confidence) {
  if (n < 2) return std::nullopt;
  const auto count = static_cast<double>(n);
  const double mean = static_cast<double>(sum) / count;
  const double margin = 1e-15 * count * static_cast<double>(sum) + 1e-9;
  const double off = std::abs(mean - band.iteration.mean);
  if (off < tol_ns - margin) return true;
  if (off < tol_ns + margin) return std::nullopt;
  const auto wide_n = static_cast<BandTest::Wide>(n);
  const double variance =
      static_cast<double>(wide_n * squares - static_cast<BandTest::Wide>(sum) * sum) / (count * (count - 1));
  const double sd = std::sqrt(std::max(0.0, variance));
  if (sd < 1e-3) return std::nullopt;  // a constant stretch: the running sd's rounding is not relative
  std::optional<bool> answer;
  for (const double moved : {-margin, margin})
    for (const double scaled : {1 - 1e-6, 1 + 1e-6}) {
      const bool holds = !means_differ({static_cast<std::int64_t>(n), mean + moved, sd * scaled}, band.iteration, confidence);
      if (answer && *answer != holds) return std::nullopt;
      answer = holds;
    }
  return answer;
}

}  // namespace

bool BandTest::holds(std::size_t from, std::size_t to, const Band& band, double tol_ns, double confidence) {
  if (from >= to_ || from < from_ || to < to_) from_ = to_ = from, sum_ = 0, squares_ = 0;
  for (; to_ < to; ++to_) sum_ += d_[to_], squares_ += static_cast<Wide>(d_[to_]) * d_[to_];
  for (; from_ < from; ++from_) sum_ -= d_[from_], squares_ -= static_cast<Wide>(d_[from_]) * d_[from_];
  if (const std::optional<bool> clear = clear_answer(sum_, squares_, to - from, band, tol_ns, confidence)) return *clear;
  MomentAccumulator acc;
  for (std::size_t i = from; i < to; ++i) acc.add(d_[i]);
  const Moments m = acc.moments();
  if (std::abs(m.mean - band.iteration.mean) < tol_ns) return true;
  return !means_differ(m, band.iteration, confidence);
}

SmDetection detect_on_sm(const SmRecords& sm, Nanos request_gpu_ns, const Band& initial,
                         const Band& target, const DetectionSettings& s) {
  SmDetection out;
  out.sm = sm.sm;
  const auto& d = sm.duration_ns;
  BandTest band_test(d);
  // First iteration that starts at or after t_s.
  std::size_t first = 0;
  Nanos start = sm.first_start_ns;
  while (first < d.size() && start < request_gpu_ns) start += d[first++];

  if (s.precheck_iterations > 0) {
    const auto pre = static_cast<std::size_t>(std::min<std::int64_t>(s.precheck_iterations, static_cast<std::int64_t>(first)));
    if (pre < 2 || !band_test.holds(first - pre, first, initial, s.initial_tol_ns, s.confidence)) {
      out.outcome = SmOutcome::initial_not_held;
      return out;
    }
  }

  int candidates = 0;
  out.outcome = SmOutcome::no_candidate;
  std::size_t arrival = d.size();
  Nanos t = start;
  for (std::size_t i = first; i < d.size(); ++i) {
    const Nanos end = t + d[i];
    if (target.contains(d[i])) {
      const std::size_t avail = d.size() - (i + 1);
      if (static_cast<std::int64_t>(avail) < s.min_confirmation_iterations) {
        out.outcome = SmOutcome::short_confirmation;
        return out;
      }
      const std::size_t to = i + 1 + std::min<std::size_t>(avail, static_cast<std::size_t>(s.confirmation_iterations));
      if (band_test.holds(i + 1, to, target, s.target_tol_ns, s.confidence)) {
        out.outcome = SmOutcome::accepted;
        out.arrival_ns = end;
        arrival = i;
        break;
      }
      out.outcome = SmOutcome::confirmation_failed;
      if (++candidates >= s.max_candidates) return out;
    }
    t = end;
  }
  if (arrival == d.size()) return out;

  // Departure: the first of k consecutive iterations that all lie beyond the
  // initial band on the target's side. Timer quantisation flips single
  // iterations by a tick, often several in a row, but in alternating
  // directions (the sum over consecutive iterations is exact to a tick), so it
  // cannot fake a one-sided run; a clock change does not alternate.
  const bool slower = target.iteration.mean > initial.iteration.mean;
  const auto beyond = [&](std::uint32_t x) { return slower ? x > initial.high() : x < initial.low(); };
  const auto k = static_cast<std::size_t>(s.departure_window);
  out.departure_ns = out.arrival_ns - d[arrival];
  std::size_t run = 0;
  Nanos run_start = start;
  t = start;
  for (std::size_t i = first; i <= arrival + k && i < d.size(); ++i) {
    if (beyond(d[i])) {
      if (run++ == 0) run_start = t;
      if (run >= k) {
        out.departure_ns = std::min(run_start, out.departure_ns);
        break;
      }
    } else {
      run = 0;
    }
    t += d[i];
  }
  return out;
}

Measurement detect_switch(const WindowRecords& records, Nanos request_gpu_ns,
                          const ClockCalibration& initial, const ClockCalibration& target,
                          const DetectionSettings& settings) {
  Measurement m;
  std::map<SmOutcome, int> counts;
  double max_latency = -std::numeric_limits<double>::infinity();
  Nanos min_arrival = std::numeric_limits<Nanos>::max(), max_arrival = std::numeric_limits<Nanos>::min();
  for (const auto& sm : records.sms) {
    SmDetection det = detect_on_sm(sm, request_gpu_ns, initial.band_for(sm.sm),
                                   target.band_for(sm.sm), settings);
    ++counts[det.outcome];
    if (det.outcome == SmOutcome::accepted) {
      ++m.accepted_sms;
      const double latency = static_cast<double>(det.arrival_ns - request_gpu_ns) / 1e6;
      if (latency > max_latency) {
        max_latency = latency;
        m.max_sm = det.sm;
      }
      m.transition_ms = std::max(m.transition_ms, static_cast<double>(det.arrival_ns - det.departure_ns) / 1e6);
      min_arrival = std::min(min_arrival, det.arrival_ns);
      max_arrival = std::max(max_arrival, det.arrival_ns);
    }
    m.per_sm.push_back(det);
  }
  if (m.accepted_sms > 0) {
    m.outcome = MeasurementOutcome::accepted;
    m.switching_ms = max_latency;
    // t_e ends the first clean iteration: the change lies up to one target iteration before it.
    m.uncertainty_us = target.pooled.iteration.mean / 1e3;
    m.sm_spread_ms = static_cast<double>(max_arrival - min_arrival) / 1e6;
    return m;
  }
  // Nothing accepted: name the commonest reason, so the engine knows whether a
  // longer window, a longer wake-up or simply another try is called for.
  const int not_held = counts[SmOutcome::initial_not_held];
  const int uncaptured = counts[SmOutcome::no_candidate] + counts[SmOutcome::short_confirmation];
  const int failed = counts[SmOutcome::confirmation_failed];
  if (not_held >= uncaptured && not_held >= failed)
    m.outcome = MeasurementOutcome::initial_not_held;
  else if (uncaptured >= failed)
    m.outcome = MeasurementOutcome::not_captured;
  else
    m.outcome = MeasurementOutcome::not_confirmed;
  return m;
}

}  // namespace latest
