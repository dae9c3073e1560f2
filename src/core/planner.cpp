#include "core/planner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace latest {

std::int64_t iteration_fmas_for(double capture_ms, double ns_per_fma_at_fastest,
                                const PlanSettings& s) {
  if (s.iteration_fmas) return *s.iteration_fmas;
  const auto capture_budget = std::max<std::int64_t>(
      1, s.max_recorded_iterations - s.delay_iterations - s.confirmation_iterations);
  const double want_ns = capture_ms * 1e6 / static_cast<double>(capture_budget);
  std::int64_t fmas = std::max<std::int64_t>(s.min_iteration_fmas, 1);
  while (static_cast<double>(fmas) * ns_per_fma_at_fastest < want_ns) fmas *= 2;
  return fmas;
}

std::int64_t separable_iteration_fmas(std::int64_t fmas, double difference_ns, double sd_ns, std::int64_t coarsest) {
  const double needed = kRampLevels * sd_ns;
  double difference = std::abs(difference_ns);
  std::int64_t chosen = fmas;
  while (chosen < coarsest && difference < needed) {
    chosen *= 2;
    difference *= 2;
  }
  return std::max(fmas, std::min(chosen, coarsest));
}

WindowPlan plan_window(double capture_ms, double wakeup_ms, const ClockCalibration& initial,
                       const ClockCalibration& target, const PlanSettings& s) {
  WindowPlan p;
  p.iteration_fmas = initial.iteration_fmas;
  p.capture_ms = capture_ms;
  p.wakeup_ms = wakeup_ms;
  const double init_ns = initial.pooled.iteration.mean;
  const double slow_ns = std::max(init_ns, target.pooled.iteration.mean);
  p.warmup_iterations = static_cast<std::int64_t>(std::ceil(wakeup_ms * 1e6 / init_ns));
  p.delay_iterations = s.delay_iterations;
  p.delay_ms = static_cast<double>(s.delay_iterations) * init_ns / 1e6;
  // Counted at the slower clock: after a decrease the card runs slow, and
  // iterations counted at the faster one made the window up to 5.7x longer
  // than planned. After an increase it runs fast and the window is shorter
  // by as much; the capture's factor over the longest latency covers that.
  const auto capture_iterations = static_cast<std::int64_t>(std::ceil(capture_ms * 1e6 / slow_ns));
  p.recorded_iterations = s.delay_iterations + capture_iterations + s.confirmation_iterations;
  p.gpu_ms = window_gpu_ms(wakeup_ms, p.delay_ms, capture_ms,
                           static_cast<double>(s.confirmation_iterations) * slow_ns / 1e6);
  return p;
}

const char* to_string(Schedule schedule) {
  return schedule == Schedule::chained ? "chained" : "paper";
}

int measurements_for_rse(double cv, double rse, int min_measurements, int max_measurements, int check_every) {
  const double wanted = std::isfinite(cv) ? (cv / rse) * (cv / rse) : static_cast<double>(max_measurements);
  int n = min_measurements;
  const int every = std::max(check_every, 1);
  while (n < wanted && n < max_measurements) n += every;
  return std::min(n, max_measurements);
}

namespace {

// Sums of k independent draws of a pair's measurement count (whole counts,
// each count of the sample equally likely), for the measurements a walk
// makes past its pairs' stops.
class CountSums {
 public:
  explicit CountSums(const std::vector<double>& counts) {
    std::vector<double> one;
    for (double c : counts) {
      const auto n = static_cast<std::size_t>(std::max(0L, std::lround(c)));
      if (one.size() <= n) one.resize(n + 1, 0.0);
      one[n] += 1.0 / static_cast<double>(counts.size());
    }
    for (std::size_t n = 0; n < one.size(); ++n)
      if (one[n] > 0) draw_.emplace_back(n, one[n]);
    sums_.push_back({1.0});
  }
  // E[max(0, X - Y)], X the sum of `a` draws, Y of `b`.
  double excess(std::size_t a, std::size_t b) {
    const auto key = std::make_pair(a, b);
    if (const auto it = excess_.find(key); it != excess_.end()) return it->second;
    const std::vector<double>& x = sum(a);
    const std::vector<double>& y = sum(b);
    double below = 0, below_sum = 0, e = 0;  // P(Y < v) and E[Y; Y < v]
    for (std::size_t v = 0; v < x.size(); ++v) {
      if (v > 0 && v - 1 < y.size()) {
        below += y[v - 1];
        below_sum += y[v - 1] * static_cast<double>(v - 1);
      }
      e += x[v] * (static_cast<double>(v) * below - below_sum);
    }
    return excess_[key] = e;
  }

 private:
  const std::vector<double>& sum(std::size_t k) {
    while (sums_.size() <= k) {
      const std::vector<double>& last = sums_.back();
      std::vector<double> next(last.size() + (draw_.empty() ? 0 : draw_.back().first), 0.0);
      for (std::size_t v = 0; v < last.size(); ++v)
        if (last[v] > 0)
          for (const auto& [n, p] : draw_) next[v + n] += last[v] * p;
      sums_.push_back(std::move(next));
    }
    return sums_[k];
  }
  std::vector<std::pair<std::size_t, double>> draw_;
  std::vector<std::vector<double>> sums_;
  std::map<std::pair<std::size_t, std::size_t>, double> excess_;
};

}  // namespace

