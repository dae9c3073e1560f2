#include "core/engine.hpp"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <functional>
#include <map>

#include <fmt/format.h>

#include "core/error.hpp"

namespace latest {
namespace {

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::vector<double> latencies(const std::vector<MeasurementRow>& rows) {
  std::vector<double> xs;
  xs.reserve(rows.size());
  for (const auto& r : rows) xs.push_back(r.switching_ms);
  return xs;
}

}  // namespace

const char* to_string(SkipReason::Code code) {
  switch (code) {
    case SkipReason::Code::none: return "none";
    case SkipReason::Code::clock_power_capped: return "clock_power_capped";
    case SkipReason::Code::means_indistinguishable: return "means_indistinguishable";
    case SkipReason::Code::bands_overlap: return "bands_overlap";
    case SkipReason::Code::power_capping: return "power_capping";
    case SkipReason::Code::not_captured: return "not_captured";
    case SkipReason::Code::measurements_failed: return "measurements_failed";
  }
  return "?";
}

Engine::Engine(Workload& workload, ClockControl& clocks, EngineSettings settings, RunObserver& observer,
               std::function<std::string()> stop)
    : workload_(workload), clocks_(clocks), settings_(std::move(settings)), observer_(observer),
      stop_(std::move(stop)) {}

void Engine::check_stop() {
  const std::string why = stop_();
  if (!why.empty()) throw Interrupted(why);
}

double Engine::seconds_since_start() {
  return static_cast<double>(workload_.time().now_ns() - started_ns_) / 1e9;
}

void Engine::set_clock(Mhz mhz, std::optional<Nanos> requested_at) {
  workload_.clock_requested(requested_at.value_or(workload_.time().now_ns()), mhz);
  clocks_.set_clock(mhz);
  current_clock_ = mhz;
}

void SyncStats::add(const TimerSync& s) {
  const double host_s = static_cast<double>(s.host_ns) / 1e9;
  last_offset_ns = s.offset_ns;
  if (count == 0) {
    first_offset_ns = s.offset_ns;
    first_host_s_ = host_s;
    min_uncertainty_ns = max_uncertainty_ns = s.uncertainty_ns;
    min_round_trip_ns = s.round_trip_ns;
  }
  const double x = host_s - first_host_s_;
  const auto y = static_cast<double>(s.offset_ns);
  if (count > 0) max_gap_s = std::max(max_gap_s, x - last_x_);
  last_x_ = x;
  min_uncertainty_ns = std::min(min_uncertainty_ns, s.uncertainty_ns);
  max_uncertainty_ns = std::max(max_uncertainty_ns, s.uncertainty_ns);
  min_round_trip_ns = std::min(min_round_trip_ns, s.round_trip_ns);
  max_round_trip_ns = std::max(max_round_trip_ns, s.round_trip_ns);
  ++count;
  sum_x_ += x;
  sum_y_ += y;
  sum_xx_ += x * x;
  sum_xy_ += x * y;
  const double n = count;
  const double denom = n * sum_xx_ - sum_x_ * sum_x_;
  if (count > 2 && denom > 0) drift_ppm = (n * sum_xy_ - sum_x_ * sum_y_) / denom / 1e3;  // ns/s -> ppm
  max_drift_between_syncs_ns = std::abs(drift_ppm) * 1e3 * max_gap_s;
}

TimerSync Engine::synchronize() {
  const Nanos from = workload_.time().now_ns();
  const TimerSync s = workload_.synchronize();
  sync_seconds_ += static_cast<double>(workload_.time().now_ns() - from) / 1e9;
  state_.sync.add(s);
  state_.cost.sync_ms = sync_seconds_ * 1e3 / state_.sync.count;
  return s;
}

const ClockCalibration& Engine::calibration(Mhz mhz, std::int64_t fmas) {
  const auto key = std::make_pair(mhz, fmas);
  if (auto it = calibrations_.find(key); it != calibrations_.end()) return it->second;
  check_stop();
  const PlanSettings& ps = settings_.plan;
  const TimerSync sync = synchronize();
  const Nanos requested = workload_.time().now_ns();
  set_clock(mhz);
  // First kernel: shows the wake-up. Middle: settles and warms the card.
  // Last: the statistics.
  workload_.launch({fmas, 0, ps.calibration_iterations});
  const WindowRecords first = workload_.collect();
  MomentAccumulator first_moments;
  for (const auto& sm : first.sms)
    for (auto d : sm.duration_ns) first_moments.add(d);
  const double first_mean = std::max(1.0, first_moments.moments().mean);
  const auto settle = static_cast<std::int64_t>(std::ceil(ps.calibration_settle_ms * 1e6 / first_mean));
  workload_.launch({fmas, settle, 0});
  workload_.collect();
  workload_.launch({fmas, 0, ps.calibration_iterations});
  const WindowRecords last = workload_.collect();
  ClockCalibration cal = calibrate_from_records(mhz, fmas, last, workload_.info().timer_tick_ns);

  DetectionSettings wake = settings_.detection;
  wake.precheck_iterations = 0;
  wake.target_tol_ns = neighbour_tolerance_ns(mhz, cal.pooled.iteration.mean, supported_);
  const Measurement m = detect_switch(first, sync.to_gpu(requested), cal, cal, wake);
  if (m.outcome == MeasurementOutcome::accepted) cal.wakeup_ms = m.switching_ms;

  const Telemetry t = clocks_.telemetry();
  if (t.throttle.power)
    state_.unusable_clocks[mhz] = {.code = SkipReason::Code::clock_power_capped, .clock = mhz,
                                   .raw_reasons = t.throttle.raw_reasons};
  return calibrations_.emplace(key, std::move(cal)).first->second;
}

std::int64_t Engine::iteration_for(double capture_ms) {
  return iteration_fmas_for(capture_ms, ns_per_fma_, settings_.plan);
}

double Engine::longest_pilot_into(Mhz target) const {
  double longest = 0;
  for (const auto& [pair, ms] : state_.pilot)
    if (pair.target == target) longest = std::max(longest, ms);
  return longest;
}

double Engine::wakeup_for(Mhz init, int raises) const {
  double wake = settings_.plan.min_wakeup_ms;
  if (settings_.plan.wakeup_ms) {
    wake = *settings_.plan.wakeup_ms;
  } else {
    // Twice the longest switch into this clock measured so far: phase 1's
    // own wake-up, and the pilot's switches that ended at it.
    for (const auto& [key, cal] : calibrations_)
      if (key.first == init && cal.wakeup_ms) wake = std::max(wake, 2 * *cal.wakeup_ms);
    wake = std::max(wake, 2 * longest_pilot_into(init));
  }
  // Raised fourfold per failed try, for the next try only; never beyond the
  // longest capture.
  return std::min(wake * std::pow(4.0, raises), std::max(wake, settings_.plan.max_capture_ms));
}

bool Engine::adjacent(ClockPair pair) const {
  const auto a = std::find(supported_.begin(), supported_.end(), pair.init);
  const auto b = std::find(supported_.begin(), supported_.end(), pair.target);
  return a != supported_.end() && b != supported_.end() && std::abs(a - b) == 1;
}

std::vector<ClockPair> Engine::check_pairs() {
  std::vector<ClockPair> measured;
  state_.checks.clear();
  for (const auto& pair : settings_.pairs) {
    PairCheck check;
    check.pair = pair;
    const auto& a = calibration(pair.init, state_.iteration_fmas);
    const auto& b = calibration(pair.target, state_.iteration_fmas);
    check.difference_ns = difference_interval(a.pooled.iteration, b.pooled.iteration);
    check.means_differ = !check.difference_ns.contains(0.0);
    check.band_overlap = band_overlap(a.pooled.iteration, b.pooled.iteration);
    if (auto it = state_.unusable_clocks.find(pair.init); it != state_.unusable_clocks.end()) {
      check.skip = it->second;
    } else if (auto jt = state_.unusable_clocks.find(pair.target); jt != state_.unusable_clocks.end()) {
      check.skip = jt->second;
    } else if (!check.means_differ) {
      check.skip = {.code = SkipReason::Code::means_indistinguishable};
    } else if (check.band_overlap > settings_.max_band_overlap && !settings_.include_inseparable &&
               (settings_.detector == Detector::paper || adjacent(pair))) {
      // The paper's detector needs bands that barely overlap; the pooled one
      // separates clocks two steps apart, and only neighbours may be skipped.
      check.skip = {.code = SkipReason::Code::bands_overlap, .value = check.band_overlap,
                    .limit = settings_.max_band_overlap};
    }
    if (!check.skip.skipped()) measured.push_back(pair);
    if (settings_.detector == Detector::pooled) check.separable_fmas = separable_fmas(pair);
    state_.checks.push_back(check);
  }
  return measured;
}

double Engine::run_pilot(const std::vector<ClockPair>& candidates, std::size_t capture_pairs) {
  double longest = 0;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const ClockPair pair = candidates[i];
    // Each pair's pilot escalates its own window: a slow pair does not
    // lengthen the others'.
    double capture = settings_.plan.pilot_capture_ms;
    for (int k = 0; k < settings_.plan.pilot_measurements; ++k) {
      bool captured = false;
      int raises = 0;
      for (int attempt = 0; attempt < settings_.max_attempts && !captured; ++attempt) {
        const std::int64_t fmas = iteration_for(capture);
        const auto& ci = calibration(pair.init, fmas);
        const auto& ct = calibration(pair.target, fmas);
        if (!means_differ(ci.pooled.iteration, ct.pooled.iteration)) break;
        const WindowPlan plan = plan_window(capture, wakeup_for(pair.init, raises), ci, ct, settings_.plan);
        const Attempt a = measure_once(pair, plan);
        switch (a.measurement.outcome) {
          case MeasurementOutcome::accepted:
            state_.pilot.emplace_back(pair, a.row.switching_ms);
            if (i < capture_pairs) longest = std::max(longest, a.row.switching_ms);
            captured = true;
            break;
          case MeasurementOutcome::not_captured:
            capture = std::min(capture * 10, settings_.plan.max_capture_ms);
            break;
          case MeasurementOutcome::initial_not_held:
            ++raises;
            break;
          case MeasurementOutcome::not_confirmed:
            break;
        }
      }
    }
  }
  // Nothing captured: the first pilot window, and each pair escalates on its
  // own (no run-wide fallback to the longest capture).
  return capture_from_pilot(longest > 0 ? longest : settings_.plan.pilot_capture_ms / settings_.plan.capture_factor,
                            settings_.plan);
}

