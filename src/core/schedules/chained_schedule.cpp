#include "core/schedules/chained_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "core/schedules/stream_request.hpp"

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

// One pair per target clock (the initial one farthest from it): the
// chained schedule's plan needs a pilot latency per target.
std::vector<ClockPair> target_pilot_pairs(const std::vector<ClockPair>& pairs) {
  std::map<Mhz, ClockPair> farthest;
  for (const auto& p : pairs) {
    auto [it, fresh] = farthest.emplace(p.target, p);
    if (!fresh && std::abs(p.init - p.target) > std::abs(it->second.init - it->second.target)) it->second = p;
  }
  std::vector<ClockPair> chosen;
  for (const auto& [target, pair] : farthest) chosen.push_back(pair);
  return chosen;
}

}  // namespace

ChainedSchedule::ChainedSchedule(MeasurementCore& core) : core_(core) {
  core_.on_cool_down([this] { stop_stream(); });
}

ChainedSchedule::~ChainedSchedule() { core_.on_cool_down({}); }

std::vector<ClockPair> ChainedSchedule::more_pilot_pairs(const std::vector<ClockPair>& pairs,
                                                         const std::vector<ClockPair>& pilot) {
  // One pair per other target clock, which the plan and each pair's first
  // window need; they do not coarsen the run's iteration (a slow pair gets
  // its own).
  std::vector<ClockPair> more;
  for (const auto& p : target_pilot_pairs(pairs))
    if (std::none_of(pilot.begin(), pilot.end(), [&](const ClockPair& q) { return q.target == p.target; }))
      more.push_back(p);
  return more;
}

void ChainedSchedule::calibrate_for(const std::vector<ClockPair>& todo) {
  // Phase 1 at each coarser iteration the slow pairs need, now: so it is
  // spent before the plan, not inside it.
  for (const auto& p : todo) {
    core_.calibration(p.init, walk_fmas(p));
    core_.calibration(p.target, walk_fmas(p));
  }
}

std::vector<std::vector<ClockPair>> ChainedSchedule::groups_after_sample(
    const std::vector<std::vector<ClockPair>>& groups) {
  std::vector<ClockPair> pairs;
  for (const auto& g : groups) pairs.insert(pairs.end(), g.begin(), g.end());
  return walks_of(pairs);
}

std::vector<std::vector<ClockPair>> ChainedSchedule::walks_of(const std::vector<ClockPair>& todo) {
  // A walk over many clocks can leave each clock by another pair than the
  // one it came in by, so a direction that met its stop is measured on
  // only where a clock's arrivals outnumber its departures
  // (docs/decisions/0007-chained-walks.md). Blocks bound what a kill can lose.
  const auto block_size = static_cast<std::size_t>(std::max(1, core_.settings().walk_block_clocks));
  std::map<std::int64_t, std::vector<ClockPair>> by_fmas;
  for (const ClockPair& p : todo) by_fmas[walk_fmas(p)].push_back(p);
  std::vector<std::vector<ClockPair>> walks;
  for (const auto& [fmas, pairs] : by_fmas) {
    std::vector<Mhz> clocks;
    for (const ClockPair& p : pairs) clocks.insert(clocks.end(), {p.init, p.target});
    std::sort(clocks.begin(), clocks.end(), std::greater<>());
    clocks.erase(std::unique(clocks.begin(), clocks.end()), clocks.end());
    const auto block = [&](Mhz f) {
      return static_cast<std::size_t>(std::find(clocks.begin(), clocks.end(), f) - clocks.begin()) / block_size;
    };
    std::map<std::pair<std::size_t, std::size_t>, std::vector<ClockPair>> by_blocks;
    for (const ClockPair& p : pairs) by_blocks[std::minmax(block(p.init), block(p.target))].push_back(p);
    for (auto& [blocks, walk] : by_blocks) walks.push_back(std::move(walk));
  }
  return walks;
}