CostPlan plan_cost(const CostModelInputs& in) {
  CostPlan plan;
  std::vector<double> counts = in.measurement_counts;
  if (counts.empty())
    for (double cv : in.pilot_cvs)
      counts.push_back(measurements_for_rse(cv, in.rse, in.min_measurements, in.max_measurements, in.check_every));
  if (counts.empty()) counts.push_back(in.min_measurements);
  double mean = 0;
  for (double a : counts) mean += a / static_cast<double>(counts.size());
  plan.measurements_per_pair = mean;
  const PlanSettings& p = in.plan;
  const auto confirmation_ms = [&](double iteration_ns) {
    return static_cast<double>(p.confirmation_iterations) * iteration_ns / 1e6;
  };
  double seconds = 0;
  if (in.schedule == Schedule::paper) {
    for (const PlannedPair& pp : in.pairs) {
      const double delay_ms = static_cast<double>(p.delay_iterations) * pp.init_iteration_ns / 1e6;
      const double slow_ns = std::max(pp.iteration_ns, pp.init_iteration_ns);
      seconds += mean * window_gpu_ms(pp.wakeup_ms, delay_ms, in.capture_ms, confirmation_ms(slow_ns)) / 1e3;
    }
    plan.measurements_s = seconds;
    return plan;
  }
  const auto request_s = [&](const PlannedPair& pp) {
    const double confirm = confirmation_ms(pp.iteration_ns);
    const double settled = std::max(pp.latency_ms + confirm, (1 + in.settle_factor) * pp.latency_ms);
    return (settled + confirm * in.poll_share / 2 + 2 * in.sync_ms) / 1e3;
  };
  // The launches: each walk, and each pair of clocks outside one.
  std::map<std::pair<int, std::pair<Mhz, Mhz>>, std::vector<const PlannedPair*>> launches;
  for (const PlannedPair& pp : in.pairs) {
    const auto clocks = std::minmax(pp.pair.init, pp.pair.target);
    launches[{pp.walk, pp.walk >= 0 ? std::pair<Mhz, Mhz>{} : std::pair<Mhz, Mhz>{clocks}}].push_back(&pp);
  }
  CountSums sums(counts);
  for (const auto& [key, pairs] : launches) {
    const PlannedPair& first = *pairs.front();
    seconds += (first.wakeup_ms + static_cast<double>(p.delay_iterations) * first.init_iteration_ns / 1e6) / 1e3;
    std::map<Mhz, std::size_t> in_count, out_count;
    std::map<Mhz, double> out_s;
    double all_s = 0;
    for (const PlannedPair* pp : pairs) {
      const double r = request_s(*pp);
      seconds += mean * r;
      all_s += r;
      ++in_count[pp->pair.target];
      ++out_count[pp->pair.init];
      out_s[pp->pair.init] += r;
    }
    for (const auto& [clock, arrivals] : in_count) {
      const std::size_t departures = out_count.count(clock) ? out_count[clock] : 0;
      // Leaving by its own pairs, or, where none leaves it, a transit
      // assumed to cost what the launch's requests do.
      const double leave_s = departures ? out_s[clock] / static_cast<double>(departures)
                                        : all_s / static_cast<double>(pairs.size());
      seconds += sums.excess(arrivals, departures) * leave_s;
    }
  }
  plan.measurements_s = seconds;
  return plan;
}

double window_gpu_ms(double wakeup_ms, double delay_ms, double capture_ms, double confirmation_ms) {
  return wakeup_ms + delay_ms + capture_ms + confirmation_ms;
}

std::vector<ClockPair> ordered_pairs(const std::vector<Mhz>& clocks, PairDirection direction) {
  std::vector<ClockPair> pairs;
  for (Mhz a : clocks)
    for (Mhz b : clocks) {
      if (a == b) continue;
      if (direction == PairDirection::increasing && b < a) continue;
      if (direction == PairDirection::decreasing && b > a) continue;
      pairs.push_back({a, b});
    }
  return pairs;
}

std::vector<ClockPair> pilot_pairs(const std::vector<ClockPair>& valid) {
  if (valid.empty()) return {};
  std::vector<Mhz> clocks;
  for (const auto& p : valid) {
    clocks.push_back(p.init);
    clocks.push_back(p.target);
  }
  std::sort(clocks.begin(), clocks.end());
  clocks.erase(std::unique(clocks.begin(), clocks.end()), clocks.end());
  const Mhz lo = clocks.front(), hi = clocks.back();
  const Mhz mid = clocks[clocks.size() / 2];
  std::vector<ClockPair> wanted = {{lo, hi}, {hi, lo}, {mid, hi}, {mid, lo}};
  std::vector<ClockPair> chosen;
  for (const auto& w : wanted) {
    if (chosen.size() == 3) break;
    if (std::find(valid.begin(), valid.end(), w) != valid.end() &&
        std::find(chosen.begin(), chosen.end(), w) == chosen.end())
      chosen.push_back(w);
  }
  for (const auto& v : valid) {  // too few of the wanted ones are valid
    if (chosen.size() >= std::min<std::size_t>(3, valid.size())) break;
    if (std::find(chosen.begin(), chosen.end(), v) == chosen.end()) chosen.push_back(v);
  }
  return chosen;
}

double capture_from_pilot(double longest_pilot_latency_ms, const PlanSettings& s) {
  return std::clamp(s.capture_factor * longest_pilot_latency_ms, s.min_capture_ms, s.max_capture_ms);
}

double neighbour_tolerance_ns(Mhz clock, double mean_ns, const std::vector<Mhz>& supported) {
  double nearest = std::numeric_limits<double>::infinity();
  for (Mhz f : supported)
    if (f != clock) nearest = std::min(nearest, std::abs(static_cast<double>(f - clock)));
  if (!std::isfinite(nearest)) nearest = 0.05 * clock;
  // Durations scale as 1/f: the neighbour's mean is mean * clock / (clock ± step).
  const double neighbour_mean = mean_ns * clock / (clock + nearest);
  return 0.5 * std::abs(mean_ns - neighbour_mean);
}

}  // namespace latest