Engine::Attempt Engine::measure_once(ClockPair pair, const WindowPlan& plan) {
  check_stop();
  TimeSource& time = workload_.time();
  Attempt a;
  const TimerSync sync = synchronize();
  set_clock(pair.init);
  workload_.launch({plan.iteration_fmas, plan.warmup_iterations, 0});
  workload_.collect();
  const Nanos launched = workload_.launch({plan.iteration_fmas, 0, plan.recorded_iterations});
  time.sleep_until(launched + static_cast<Nanos>(plan.delay_ms * 1e6));
  const Nanos t_s = time.now_ns();
  set_clock(pair.target, t_s);
  const Nanos t_r = time.now_ns();
  const Telemetry tel = clocks_.telemetry();
  a.records = workload_.collect();
  const TimerSync after = synchronize();
  detect(a, pair, plan.iteration_fmas, sync, after, t_s, t_r, tel);
  return a;
}

void Engine::detect(Attempt& a, ClockPair pair, std::int64_t fmas, const TimerSync& sync, const TimerSync& after,
                    Nanos t_s, Nanos t_r, const Telemetry& tel) {
  a.request_gpu_ns = to_gpu_between(sync, after, t_s);
  const auto& ci = calibration(pair.init, fmas);
  const auto& ct = calibration(pair.target, fmas);
  DetectionSettings det = settings_.detection;
  det.target_tol_ns = neighbour_tolerance_ns(pair.target, ct.pooled.iteration.mean, supported_);
  det.initial_tol_ns = neighbour_tolerance_ns(pair.init, ci.pooled.iteration.mean, supported_);
  const double cpu0 = cpu_seconds();
  // Both detectors on every window; the selected one's numbers are reported,
  // the pooled one's misfit flags always.
  a.paper = detect_switch(a.records, a.request_gpu_ns, ci, ct, det);
  const Measurement pooled =
      detect_switch_pooled(a.records, a.request_gpu_ns, ci, ct, det.initial_tol_ns, det.target_tol_ns, settings_.pooled);
  a.measurement = settings_.detector == Detector::paper ? a.paper : pooled;
  a.detection_cpu_s = cpu_seconds() - cpu0;
  observer_.window_read({pair, a.records, a.request_gpu_ns, ci, ct, det.initial_tol_ns, det.target_tol_ns});

  MeasurementRow& row = a.row;
  row.switching_ms = a.measurement.switching_ms;
  row.transition_ms = a.measurement.transition_ms;
  row.switching_uncertainty_us = a.measurement.uncertainty_us;
  if (a.paper.outcome == MeasurementOutcome::accepted) {
    row.paper_switching_ms = a.paper.switching_ms;
    row.paper_transition_ms = a.paper.transition_ms;
  }
  row.call_ms = static_cast<double>(t_r - t_s) / 1e6;
  row.misfits = pooled.misfits;
  row.accepted_sms = a.measurement.accepted_sms;
  row.max_sm = a.measurement.max_sm;
  row.sm_spread_ms = a.measurement.sm_spread_ms;
  row.sync_uncertainty_us = std::max(sync.uncertainty_ns, after.uncertainty_ns) / 1e3;
  row.temperature_c = tel.temperature_c;
  row.power_w = tel.power_w;
  row.memory_mhz = tel.memory_mhz;
  row.truth = workload_.truth(sync, after);
}

