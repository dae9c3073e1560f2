#include "core/measurement_core.hpp"

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

// The SMs' clock over the iterations that start within [from, to): their
// cycles over their nanoseconds, every SM pooled.
std::optional<double> clock_between(const WindowRecords& records, Nanos from, Nanos to) {
  double cycles = 0, ns = 0;
  for (const SmRecords& sm : records.sms) {
    if (sm.cycles.size() != sm.duration_ns.size()) continue;
    Nanos t = sm.first_start_ns;
    for (std::size_t i = 0; i < sm.duration_ns.size(); t += sm.duration_ns[i], ++i)
      if (t >= from && t < to) cycles += sm.cycles[i], ns += sm.duration_ns[i];
  }
  if (ns <= 0) return std::nullopt;
  return 1000.0 * cycles / ns;
}

// Where a window's records end: the latest SM's last boundary.
Nanos records_end(const WindowRecords& records) {
  Nanos end = 0;
  for (const SmRecords& sm : records.sms) {
    Nanos t = sm.first_start_ns;
    for (const std::uint32_t d : sm.duration_ns) t += d;
    end = std::max(end, t);
  }
  return end;
}

std::vector<double> latencies(const std::vector<MeasurementRow>& rows) {
  std::vector<double> xs;
  xs.reserve(rows.size());
  for (const auto& r : rows)
    if (!r.set_aside) xs.push_back(r.switching_ms);
  return xs;
}

}  // namespace

MeasurementCore::MeasurementCore(Workload& workload, ClockControl& clocks, EngineSettings settings,
                                 RunObserver& observer, std::function<std::string()> stop)
    : workload_(workload), clocks_(clocks), settings_(std::move(settings)), observer_(observer),
      stop_(std::move(stop)) {}

void MeasurementCore::start(Schedule schedule) {
  started_ns_ = workload_.time().now_ns();
  state_.device = clocks_.identity();
  state_.detector = settings_.detector;
  state_.schedule = schedule;
  state_.workload = workload_.info();
  supported_ = clocks_.supported_clocks();
}

