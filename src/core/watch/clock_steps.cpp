#include "core/watch/clock_steps.hpp"

#include <algorithm>
#include <cmath>
#include <queue>
#include <tuple>

namespace latest {
namespace {

// Running sums of an SM's records: a stretch's clock in O(1).
class RecordSums {
 public:
  explicit RecordSums(const SmRecords& r) : start_(r.first_start_ns), ns_(r.duration_ns.size() + 1), cycles_(ns_.size()) {
    for (std::size_t i = 0; i < r.duration_ns.size(); ++i) {
      ns_[i + 1] = ns_[i] + r.duration_ns[i];
      cycles_[i + 1] = cycles_[i] + r.cycles[i];
    }
  }
  std::int64_t size() const { return static_cast<std::int64_t>(ns_.size()) - 1; }
  // Iterations [a, b): their nanoseconds, cycles and clock (MHz).
  double ns(std::int64_t a, std::int64_t b) const { return static_cast<double>(ns_[idx(b)] - ns_[idx(a)]); }
  double cycles(std::int64_t a, std::int64_t b) const { return static_cast<double>(cycles_[idx(b)] - cycles_[idx(a)]); }
  double mhz(std::int64_t a, std::int64_t b) const {
    const double t = ns(a, b);
    return t > 0 ? 1000.0 * cycles(a, b) / t : 0.0;
  }
  // The clock of [a, b) without its first and last iteration, which may be
  // the mixed ones of the changes on either side.
  double inner_mhz(std::int64_t a, std::int64_t b) const { return b - a >= 3 ? mhz(a + 1, b - 1) : mhz(a, b); }
  // When iteration i starts.
  Nanos time(std::int64_t i) const { return start_ + ns_[idx(i)]; }