std::int64_t trace_bytes_per_measurement(const EngineSettings& s, int sm_count) {
  return static_cast<std::int64_t>(sm_count) * s.trace_rows_per_sm * kTraceRowBytes;
}

void Engine::keep_traces(PairResult& result, const Attempt& a, int index) {
  const auto margin = static_cast<std::size_t>(settings_.trace_margin);
  std::vector<TraceRow> rows;
  for (std::size_t s = 0; s < a.records.sms.size(); ++s) {
    const SmRecords& sm = a.records.sms[s];
    const SmDetection& det = a.measurement.per_sm[s];
    const std::size_t n = sm.duration_ns.size();
    std::vector<Nanos> starts(n);
    Nanos t = sm.first_start_ns;
    std::size_t first = n, arrival = n;
    for (std::size_t i = 0; i < n; ++i) {
      starts[i] = t;
      if (first == n && t >= a.request_gpu_ns) first = i;
      t += sm.duration_ns[i];
      // The iteration the arrival ends (the paper's) or falls in (the pooled one).
      if (det.outcome == SmOutcome::accepted && arrival == n && t >= det.arrival_ns) arrival = i;
    }
    if (first == n) continue;
    // In full around the request and around this SM's change; the ramp
    // between thinned to every k-th iteration, so an SM keeps at most
    // trace_rows_per_sm rows whatever the latency.
    const std::size_t last = arrival < n ? arrival : first;
    const std::size_t from = first > margin ? first - margin : 0;
    const std::size_t to = std::min(n, last + margin + 1);
    const std::size_t span = to - from;
    const std::size_t room = static_cast<std::size_t>(std::max(settings_.trace_rows_per_sm, 1));
    const std::size_t in_full = 4 * margin + 2;  // the two stretches kept whole
    const std::size_t thinned_room = room > in_full ? room - in_full : 1;
    const std::size_t stride = span <= room ? 1 : std::max<std::size_t>(1, span / thinned_room);
    for (std::size_t i = from; i < to; ++i) {
      const bool whole = i < first + margin + 1 || i + margin + 1 > last;
      if (!whole && (i - from) % stride != 0) continue;
      rows.push_back({index, sm.sm, static_cast<std::int64_t>(i), starts[i] - a.request_gpu_ns, sm.duration_ns[i],
                      i < sm.cycles.size() ? sm.cycles[i] : 0u});
    }
  }
  const auto bytes = static_cast<std::int64_t>(rows.size()) * kTraceRowBytes;
  if (trace_bytes_ + bytes > settings_.trace_budget_bytes) {
    ++state_.traces_dropped;
    return;
  }
  trace_bytes_ += bytes;
  result.traces.insert(result.traces.end(), rows.begin(), rows.end());
}