void MeasurementCore::measure_fma_cost(Mhz fastest) {
  const std::int64_t probe_fmas = settings_.plan.iteration_fmas.value_or(settings_.plan.min_iteration_fmas);
  const auto& probe = calibration(fastest, probe_fmas);
  ns_per_fma_ = probe.pooled.iteration.mean / static_cast<double>(probe_fmas);
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

void MeasurementCore::check_stop() {
  const std::string why = stop_();
  if (!why.empty()) throw Interrupted(why);
}

double MeasurementCore::seconds_since_start() {
  return static_cast<double>(workload_.time().now_ns() - started_ns_) / 1e9;
}

void MeasurementCore::set_clock(Mhz mhz, std::optional<Nanos> requested_at) {
  workload_.clock_requested(requested_at.value_or(workload_.time().now_ns()), mhz);
  clocks_.set_clock(mhz);
}

TimerSync MeasurementCore::synchronize() {
  const Nanos from = workload_.time().now_ns();
  const TimerSync s = workload_.synchronize();
  sync_seconds_ += static_cast<double>(workload_.time().now_ns() - from) / 1e9;
  state_.sync.add(s);
  state_.cost.sync_ms = sync_seconds_ * 1e3 / state_.sync.count;
  return s;
}

const ClockCalibration& MeasurementCore::calibration(Mhz mhz, std::int64_t fmas) {
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

std::int64_t MeasurementCore::iteration_for(double capture_ms) const {
  return iteration_fmas_for(capture_ms, ns_per_fma_, settings_.plan);
}

double MeasurementCore::longest_pilot_into(Mhz target) const {
  double longest = 0;
  for (const auto& [pair, ms] : state_.pilot)
    if (pair.target == target) longest = std::max(longest, ms);
  return longest;
}

double MeasurementCore::wakeup_for(Mhz init, int raises) const {
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

std::int64_t MeasurementCore::pair_fmas(ClockPair pair) {
  // A fixed iteration is the user's; the paper's detector has its own gate.
  if (settings_.plan.iteration_fmas || settings_.detector != Detector::pooled) return state_.iteration_fmas;
  return separable_fmas(pair);
}

std::int64_t MeasurementCore::separable_fmas(ClockPair pair) {
  const std::int64_t run = state_.iteration_fmas;
  const ClockCalibration& a = calibration(pair.init, run);
  const ClockCalibration& b = calibration(pair.target, run);
  return separable_iteration_fmas(run, a.pooled.iteration.mean - b.pooled.iteration.mean,
                                  std::max(a.pooled.iteration.sd, b.pooled.iteration.sd));
}

Attempt MeasurementCore::measure_window(ClockPair pair, const WindowPlan& plan) {
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

void MeasurementCore::detect(Attempt& a, ClockPair pair, std::int64_t fmas, const TimerSync& sync, const TimerSync& after,
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
  row.target_iteration_ns = ct.pooled.iteration.mean;
  if (workload_.clock_moves()) {
    // After the arrival, or over the window's last quarter where none was found.
    const Nanos end = records_end(a.records);
    const Nanos arrival = a.measurement.outcome == MeasurementOutcome::accepted
                              ? a.request_gpu_ns + static_cast<Nanos>(a.measurement.switching_ms * 1e6)
                              : end - (end - a.request_gpu_ns) / 4;
    row.clock_before_mhz = clock_between(a.records, 0, a.request_gpu_ns);
    row.clock_after_mhz = clock_between(a.records, arrival, end);
  }
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

void MeasurementCore::keep_traces(PairResult& result, const Attempt& a, int index) {
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

void MeasurementCore::skip_if_power_capped(const Telemetry& tel, ClockPair pair) {
  if (!tel.throttle.power) return;
  state_.throttle_events.push_back({seconds_since_start(), pair, "power", "pair skipped", tel.throttle.raw_reasons});
  throw SkipPair{{.code = SkipReason::Code::power_capping, .raw_reasons = tel.throttle.raw_reasons}};
}

void MeasurementCore::skip(PairProgress& p, const SkipReason& reason) {
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

void MeasurementCore::lengthen_capture(PairProgress& p, bool records_full) {
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

void MeasurementCore::coarsen_iteration(PairProgress& p) {
  // Where every SM's last ramp level lies within a boundary's noise of the
  // target, no SM can place the change and every window is refused (h200
  // 1980 <-> 1950 at 1024 FMAs with linear ramps, overshoots or slow
  // approaches: the pairs were skipped). Four times the iteration makes
  // each iteration's lag four times larger against the same timer noise;
  // the pair's own calibrations follow (docs/methodology.md, "Pairs:
  // validity, separability and the iteration").
  if (settings_.plan.iteration_fmas || p.usual_fmas >= kCoarsestIterationFmas) return;
  p.fmas = p.usual_fmas = std::min(4 * p.usual_fmas, kCoarsestIterationFmas);
  ++p.result.iteration_coarsenings;
}

void MeasurementCore::reject(PairProgress& p, const Attempt& a) {
  ++p.result.failed[to_string(a.measurement.outcome)];
  note_clock_reached(p.result, a.row);
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

void MeasurementCore::note_clock_reached(PairResult& r, const MeasurementRow& row) const {
  if (!row.clock_after_mhz) return;
  r.clocks_reached_mhz.push_back(*row.clock_after_mhz);
  r.reached_mhz = summarise(r.clocks_reached_mhz).median;
  // Another clock than the target: nearer another supported clock than half the step to it.
  double step = 0.05 * r.pair.target;
  for (const Mhz f : supported_)
    if (f != r.pair.target) step = std::min(step, std::abs(static_cast<double>(f - r.pair.target)));
  r.target_not_reached = std::abs(*r.reached_mhz - r.pair.target) > step / 2;
}

bool MeasurementCore::accept(PairProgress& p, Attempt& a, std::size_t count) {
  PairResult& result = p.result;
  const ClockPair pair = result.pair;
  p.failed_attempts = 0;
  note_clock_reached(result, a.row);
  // A route passes other clocks by design, so its misfits are kept as flags.
  if (a.row.misfits != 0 && p.via.empty()) {
    if (p.misfit_tries++ < settings_.misfit_retries) {
      for (const Misfit m : kMisfits)
        if (a.row.misfits & static_cast<unsigned>(m)) ++result.misfit_retries[to_string(m)];
      result.retried.push_back(a.row);
      return false;  // taken again
    }
    a.row.set_aside = true;
  }
  p.misfit_tries = 0;
  a.row.index = ++p.measurement_number;
  if (settings_.save_traces || static_cast<int>(result.rows.size()) < settings_.trace_first ||
      (a.row.misfits != 0 && p.traced_misfits++ < settings_.trace_first))
    keep_traces(result, a, a.row.index);
  result.rows.push_back(a.row);

  auto n = result.kept();
  // A row set aside changes nothing that counts; twice the most measurements
  // in rows bound a pair whose every measurement misfits.
  const bool too_many = static_cast<int>(result.rows.size()) >= 2 * settings_.max_measurements;
  if (a.row.set_aside) return too_many;
  if (n % settings_.throttle_check_every == 0) {
    const Telemetry tel = clocks_.telemetry();
    skip_if_power_capped(tel, pair);
    if (tel.throttle.thermal) {
      const int drop = std::min(static_cast<int>(result.rows.size()), settings_.throttle_check_every);
      result.rows.resize(result.rows.size() - static_cast<std::size_t>(drop));
      result.discarded["thermal"] += drop;
      state_.throttle_events.push_back({seconds_since_start(), pair, "thermal",
                                        fmt::format("discarded the newest {} measurements, cooled {} s", drop,
                                                    settings_.thermal_cooldown_s),
                                        tel.throttle.raw_reasons});
      cool_down();
      n = result.kept();
    }
  }
  result.rse = relative_standard_error(latencies(result.rows));
  const int remaining_here = std::max(0, settings_.min_measurements - n);
  observer_.progress({p.number, count, pair, n, result.rse,
                      (static_cast<double>(count - p.number) * settings_.min_measurements + remaining_here) *
                          measurement_gpu_ms_ / 1e3});
  if (n >= settings_.max_measurements || too_many) return true;
  return n > 0 && n >= settings_.min_measurements && n % settings_.rse_check_every == 0 && result.rse <= settings_.rse;
}

void MeasurementCore::cool_down() {
  if (pause_) pause_();  // a running kernel would keep the card hot
  TimeSource& time = workload_.time();
  time.sleep_until(time.now_ns() + static_cast<Nanos>(settings_.thermal_cooldown_s * 1e9));
}

}  // namespace latest
