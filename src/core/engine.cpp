#include "core/engine.hpp"

#include <algorithm>
#include <cmath>
#include <ctime>

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

// A pair is given up for the rest of the run; the reason goes to the manifest.
struct SkipPair {
  SkipReason reason;
};

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
  const TimerSync s = workload_.synchronize();
  state_.sync.add(s);
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

double Engine::wakeup_for(Mhz init) const {
  if (auto it = wakeup_ms_.find(init); it != wakeup_ms_.end()) return it->second;
  if (settings_.plan.wakeup_ms) return *settings_.plan.wakeup_ms;
  double wake = settings_.plan.min_wakeup_ms;
  for (const auto& [key, cal] : calibrations_)
    if (key.first == init && cal.wakeup_ms) wake = std::max(wake, 2 * *cal.wakeup_ms);
  return wake;
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
    state_.checks.push_back(check);
  }
  return measured;
}

double Engine::run_pilot(const std::vector<ClockPair>& candidates) {
  double longest = 0;
  double capture = settings_.plan.pilot_capture_ms;
  for (const auto& pair : candidates) {
    for (int k = 0; k < settings_.plan.pilot_measurements; ++k) {
      bool captured = false;
      for (int attempt = 0; attempt < settings_.max_attempts && !captured; ++attempt) {
        const std::int64_t fmas = iteration_for(capture);
        const auto& ci = calibration(pair.init, fmas);
        const auto& ct = calibration(pair.target, fmas);
        if (!means_differ(ci.pooled.iteration, ct.pooled.iteration)) break;
        const WindowPlan plan = plan_window(capture, wakeup_for(pair.init), ci, ct, settings_.plan);
        const Attempt a = measure_once(pair, plan);
        switch (a.measurement.outcome) {
          case MeasurementOutcome::accepted:
            state_.pilot.emplace_back(pair, a.row.switching_ms);
            longest = std::max(longest, a.row.switching_ms);
            captured = true;
            break;
          case MeasurementOutcome::not_captured:
            capture = std::min(capture * 10, settings_.plan.max_capture_ms);
            break;
          case MeasurementOutcome::initial_not_held:
            wakeup_ms_[pair.init] = 2 * wakeup_for(pair.init);
            break;
          case MeasurementOutcome::not_confirmed:
            break;
        }
      }
    }
  }
  // Nothing captured even at the cap: plan for the cap and let pairs fail visibly.
  return longest > 0 ? capture_from_pilot(longest, settings_.plan) : settings_.plan.max_capture_ms;
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
  a.request_gpu_ns = to_gpu_between(sync, after, t_s);

  const auto& ci = calibration(pair.init, plan.iteration_fmas);
  const auto& ct = calibration(pair.target, plan.iteration_fmas);
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
  return a;
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

PairResult Engine::measure_pair(ClockPair pair, std::size_t number, std::size_t count) {
  PairResult result;
  result.pair = pair;
  result.status = "measured";
  double capture = state_.capture_ms;
  std::int64_t fmas = state_.iteration_fmas;
  const Nanos pair_start = workload_.time().now_ns();
  int measurement_number = 0;
  int traced_misfits = 0;  // misfits keep traces too, as many as the first measurements
  int failed_measurements = 0;
  try {
    for (;;) {
      const auto& ci = calibration(pair.init, fmas);
      const auto& ct = calibration(pair.target, fmas);
      WindowPlan plan = plan_window(capture, wakeup_for(pair.init), ci, ct, settings_.plan);
      measurement_gpu_ms_ = plan.gpu_ms;
      std::optional<Attempt> accepted;
      for (int attempt = 0; attempt < settings_.max_attempts && !accepted; ++attempt) {
        Attempt a = measure_once(pair, plan);
        result.host_cpu_seconds += a.detection_cpu_s;
        ++result.windows;
        result.bytes += a.records.bytes;
        if (a.measurement.outcome == MeasurementOutcome::accepted) {
          accepted = std::move(a);
          break;
        }
        ++result.failed[to_string(a.measurement.outcome)];
        skip_if_power_capped(clocks_.telemetry(), pair);
        if (a.measurement.outcome == MeasurementOutcome::initial_not_held) {
          wakeup_ms_[pair.init] = std::min(2 * wakeup_for(pair.init), 10 * settings_.plan.max_capture_ms);
        } else if (a.measurement.outcome == MeasurementOutcome::not_captured) {
          if (capture >= settings_.plan.max_capture_ms)
            throw SkipPair{{.code = SkipReason::Code::not_captured, .value = settings_.plan.max_capture_ms}};
          // A longer window for the rest of the pair.
          capture = std::min(capture * 10, settings_.plan.max_capture_ms);
          fmas = iteration_for(capture);
        }
        const auto& ci2 = calibration(pair.init, fmas);
        const auto& ct2 = calibration(pair.target, fmas);
        plan = plan_window(capture, wakeup_for(pair.init), ci2, ct2, settings_.plan);
      }
      result.iteration_fmas = fmas;
      result.capture_ms = capture;
      result.wakeup_ms = plan.wakeup_ms;
      if (!accepted) {
        if (++failed_measurements >= settings_.max_failed_measurements)
          throw SkipPair{{.code = SkipReason::Code::measurements_failed, .count = failed_measurements,
                          .tries = settings_.max_attempts}};
        continue;
      }
      accepted->row.index = ++measurement_number;
      if (settings_.save_traces || static_cast<int>(result.rows.size()) < settings_.trace_first ||
          (accepted->row.misfits != 0 && traced_misfits++ < settings_.trace_first))
        keep_traces(result, *accepted, accepted->row.index);
      result.rows.push_back(accepted->row);

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
          TimeSource& time = workload_.time();
          time.sleep_until(time.now_ns() + static_cast<Nanos>(settings_.thermal_cooldown_s * 1e9));
          n = static_cast<int>(result.rows.size());
        }
      }
      const auto xs = latencies(result.rows);
      result.rse = relative_standard_error(xs);
      const int remaining_here = std::max(0, settings_.min_measurements - n);
      observer_.progress({number, count, pair, n, result.rse,
                          (static_cast<double>(count - number) * settings_.min_measurements + remaining_here) *
                              measurement_gpu_ms_ / 1e3});
      if (n >= settings_.max_measurements) break;
      if (n > 0 && n >= settings_.min_measurements && n % settings_.rse_check_every == 0 &&
          result.rse <= settings_.rse)
        break;
    }
  } catch (const SkipPair& skip) {
    result.status = "skipped";
    result.reason = skip.reason;
    // Measured while a clock could not be held, or in a pair that never
    // settled: not results, but counted so that nothing vanishes unseen.
    if (!result.rows.empty()) result.discarded["pair_skipped"] += static_cast<int>(result.rows.size());
    result.rows.clear();
    result.traces.clear();
  }
  result.gpu_seconds = static_cast<double>(workload_.time().now_ns() - pair_start) / 1e9;
  return result;
}