void Engine::skip_if_power_capped(const Telemetry& tel, ClockPair pair) {
  if (!tel.throttle.power) return;
  state_.throttle_events.push_back({seconds_since_start(), pair, "power", "pair skipped", tel.throttle.raw_reasons});
  throw SkipPair{{.code = SkipReason::Code::power_capping, .raw_reasons = tel.throttle.raw_reasons}};
}

void Engine::skip(PairProgress& p, const SkipReason& reason) {
  PairResult& r = p.result;
  r.status = "skipped";
  r.reason = reason;
  // Measured while a clock could not be held, or in a pair that never
  // settled: not results, but counted so that nothing vanishes unseen.
  if (!r.rows.empty()) r.discarded["pair_skipped"] += static_cast<int>(r.rows.size());
  r.rows.clear();
  r.traces.clear();
  p.done = true;
}

void Engine::lengthen_capture(PairProgress& p, bool records_full) {
  // A chained slice that filled the records budget before the switch ended
  // needs a coarser iteration, not a longer capture: twice the iteration
  // holds twice the span, and its phase 1 costs twice, not the 64 times of
  // an iteration sized for a ten-fold capture.
  const std::int64_t holds_capture = iteration_for(p.capture_ms);
  if (records_full && !settings_.plan.iteration_fmas && p.fmas < holds_capture) {
    p.fmas = std::min(2 * p.fmas, holds_capture);
    ++p.result.capture_retries;
    return;
  }
  if (p.capture_ms >= settings_.plan.max_capture_ms) {
    // Never captured at all: the pair's own escalating pilot has failed.
    if (p.result.rows.empty())
      throw SkipPair{{.code = SkipReason::Code::not_captured, .value = settings_.plan.max_capture_ms}};
    // One switch slower than the longest window in a pair that has
    // measurements: that try failed (reject counts it); the pair goes on
    // with the window and iteration its measurements need.
    p.capture_ms = p.usual_capture_ms;
    p.fmas = p.usual_fmas;
    return;
  }
  // A longer window for the rest of the pair.
  p.capture_ms = std::min(p.capture_ms * settings_.plan.capture_factor, settings_.plan.max_capture_ms);
  p.fmas = std::max(p.fmas, iteration_for(p.capture_ms));
  ++p.result.capture_retries;
}