std::int64_t ChainedSchedule::walk_fmas(ClockPair pair) {
  return std::max({slice_fmas(pair), slice_fmas({pair.target, pair.init}), core_.pair_fmas(pair)});
}

std::int64_t ChainedSchedule::slice_fmas(ClockPair pair) {
  const EngineSettings& s = core_.settings();
  if (s.plan.iteration_fmas) return *s.plan.iteration_fmas;
  const double longest = core_.longest_pilot_into(pair.target);
  return std::max(core_.state().iteration_fmas, core_.iteration_for(1.5 * (1 + s.settle_factor) * longest));
}

double ChainedSchedule::initial_capture_ms(ClockPair pair) const {
  const double longest = core_.longest_pilot_into(pair.target);
  return longest > 0 ? capture_from_pilot(longest, core_.settings().plan) : core_.state().capture_ms;
}

std::vector<PairResult> ChainedSchedule::measure_group(const std::vector<ClockPair>& group, std::size_t first_number,
                                                       std::size_t count) {
  std::vector<PairProgress> pairs(group.size());
  for (std::size_t i = 0; i < group.size(); ++i) {
    PairProgress& p = pairs[i];
    p.result.pair = group[i];
    p.result.status = "measured";
    p.number = first_number + i;
    p.capture_ms = p.usual_capture_ms = initial_capture_ms(group[i]);
    p.fmas = p.usual_fmas = walk_fmas(group[i]);
    core_.observer().pair_started(group[i], p.number, count);
  }
  return measure(pairs, count);
}

void ChainedSchedule::stop_stream() {
  if (stream_clock_ == 0) return;
  stream_clock_ = 0;
  tail_.clear();
  core_.workload().stop_stream();
}

WindowRecords ChainedSchedule::drain() {
  WindowRecords more = core_.workload().drain();
  stream_bytes_ += more.bytes;
  return more;
}

bool ChainedSchedule::settled_at(const std::vector<SmRecords>& sms, const std::vector<std::size_t>& from, Mhz mhz) {
  const ClockCalibration& cal = core_.calibration(mhz, stream_fmas_);
  const double tol = neighbour_tolerance_ns(mhz, cal.pooled.iteration.mean, core_.supported());
  const auto confirm = static_cast<std::size_t>(core_.settings().plan.confirmation_iterations);
  for (std::size_t s = 0; s < sms.size(); ++s) {
    const auto& d = sms[s].duration_ns;
    if (d.size() < (s < from.size() ? from[s] : 0) + confirm) return false;
    double sum = 0;
    for (std::size_t i = d.size() - confirm; i < d.size(); ++i) sum += d[i];
    if (std::abs(sum / static_cast<double>(confirm) - cal.band_for(sms[s].sm).iteration.mean) > tol) return false;
  }
  return true;
}

void ChainedSchedule::start_stream_at(Mhz init, std::int64_t fmas) {
  stop_stream();
  core_.check_stop();
  const EngineSettings& s = core_.settings();
  const ClockCalibration& ci = core_.calibration(init, fmas);
  core_.set_clock(init);
  const Nanos launched = core_.workload().start_stream({fmas, 0, 0});
  stream_clock_ = init;
  stream_fmas_ = fmas;
  // No wake-up is guessed: the launch waits, polling, until every SM has
  // run the confirmation length at the initial clock (the settling is
  // measured), within the longest capture or ten wake-ups, the longer.
  const auto keep = static_cast<std::size_t>(s.plan.delay_iterations + s.plan.confirmation_iterations);
  const double confirm_ns = static_cast<double>(s.plan.confirmation_iterations) * ci.pooled.iteration.mean;
  const auto poll_ns = static_cast<Nanos>(std::max(1e4, s.poll_share * confirm_ns));
  const auto deadline =
      launched + static_cast<Nanos>(std::max(s.plan.max_capture_ms, 10 * core_.wakeup_for(init)) * 1e6);
  TimeSource& time = core_.workload().time();
  time.sleep_until(launched + static_cast<Nanos>(confirm_ns));
  for (;;) {
    append(tail_, drain());
    tail_ = newest(tail_, keep);
    if (settled_at(tail_, {}, init) || time.now_ns() >= deadline) break;
    time.sleep_until(time.now_ns() + poll_ns);
  }
  core_.state().settle_ms.push_back(static_cast<double>(time.now_ns() - launched) / 1e6);
}

