#include "core/engine.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.hpp"
#include "core/schedules/chained_schedule.hpp"
#include "core/schedules/paper_schedule.hpp"

namespace latest {

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
    : core_(workload, clocks, std::move(settings), observer, std::move(stop)),
      schedule_kind_(workload.can_stream() ? core_.settings().schedule : Schedule::paper) {
  if (schedule_kind_ == Schedule::chained)
    schedule_ = std::make_unique<ChainedSchedule>(core_);
  else
    schedule_ = std::make_unique<PaperSchedule>(core_);
}

Engine::~Engine() = default;

bool Engine::adjacent(ClockPair pair) const {
  const auto& supported = core_.supported();
  const auto a = std::find(supported.begin(), supported.end(), pair.init);
  const auto b = std::find(supported.begin(), supported.end(), pair.target);
  return a != supported.end() && b != supported.end() && std::abs(a - b) == 1;
}

std::vector<ClockPair> Engine::check_pairs() {
  const EngineSettings& s = core_.settings();
  RunState& state = core_.state();
  std::vector<ClockPair> measured;
  state.checks.clear();
  for (const auto& pair : s.pairs) {
    PairCheck check;
    check.pair = pair;
    const auto& a = core_.calibration(pair.init, state.iteration_fmas);
    const auto& b = core_.calibration(pair.target, state.iteration_fmas);
    check.difference_ns = difference_interval(a.pooled.iteration, b.pooled.iteration);
    check.means_differ = !check.difference_ns.contains(0.0);
    check.band_overlap = band_overlap(a.pooled.iteration, b.pooled.iteration);
    if (auto it = state.unusable_clocks.find(pair.init); it != state.unusable_clocks.end()) {
      check.skip = it->second;
    } else if (auto jt = state.unusable_clocks.find(pair.target); jt != state.unusable_clocks.end()) {
      check.skip = jt->second;
    } else if (!check.means_differ) {
      check.skip = {.code = SkipReason::Code::means_indistinguishable};
    } else if (check.band_overlap > s.max_band_overlap && !s.include_inseparable &&
               (s.detector == Detector::paper || adjacent(pair))) {
      // The paper's detector needs bands that barely overlap; the pooled one
      // separates clocks two steps apart, and only neighbours may be skipped,
      // judged at the iteration the pair runs at, whatever else the run
      // holds (a coarser one for close clocks, as a small clock set has).
      if (const std::int64_t fmas = core_.pair_fmas(pair); fmas != state.iteration_fmas)
        check.band_overlap = band_overlap(core_.calibration(pair.init, fmas).pooled.iteration,
                                          core_.calibration(pair.target, fmas).pooled.iteration);
      if (check.band_overlap > s.max_band_overlap)
        check.skip = {.code = SkipReason::Code::bands_overlap, .value = check.band_overlap, .limit = s.max_band_overlap};
    }
    if (!check.skip.skipped()) measured.push_back(pair);
    if (s.detector == Detector::pooled) check.separable_fmas = core_.separable_fmas(pair);
    state.checks.push_back(check);
  }
  return measured;
}

double Engine::run_pilot(const std::vector<ClockPair>& candidates, std::size_t capture_pairs) {
  const EngineSettings& s = core_.settings();
  double longest = 0;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const ClockPair pair = candidates[i];
    // Each pair's pilot escalates its own window: a slow pair does not
    // lengthen the others'.
    double capture = s.plan.pilot_capture_ms;
    for (int k = 0; k < s.plan.pilot_measurements; ++k) {
      bool captured = false;
      int raises = 0;
      for (int attempt = 0; attempt < s.max_attempts && !captured; ++attempt) {
        const std::int64_t fmas = core_.iteration_for(capture);
        const auto& ci = core_.calibration(pair.init, fmas);
        const auto& ct = core_.calibration(pair.target, fmas);
        if (!means_differ(ci.pooled.iteration, ct.pooled.iteration)) break;
        const WindowPlan plan = plan_window(capture, core_.wakeup_for(pair.init, raises), ci, ct, s.plan);
        const Attempt a = core_.measure_window(pair, plan);
        switch (a.measurement.outcome) {
          case MeasurementOutcome::accepted:
            core_.state().pilot.emplace_back(pair, a.row.switching_ms);
            if (i < capture_pairs) longest = std::max(longest, a.row.switching_ms);
            captured = true;
            break;
          case MeasurementOutcome::not_captured:
            capture = std::min(capture * 10, s.plan.max_capture_ms);
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
  return capture_from_pilot(longest > 0 ? longest : s.plan.pilot_capture_ms / s.plan.capture_factor, s.plan);
}

void Engine::plan_cost(const std::vector<ClockPair>& measured, const std::vector<double>& counts) {
  const EngineSettings& s = core_.settings();
  RunState& state = core_.state();
  CostModelInputs in;
  in.measurement_counts = counts;
  in.schedule = state.schedule;
  in.capture_ms = state.capture_ms;
  in.sync_ms = state.cost.sync_ms;
  in.poll_share = s.poll_share;
  in.settle_factor = s.settle_factor;
  in.rse = s.rse;
  in.min_measurements = s.min_measurements;
  in.max_measurements = s.max_measurements;
  in.check_every = s.rse_check_every;
  in.plan = s.plan;
  std::map<std::pair<Mhz, Mhz>, std::vector<double>> by_pair;
  std::map<Mhz, std::vector<double>> by_target;
  std::vector<double> all;
  for (const auto& [pair, ms] : state.pilot) {
    by_pair[{pair.init, pair.target}].push_back(ms);
    by_target[pair.target].push_back(ms);
    all.push_back(ms);
  }
  for (const auto& [pair, xs] : by_pair)
    if (xs.size() >= 2) {
      const Moments m = moments_of(xs);
      in.pilot_cvs.push_back(m.mean > 0 ? m.sd / m.mean : 0.0);
    }
  const double typical = all.empty() ? s.plan.pilot_capture_ms : moments_of(all).mean;
  for (const auto& pair : measured) {
    PlannedPair pp;
    pp.pair = pair;
    const auto it = by_target.find(pair.target);
    pp.latency_ms = it != by_target.end() ? moments_of(it->second).mean : typical;
    const std::int64_t fmas = schedule_->pair_iteration(pair);
    pp.iteration_ns = core_.calibration(pair.target, fmas).pooled.iteration.mean;
    pp.init_iteration_ns = core_.calibration(pair.init, fmas).pooled.iteration.mean;
    pp.wakeup_ms = core_.wakeup_for(pair.init);
    in.pairs.push_back(pp);
  }
  if (state.schedule == Schedule::chained) {
    std::map<std::pair<Mhz, Mhz>, int> walk_of;
    const auto walks = schedule_->groups_after_sample({measured});
    for (std::size_t w = 0; w < walks.size(); ++w)
      for (const ClockPair& pair : walks[w]) walk_of[{pair.init, pair.target}] = static_cast<int>(w);
    for (PlannedPair& pp : in.pairs) pp.walk = walk_of.at({pp.pair.init, pp.pair.target});
  }
  const CostPlan plan = latest::plan_cost(in);
  state.cost.planned_measurements_per_pair = plan.measurements_per_pair;
  state.cost.planned_gpu_seconds = core_.seconds_since_start() + plan.measurements_s;
}

RunState Engine::plan(const std::set<std::pair<Mhz, Mhz>>& done) {
  const std::vector<ClockPair> todo = prepare(done);
  measure_sample(groups_of(todo), todo.size());
  return core_.state();
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

std::vector<std::size_t> Engine::measure_sample(const std::vector<std::vector<ClockPair>>& groups, std::size_t count) {
  // A tenth of the groups (at least 8, at most 32), spread over the list.
  const std::size_t n = groups.size();
  const std::size_t k = std::min(n, std::clamp<std::size_t>((n + 9) / 10, 8, 32));
  std::vector<std::size_t> sample;
  for (std::size_t i = 0; i < k; ++i) sample.push_back(i * n / k);
  std::vector<double> counts;
  std::size_t number = 1;
  for (std::size_t i : sample) {
    for (const PairResult& r : schedule_->measure_group(groups[i], number, count)) {
      ++core_.state().cost.sampled_pairs;
      if (r.status == "measured") counts.push_back(r.stop_count());
    }
    number += groups[i].size();
  }
  std::vector<ClockPair> rest;
  for (std::size_t g = 0; g < n; ++g)
    if (std::find(sample.begin(), sample.end(), g) == sample.end())
      rest.insert(rest.end(), groups[g].begin(), groups[g].end());
  plan_cost(rest, counts);
  core_.state().cost.gpu_seconds = core_.seconds_since_start();
  return sample;
}

std::vector<ClockPair> Engine::prepare(const std::set<std::pair<Mhz, Mhz>>& done) {
  const EngineSettings& s = core_.settings();
  RunState& state = core_.state();
  core_.start(schedule_kind_);
  core_.measure_fma_cost(*std::max_element(s.clocks.begin(), s.clocks.end()));
  // The paper's pilot: three pairs, whose longest latency sets the capture
  // and so the run's iteration; the schedule may add pairs its plan needs.
  std::vector<ClockPair> pilot = pilot_pairs(s.pairs);
  const std::size_t capture_pairs = pilot.size();
  for (const auto& p : schedule_->more_pilot_pairs(s.pairs, pilot)) pilot.push_back(p);
  state.capture_ms = s.plan.capture_ms ? *s.plan.capture_ms : run_pilot(pilot, capture_pairs);
  state.iteration_fmas = core_.iteration_for(state.capture_ms);
  state.calibrations.clear();
  for (Mhz f : s.clocks) state.calibrations.push_back(core_.calibration(f, state.iteration_fmas));
  const std::vector<ClockPair> measured = check_pairs();
  std::vector<ClockPair> todo;
  for (const auto& p : measured)
    if (!done.count({p.init, p.target})) todo.push_back(p);
  schedule_->calibrate_for(todo);
  state.cost.planning_gpu_seconds = core_.seconds_since_start();
  plan_cost(todo, {});
  state.cost.gpu_seconds = core_.seconds_since_start();
  return todo;
}

RunState Engine::run(const std::set<std::pair<Mhz, Mhz>>& done) {
  const std::vector<ClockPair> todo = prepare(done);
  RunState& state = core_.state();
  RunObserver& observer = core_.observer();
  observer.planned(state);
  for (const auto& check : state.checks) {
    if (!check.skip.skipped() || done.count({check.pair.init, check.pair.target})) continue;
    PairResult skipped;
    skipped.pair = check.pair;
    skipped.status = "skipped";
    skipped.reason = check.skip;
    observer.pair_finished(skipped, state);
  }
  // A sample of the pairs first: the plan's measurement counts come from
  // what the RSE stop took on them (manifest: planned_gpu_seconds).
  const auto groups = groups_of(todo);
  const std::vector<std::size_t> sample = measure_sample(groups, todo.size());
  observer.planned(state);  // the plan, now from the sample
  std::size_t number = 1;
  std::vector<std::vector<ClockPair>> rest;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (std::find(sample.begin(), sample.end(), g) != sample.end())
      number += groups[g].size();
    else
      rest.push_back(groups[g]);
  }
  for (const auto& group : schedule_->groups_after_sample(rest)) {
    schedule_->measure_group(group, number, todo.size());
    number += group.size();
  }
  state.cost.gpu_seconds = core_.seconds_since_start();
  observer.finished(state);
  return state;
}

}  // namespace latest