void Engine::coarsen_iteration(PairProgress& p) {
  // Where every SM's last ramp level lies within a boundary's noise of the
  // target, no SM can place the change and every window is refused (h200
  // 1980 <-> 1950 at 1024 FMAs with linear ramps, overshoots or slow
  // approaches: the pairs were skipped). Four times the iteration makes
  // each iteration's lag four times larger against the same timer noise;
  // the pair's own calibrations follow (docs/methodology.md, "Pair validity
  // and separability").
  if (settings_.plan.iteration_fmas || p.usual_fmas >= kCoarsestIterationFmas) return;
  p.fmas = p.usual_fmas = std::min(4 * p.usual_fmas, kCoarsestIterationFmas);
  ++p.result.iteration_coarsenings;
}

void Engine::reject(PairProgress& p, const Attempt& a) {
  ++p.result.failed[to_string(a.measurement.outcome)];
  skip_if_power_capped(clocks_.telemetry(), p.result.pair);
  if (a.measurement.outcome == MeasurementOutcome::not_captured) lengthen_capture(p, a.records_full);
  if (++p.failed_attempts < settings_.max_attempts) return;
  p.failed_attempts = 0;
  const std::int64_t tried_fmas = p.fmas;
  if (a.measurement.outcome == MeasurementOutcome::not_confirmed) coarsen_iteration(p);
  if (++p.failed_measurements < settings_.max_failed_measurements) return;
  // The skip says how most tries failed and at which iteration, so that the
  // message can name the way out (a fixed iteration is never coarsened).
  MeasurementOutcome most = a.measurement.outcome;
  const auto count = [&](MeasurementOutcome o) {
    const auto it = p.result.failed.find(to_string(o));
    return it == p.result.failed.end() ? 0 : it->second;
  };
  for (MeasurementOutcome o : {MeasurementOutcome::initial_not_held, MeasurementOutcome::not_captured,
                               MeasurementOutcome::not_confirmed})
    if (count(o) > count(most)) most = o;
  throw SkipPair{{.code = SkipReason::Code::measurements_failed, .count = p.failed_measurements,
                  .tries = settings_.max_attempts, .failure = most, .fmas = tried_fmas,
                  .fmas_fixed = settings_.plan.iteration_fmas.has_value()}};
}

bool Engine::accept(PairProgress& p, Attempt& a, std::size_t count) {
  PairResult& result = p.result;
  const ClockPair pair = result.pair;
  p.failed_attempts = 0;
  a.row.index = ++p.measurement_number;
  if (settings_.save_traces || static_cast<int>(result.rows.size()) < settings_.trace_first ||
      (a.row.misfits != 0 && p.traced_misfits++ < settings_.trace_first))
    keep_traces(result, a, a.row.index);
  result.rows.push_back(a.row);

  auto n = static_cast<int>(result.rows.size());
  if (n % settings_.throttle_check_every == 0) {
    const Telemetry tel = clocks_.telemetry();
    skip_if_power_capped(tel, pair);
    if (tel.throttle.thermal) {
      const int drop = std::min(n, settings_.throttle_check_every);
      result.rows.resize(static_cast<std::size_t>(n - drop));
      result.discarded["thermal"] += drop;
      state_.throttle_events.push_back({seconds_since_start(), pair, "thermal",
                                        fmt::format("discarded the newest {} measurements, cooled {} s", drop,
                                                    settings_.thermal_cooldown_s),
                                        tel.throttle.raw_reasons});
      cool_down();
      n = static_cast<int>(result.rows.size());
    }
  }
  result.rse = relative_standard_error(latencies(result.rows));
  const int remaining_here = std::max(0, settings_.min_measurements - n);
  observer_.progress({p.number, count, pair, n, result.rse,
                      (static_cast<double>(count - p.number) * settings_.min_measurements + remaining_here) *
                          measurement_gpu_ms_ / 1e3});
  if (n >= settings_.max_measurements) return true;
  return n > 0 && n >= settings_.min_measurements && n % settings_.rse_check_every == 0 && result.rse <= settings_.rse;
}