Attempt ChainedSchedule::request(ClockPair pair, const PairProgress& p, const std::vector<RouteHop>& via) {
  core_.check_stop();
  const EngineSettings& s = core_.settings();
  const PlanSettings& plan = s.plan;
  TimeSource& time = core_.workload().time();
  const std::int64_t fmas = stream_fmas_;
  const ClockCalibration& ct = core_.calibration(pair.target, fmas);
  const auto delay = static_cast<std::size_t>(plan.delay_iterations);

  Attempt a;
  const TimerSync before = core_.synchronize();
  append(tail_, drain());
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
    core_.set_clock(hop.clock, hop_at);
    if (t_r == 0) t_r = time.now_ns();
    time.sleep_until(hop_at + static_cast<Nanos>(hop.wait_ms * 1e6));
    hop_at = time.now_ns();
  }
  core_.set_clock(pair.target, hop_at);
  if (t_r == 0) t_r = time.now_ns();
  const Telemetry tel = core_.clocks().telemetry();

  const double confirm_ns = static_cast<double>(plan.confirmation_iterations) * ct.pooled.iteration.mean;
  const auto poll_ns = static_cast<Nanos>(std::max(1e4, s.poll_share * confirm_ns));
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
  const double slow_ns =
      std::max(core_.calibration(pair.init, fmas).pooled.iteration.mean, ct.pooled.iteration.mean);
  auto limit = static_cast<std::size_t>(plan.max_recorded_iterations);
  if (plan.iteration_fmas)
    limit = std::max(limit, static_cast<std::size_t>(
                                static_cast<double>(plan.delay_iterations + plan.confirmation_iterations) +
                                p.capture_ms * 1e6 / slow_ns));
  // Where the records look settled but the detector wants more, it runs
  // again only once another confirmation length has come.
  std::size_t detect_from = 0;
  RequestState state = RequestState::collecting;
  while (state != RequestState::done) {
    time.sleep_until(next);
    append(slice, drain());
    bool full = false;
    for (const auto& sm : slice) full = full || sm.duration_ns.size() >= limit;
    const bool ready = settled_at(slice, at_request, pair.target);
    const bool timed_out = time.now_ns() >= deadline;
    if (!((ready && slice.front().duration_ns.size() >= detect_from) || full || timed_out)) {
      next = time.now_ns() + poll_ns;
      continue;
    }
    const TimerSync after = core_.synchronize();
    // Moved, not copied: copying the growing slice for each try of a pair
    // whose detector keeps asking for more cost a sixth of the host time.
    a.records.sms = std::move(slice);
    core_.detect(a, pair, fmas, before, after, t_s, t_r, tel);
    // A known truth is the last request's: a route's starts at its first.
    if (a.row.truth) a.row.truth->switching_ms += static_cast<double>(hop_at - t_s) / 1e6;
    // The records after the arrival must last `settle_factor` times the
    // switch itself: a last small step the detector cannot see until it
    // happens would otherwise pass unnoticed.
    const Nanos settled = t_s + static_cast<Nanos>((1 + s.settle_factor) * a.measurement.switching_ms * 1e6);
    const RequestEvent event =
        request_event(a.measurement.outcome, full || timed_out, time.now_ns() >= settled);
    const RequestState to = next_state(state, event);
    core_.observer().request_transition({pair, state, event, to});
    if (event == RequestEvent::ran_out && !ready) {
      // The capture ran out before the records settled at the target: not
      // captured, and a longer capture may help.
      a.measurement.outcome = MeasurementOutcome::not_captured;
      a.records_full = full && !timed_out;
    }
    if (to == RequestState::done) break;
    slice = std::move(a.records.sms);
    if (event == RequestEvent::accepted && state == RequestState::collecting) {
      next = settled;  // then it decides again
    } else {
      detect_from = slice.front().duration_ns.size() + static_cast<std::size_t>(plan.confirmation_iterations);
      next = time.now_ns() + poll_ns;
    }
    state = to;
  }
  a.records.bytes = stream_bytes_;
  stream_bytes_ = 0;
  tail_ = newest(a.records.sms, delay);  // every way out of the loop is after a detection
  return a;
}