 private:
  static std::size_t idx(std::int64_t i) { return static_cast<std::size_t>(i); }
  Nanos start_;
  std::vector<std::int64_t> ns_;
  std::vector<std::int64_t> cycles_;
};

double median_of(std::vector<double> xs) {
  if (xs.empty()) return 0;
  const auto mid = xs.begin() + static_cast<std::ptrdiff_t>(xs.size() / 2);
  std::nth_element(xs.begin(), mid, xs.end());
  return *mid;
}

// One iteration's clock scatters by the timer's tick at both of its ends
// and by whatever else moves it: the robust spread of successive
// differences, never below what the tick alone gives.
double iteration_noise_mhz(const SmRecords& r, double tick_ns) {
  const std::size_t n = r.duration_ns.size();
  if (n < 3) return 1;
  std::vector<double> diffs, clocks, lengths;
  const std::size_t stride = std::max<std::size_t>(1, n / 20000);
  for (std::size_t i = 1; i < n; i += stride) {
    const auto at = [&](std::size_t k) { return r.duration_ns[k] ? 1000.0 * r.cycles[k] / r.duration_ns[k] : 0.0; };
    diffs.push_back(std::abs(at(i) - at(i - 1)));
    clocks.push_back(at(i));
    lengths.push_back(r.duration_ns[i]);
  }
  const double tick_floor = median_of(clocks) * tick_ns / std::max(1.0, median_of(lengths));
  return std::max(1.4826 * median_of(diffs) / std::sqrt(2.0), 0.5 * tick_floor);
}

// Cuts [a, b) where the clocks before and after differ most significantly,
// again within each side, until no cut is significant.
std::vector<std::int64_t> significant_cuts(const RecordSums& sums, double noise_mhz, const StepSettings& s) {
  std::vector<std::int64_t> cuts;
  std::vector<std::pair<std::int64_t, std::int64_t>> todo{{0, sums.size()}};
  const std::int64_t m = std::max<std::int64_t>(2, s.min_level_iterations);
  while (!todo.empty()) {
    const auto [a, b] = todo.back();
    todo.pop_back();
    if (b - a < 2 * m) continue;
    double best = 0;
    std::int64_t at = -1;
    // The segment's own first and last iterations are left out: where a cut
    // made them, they may be mixed, and would pass for a short level.
    for (std::int64_t k = a + m; k <= b - m; ++k) {
      const double d = sums.mhz(a + 1, k) - sums.mhz(k, b - 1);
      const double nl = static_cast<double>(k - a), nr = static_cast<double>(b - k);
      const double stat = d * d * nl * nr / (nl + nr);
      if (stat > best) best = stat, at = k;
    }
    if (at < 0 || std::sqrt(best) < s.z * noise_mhz) continue;
    cuts.push_back(at);
    todo.emplace_back(a, at);
    todo.emplace_back(at, b);
  }
  std::sort(cuts.begin(), cuts.end());
  return cuts;
}

// Merges neighbouring levels closer than the step, the closest pair first.
std::vector<ClockLevel> merge_close(const RecordSums& sums, std::vector<ClockLevel> levels, double min_step) {
  const std::size_t n = levels.size();
  std::vector<std::size_t> next(n), prev(n);
  std::vector<unsigned> version(n, 0);
  std::vector<bool> alive(n, true);
  for (std::size_t i = 0; i < n; ++i) next[i] = i + 1, prev[i] = i == 0 ? n : i - 1;
  using Entry = std::tuple<double, std::size_t, unsigned, std::size_t, unsigned>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> close;
  const auto offer = [&](std::size_t i) {
    if (i >= n || next[i] >= n) return;
    const std::size_t j = next[i];
    close.emplace(std::abs(levels[i].mhz - levels[j].mhz), i, version[i], j, version[j]);
  };
  for (std::size_t i = 0; i + 1 < n; ++i) offer(i);
  while (!close.empty()) {
    const auto [diff, i, vi, j, vj] = close.top();
    close.pop();
    if (diff >= min_step) break;
    if (!alive[i] || !alive[j] || version[i] != vi || version[j] != vj) continue;
    levels[i].end = levels[j].end;
    levels[i].mhz = sums.inner_mhz(levels[i].first, levels[i].end);
    ++version[i];
    alive[j] = false;
    next[i] = next[j];
    if (next[i] < n) prev[next[i]] = i;
    if (prev[i] < n) offer(prev[i]);
    offer(i);
  }
  std::vector<ClockLevel> out;
  for (std::size_t i = 0; i < n; ++i)
    if (alive[i]) out.push_back(levels[i]);
  return out;
}

struct Placement {
  Nanos at_ns;
  double uncertainty_ns;
  Nanos lo_ns, hi_ns;  // where the cut allows it: the iterations either side of the cut
};

// Where the clock left level `a` for level `b` (neighbours). Before the
// change an SM's cumulative cycles lie on a line of slope a's clock through
// its iteration boundaries, after it on one of b's: the change is where the
// two lines cross. Each line's offset is the mean over up to kPlacementPoints
// boundaries, so a boundary's timer tick averages out; the boundaries next to
// the cut are left out, as the iteration holding the change lies there.
constexpr std::int64_t kPlacementPoints = 64;

// The crossing with the cut at iteration k: the mixed iteration is k-1 or k.
Placement cross_at(const RecordSums& sums, const ClockLevel& a, const ClockLevel& b, std::int64_t k, double tick_ns) {
  const double fa = a.mhz / 1000.0, fb = b.mhz / 1000.0;
  const Nanos ref = sums.time(k);
  // Mean and variance of the offsets C_i - f (t_i - ref) over boundaries [from, to].
  const auto offset = [&](std::int64_t from, std::int64_t to, double f) {
    double sum = 0, sum2 = 0;
    const auto n = static_cast<double>(to - from + 1);
    for (std::int64_t i = from; i <= to; ++i) {
      const double c = sums.cycles(k, i) - f * static_cast<double>(sums.time(i) - ref);
      sum += c;
      sum2 += c * c;
    }
    const double mean = sum / n;
    return std::pair{mean, std::max(0.0, sum2 / n - mean * mean) / n};
  };
  const std::int64_t a_from = std::max(a.first, k - 1 - kPlacementPoints), a_to = std::max(a.first, k - 1);
  const std::int64_t b_from = std::min(b.end, k + 1), b_to = std::min(b.end, k + 1 + kPlacementPoints);
  const auto [alpha_a, var_a] = offset(a_from, a_to, fa);
  const auto [alpha_b, var_b] = offset(b_from, b_to, fb);
  const double lo = static_cast<double>(sums.time(std::max(a.first, k - 1)) - ref);
  const double hi = static_cast<double>(sums.time(std::min(b.end, k + 1)) - ref);
  const double into = (alpha_b - alpha_a) / (fa - fb);
  // The tick's error does not average out over boundaries: with iterations
  // of nearly equal length, successive boundaries fall at nearly the same
  // phase of the tick. So each line's offset keeps a tick's share, one
  // boundary's worth. A level's clock is uncertain by a tick over its
  // length, which tilts its line about the window's middle.
  const double floor_var = std::pow(std::max(fa, fb) * tick_ns, 2) / 12;
  const auto tilt = [&](const ClockLevel& l, double f, std::int64_t from, std::int64_t to) {
    const double lever = static_cast<double>(sums.time(to) - sums.time(from)) / 2;
    return f * tick_ns / std::max(1.0, sums.ns(l.first, l.end)) * lever;
  };
  const double u = std::sqrt(std::max(var_a, floor_var) + std::max(var_b, floor_var) +
                             std::pow(tilt(a, fa, a_from, a_to), 2) + std::pow(tilt(b, fb, b_from, b_to), 2)) /
                   std::abs(fa - fb);
  return {ref + static_cast<Nanos>(std::llround(into)), std::min(u, (hi - lo) / 2),
          ref + static_cast<Nanos>(lo), ref + static_cast<Nanos>(hi)};
}

// The segmentation's cut may miss a small change by a few iterations: the
// cut moves to the iteration the crossing falls in until it stays there.
Placement place_change(const RecordSums& sums, const ClockLevel& a, const ClockLevel& b, double tick_ns) {
  std::int64_t k = b.first;
  Placement p = cross_at(sums, a, b, k, tick_ns);
  for (int round = 0; round < 8; ++round) {
    // The iteration the crossing falls in becomes the cut's: the iterations
    // either side of it are then clear of the change.
    std::int64_t j = k;
    while (j > a.first + 1 && sums.time(j) > p.at_ns) --j;
    while (j < b.end - 1 && sums.time(j + 1) <= p.at_ns) ++j;
    if (j == k) break;
    k = j;
    p = cross_at(sums, a, b, k, tick_ns);
  }
  p.at_ns = std::clamp(p.at_ns, p.lo_ns, p.hi_ns);
  return p;
}

// Whether level j lies strictly between its neighbours and held briefly:
// a step of a ramp.
bool ramp_level(const RecordSums& sums, const std::vector<ClockLevel>& levels, std::size_t j, Nanos ramp_ns) {
  if (j == 0 || j + 1 >= levels.size()) return false;
  const double lo = levels[j - 1].mhz, mid = levels[j].mhz, hi = levels[j + 1].mhz;
  const bool between = (lo < mid && mid < hi) || (lo > mid && mid > hi);
  return between && sums.ns(levels[j].first, levels[j].end) < static_cast<double>(ramp_ns);
}

}  // namespace

std::vector<ClockLevel> find_levels(const SmRecords& records, const StepSettings& s) {
  const RecordSums sums(records);
  if (sums.size() == 0) return {};
  const double noise = iteration_noise_mhz(records, s.timer_tick_ns);
  std::vector<ClockLevel> levels;
  std::int64_t from = 0;
  for (const std::int64_t cut : significant_cuts(sums, noise, s)) {
    levels.push_back({from, cut, sums.inner_mhz(from, cut)});
    from = cut;
  }
  levels.push_back({from, sums.size(), sums.inner_mhz(from, sums.size())});
  return merge_close(sums, std::move(levels), s.min_step_mhz);
}

std::vector<SmStep> steps_between(const SmRecords& records, const std::vector<ClockLevel>& levels,
                                  const StepSettings& s) {
  const RecordSums sums(records);
  std::vector<SmStep> steps;
  for (std::size_t j = 0; j + 1 < levels.size();) {
    // Level j is held; j+1 .. k-1 are a ramp's; level k is the next held.
    std::size_t k = j + 1;
    while (ramp_level(sums, levels, k, s.ramp_level_ns) &&
           (levels[k].mhz - levels[j].mhz) * (levels[k + 1].mhz - levels[k].mhz) > 0)
      ++k;
    SmStep step;
    step.sm = records.sm;
    step.before_mhz = levels[j].mhz;
    step.after_mhz = levels[k].mhz;
    for (std::size_t r = j + 1; r < k; ++r) step.ramp_levels_mhz.push_back(levels[r].mhz);
    const Placement departure = place_change(sums, levels[j], levels[j + 1], s.timer_tick_ns);
    const Placement arrival = place_change(sums, levels[k - 1], levels[k], s.timer_tick_ns);
    step.departure_ns = departure.at_ns;
    step.departure_uncertainty_ns = departure.uncertainty_ns;
    step.arrival_ns = std::max(arrival.at_ns, departure.at_ns);
    step.arrival_uncertainty_ns = arrival.uncertainty_ns;
    steps.push_back(std::move(step));
    j = k;
  }
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (i > 0) steps[i].held_before_ns = steps[i].departure_ns - steps[i - 1].arrival_ns;
    if (i + 1 < steps.size()) steps[i].holds_ns = steps[i + 1].departure_ns - steps[i].arrival_ns;
  }
  return steps;
}