void Engine::cool_down() {
  stop_stream();  // a running kernel would keep the card hot
  TimeSource& time = workload_.time();
  time.sleep_until(time.now_ns() + static_cast<Nanos>(settings_.thermal_cooldown_s * 1e9));
}

PairResult Engine::measure_pair(ClockPair pair, std::size_t number, std::size_t count) {
  PairProgress p;
  p.result.pair = pair;
  p.result.status = "measured";
  p.number = number;
  p.capture_ms = p.usual_capture_ms = state_.capture_ms;
  p.fmas = p.usual_fmas = pair_fmas(pair);
  PairResult& result = p.result;
  const Nanos pair_start = workload_.time().now_ns();
  int raises = 0;  // of the wake-up, for the next tries of this measurement only
  try {
    while (!p.done) {
      const auto& ci = calibration(pair.init, p.fmas);
      const auto& ct = calibration(pair.target, p.fmas);
      const WindowPlan plan = plan_window(p.capture_ms, wakeup_for(pair.init, raises), ci, ct, settings_.plan);
      measurement_gpu_ms_ = plan.gpu_ms;
      Attempt a = measure_once(pair, plan);
      result.host_cpu_seconds += a.detection_cpu_s;
      ++result.windows;
      result.bytes += a.records.bytes;
      result.iteration_fmas = p.fmas;
      result.capture_ms = p.capture_ms;
      result.wakeup_ms = plan.wakeup_ms;
      const bool not_held = a.measurement.outcome == MeasurementOutcome::initial_not_held;
      raises = not_held && p.failed_attempts + 1 < settings_.max_attempts ? raises + 1 : 0;
      if (a.measurement.outcome == MeasurementOutcome::accepted) {
        p.done = accept(p, a, count);
      } else {
        reject(p, a);
      }
    }
  } catch (const SkipPair& s) {
    skip(p, s.reason);
  }
  result.gpu_seconds = static_cast<double>(workload_.time().now_ns() - pair_start) / 1e9;
  return result;
}

std::vector<ClockPair> Engine::target_pilot_pairs(const std::vector<ClockPair>& pairs) {
  std::map<Mhz, ClockPair> farthest;
  for (const auto& p : pairs) {
    auto [it, fresh] = farthest.emplace(p.target, p);
    if (!fresh && std::abs(p.init - p.target) > std::abs(it->second.init - it->second.target)) it->second = p;
  }
  std::vector<ClockPair> chosen;
  for (const auto& [target, pair] : farthest) chosen.push_back(pair);
  return chosen;
}

void Engine::plan_cost(const std::vector<ClockPair>& measured, const std::vector<double>& counts) {
  CostModelInputs in;
  in.measurement_counts = counts;
  in.schedule = state_.schedule;
  in.capture_ms = state_.capture_ms;
  in.sync_ms = state_.cost.sync_ms;
  in.poll_share = settings_.poll_share;
  in.settle_factor = settings_.settle_factor;
  in.rse = settings_.rse;
  in.min_measurements = settings_.min_measurements;
  in.max_measurements = settings_.max_measurements;
  in.check_every = settings_.rse_check_every;
  in.plan = settings_.plan;
  std::map<std::pair<Mhz, Mhz>, std::vector<double>> by_pair;
  std::map<Mhz, std::vector<double>> by_target;
  std::vector<double> all;
  for (const auto& [pair, ms] : state_.pilot) {
    by_pair[{pair.init, pair.target}].push_back(ms);
    by_target[pair.target].push_back(ms);
    all.push_back(ms);
  }
  for (const auto& [pair, xs] : by_pair)
    if (xs.size() >= 2) {
      const Moments m = moments_of(xs);
      in.pilot_cvs.push_back(m.mean > 0 ? m.sd / m.mean : 0.0);
    }
  const double typical = all.empty() ? settings_.plan.pilot_capture_ms : moments_of(all).mean;
  for (const auto& pair : measured) {
    PlannedPair pp;
    pp.pair = pair;
    const auto it = by_target.find(pair.target);
    pp.latency_ms = it != by_target.end() ? moments_of(it->second).mean : typical;
    const std::int64_t fmas = state_.schedule == Schedule::chained ? walk_fmas(pair) : pair_fmas(pair);
    pp.iteration_ns = calibration(pair.target, fmas).pooled.iteration.mean;
    pp.init_iteration_ns = calibration(pair.init, fmas).pooled.iteration.mean;
    pp.wakeup_ms = wakeup_for(pair.init);
    in.pairs.push_back(pp);
  }
  if (state_.schedule == Schedule::chained) {
    std::map<std::pair<Mhz, Mhz>, int> walk_of;
    const std::vector<std::vector<ClockPair>> walks = walks_of(measured);
    for (std::size_t w = 0; w < walks.size(); ++w)
      for (const ClockPair& pair : walks[w]) walk_of[{pair.init, pair.target}] = static_cast<int>(w);
    for (PlannedPair& pp : in.pairs) pp.walk = walk_of.at({pp.pair.init, pp.pair.target});
  }
  const CostPlan plan = latest::plan_cost(in);
  state_.cost.planned_measurements_per_pair = plan.measurements_per_pair;
  state_.cost.planned_gpu_seconds = seconds_since_start() + plan.measurements_s;
}