namespace {

// Open: still measuring towards its stop. A pair whose stop is met stays in
// the launch while another is open: where the walk must go through its
// clocks anyway, its request is measured and kept, not an unrecorded
// transit.
bool is_open(const PairProgress& p) { return !p.done && !p.met; }

long open_leaving(const std::vector<PairProgress>& pairs, Mhz clock) {
  return std::count_if(pairs.begin(), pairs.end(),
                       [&](const PairProgress& q) { return is_open(q) && q.result.pair.init == clock; });
}

}  // namespace

PairProgress* ChainedSchedule::next_pair(std::vector<PairProgress>& pairs) {
  if (std::none_of(pairs.begin(), pairs.end(), is_open)) return nullptr;
  const int most = core_.settings().max_measurements;
  const auto leads_on = [&](const PairProgress& p) {
    return p.met && !p.done && static_cast<int>(p.result.rows.size()) < most &&
           open_leaving(pairs, p.result.pair.target) > 0;
  };
  // One open that starts where the clock is: one whose target an open one
  // leaves, so the walk goes on without measuring past a stop, and the
  // least measured of those (routes of one pair take turns). Else a met
  // one from here into the clock most open ones leave; else the first
  // open one.
  PairProgress* next = nullptr;
  const auto goes_on = [&](const PairProgress& p) { return open_leaving(pairs, p.result.pair.target) > 0; };
  for (auto& p : pairs)
    if (is_open(p) && p.result.pair.init == stream_clock_ &&
        (next == nullptr || goes_on(p) > goes_on(*next) ||
         (goes_on(p) == goes_on(*next) && p.result.rows.size() < next->result.rows.size())))
      next = &p;
  for (auto& p : pairs)
    if (next == nullptr ||
        (!is_open(*next) && open_leaving(pairs, p.result.pair.target) > open_leaving(pairs, next->result.pair.target)))
      if (p.result.pair.init == stream_clock_ && leads_on(p)) next = &p;
  for (auto& p : pairs)
    if (next == nullptr && is_open(p)) next = &p;
  return next;
}

bool ChainedSchedule::ready_for(PairProgress& next, std::vector<PairProgress>& pairs) {
  const ClockPair pair = next.result.pair;
  // A coarser iteration for a capture retry serves that pair's try alone:
  // the group's other clocks are not calibrated at it, nor do their
  // requests pay its longer confirmation.
  std::int64_t fmas = next.fmas;
  for (const auto& p : pairs)
    if (!p.done) fmas = std::max(fmas, p.usual_fmas);
  // A pair that joins a launch at an iteration its clocks were not
  // calibrated at (two retries at one coarser iteration) restarts it.
  if (stream_clock_ == 0 || stream_fmas_ != fmas || !core_.calibrated(pair.init, fmas) ||
      !core_.calibrated(pair.target, fmas)) {
    stop_stream();  // phase 1 needs the GPU to itself
    for (const auto& p : pairs)
      if (!p.done && (&p == &next || p.usual_fmas == fmas)) {
        core_.calibration(p.result.pair.init, fmas);
        core_.calibration(p.result.pair.target, fmas);
      }
    start_stream_at(pair.init, fmas);
    next.result.wakeup_ms = core_.state().settle_ms.back();
    return true;
  }
  if (stream_clock_ == pair.init) return true;
  // Nothing here leads on (the other direction is done, or at its maximum,
  // or a route's): back to this one's initial clock, confirmed like a
  // measurement but not kept.
  Attempt back = request({stream_clock_, pair.init}, next);
  ++next.result.transits;
  next.result.bytes += back.records.bytes;
  next.result.host_cpu_seconds += back.detection_cpu_s;
  if (back.measurement.outcome == MeasurementOutcome::accepted) {
    stream_clock_ = pair.init;
  } else {
    stop_stream();
  }
  return false;
}

