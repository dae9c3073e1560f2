#include "core/watch/watch.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/statistics.hpp"

namespace latest {
namespace {

Nanos seconds_ns(double s) { return static_cast<Nanos>(s * 1e9); }

// Appends a drain's records to each SM's whole record (drains continue
// where the last one ended).
void append(std::map<int, SmRecords>& by_sm, WindowRecords drained, std::int64_t& bytes) {
  bytes += drained.bytes;
  for (SmRecords& r : drained.sms) {
    if (r.duration_ns.empty()) continue;
    auto [it, fresh] = by_sm.try_emplace(r.sm);
    SmRecords& whole = it->second;
    if (fresh) {
      whole = std::move(r);
      continue;
    }
    whole.duration_ns.insert(whole.duration_ns.end(), r.duration_ns.begin(), r.duration_ns.end());
    whole.cycles.insert(whole.cycles.end(), r.cycles.begin(), r.cycles.end());
  }
}

// The host side of a watch: when each phase ends, and what it read.
struct WatchClock {
  Nanos lead_end = 0, load_end = 0, tail_end = 0;
  Nanos load_started = 0, load_stopped = 0;
  bool load_running = false;
};

}  // namespace

WatchRecording record_watch(Workload& workload, Load& load, ClockControl& telemetry, const WatchSettings& s,
                            const std::function<bool()>& interrupted) {
  TimeSource& time = workload.time();
  WatchRecording rec;
  load.prepare();
  rec.first_sync = workload.synchronize();
  WindowSpec spec;
  spec.iteration_fmas = s.iteration_fmas;
  spec.warmup_iterations = 16;
  spec.iterations = -1;
  spec.recorded_sms = s.recorded_sms;
  WatchClock c;
  c.lead_end = workload.start_stream(spec) + seconds_ns(s.lead_seconds);
  std::map<int, SmRecords> by_sm;
  std::vector<std::pair<Nanos, Telemetry>> samples;
  const auto stop_load = [&](Nanos now) {
    if (!c.load_running) return;
    c.load_running = false;
    c.load_stopped = now;
    rec.load = load.stop(now);
  };
  try {
    Nanos next_sample = time.now_ns(), next_drain = next_sample + s.drain_period_ns;
    for (;;) {
      const Nanos now = time.now_ns();
      if (interrupted()) {
        rec.interrupted = true;
        break;
      }
      if (!c.load_started && now >= c.lead_end) {
        load.start(now);
        c.load_running = true;
        c.load_started = now;
        c.load_end = now + seconds_ns(s.load_seconds);
      }
      if (c.load_running && now >= c.load_end) {
        stop_load(now);
        c.tail_end = now + seconds_ns(s.tail_seconds);
      }
      if (c.load_stopped && now >= c.tail_end) break;
      if (now >= next_sample) {
        samples.emplace_back(now, telemetry.telemetry());
        next_sample = std::max(next_sample + s.sample_period_ns, now + 1);
      }
      if (now >= next_drain) {
        append(by_sm, workload.drain(), rec.bytes);
        next_drain = std::max(next_drain + s.drain_period_ns, now + 1);
      }
      Nanos wake = std::min(next_sample, next_drain);
      for (const Nanos phase : {c.load_started ? 0 : c.lead_end, c.load_running ? c.load_end : 0, c.tail_end})
        if (phase > now) wake = std::min(wake, phase);
      time.sleep_until(wake);
    }
    stop_load(time.now_ns());
    rec.last_sync = workload.synchronize();
    append(by_sm, workload.drain(), rec.bytes);
    workload.stop_stream();
  } catch (...) {
    stop_load(time.now_ns());
    workload.stop_stream();
    throw;
  }
  const auto gpu = [&](Nanos host) { return to_gpu_between(rec.first_sync, rec.last_sync, host); };
  for (auto& [host, t] : samples) rec.samples.push_back({gpu(host), t});
  for (auto& [sm, r] : by_sm) rec.sms.push_back(std::move(r));
  rec.start_gpu_ns = rec.sms.empty() ? 0 : rec.sms.front().first_start_ns;
  rec.end_gpu_ns = gpu(time.now_ns());
  rec.load_start_gpu_ns = c.load_started ? gpu(c.load_started) : 0;
  rec.load_end_gpu_ns = c.load_stopped ? gpu(c.load_stopped) : 0;
  return rec;
}

SmRecords slice_records(const SmRecords& records, Nanos from_ns, Nanos to_ns) {
  SmRecords cut;
  cut.sm = records.sm;
  Nanos t = records.first_start_ns;
  for (std::size_t i = 0; i < records.duration_ns.size(); t += records.duration_ns[i], ++i) {
    if (t < from_ns) continue;
    if (t >= to_ns) break;
    if (cut.duration_ns.empty()) cut.first_start_ns = t;
    cut.duration_ns.push_back(records.duration_ns[i]);
    cut.cycles.push_back(records.cycles[i]);
  }
  return cut;
}

const TelemetrySample* sample_at(const std::vector<TelemetrySample>& samples, Nanos gpu_ns) {
  auto it = std::upper_bound(samples.begin(), samples.end(), gpu_ns,
                             [](Nanos t, const TelemetrySample& s) { return t < s.gpu_ns; });
  return it == samples.begin() ? nullptr : &*(it - 1);
}

namespace {

// Per SM, the cycles and nanoseconds of its iterations starting in each bin.
struct Binned {
  Nanos start = 0, width = 1;
  std::vector<std::vector<double>> cycles, ns;  // [sm][bin]
  double mhz(std::size_t sm, std::size_t bin) const {
    return ns[sm][bin] > 0 ? 1000.0 * cycles[sm][bin] / ns[sm][bin] : NAN;
  }
};

Binned bin_records(const std::vector<SmRecords>& sms, Nanos start, Nanos end, Nanos width) {
  Binned b;
  b.start = start;
  b.width = width;
  const auto bins = static_cast<std::size_t>(std::max<Nanos>(1, (end - start) / width + 1));
  for (const SmRecords& r : sms) {
    std::vector<double> cy(bins, 0.0), ns(bins, 0.0);
    Nanos t = r.first_start_ns;
    for (std::size_t i = 0; i < r.duration_ns.size(); ++i) {
      const Nanos k = (t - start) / width;
      if (k >= 0 && static_cast<std::size_t>(k) < bins) {
        cy[static_cast<std::size_t>(k)] += r.cycles[i];
        ns[static_cast<std::size_t>(k)] += r.duration_ns[i];
      }
      t += r.duration_ns[i];
    }
    b.cycles.push_back(std::move(cy));
    b.ns.push_back(std::move(ns));
  }
  return b;
}

std::vector<ClockBand> band_of(const Binned& b) {
  std::vector<ClockBand> band;
  const std::size_t bins = b.ns.empty() ? 0 : b.ns.front().size();
  for (std::size_t k = 0; k < bins; ++k) {
    std::vector<double> v;
    for (std::size_t s = 0; s < b.ns.size(); ++s)
      if (b.ns[s][k] > 0) v.push_back(b.mhz(s, k));
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    band.push_back({b.start + static_cast<Nanos>(k) * b.width, v.front(), quantile_sorted(v, 0.5), v.back()});
  }
  return band;
}

void cycles_evidence(const std::vector<SmRecords>& sms, JudgeEvidence& j) {
  std::vector<double> cycles;
  for (const SmRecords& r : sms) {
    const std::size_t stride = std::max<std::size_t>(1, r.cycles.size() / 200'000);
    for (std::size_t i = 0; i < r.cycles.size(); i += stride) cycles.push_back(r.cycles[i]);
  }
  if (cycles.empty()) return;
  std::sort(cycles.begin(), cycles.end());
  j.cycles_median = quantile_sorted(cycles, 0.5);
  j.cycles_p01 = quantile_sorted(cycles, 0.01);
  j.cycles_p99 = quantile_sorted(cycles, 0.99);
}

// The driver's clock against the SMs' median over the sample period before
// each sample (a driver reading is an average over some such period).
void nvml_evidence(const WatchRecording& rec, const std::vector<ClockBand>& band, Nanos period, JudgeEvidence& j) {
  std::vector<double> diffs;
  for (const TelemetrySample& s : rec.samples) {
    if (!s.telemetry.sm_mhz) continue;
    double sum = 0;
    int n = 0;
    // The band is in time order: only its bins within the period are read.
    auto b = std::lower_bound(band.begin(), band.end(), s.gpu_ns - period,
                              [](const ClockBand& x, Nanos t) { return x.start_ns < t; });
    for (; b != band.end() && b->start_ns < s.gpu_ns; ++b) sum += b->median_mhz, ++n;
    if (n > 0) diffs.push_back(static_cast<double>(*s.telemetry.sm_mhz) - sum / n);
  }
  if (diffs.empty()) return;
  j.nvml_minus_sms_median_mhz = summarise(diffs).median;
  for (double d : diffs) j.nvml_minus_sms_max_abs_mhz = std::max(j.nvml_minus_sms_max_abs_mhz, std::abs(d));
}

void wiggle_evidence(const WatchRecording& rec, const std::vector<std::vector<ClockLevel>>& levels, const Binned& b,
                     JudgeEvidence& j) {
  constexpr Nanos kHeld = 20'000'000;
  double sum2 = 0;
  std::size_t n = 0;
  for (std::size_t s = 0; s < rec.sms.size(); ++s) {
    const SmRecords& r = rec.sms[s];
    Nanos t = r.first_start_ns;
    std::size_t i = 0;
    for (const ClockLevel& l : levels[s]) {
      for (; static_cast<std::int64_t>(i) < l.first; ++i) t += r.duration_ns[i];
      Nanos end = t;
      for (std::int64_t k = l.first; k < l.end; ++k) end += r.duration_ns[static_cast<std::size_t>(k)];
      if (end - t < kHeld) continue;
      // Whole bins inside the level, a bin clear of each end.
      for (Nanos k = (t - b.start) / b.width + 2; k < (end - b.start) / b.width - 1; ++k) {
        const double d = b.mhz(s, static_cast<std::size_t>(k)) - l.mhz;
        if (std::isnan(d)) continue;
        sum2 += d * d;
        ++n;
        j.wiggle_max_abs_mhz = std::max(j.wiggle_max_abs_mhz, std::abs(d));
      }
    }
  }
  if (n > 0) j.wiggle_sd_mhz = std::sqrt(sum2 / static_cast<double>(n));
}

}  // namespace

WatchAnalysis analyse_watch(const WatchRecording& rec, const StepSettings& settings, Nanos band_ns) {
  WatchAnalysis a;
  std::vector<std::vector<ClockLevel>> levels;
  std::vector<SmStep> steps;
  for (const SmRecords& r : rec.sms) {
    levels.push_back(find_levels(r, settings));
    for (SmStep& s : steps_between(r, levels.back(), settings)) steps.push_back(std::move(s));
  }
  a.steps = group_card_steps(std::move(steps), settings);
  Nanos start = rec.start_gpu_ns, end = rec.start_gpu_ns;
  for (const SmRecords& r : rec.sms) {
    start = std::min(start, r.first_start_ns);
    Nanos t = r.first_start_ns;
    for (const std::uint32_t d : r.duration_ns) t += d;
    end = std::max(end, t);
  }
  const Binned bins = bin_records(rec.sms, start, end, band_ns);
  a.band = band_of(bins);
  cycles_evidence(rec.sms, a.judge);
  const Nanos period = rec.samples.size() > 1 ? (rec.samples.back().gpu_ns - rec.samples.front().gpu_ns) /
                                                    static_cast<Nanos>(rec.samples.size() - 1)
                                              : 20'000'000;
  nvml_evidence(rec, a.band, period, a.judge);
  wiggle_evidence(rec, levels, bins, a.judge);
  return a;
}

}  // namespace latest