RunState Engine::plan(const std::set<std::pair<Mhz, Mhz>>& done) {
  const std::vector<ClockPair> todo = prepare(done);
  measure_sample(groups_of(todo), todo.size());
  return state_;
}

std::vector<std::vector<ClockPair>> Engine::groups_of(const std::vector<ClockPair>& todo) {
  std::vector<std::vector<ClockPair>> groups;
  std::set<std::pair<Mhz, Mhz>> grouped;
  for (const auto& p : todo) {
    if (grouped.count({p.init, p.target})) continue;
    std::vector<ClockPair> group = {p};
    const ClockPair back{p.target, p.init};
    if (std::find(todo.begin(), todo.end(), back) != todo.end()) group.push_back(back);
    for (const auto& g : group) grouped.insert({g.init, g.target});
    groups.push_back(group);
  }
  return groups;
}

std::int64_t Engine::walk_fmas(ClockPair pair) {
  return std::max({slice_fmas(pair), slice_fmas({pair.target, pair.init}), pair_fmas(pair)});
}

std::int64_t Engine::pair_fmas(ClockPair pair) {
  // A fixed iteration is the user's; the paper's detector has its own gate.
  if (settings_.plan.iteration_fmas || settings_.detector != Detector::pooled) return state_.iteration_fmas;
  return separable_fmas(pair);
}

std::int64_t Engine::separable_fmas(ClockPair pair) {
  const std::int64_t run = state_.iteration_fmas;
  const ClockCalibration& a = calibration(pair.init, run);
  const ClockCalibration& b = calibration(pair.target, run);
  return separable_iteration_fmas(run, a.pooled.iteration.mean - b.pooled.iteration.mean,
                                  std::max(a.pooled.iteration.sd, b.pooled.iteration.sd));
}