bool ChainedSchedule::request_and_keep(PairProgress& next, std::size_t count) {
  const ClockPair pair = next.result.pair;
  const Nanos requested = core_.workload().time().now_ns();
  Attempt a = request(pair, next, next.via);
  PairResult& r = next.result;
  ++r.windows;
  r.bytes += a.records.bytes;
  r.host_cpu_seconds += a.detection_cpu_s;
  r.iteration_fmas = stream_fmas_;
  r.capture_ms = next.capture_ms;
  core_.set_measurement_gpu_ms(static_cast<double>(core_.workload().time().now_ns() - requested) / 1e6);
  if (a.measurement.outcome != MeasurementOutcome::accepted) {
    stop_stream();  // where the clock is, is not known: the next try starts afresh
    if (!next.met) {
      core_.reject(next, a);
      return true;
    }
    // Its stop was met: a failed extra request ends it as it stands.
    ++r.failed[to_string(a.measurement.outcome)];
    return false;
  }
  stream_clock_ = pair.target;
  const double latency = a.row.switching_ms;
  if (core_.accept(next, a, count) && !next.met) {
    next.met = true;
    r.measurements_at_stop = static_cast<int>(r.rows.size());
  }
  // The capture follows the pair's own latencies, unless the user fixed it;
  // a longer one (and its coarser iteration) served the measurement that
  // needed it only.
  const PlanSettings& plan = core_.settings().plan;
  if (!next.met && !plan.capture_ms) {
    next.usual_capture_ms = std::max(next.usual_capture_ms, capture_from_pilot(latency, plan));
    next.capture_ms = next.usual_capture_ms;
    next.fmas = next.usual_fmas;
  }
  return true;
}

std::vector<PairResult> ChainedSchedule::measure(std::vector<PairProgress>& pairs, std::size_t count) {
  // Whatever ends the group, its launch ends with it.
  struct StopOnExit {
    ChainedSchedule& schedule;
    ~StopOnExit() {
      try {
        schedule.stop_stream();
      } catch (...) {  // unwinding already; the run's own error is the one to report
      }
    }
  } stop_on_exit{*this};
  std::vector<PairResult> finished;
  const auto finish = [&](PairProgress& p) {
    p.done = true;
    p.result.number = p.number;
    core_.state().cost.gpu_seconds = core_.seconds_since_start();
    core_.observer().pair_finished(p.result, core_.state());
    finished.push_back(p.result);
  };
  // Each pair's share of the GPU time: from the end of the request before.
  Nanos mark = core_.workload().time().now_ns();
  const auto charge = [&](PairProgress& p) {
    const Nanos now = core_.workload().time().now_ns();
    p.result.gpu_seconds += static_cast<double>(now - mark) / 1e9;
    mark = now;
  };
  for (;;) {
    PairProgress* next = next_pair(pairs);
    if (next == nullptr) {
      for (auto& p : pairs)
        if (!p.done) finish(p);
      return finished;
    }
    try {
      if (!ready_for(*next, pairs)) continue;
      if (!request_and_keep(*next, count)) {
        charge(*next);
        finish(*next);
        continue;
      }
    } catch (const SkipPair& s) {
      stop_stream();
      core_.skip(*next, s.reason);
      charge(*next);
      finish(*next);
      continue;
    }
    charge(*next);
  }
}

}  // namespace latest
