// The chained schedule (docs/methodology.md, "Schedules"): the pairs of a
// group in one launch, each request from where the one before left the
// clock: A->B, B->A, ... for the two directions of the plan's sample, A->B,
// B->C, C->A, ... over the clocks of a walk. Each request is
// issued as soon as the one before it is confirmed: the engine drains the
// records while the kernel runs, waits until every SM has run the
// confirmation length at the target, and runs both detectors on the slice
// from the delay before the request to then. The confirmation of one request
// is the delay of the next, so no GPU time is spent on a fixed capture; and
// every request is a measurement kept, a direction whose stop is met
// measuring on while the other still needs its returns.
//
// Timer syncs: one right before each request and one at its detection, so
// a request's GPU time is interpolated over milliseconds, not over the
// launch (the drift wanders; docs/methodology.md, "Timer sync").
#include <algorithm>
#include <cmath>

#include "core/engine.hpp"

namespace latest {
namespace {

void append(std::vector<SmRecords>& into, WindowRecords&& more) {
  if (into.empty()) {
    into = std::move(more.sms);
    return;
  }
  for (std::size_t s = 0; s < into.size() && s < more.sms.size(); ++s) {
    auto& to = into[s];
    auto& from = more.sms[s];
    if (to.duration_ns.empty()) to.first_start_ns = from.first_start_ns;
    to.duration_ns.insert(to.duration_ns.end(), from.duration_ns.begin(), from.duration_ns.end());
    to.cycles.insert(to.cycles.end(), from.cycles.begin(), from.cycles.end());
  }
}

// Keeps each SM's newest `keep` records.
std::vector<SmRecords> newest(const std::vector<SmRecords>& sms, std::size_t keep) {
  std::vector<SmRecords> out(sms.size());
  for (std::size_t s = 0; s < sms.size(); ++s) {
    const SmRecords& in = sms[s];
    const std::size_t n = in.duration_ns.size();
    const std::size_t drop = n > keep ? n - keep : 0;
    out[s].sm = in.sm;
    out[s].first_start_ns = in.first_start_ns;
    for (std::size_t i = 0; i < drop; ++i) out[s].first_start_ns += in.duration_ns[i];
    out[s].duration_ns.assign(in.duration_ns.begin() + static_cast<std::ptrdiff_t>(drop), in.duration_ns.end());
    if (in.cycles.size() == n)
      out[s].cycles.assign(in.cycles.begin() + static_cast<std::ptrdiff_t>(drop), in.cycles.end());
  }
  return out;
}

}  // namespace

void Engine::stop_stream() {
  if (stream_clock_ == 0) return;
  stream_clock_ = 0;
  tail_.clear();
  workload_.stop_stream();
}

bool Engine::settled_at(const std::vector<SmRecords>& sms, const std::vector<std::size_t>& from, Mhz mhz) {
  const ClockCalibration& cal = calibration(mhz, stream_fmas_);
  const double tol = neighbour_tolerance_ns(mhz, cal.pooled.iteration.mean, supported_);
  const auto confirm = static_cast<std::size_t>(settings_.plan.confirmation_iterations);
  for (std::size_t s = 0; s < sms.size(); ++s) {
    const auto& d = sms[s].duration_ns;
    if (d.size() < (s < from.size() ? from[s] : 0) + confirm) return false;
    double sum = 0;
    for (std::size_t i = d.size() - confirm; i < d.size(); ++i) sum += d[i];
    if (std::abs(sum / static_cast<double>(confirm) - cal.band_for(sms[s].sm).iteration.mean) > tol) return false;
  }
  return true;
}

void Engine::start_stream_at(Mhz init, std::int64_t fmas) {
  stop_stream();
  check_stop();
  const ClockCalibration& ci = calibration(init, fmas);
  set_clock(init);
  const Nanos launched = workload_.start_stream({fmas, 0, 0});
  stream_clock_ = init;
  stream_fmas_ = fmas;
  // No wake-up is guessed: the launch waits, polling, until every SM has
  // run the confirmation length at the initial clock (the settling is
  // measured), within the longest capture or ten wake-ups, the longer.
  const auto keep = static_cast<std::size_t>(settings_.plan.delay_iterations + settings_.plan.confirmation_iterations);
  const double confirm_ns = static_cast<double>(settings_.plan.confirmation_iterations) * ci.pooled.iteration.mean;
  const auto poll_ns = static_cast<Nanos>(std::max(1e4, settings_.poll_share * confirm_ns));
  const auto deadline =
      launched + static_cast<Nanos>(std::max(settings_.plan.max_capture_ms, 10 * wakeup_for(init)) * 1e6);
  TimeSource& time = workload_.time();
  time.sleep_until(launched + static_cast<Nanos>(confirm_ns));
  for (;;) {
    WindowRecords more = workload_.drain();
    stream_bytes_ += more.bytes;
    append(tail_, std::move(more));
    tail_ = newest(tail_, keep);
    if (settled_at(tail_, {}, init) || time.now_ns() >= deadline) break;
    time.sleep_until(time.now_ns() + poll_ns);
  }
  state_.settle_ms.push_back(static_cast<double>(time.now_ns() - launched) / 1e6);
}

std::int64_t Engine::slice_fmas(ClockPair pair) {
  if (settings_.plan.iteration_fmas) return *settings_.plan.iteration_fmas;
  const double longest = longest_pilot_into(pair.target);
  return std::max(state_.iteration_fmas, iteration_for(1.5 * (1 + settings_.settle_factor) * longest));
}

double Engine::initial_capture_ms(ClockPair pair) const {
  const double longest = longest_pilot_into(pair.target);
  return longest > 0 ? capture_from_pilot(longest, settings_.plan) : state_.capture_ms;
}

Engine::Attempt Engine::request_in_stream(ClockPair pair, const PairProgress& p, const std::vector<RouteHop>& via) {
  check_stop();
  TimeSource& time = workload_.time();
  const std::int64_t fmas = stream_fmas_;
  const ClockCalibration& ct = calibration(pair.target, fmas);
  const PlanSettings& plan = settings_.plan;
  const auto delay = static_cast<std::size_t>(plan.delay_iterations);

  Attempt a;
  const TimerSync before = synchronize();
  WindowRecords fresh = workload_.drain();
  stream_bytes_ += fresh.bytes;
  append(tail_, std::move(fresh));
  std::vector<SmRecords> slice = newest(tail_, delay);
  tail_.clear();
  std::vector<std::size_t> at_request;
  for (const auto& sm : slice) at_request.push_back(sm.duration_ns.size());

  // A route requests its clocks in turn, each once the wait after the one
  // before has passed; the measurement runs from the first request.
  // t_r ends the first call (its latency is the call's, not the route's).
  const Nanos t_s = time.now_ns();
  Nanos hop_at = t_s, t_r = 0;
  for (const RouteHop& hop : via) {
    set_clock(hop.clock, hop_at);
    if (t_r == 0) t_r = time.now_ns();
    time.sleep_until(hop_at + static_cast<Nanos>(hop.wait_ms * 1e6));
    hop_at = time.now_ns();
  }
  set_clock(pair.target, hop_at);
  if (t_r == 0) t_r = time.now_ns();
  const Telemetry tel = clocks_.telemetry();

  const double confirm_ns = static_cast<double>(plan.confirmation_iterations) * ct.pooled.iteration.mean;
  const auto poll_ns = static_cast<Nanos>(std::max(1e4, settings_.poll_share * confirm_ns));
  const auto deadline = t_s + static_cast<Nanos>(p.capture_ms * 1e6);
  // The switch cannot be confirmed before the pair's fastest one so far.
  double fastest_ms = 0;
  if (!p.result.rows.empty()) {
    fastest_ms = p.result.rows.front().switching_ms;
    for (const auto& row : p.result.rows) fastest_ms = std::min(fastest_ms, row.switching_ms);
  }
  Nanos next = t_s + static_cast<Nanos>(0.9 * fastest_ms * 1e6 + confirm_ns);
  // The volume bound of a window: the records budget, or, where the user
  // fixed the iteration, what the capture needs at the slower clock.
  const double slow_ns = std::max(calibration(pair.init, fmas).pooled.iteration.mean, ct.pooled.iteration.mean);
  auto limit = static_cast<std::size_t>(plan.max_recorded_iterations);
  if (plan.iteration_fmas)
    limit = std::max(limit, static_cast<std::size_t>(static_cast<double>(plan.delay_iterations + plan.confirmation_iterations) +
                                                     p.capture_ms * 1e6 / slow_ns));
  // Where the records look settled but the detector wants more, it runs
  // again only once another confirmation length has come.
  std::size_t detect_from = 0;
  bool settle_checked = false;
  for (;;) {
    time.sleep_until(next);
    WindowRecords more = workload_.drain();
    stream_bytes_ += more.bytes;
    append(slice, std::move(more));
    bool full = false;
    for (const auto& sm : slice) full = full || sm.duration_ns.size() >= limit;
    const bool ready = settled_at(slice, at_request, pair.target);
    const bool timed_out = time.now_ns() >= deadline;
    if ((ready && slice.front().duration_ns.size() >= detect_from) || full || timed_out) {
      const TimerSync after = synchronize();
      // Moved, not copied: on a pair whose detector keeps asking for more,
      // copying the growing slice for each try was a sixth of the host time.
      // It comes back below where the records grow on.
      a.records.sms = std::move(slice);
      detect(a, pair, fmas, before, after, t_s, t_r, tel);
      // A known truth is the last request's: a route's starts at its first.
      if (a.row.truth) a.row.truth->switching_ms += static_cast<double>(hop_at - t_s) / 1e6;
      const MeasurementOutcome o = a.measurement.outcome;
      if (o == MeasurementOutcome::initial_not_held) break;
      if ((full || timed_out) && o != MeasurementOutcome::accepted) {
        // The capture ran out: before the records settled at the target
        // (not captured, and a longer capture may help), or with the
        // detector still refusing records that look settled (as it said).
        if (!ready) {
          a.measurement.outcome = MeasurementOutcome::not_captured;
          a.records_full = full && !timed_out;
        }
        break;
      }
      if (o == MeasurementOutcome::accepted) {
        // The records after the arrival must last `settle_factor` times the
        // switch itself: a last small step the detector cannot see until it
        // happens would otherwise pass unnoticed. Then it decides again.
        const Nanos settled = t_s + static_cast<Nanos>((1 + settings_.settle_factor) * a.measurement.switching_ms * 1e6);
        if (time.now_ns() >= settled || settle_checked) break;
        settle_checked = true;
        next = settled;
        slice = std::move(a.records.sms);
        continue;
      }
      slice = std::move(a.records.sms);
      detect_from = slice.front().duration_ns.size() + static_cast<std::size_t>(plan.confirmation_iterations);
    }
    next = time.now_ns() + poll_ns;
  }
  a.records.bytes = stream_bytes_;
  stream_bytes_ = 0;
  tail_ = newest(a.records.sms, delay);  // every way out of the loop is after a detection
  return a;
}

std::vector<PairResult> Engine::measure_chained(const std::vector<ClockPair>& group, std::size_t first_number,
                                                std::size_t count) {
  std::vector<PairProgress> pairs(group.size());
  for (std::size_t i = 0; i < group.size(); ++i) {
    PairProgress& p = pairs[i];
    p.result.pair = group[i];
    p.result.status = "measured";
    p.number = first_number + i;
    p.capture_ms = p.usual_capture_ms = initial_capture_ms(group[i]);
    p.fmas = p.usual_fmas = walk_fmas(group[i]);
    observer_.pair_started(group[i], p.number, count);
  }
  return run_chained(pairs, count);
}

std::vector<PairResult> Engine::run_chained(std::vector<PairProgress>& pairs, std::size_t count) {
  // Whatever ends the group, its launch ends with it.
  struct StopOnExit {
    Engine& engine;
    ~StopOnExit() {
      try {
        engine.stop_stream();
      } catch (...) {  // unwinding already; the run's own error is the one to report
      }
    }
  } stop_on_exit{*this};
  std::vector<PairResult> finished;
  const auto finish = [&](PairProgress& p) {
    p.done = true;
    state_.cost.gpu_seconds = seconds_since_start();
    observer_.pair_finished(p.result, state_);
    finished.push_back(p.result);
  };
  // Each pair's share of the GPU time: from the end of the request before.
  Nanos mark = workload_.time().now_ns();
  const auto charge = [&](PairProgress& p) {
    const Nanos now = workload_.time().now_ns();
    p.result.gpu_seconds += static_cast<double>(now - mark) / 1e9;
    mark = now;
  };
  // Open: still measuring towards its stop. A pair whose stop is met stays
  // in the launch while another is open: where the walk must go through its
  // clocks anyway, its request is measured and kept, not an unrecorded
  // transit.
  const auto is_open = [](const PairProgress& p) { return !p.done && !p.met; };
  const auto open_leaving = [&](Mhz clock) {
    return std::count_if(pairs.begin(), pairs.end(),
                         [&](const PairProgress& q) { return is_open(q) && q.result.pair.init == clock; });
  };
  const auto leads_on = [&](const PairProgress& p) {
    return p.met && !p.done && static_cast<int>(p.result.rows.size()) < settings_.max_measurements &&
           open_leaving(p.result.pair.target) > 0;
  };
  for (;;) {
    if (std::none_of(pairs.begin(), pairs.end(), is_open)) {
      for (auto& p : pairs)
        if (!p.done) finish(p);
      return finished;
    }
    // One open that starts where the clock is: one whose target an open one
    // leaves, so the walk goes on without measuring past a stop, and the
    // least measured of those (routes of one pair take turns). Else a met
    // one from here into the clock most open ones leave; else the first
    // open one.
    PairProgress* next = nullptr;
    const auto goes_on = [&](const PairProgress& p) { return open_leaving(p.result.pair.target) > 0; };
    for (auto& p : pairs)
      if (is_open(p) && p.result.pair.init == stream_clock_ &&
          (next == nullptr || goes_on(p) > goes_on(*next) ||
           (goes_on(p) == goes_on(*next) && p.result.rows.size() < next->result.rows.size())))
        next = &p;
    for (auto& p : pairs)
      if (next == nullptr || (!is_open(*next) && open_leaving(p.result.pair.target) > open_leaving(next->result.pair.target)))
        if (p.result.pair.init == stream_clock_ && leads_on(p)) next = &p;
    for (auto& p : pairs)
      if (next == nullptr && is_open(p)) next = &p;
    const ClockPair pair = next->result.pair;
    try {
      // A coarser iteration for a capture retry serves that pair's try
      // alone: the group's other clocks are not calibrated at it, nor do
      // their requests pay its longer confirmation.
      std::int64_t fmas = next->fmas;
      for (const auto& p : pairs)
        if (!p.done) fmas = std::max(fmas, p.usual_fmas);
      // A pair that joins a launch at an iteration its clocks were not
      // calibrated at (two retries at one coarser iteration) restarts it.
      const auto calibrated = [&](Mhz f) { return calibrations_.count({f, fmas}) > 0; };
      if (stream_clock_ == 0 || stream_fmas_ != fmas || !calibrated(pair.init) || !calibrated(pair.target)) {
        stop_stream();  // phase 1 needs the GPU to itself
        for (const auto& p : pairs)
          if (!p.done && (&p == next || p.usual_fmas == fmas)) {
            calibration(p.result.pair.init, fmas);
            calibration(p.result.pair.target, fmas);
          }
        start_stream_at(pair.init, fmas);
        next->result.wakeup_ms = state_.settle_ms.back();
      } else if (stream_clock_ != pair.init) {
        // Nothing here leads on (the other direction is done, or at its
        // maximum, or a route's): back to this one's initial clock,
        // confirmed like a measurement but not kept.
        Attempt back = request_in_stream({stream_clock_, pair.init}, *next);
        ++next->result.transits;
        next->result.bytes += back.records.bytes;
        next->result.host_cpu_seconds += back.detection_cpu_s;
        if (back.measurement.outcome == MeasurementOutcome::accepted) {
          stream_clock_ = pair.init;
        } else {
          stop_stream();
        }
        continue;
      }
      const Nanos requested = workload_.time().now_ns();
      Attempt a = request_in_stream(pair, *next, next->via);
      PairResult& r = next->result;
      ++r.windows;
      r.bytes += a.records.bytes;
      r.host_cpu_seconds += a.detection_cpu_s;
      r.iteration_fmas = stream_fmas_;
      r.capture_ms = next->capture_ms;
      measurement_gpu_ms_ = static_cast<double>(workload_.time().now_ns() - requested) / 1e6;
      if (a.measurement.outcome == MeasurementOutcome::accepted) {
        stream_clock_ = pair.target;
        const double latency = a.row.switching_ms;
        if (accept(*next, a, count) && !next->met) {
          next->met = true;
          r.measurements_at_stop = static_cast<int>(r.rows.size());
        }
        // The capture follows the pair's own latencies, unless the user
        // fixed it; a longer one (and its coarser iteration) served the
        // measurement that needed it only.
        if (!next->met && !settings_.plan.capture_ms) {
          next->usual_capture_ms = std::max(next->usual_capture_ms, capture_from_pilot(latency, settings_.plan));
          next->capture_ms = next->usual_capture_ms;
          next->fmas = next->usual_fmas;
        }
      } else {
        stop_stream();  // where the clock is, is not known: the next try starts afresh
        if (!next->met) {
          reject(*next, a);
        } else {  // its stop was met: a failed extra request ends it as it stands
          ++r.failed[to_string(a.measurement.outcome)];
          charge(*next);
          finish(*next);
          continue;
        }
      }
    } catch (const SkipPair& s) {
      stop_stream();
      skip(*next, s.reason);
      charge(*next);
      finish(*next);
      continue;
    }
    charge(*next);
  }
}

}  // namespace latest
