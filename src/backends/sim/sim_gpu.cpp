#include "backends/sim/sim_gpu.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <thread>

#include "core/error.hpp"

namespace latest::sim {
namespace {
constexpr Nanos kLaunchLatencyNs = 8'000;
constexpr double kThermalEventSeconds = 8;  // how long an injected thermal event holds
// The drift is not steady: it wanders around its mean by this much over this
// period (oscillators follow temperature). Interpolating between syncs a
// few seconds apart then errs by microseconds, between syncs a few
// milliseconds apart by nothing measurable: what the chained schedule's
// sync before every request is for.
constexpr double kDriftWanderPpm = 2;
constexpr double kDriftWanderPeriodS = 60;
constexpr double kTwoPi = 6.283185307179586;
}  // namespace

SimGpu::SimGpu(const SimProfile& profile, std::uint64_t seed, Injection injection, int card)
    : profile_(profile), seed_(seed), card_(card), injection_(std::move(injection)),
      rng_(seed + 0x9E3779B97F4A7C15ULL * static_cast<std::uint64_t>(card)),
      shape_rng_((seed ^ 0x5A17E5ULL) + 0x9E3779B97F4A7C15ULL * static_cast<std::uint64_t>(card)),
      group_skew_ns_(static_cast<std::size_t>(profile.sm_groups), 0.0) {
  // Never assume the clocks agree (SPEC §4 saw -94 µs and +256 µs).
  gpu_offset_ns_ = static_cast<Nanos>(rng_.uniform(-300'000, 300'000));
  drift_ppm_ = rng_.uniform(-8.0, 8.0);  // the H200 showed 6 to 11 ppm against CLOCK_MONOTONIC_RAW
  wander_phase_ = rng_.uniform(0, kTwoPi);
  requested_ = profile_.clocks.back();
  timeline_.push_back({0, static_cast<double>(requested_)});
  for (int s = 0; s < profile_.sm_count; ++s)
    sm_extra_cycles_.push_back(rng_.uniform(0, profile_.noise.sm_overhead_spread));
  if (injection_.boundary_wander_ns > 0) {
    // Periods log-uniform over 0.5-8 ms, drawn from a stream of their own
    // (the other draws stay as they are); K sinusoids of amplitude A sum to
    // an RMS of A·sqrt(K/2).
    constexpr int kSinusoids = 6;
    Random draw(seed ^ 0xB0D4A7E5ULL);
    const double amplitude = injection_.boundary_wander_ns * std::sqrt(2.0 / kSinusoids);
    for (int k = 0; k < kSinusoids; ++k) {
      const double period_ns = 0.5e6 * std::pow(16.0, draw.uniform());
      boundary_wander_.push_back({amplitude, kTwoPi / period_ns, draw.uniform(0, kTwoPi)});
    }
  }
}

double SimGpu::boundary_wander(double gpu_ns) const {
  double w = 0;
  for (const Sinusoid& s : boundary_wander_) w += s.amplitude_ns * std::sin(s.per_ns * gpu_ns + s.phase);
  return w;
}

Nanos SimGpu::to_gpu(Nanos host) const {
  // The offset integrates the drift: its mean, and the wander's integral.
  const double s = static_cast<double>(host) / 1e9;
  const double w = kTwoPi / kDriftWanderPeriodS;
  const double wander_ns = kDriftWanderPpm * 1e3 / w * (std::cos(wander_phase_) - std::cos(wander_phase_ + w * s));
  return host + gpu_offset_ns_ + static_cast<Nanos>(static_cast<double>(host) * drift_ppm_ * 1e-6 + wander_ns);
}

Nanos SimGpu::to_host(Nanos gpu) const {
  // to_gpu moves time by at most a few hundred µs: a few fixed-point steps invert it.
  Nanos host = gpu - gpu_offset_ns_;
  for (int k = 0; k < 4; ++k) host -= to_gpu(host) - gpu;
  return host;
}

std::size_t SimGpu::segment_index(Nanos gpu) const {
  auto it = std::upper_bound(timeline_.begin(), timeline_.end(), gpu,
                             [](Nanos t, const Segment& s) { return t < s.gpu_start; });
  return static_cast<std::size_t>(std::max<std::ptrdiff_t>(0, (it - timeline_.begin()) - 1));
}

double SimGpu::mhz_at(Nanos gpu) const { return timeline_[segment_index(gpu)].mhz; }

double SimGpu::draw_call_latency_ms() {
  return rng_.uniform(profile_.call_latency_min_ms, profile_.call_latency_max_ms);
}

void SimGpu::request_clock(Nanos host_ns, Mhz target) {
  requested_ = target;
  const Nanos g = to_gpu(host_ns);
  const double from = mhz_at(g);
  double to = target;
  if (injection_.power_cap_mhz && target > *injection_.power_cap_mhz) to = *injection_.power_cap_mhz;
  if (injection_.unheld_mhz && target == *injection_.unheld_mhz) {
    const auto& clocks = profile_.clocks;
    const auto at = std::lower_bound(clocks.begin(), clocks.end(), target);
    if (at != clocks.begin()) to = *(at - 1);
  }

  const PairLatencyModel model = profile_.latency_model({static_cast<Mhz>(std::lround(from)), target}, card_);
  double total = 0;
  for (const auto& c : model.clusters) total += c.weight;
  double pick = rng_.uniform() * total;
  const LatencyCluster* cluster = &model.clusters.back();
  for (const auto& c : model.clusters) {
    if (pick < c.weight) {
      cluster = &c;
      break;
    }
    pick -= c.weight;
  }
  double latency_ms = cluster->center_ms + cluster->sd_ms * rng_.normal();
  if (rng_.uniform() < model.outlier_probability) {
    double top = 0;
    for (const auto& c : model.clusters) top = std::max(top, c.center_ms);
    latency_ms = top * rng_.uniform(1.2, model.outlier_max_factor);
  }
  latency_ms = std::max(latency_ms, 0.05);
  const double transition_ms = std::abs(to - from) < 1 ? 0.0 : latency_ms * model.transition_fraction;

  // A new request overrides any change still pending.
  const Nanos arrival = g + static_cast<Nanos>(latency_ms * 1e6);
  const Nanos departure = arrival - static_cast<Nanos>(transition_ms * 1e6);
  // It cancels what an earlier one had yet to do: the clock stays where it
  // is until the new departure.
  while (timeline_.size() > 1 && timeline_.back().gpu_start > g) timeline_.pop_back();
  Nanos first_step = arrival;
  if (transition_ms == 0) {
    timeline_.push_back({arrival, to});
  } else {
    const auto steps = ramp(draw_shape(), from, to, departure, arrival);
    first_step = steps.front().first;
    for (const auto& [at, mhz] : steps) timeline_.push_back({at, mhz});
  }
  // Each group of SMs (a GPC) follows the clock a little late: the switch is
  // over when the last group is at the target, and began when the first left.
  double latest = 0, earliest = 1e18;
  for (double& skew : group_skew_ns_) {
    skew = shape_rng_.uniform(0, profile_.max_group_skew_ns);
    latest = std::max(latest, skew);
    earliest = std::min(earliest, skew);
  }
  last_truth_ = SwitchTruth{latency_ms + latest / 1e6,
                            transition_ms == 0 ? 0.0 : static_cast<double>(arrival - first_step) / 1e6 + (latest - earliest) / 1e6};
  // Keep the timeline short: nothing before the last few seconds is read again.
  const Nanos horizon = g - 60'000'000'000LL;
  std::size_t drop = 0;
  while (drop + 1 < timeline_.size() && timeline_[drop + 1].gpu_start < horizon) ++drop;
  timeline_.erase(timeline_.begin(), timeline_.begin() + static_cast<std::ptrdiff_t>(drop));
}

RampShape SimGpu::draw_shape() {
  if (injection_.ramp_shape) return *injection_.ramp_shape;
  const auto& w = profile_.ramp_shape_weights;
  double pick = shape_rng_.uniform() * std::accumulate(w.begin(), w.end(), 0.0);
  for (std::size_t k = 0; k < w.size(); ++k) {
    if (pick < w[k]) return kRampShapes[k];
    pick -= w[k];
  }
  return RampShape::four_steps;
}

std::vector<std::pair<Nanos, double>> SimGpu::ramp(RampShape shape, double from, double to, Nanos departure,
                                                   Nanos arrival) {
  std::vector<std::pair<Nanos, double>> steps;
  const auto at = [&](double share) { return departure + static_cast<Nanos>(share * static_cast<double>(arrival - departure)); };
  const double change = to - from;
  switch (shape) {
    case RampShape::four_steps:
    case RampShape::steps: {
      const int k = shape == RampShape::four_steps ? 4 : 1 + static_cast<int>(shape_rng_.uniform(0, 8));
      for (int i = 0; i < k; ++i) steps.emplace_back(k == 1 ? arrival : at(static_cast<double>(i) / (k - 1)), from + change * (i + 1) / k);
      return steps;
    }
    case RampShape::linear:
      for (int i = 0; i < 32; ++i) steps.emplace_back(at(i / 32.0), from + change * (i + 1) / 33);
      break;
    case RampShape::overshoot: {
      const double past = (shape_rng_.uniform() < 0.5 ? 1 : -1) * shape_rng_.uniform(0.03, 0.08) * std::abs(change);
      steps.emplace_back(departure, from + change / 2);
      steps.emplace_back(at(0.6), to + past);
      break;
    }
    case RampShape::stall: {
      steps.emplace_back(departure, from + change / 2);
      const auto stall = static_cast<Nanos>(shape_rng_.uniform(2'000, 8'000));
      steps.emplace_back(std::max(departure + 1, arrival - stall), 1e-3);
      break;
    }
    case RampShape::slow_approach:
      steps.emplace_back(departure, from + change * 0.6);
      steps.emplace_back(at(0.3), to - change * shape_rng_.uniform(0.02, 0.05));
      break;
  }
  steps.emplace_back(arrival, to);
  return steps;
}

double SimGpu::advance_one(double t, std::size_t& seg, double cycles) const {
  for (;;) {
    const double mhz = timeline_[seg].mhz;
    const double ns = cycles * 1000.0 / mhz;
    if (seg + 1 >= timeline_.size() || t + ns <= static_cast<double>(timeline_[seg + 1].gpu_start)) return t + ns;
    const double until = static_cast<double>(timeline_[seg + 1].gpu_start);
    cycles -= std::max(0.0, until - t) * mhz / 1000.0;
    t = std::max(t, until);
    ++seg;
  }
}

double SimGpu::advance_iterations(double t, std::size_t& seg, std::int64_t count, double cycles) const {
  while (count > 0) {
    const double ns = cycles * 1000.0 / timeline_[seg].mhz;
    if (seg + 1 < timeline_.size()) {
      const double room = static_cast<double>(timeline_[seg + 1].gpu_start) - t;
      const auto whole = static_cast<std::int64_t>(std::max(0.0, std::floor(room / ns)));
      if (whole < count) {
        t += static_cast<double>(whole) * ns;
        count -= whole;
        t = advance_one(t, seg, cycles);
        --count;
        continue;
      }
    }
    return t + static_cast<double>(count) * ns;
  }
  return t;
}

Nanos SimGpu::launch(const WindowSpec& spec) {
  if (spec.iteration_fmas <= 0 || spec.iterations < 0 || spec.warmup_iterations < 0 || !stream_.empty())
    throw Error(ErrorKind::internal, "simulator: invalid window");
  pending_ = spec;
  pending_gpu_start_ = to_gpu(now_) + kLaunchLatencyNs;
  return now_;
}

double SimGpu::iteration_cycles(const WindowSpec& spec, int s) const {
  const NoiseModel& noise = profile_.noise;
  return static_cast<double>(spec.iteration_fmas) * noise.cycles_per_fma + noise.overhead_cycles +
         sm_extra_cycles_[static_cast<std::size_t>(s)];
}

void SimGpu::generate_sm(const WindowSpec& spec, int s, std::uint64_t window_seed, SmRecords& rec,
                         double& end_ns) const {
  const NoiseModel& noise = profile_.noise;
  const double tick = profile_.timer_tick_ns;
  Random rng(window_seed ^ (static_cast<std::uint64_t>(s + 1) * 0x9E3779B97F4A7C15ULL));
  const double cycles = iteration_cycles(spec, s);
  // The SM's group follows the clock `skew` late: its records are made on a
  // timeline shifted by that much.
  const double skew = sm_skew_ns(s);
  double t = static_cast<double>(pending_gpu_start_) + rng.uniform(0, 1000) - skew;
  std::size_t seg = segment_index(static_cast<Nanos>(t));
  t = advance_iterations(t, seg, spec.warmup_iterations, cycles);
  auto quantise = [&](double x) {
    return static_cast<Nanos>(
        std::floor((x + skew + boundary_wander(x + skew) + noise.jitter_sd_ns * rng.approx_normal()) / tick) * tick);
  };
  rec.sm = s;
  rec.duration_ns.resize(static_cast<std::size_t>(spec.iterations));
  rec.cycles.resize(static_cast<std::size_t>(spec.iterations));
  Nanos prev = quantise(t);
  rec.first_start_ns = prev;
  const bool slow_ones = noise.slow_iteration_probability > 0;
  for (std::int64_t i = 0; i < spec.iterations; ++i) {
    double c = cycles;
    if (slow_ones && rng.uniform() < noise.slow_iteration_probability) c *= noise.slow_iteration_factor;
    t = advance_one(t, seg, c);
    const Nanos obs = std::max(prev, quantise(t));
    rec.duration_ns[static_cast<std::size_t>(i)] = static_cast<std::uint32_t>(obs - prev);
    rec.cycles[static_cast<std::size_t>(i)] = static_cast<std::uint32_t>(std::lround(c));
    prev = obs;
  }
  end_ns = t + skew;
}

WindowRecords SimGpu::collect() {
  if (!pending_) throw Error(ErrorKind::internal, "simulator: collect without launch");
  const WindowSpec spec = *pending_;
  pending_.reset();
  WindowRecords out;
  const auto sms = static_cast<std::size_t>(profile_.sm_count);
  out.sms.resize(sms);
  std::vector<double> ends(sms, 0.0);
  // SMs are independent: split them over the cores. Each SM draws from its
  // own stream, so the records do not depend on the number of threads.
  const std::uint64_t window_seed = rng_.next();
  for_sms(sms, spec.iterations * static_cast<std::int64_t>(sms), [&](std::size_t from, std::size_t to) {
    for (std::size_t s = from; s < to; ++s) generate_sm(spec, static_cast<int>(s), window_seed, out.sms[s], ends[s]);
  });
  for (const auto& rec : out.sms)
    out.bytes += static_cast<std::int64_t>(sizeof(Nanos) + (rec.duration_ns.size() + rec.cycles.size()) * sizeof(std::uint32_t));
  advance_to(to_host(static_cast<Nanos>(*std::max_element(ends.begin(), ends.end()))));
  return out;
}

void SimGpu::for_sms(std::size_t sms, std::int64_t volume,
                     const std::function<void(std::size_t, std::size_t)>& work) const {
  // SMs are independent: split them over the cores. Each SM draws from its
  // own stream, so the records do not depend on the number of threads.
  const std::size_t threads = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 8);
  if (threads == 1 || volume <= 200'000) return work(0, sms);
  std::vector<std::thread> pool;
  const std::size_t per = (sms + threads - 1) / threads;
  for (std::size_t from = 0; from < sms; from += per) pool.emplace_back(work, from, std::min(sms, from + per));
  for (auto& th : pool) th.join();
}

Nanos SimGpu::start_stream(const WindowSpec& spec) {
  if (spec.iteration_fmas <= 0 || spec.warmup_iterations < 0 || pending_)
    throw Error(ErrorKind::internal, "simulator: invalid stream");
  const std::uint64_t stream_seed = rng_.next();
  const double start = static_cast<double>(to_gpu(now_) + kLaunchLatencyNs);
  // A subset of SMs is spread over the groups, as the hardware places blocks.
  const int sms = spec.recorded_sms > 0 ? std::min(spec.recorded_sms, profile_.sm_count) : profile_.sm_count;
  stream_.assign(static_cast<std::size_t>(sms), SmStream{});
  for (std::size_t s = 0; s < stream_.size(); ++s) {
    SmStream& st = stream_[s];
    st.sm = static_cast<int>(s) * profile_.sm_count / sms;
    const auto sm = static_cast<std::size_t>(st.sm);
    st.rng = Random(stream_seed ^ ((sm + 1) * 0x9E3779B97F4A7C15ULL));
    st.cycles = iteration_cycles(spec, st.sm);
    st.t = start + st.rng.uniform(0, 1000);
    // The warm-up runs on the timeline as it is now: nothing is requested
    // during it (the engine waits it out before its first request).
    std::size_t seg = segment_index(static_cast<Nanos>(st.t));
    st.t = advance_iterations(st.t, seg, spec.warmup_iterations, st.cycles);
    st.prev = -1;
  }
  return now_;
}

void SimGpu::drain_sm(SmStream& st, double until_gpu_ns, SmRecords& rec) const {
  const int s = st.sm;
  const NoiseModel& noise = profile_.noise;
  const double tick = profile_.timer_tick_ns;
  // The skew of the SM's group for the switch requested last. Its axis
  // moves by the change, its timer does not: the clock is steady between
  // one switch's arrival and the next request's departure, so only when it
  // sees the next change moves.
  const double skew = sm_skew_ns(s);
  st.t += st.skew - skew;
  st.skew = skew;
  auto quantise = [&](double x) {
    return static_cast<Nanos>(
        std::floor((x + skew + boundary_wander(x + skew) + noise.jitter_sd_ns * st.rng.approx_normal()) / tick) * tick);
  };
  rec.sm = s;
  if (st.prev < 0) st.prev = quantise(st.t);
  rec.first_start_ns = st.prev;
  const bool slow_ones = noise.slow_iteration_probability > 0;
  // The SM's own axis runs `skew` behind the GPU's.
  const double until = until_gpu_ns - skew;
  // Requests since the last drain trimmed the timeline: find the SM's
  // segment afresh (what it ran so far was before any of them took effect).
  std::size_t seg = segment_index(static_cast<Nanos>(st.t));
  for (;;) {
    double c = st.cycles;
    if (slow_ones && st.rng.uniform() < noise.slow_iteration_probability) c *= noise.slow_iteration_factor;
    std::size_t next_seg = seg;
    const double end = advance_one(st.t, next_seg, c);
    if (end > until) break;
    const Nanos obs = std::max(st.prev, quantise(end));
    rec.duration_ns.push_back(static_cast<std::uint32_t>(obs - st.prev));
    rec.cycles.push_back(static_cast<std::uint32_t>(std::lround(c)));
    st.prev = obs;
    st.t = end;
    seg = next_seg;
  }
}

WindowRecords SimGpu::drain() {
  if (stream_.empty()) throw Error(ErrorKind::internal, "simulator: drain without a stream");
  WindowRecords out;
  out.sms.resize(stream_.size());
  const auto until = static_cast<double>(to_gpu(now_));
  // Roughly how many iterations are due, to decide on threads.
  const double per_iteration_ns = stream_.front().cycles * 1000.0 / std::max(1.0, mhz_at(static_cast<Nanos>(until)));
  const auto due = static_cast<std::int64_t>(std::max(0.0, until - stream_.front().t) / per_iteration_ns);
  for_sms(stream_.size(), due * static_cast<std::int64_t>(stream_.size()), [&](std::size_t from, std::size_t to) {
    for (std::size_t s = from; s < to; ++s) drain_sm(stream_[s], until, out.sms[s]);
  });
  for (const auto& rec : out.sms)
    out.bytes += static_cast<std::int64_t>(sizeof(Nanos) + (rec.duration_ns.size() + rec.cycles.size()) * sizeof(std::uint32_t));
  return out;
}

TimerSync SimGpu::synchronize() {
  // Ping-pong through mapped memory: the GPU stamps somewhere inside each
  // exchange; the exchange with the smallest round trip wins.
  TimerSync best;
  best.round_trip_ns = 1e18;
  for (int k = 0; k < 64; ++k) {
    const Nanos h1 = now_;
    const double rtt = 2200 + std::abs(rng_.normal()) * 800 + (rng_.uniform() < 0.1 ? 20000 : 0);
    const Nanos h2 = h1 + static_cast<Nanos>(rtt);
    const Nanos g = to_gpu(h1 + static_cast<Nanos>(rng_.uniform() * rtt));
    now_ = h2 + 1000;
    if (rtt < best.round_trip_ns) {
      best.round_trip_ns = rtt;
      best.offset_ns = g - (h1 + h2) / 2;
      best.host_ns = (h1 + h2) / 2;
    }
  }
  best.uncertainty_ns = best.round_trip_ns / 2;
  return best;
}

double SimGpu::sm_skew_ns(int sm) const {
  return group_skew_ns_[static_cast<std::size_t>(sm) * group_skew_ns_.size() / static_cast<std::size_t>(profile_.sm_count)];
}

void SimGpu::add_brake_step(Nanos gpu_ns, double to_mhz) {
  brake_steps_.push_back({gpu_ns, timeline_.back().mhz, to_mhz});
  timeline_.push_back({gpu_ns, to_mhz});
}

void SimGpu::brake(Nanos host_ns, double seconds) {
  // Each step a clock of the table: the H100 went 1980 -> 1770 -> 1725, then
  // 1725 <-> 1710 (docs/hardware.md).
  const auto& clocks = profile_.clocks;
  const auto top = static_cast<std::ptrdiff_t>(clocks.size()) - 1;
  const std::ptrdiff_t high = std::max<std::ptrdiff_t>(1, top - static_cast<std::ptrdiff_t>(shape_rng_.uniform(8, 18)));
  for (double& skew : group_skew_ns_) skew = shape_rng_.uniform(0, profile_.max_group_skew_ns);
  Nanos at = to_gpu(host_ns) + static_cast<Nanos>(shape_rng_.uniform(0.2, 1.0) * 1e9);
  const Nanos until = to_gpu(host_ns) + static_cast<Nanos>(seconds * 1e9);
  bool low = false;
  while (at < until) {
    add_brake_step(at, clocks[static_cast<std::size_t>(high - (low ? 1 : 0))]);
    low = !low;
    at += static_cast<Nanos>(1e8 * std::pow(30.0, shape_rng_.uniform()));  // 0.1-3 s, log-uniform
  }
}

void SimGpu::release(Nanos host_ns) {
  const Nanos g = to_gpu(host_ns);
  while (timeline_.size() > 1 && timeline_.back().gpu_start > g) timeline_.pop_back();
  while (!brake_steps_.empty() && brake_steps_.back().gpu_ns > g) brake_steps_.pop_back();
  // Back to the top in up to three held steps.
  const auto& clocks = profile_.clocks;
  const double top = clocks.back();
  Nanos at = g + static_cast<Nanos>(shape_rng_.uniform(0.05, 0.3) * 1e9);
  for (const double share : {0.5, 0.85}) {
    const double mhz = timeline_.back().mhz + share * (top - timeline_.back().mhz);
    const auto it = std::lower_bound(clocks.begin(), clocks.end(), static_cast<Mhz>(std::lround(mhz)));
    if (it == clocks.end() || *it >= top || *it <= timeline_.back().mhz) continue;
    add_brake_step(at, *it);
    at += static_cast<Nanos>(shape_rng_.uniform(0.1, 0.5) * 1e9);
  }
  if (timeline_.back().mhz < top) add_brake_step(at, top);
}

Telemetry SimGpu::telemetry() {
  Telemetry t;
  const double seconds = static_cast<double>(now_) / 1e9;
  for (double at : injection_.thermal_at_s)
    t.throttle.thermal |= at <= seconds && seconds < at + kThermalEventSeconds;
  const Nanos g = to_gpu(now_);
  const bool braking = !brake_steps_.empty() && brake_steps_.front().gpu_ns <= g && mhz_at(g) < requested_;
  t.throttle.power = (injection_.power_cap_mhz && requested_ > *injection_.power_cap_mhz) || braking;
  // As NVML reports them: software power cap, software thermal slowdown.
  t.throttle.raw_reasons = (t.throttle.power ? 0x4u : 0u) | (t.throttle.thermal ? 0x20u : 0u);
  const double mhz = mhz_at(g);
  const double top = profile_.clocks.back();
  t.temperature_c = 40 + 25 * mhz / top + (t.throttle.thermal ? 45 : 0);
  t.power_w = profile_.idle_power_w + (profile_.max_power_w - profile_.idle_power_w) * (mhz / top) * (mhz / top);
  t.memory_mhz = profile_.memory_mhz;
  t.sm_mhz = static_cast<Mhz>(std::lround(mhz));
  return t;
}

}  // namespace latest::sim