Nanos CardStep::arrival_ns() const {
  std::vector<double> t;
  for (const SmStep& s : sms) t.push_back(static_cast<double>(s.arrival_ns));
  return static_cast<Nanos>(median_of(t));
}

Nanos CardStep::spread_ns() const {
  const auto [lo, hi] = std::minmax_element(sms.begin(), sms.end(), [](const SmStep& a, const SmStep& b) {
    return a.arrival_ns < b.arrival_ns;
  });
  return sms.empty() ? 0 : hi->arrival_ns - lo->arrival_ns;
}

double CardStep::before_mhz() const {
  std::vector<double> v;
  for (const SmStep& s : sms) v.push_back(s.before_mhz);
  return median_of(v);
}

double CardStep::after_mhz() const {
  std::vector<double> v;
  for (const SmStep& s : sms) v.push_back(s.after_mhz);
  return median_of(v);
}

std::vector<CardStep> group_card_steps(std::vector<SmStep> steps, const StepSettings& s) {
  std::sort(steps.begin(), steps.end(), [](const SmStep& a, const SmStep& b) { return a.arrival_ns < b.arrival_ns; });
  std::vector<bool> taken(steps.size(), false);
  std::vector<CardStep> cards;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (taken[i]) continue;
    CardStep card;
    const bool up = steps[i].after_mhz > steps[i].before_mhz;
    // Linked in time: each SM's change within the window of the last one
    // taken, in the same direction, one per SM.
    Nanos last = steps[i].arrival_ns;
    for (std::size_t j = i; j < steps.size() && steps[j].arrival_ns - last <= s.card_window_ns; ++j) {
      const bool same_sm = std::any_of(card.sms.begin(), card.sms.end(), [&](const SmStep& c) { return c.sm == steps[j].sm; });
      if (taken[j] || same_sm || (steps[j].after_mhz > steps[j].before_mhz) != up) continue;
      taken[j] = true;
      last = steps[j].arrival_ns;
      card.sms.push_back(steps[j]);
    }
    // SMs whose arrivals lie within their uncertainties of each other moved together.
    int group = 0;
    for (std::size_t k = 0; k < card.sms.size(); ++k) {
      if (k > 0) {
        const SmStep& a = card.sms[k - 1];
        const SmStep& b = card.sms[k];
        const double gap = static_cast<double>(b.arrival_ns - a.arrival_ns);
        if (gap > 3 * std::hypot(a.arrival_uncertainty_ns, b.arrival_uncertainty_ns) + s.timer_tick_ns) ++group;
      }
      card.groups.push_back(group);
    }
    cards.push_back(std::move(card));
  }
  return cards;
}

}  // namespace latest