std::vector<std::vector<ClockPair>> Engine::walks_of(const std::vector<ClockPair>& todo) {
  // A walk over many clocks can leave each clock by another pair than the
  // one it came in by, so a direction that met its stop is measured on
  // only where a clock's arrivals outnumber its departures (the benchmark
  // in docs/benchmarks.md). Blocks bound what a kill can lose.
  const auto block_size = static_cast<std::size_t>(std::max(1, settings_.walk_block_clocks));
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

std::vector<PairResult> Engine::measure_group(const std::vector<ClockPair>& group, std::size_t first_number,
                                              std::size_t count) {
  if (state_.schedule == Schedule::chained) return measure_chained(group, first_number, count);
  std::vector<PairResult> results;
  for (std::size_t i = 0; i < group.size(); ++i) {
    observer_.pair_started(group[i], first_number + i, count);
    results.push_back(measure_pair(group[i], first_number + i, count));
    state_.cost.gpu_seconds = seconds_since_start();
    observer_.pair_finished(results.back(), state_);
  }
  return results;
}

std::vector<std::size_t> Engine::measure_sample(const std::vector<std::vector<ClockPair>>& groups, std::size_t count) {
  // A tenth of the groups (at least 8, at most 32), spread over the list.
  const std::size_t n = groups.size();
  const std::size_t k = std::min(n, std::clamp<std::size_t>((n + 9) / 10, 8, 32));
  std::vector<std::size_t> sample;
  for (std::size_t i = 0; i < k; ++i) sample.push_back(i * n / k);
  std::vector<double> counts;
  std::size_t number = 1;
  for (std::size_t i : sample) {
    for (const PairResult& r : measure_group(groups[i], number, count)) {
      ++state_.cost.sampled_pairs;
      if (r.status == "measured") counts.push_back(r.stop_count());
    }
    number += groups[i].size();
  }
  std::vector<ClockPair> rest;
  for (std::size_t g = 0; g < n; ++g)
    if (std::find(sample.begin(), sample.end(), g) == sample.end())
      rest.insert(rest.end(), groups[g].begin(), groups[g].end());
  plan_cost(rest, counts);
  state_.cost.gpu_seconds = seconds_since_start();
  return sample;
}

std::vector<ClockPair> Engine::prepare(const std::set<std::pair<Mhz, Mhz>>& done) {
  started_ns_ = workload_.time().now_ns();
  state_.device = clocks_.identity();
  state_.detector = settings_.detector;
  state_.schedule = workload_.can_stream() ? settings_.schedule : Schedule::paper;
  state_.workload = workload_.info();
  supported_ = clocks_.supported_clocks();

  const Mhz fastest = *std::max_element(settings_.clocks.begin(), settings_.clocks.end());
  const std::int64_t probe_fmas = settings_.plan.iteration_fmas.value_or(settings_.plan.min_iteration_fmas);
  const auto& probe = calibration(fastest, probe_fmas);
  ns_per_fma_ = probe.pooled.iteration.mean / static_cast<double>(probe_fmas);

  // The paper's pilot: three pairs, whose longest latency sets the capture
  // and so the run's iteration. The chained schedule adds one pair per
  // other target clock, which its plan and each pair's first window need;
  // they do not coarsen the run's iteration (a slow pair gets its own).
  std::vector<ClockPair> pilot = pilot_pairs(settings_.pairs);
  const std::size_t capture_pairs = pilot.size();
  if (state_.schedule == Schedule::chained)
    for (const auto& p : target_pilot_pairs(settings_.pairs))
      if (std::none_of(pilot.begin(), pilot.end(), [&](const ClockPair& q) { return q.target == p.target; }))
        pilot.push_back(p);
  if (settings_.plan.capture_ms) {
    state_.capture_ms = *settings_.plan.capture_ms;
  } else {
    state_.capture_ms = run_pilot(pilot, capture_pairs);
  }
  state_.iteration_fmas = iteration_for(state_.capture_ms);
  state_.calibrations.clear();
  for (Mhz f : settings_.clocks) state_.calibrations.push_back(calibration(f, state_.iteration_fmas));
  const std::vector<ClockPair> measured = check_pairs();
  std::vector<ClockPair> todo;
  for (const auto& p : measured)
    if (!done.count({p.init, p.target})) todo.push_back(p);
  // Phase 1 at each coarser iteration the chained schedule's slow pairs
  // need, now: so it is spent before the plan, not inside it.
  if (state_.schedule == Schedule::chained)
    for (const auto& p : todo) {
      calibration(p.init, walk_fmas(p));
      calibration(p.target, walk_fmas(p));
    }
  state_.cost.planning_gpu_seconds = seconds_since_start();
  plan_cost(todo, {});
  state_.cost.gpu_seconds = seconds_since_start();
  return todo;
}

RunState Engine::run(const std::set<std::pair<Mhz, Mhz>>& done) {
  const std::vector<ClockPair> todo = prepare(done);
  observer_.planned(state_);

  for (const auto& check : state_.checks) {
    if (!check.skip.skipped() || done.count({check.pair.init, check.pair.target})) continue;
    PairResult skipped;
    skipped.pair = check.pair;
    skipped.status = "skipped";
    skipped.reason = check.skip;
    observer_.pair_finished(skipped, state_);
  }
  // A sample of the pairs first: the plan's measurement counts come from
  // what the RSE stop took on them (manifest: planned_gpu_seconds).
  const auto groups = groups_of(todo);
  const std::vector<std::size_t> sample = measure_sample(groups, todo.size());
  observer_.planned(state_);  // the plan, now from the sample
  std::size_t number = 1;
  std::vector<std::vector<ClockPair>> rest;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (std::find(sample.begin(), sample.end(), g) != sample.end())
      number += groups[g].size();
    else
      rest.push_back(groups[g]);
  }
  if (state_.schedule == Schedule::chained) {
    std::vector<ClockPair> pairs;
    for (const auto& g : rest) pairs.insert(pairs.end(), g.begin(), g.end());
    rest = walks_of(pairs);
  }
  for (const auto& group : rest) {
    measure_group(group, number, todo.size());
    number += group.size();
  }
  state_.cost.gpu_seconds = seconds_since_start();
  observer_.finished(state_);
  return state_;
}

}  // namespace latest