RunState Engine::run(const std::set<std::pair<Mhz, Mhz>>& done) {
  started_ns_ = workload_.time().now_ns();
  state_.device = clocks_.identity();
  state_.detector = settings_.detector;
  state_.workload = workload_.info();
  supported_ = clocks_.supported_clocks();

  const Mhz fastest = *std::max_element(settings_.clocks.begin(), settings_.clocks.end());
  const std::int64_t probe_fmas = settings_.plan.iteration_fmas.value_or(settings_.plan.min_iteration_fmas);
  const auto& probe = calibration(fastest, probe_fmas);
  ns_per_fma_ = probe.pooled.iteration.mean / static_cast<double>(probe_fmas);

  if (settings_.plan.capture_ms) {
    state_.capture_ms = *settings_.plan.capture_ms;
  } else {
    state_.capture_ms = run_pilot(pilot_pairs(settings_.pairs));
  }
  state_.iteration_fmas = iteration_for(state_.capture_ms);
  state_.calibrations.clear();
  for (Mhz f : settings_.clocks) state_.calibrations.push_back(calibration(f, state_.iteration_fmas));
  const std::vector<ClockPair> measured = check_pairs();
  observer_.planned(state_);

  for (const auto& check : state_.checks) {
    if (!check.skip.skipped() || done.count({check.pair.init, check.pair.target})) continue;
    PairResult skipped;
    skipped.pair = check.pair;
    skipped.status = "skipped";
    skipped.reason = check.skip;
    observer_.pair_finished(skipped, state_);
  }
  std::vector<ClockPair> todo;
  for (const auto& p : measured)
    if (!done.count({p.init, p.target})) todo.push_back(p);
  for (std::size_t i = 0; i < todo.size(); ++i) {
    observer_.pair_started(todo[i], i + 1, todo.size());
    const PairResult result = measure_pair(todo[i], i + 1, todo.size());
    observer_.pair_finished(result, state_);
  }
  return state_;
}

}  // namespace latest
