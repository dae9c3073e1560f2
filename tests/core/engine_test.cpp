// End to end on the simulated GPU: every profile, against the known truth.
#include "core/engine.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "backends/sim/sim_backend.hpp"
#include "core/error.hpp"

namespace latest {
namespace {

struct Recorder : RunObserver {
  std::vector<PairResult> results;
  int progress_calls = 0;
  bool planned_called = false;
  void planned(const RunState&) override { planned_called = true; }
  void pair_finished(const PairResult& r, const RunState&) override { results.push_back(r); }
  void progress(const Progress&) override { ++progress_calls; }
  // Per pair, each window's pooled answer, detected again from what the
  // observer was given.
  std::map<std::pair<Mhz, Mhz>, std::vector<Measurement>> windows_read;
  bool redetect = false;
  void window_read(const WindowRead& w) override {
    if (!redetect) return;
    windows_read[{w.pair.init, w.pair.target}].push_back(detect_switch_pooled(
        w.records, w.request_gpu_ns, w.initial, w.target, w.initial_tol_ns, w.target_tol_ns, PooledSettings{}));
  }
  const PairResult& pair(Mhz a, Mhz b) const {
    for (const auto& r : results)
      if (r.pair == ClockPair{a, b}) return r;
    throw std::runtime_error("pair missing");
  }
};

struct SimRun {
  std::shared_ptr<sim::SimGpu> gpu;
  sim::SimWorkload workload;
  sim::SimClockControl clocks;
  Recorder recorder;
  RunState state;
  SimRun(const std::string& profile, std::uint64_t seed, sim::Injection inj = {})
      : gpu(std::make_shared<sim::SimGpu>(sim::profile_named(profile), seed, inj)), workload(gpu), clocks(gpu, 0) {}
  void run(EngineSettings s, std::function<std::string()> stop = [] { return std::string(); }) {
    Engine engine(workload, clocks, std::move(s), recorder, std::move(stop));
    state = engine.run();
  }
};

// Every ordered pair of `clocks`, `measurements` each, the plan's defaults.
EngineSettings every_pair(std::vector<Mhz> clocks, int measurements) {
  EngineSettings s;
  s.clocks = std::move(clocks);
  s.pairs = ordered_pairs(s.clocks);
  s.min_measurements = s.max_measurements = measurements;
  return s;
}

EngineSettings small(std::vector<Mhz> clocks) {
  EngineSettings s = every_pair(std::move(clocks), 25);
  s.plan.max_recorded_iterations = 16384;
  s.plan.calibration_iterations = 8192;
  return s;
}

// The iteration a pair was measured at: the run's calibration, scaled where
// the engine moved the pair to longer iterations.
double iteration_ms(const RunState& st, const PairResult& r, Mhz mhz) {
  const double scale = r.iteration_fmas > 0 && st.iteration_fmas > 0
                           ? static_cast<double>(r.iteration_fmas) / static_cast<double>(st.iteration_fmas)
                           : 1.0;
  for (const auto& c : st.calibrations)
    if (c.mhz == mhz) return scale * c.pooled.iteration.mean / 1e6;
  throw std::runtime_error("no calibration");
}

// The bounds this project states (docs/methodology.md, "Accuracy"). The
// pooled detector (the default): median |error| within max(0.25 target
// iteration, 1 µs) per pair, p99 within 2 target iterations, and never early
// by more than one target iteration plus that measurement's sync
// uncertainty; the median error of its transition latency within 2
// iterations of the slower clock where the clocks are 5 % or more apart. The paper's detector, on the same records: never early by more
// than the sync uncertainty plus two ticks, never late by more than 4 target
// iterations plus that, median error between 1 and 2.5 target iterations
// (the maximum over SMs of the end of the first clean iteration).
void expect_within_bounds(const RunState& st, const PairResult& r, bool paper_bounds = true, bool pooled_bounds = true,
                          bool close_transitions = false) {
  ASSERT_EQ(r.status, "measured") << to_string(r.reason.code);
  ASSERT_FALSE(r.rows.empty());
  if (!pooled_bounds) return;
  const double it = iteration_ms(st, r, r.pair.target);
  const double slow = std::max(it, iteration_ms(st, r, r.pair.init));
  const double tick_ms = 32e-6;
  std::vector<double> errors, paper_errors, transition_errors;
  for (const auto& row : r.rows) {
    ASSERT_TRUE(row.truth);
    const double sync_ms = row.sync_uncertainty_us / 1e3;
    const double e = row.switching_ms - row.truth->switching_ms;
    EXPECT_GE(e, -(it + sync_ms)) << r.pair.init << "->" << r.pair.target;
    transition_errors.push_back(std::abs(row.transition_ms - row.truth->transition_ms));
    errors.push_back(std::abs(e));
    EXPECT_GT(row.accepted_sms, 0);
    EXPECT_GE(row.call_ms, 0.1);
    EXPECT_GT(row.switching_uncertainty_us, 0);
    if (!paper_bounds || !row.paper_switching_ms) continue;
    const double slack = sync_ms + 2 * tick_ms;
    const double pe = *row.paper_switching_ms - row.truth->switching_ms;
    EXPECT_GE(pe, -slack) << "paper " << r.pair.init << "->" << r.pair.target;
    EXPECT_LE(pe, 4 * it + slack) << "paper " << r.pair.init << "->" << r.pair.target;
    paper_errors.push_back(pe / it);
  }
  const Summary pooled = summarise(errors);
  // Transition: bounded where the clocks are at least 5 % apart, and on
  // closer pairs where asked (`close_transitions`): at the iteration the
  // tool chooses for them it holds there too (EveryRampShape), at a fixed
  // one a linear ramp's start can be too slight to date (rtx6000 seed 53
  // 1950->1980 at 2048 FMAs: per-pair median 1435 slower iterations off;
  // docs/methodology.md).
  const bool wide = std::abs(r.pair.init - r.pair.target) >= 0.05 * std::max(r.pair.init, r.pair.target);
  if (wide || close_transitions) {
    EXPECT_LE(summarise(transition_errors).median, 2 * slow) << r.pair.init << "->" << r.pair.target;
  }
  EXPECT_LE(pooled.median, 1.5 * std::max(0.25 * it, 1e-3)) << r.pair.init << "->" << r.pair.target;
  EXPECT_LE(pooled.p99, 2 * it) << r.pair.init << "->" << r.pair.target;
  if (!paper_bounds) return;  // close pairs: the paper's detector fails there (docs/methodology.md)
  ASSERT_GE(paper_errors.size(), r.rows.size() / 2) << "the paper's detector ran on the same records";
  const Summary paper = summarise(paper_errors);
  EXPECT_GE(paper.median, 1.0);
  EXPECT_LE(paper.median, 2.5);
}

class EveryProfile : public ::testing::TestWithParam<std::pair<std::string, std::vector<Mhz>>> {};

TEST_P(EveryProfile, MeasuresTheTruthWithinTheStatedBounds) {
  const auto& [profile, clocks] = GetParam();
  SimRun run(profile, 11);
  run.run(small(clocks));
  ASSERT_EQ(run.recorder.results.size(), 2u);
  for (const auto& r : run.recorder.results) expect_within_bounds(run.state, r);
  EXPECT_TRUE(run.recorder.planned_called);
  EXPECT_GT(run.state.capture_ms, 0);
  EXPECT_EQ(run.state.calibrations.size(), 2u);
  for (const auto& c : run.state.calibrations) ASSERT_TRUE(c.wakeup_ms) << c.mhz;
}

INSTANTIATE_TEST_SUITE_P(Sim, EveryProfile,
                         ::testing::Values(std::make_pair(std::string("h200"), std::vector<Mhz>{1980, 990}),
                                           std::make_pair(std::string("gh200"), std::vector<Mhz>{1500, 900}),
                                           std::make_pair(std::string("a100"), std::vector<Mhz>{1410, 705}),
                                           std::make_pair(std::string("rtx6000"), std::vector<Mhz>{2100, 1050})),
                         [](const auto& info) { return info.param.first; });

// The paper's schedule (one switch per launch) stays, and meets the same
// bounds on the same card; the chained one spends a fraction of its GPU time.
TEST(Engine, BothSchedulesMeetTheBoundsAndChainedCostsFarLess) {
  std::map<Schedule, double> gpu_seconds;
  for (Schedule schedule : {Schedule::paper, Schedule::chained}) {
    SimRun run("h200", 12);
    EngineSettings s = small({1980, 1500, 990});
    s.schedule = schedule;
    run.run(s);
    EXPECT_EQ(run.state.schedule, schedule);
    ASSERT_EQ(run.recorder.results.size(), 6u);
    for (const auto& r : run.recorder.results) {
      SCOPED_TRACE(to_string(schedule));
      expect_within_bounds(run.state, r);
      EXPECT_EQ(r.windows, 25) << "no retries expected on this card";
    }
    // The pairs' GPU time: phase 1 and the pilot are a fixed cost here.
    for (const auto& r : run.recorder.results) gpu_seconds[schedule] += r.gpu_seconds;
  }
  EXPECT_LT(gpu_seconds[Schedule::chained], gpu_seconds[Schedule::paper] / 5)
      << gpu_seconds[Schedule::chained] << " vs " << gpu_seconds[Schedule::paper];
}

// The plan (phase 1, the pilot, a sample of pairs measured to their stop,
// then the model of planner.hpp) against what the whole run cost, where
// most pairs are extrapolated: 8 clocks are 28 groups (both directions of a
// pair of clocks), of which the sample measures 8, so at least 70 % of the
// pairs are planned from the model alone. The RSE stop decides each pair's
// count, so slow pairs with side clusters must be foreseen from the sample.
// The bound is what the plan achieves today (each case prints its figures:
// h200 plans low, its sample's pairs taking fewer measurements than the
// run's); the 25 % it aims for is the cost issue's to reach. The cost model with the counts known
// is checked by hand in planner_test.cpp.
class PlanOfUnmeasuredPairs : public ::testing::TestWithParam<std::tuple<const char*, std::uint64_t>> {};

TEST_P(PlanOfUnmeasuredPairs, IsWithinFortyPercentOfTheRun) {
  const auto& [profile, seed] = GetParam();
  std::vector<Mhz> clocks = sim::profile_named(profile).clocks;
  // Eight clocks spread over the card's range.
  std::vector<Mhz> eight;
  for (std::size_t k = 0; k < 8; ++k) eight.push_back(clocks[k * (clocks.size() - 1) / 7]);
  SimRun run(profile, seed);
  EngineSettings s;
  s.clocks = eight;
  s.pairs = ordered_pairs(eight);
  s.plan.max_recorded_iterations = 16384;
  s.plan.calibration_iterations = 8192;
  run.run(s);
  const RunCost& cost = run.state.cost;
  const double sampled_share = static_cast<double>(cost.sampled_pairs) / static_cast<double>(s.pairs.size());
  double pairs_s = 0, n = 0, pairs = 0;
  for (const auto& r : run.recorder.results) {
    pairs_s += r.gpu_seconds;
    if (r.status != "measured") continue;
    n += static_cast<double>(r.rows.size());
    ++pairs;
  }
  std::printf("%-8s seed %llu: %d of %zu pairs sampled; ran %.1f GPU-s, planned %.1f (%+.0f %%; %.1f vs %.1f "
              "measurements a pair)\n",
              profile, static_cast<unsigned long long>(seed), cost.sampled_pairs, s.pairs.size(), cost.gpu_seconds,
              cost.planned_gpu_seconds, 100 * (cost.planned_gpu_seconds / cost.gpu_seconds - 1),
              cost.planned_measurements_per_pair, n / pairs);
  EXPECT_LE(sampled_share, 0.3) << "most of the plan is extrapolated";
  EXPECT_NEAR(cost.planned_gpu_seconds, cost.gpu_seconds, 0.4 * cost.gpu_seconds);
  EXPECT_LE(pairs_s, cost.gpu_seconds) << "each pair's share is part of the whole";
  EXPECT_GE(pairs_s + cost.planning_gpu_seconds, 0.98 * cost.gpu_seconds) << "every second is someone's";
}

INSTANTIATE_TEST_SUITE_P(Sim, PlanOfUnmeasuredPairs,
                         ::testing::Values(std::make_tuple("h200", 1), std::make_tuple("a100", 3)));

// In the plan's sample both directions of a pair of clocks share a launch,
// so at most two pairs are in flight: a kill loses at most those. (Six
// pairs of clocks are all sample; walks, below.)
struct InFlight : RunObserver {
  std::set<std::pair<Mhz, Mhz>> open;
  std::size_t most = 0;
  int finished = 0;
  void pair_started(ClockPair p, std::size_t, std::size_t) override {
    open.insert({p.init, p.target});
    most = std::max(most, open.size());
  }
  void pair_finished(const PairResult& r, const RunState&) override {
    open.erase({r.pair.init, r.pair.target});
    ++finished;
  }
};

TEST(Engine, ChainedKeepsAtMostTwoPairsInFlight) {
  auto gpu = std::make_shared<sim::SimGpu>(sim::profile_named("h200"), 21);
  sim::SimWorkload workload(gpu);
  sim::SimClockControl clocks(gpu, 0);
  EngineSettings s = small({1980, 1500, 990, 600});
  InFlight seen;
  Engine engine(workload, clocks, s, seen);
  engine.run();
  EXPECT_EQ(seen.finished, 12);
  EXPECT_EQ(seen.most, 2u);
  EXPECT_TRUE(seen.open.empty());
}

// A direction whose stop is met measures on while the other still needs
// its returns: on a pair where one direction has latency clusters (and so
// needs many more measurements), no request is an unrecorded transit, and
// the plan's sample counts what the stop took, not the extra ones.
TEST(Engine, ChainedKeepsEveryReturnAsAMeasurement) {
  for (std::uint64_t seed : {77, 78}) {
    SimRun run("h200", seed);
    EngineSettings s;
    s.clocks = {1800, 1080};
    s.pairs = ordered_pairs(s.clocks);
    run.run(s);
    ASSERT_EQ(run.recorder.results.size(), 2u);
    const PairResult& a = run.recorder.results[0];
    const PairResult& b = run.recorder.results[1];
    std::printf("seed %llu: %d->%d n %zu (stop at %d), %d->%d n %zu (stop at %d), retries %d %d\n",
                static_cast<unsigned long long>(seed), a.pair.init, a.pair.target, a.rows.size(),
                a.measurements_at_stop, b.pair.init, b.pair.target, b.rows.size(), b.measurements_at_stop,
                a.capture_retries, b.capture_retries);
    const auto [fewer, more] = std::minmax({a.measurements_at_stop, b.measurements_at_stop});
    EXPECT_GE(more, 4 * fewer) << "seed " << seed << ": the clustered direction needs far more";
    for (const PairResult* r : {&a, &b}) {
      SCOPED_TRACE("seed " + std::to_string(seed));
      EXPECT_EQ(r->status, "measured");
      EXPECT_EQ(r->transits, 0);
      EXPECT_GE(r->measurements_at_stop, s.min_measurements);
      EXPECT_EQ(r->measurements_at_stop % s.rse_check_every, 0);
      // Both directions alternate to the end: within one of each other.
      EXPECT_NEAR(static_cast<double>(r->rows.size()), static_cast<double>(more), 1.0);
      expect_within_bounds(run.state, *r, false);
    }
    // One group, so the plan's sample is the run: its count per pair is
    // the mean of the two stops, not of the rows kept.
    EXPECT_DOUBLE_EQ(run.state.cost.planned_measurements_per_pair, (fewer + more) / 2.0) << "seed " << seed;
  }
}

// Past the plan's sample, the chained schedule walks the pairs of several
// clocks in one launch and leaves each clock by another pair than the one
// it came in by, so a direction whose stop is met is measured on only where
// a clock's arrivals outnumber its departures. Alternating the two
// directions of each pair of clocks would, with the same stops, measure on
// |stop A->B - stop B->A| times per pair of clocks: the walks measure past
// the stops no more than that (on this small run, where most of it is one
// heavy direction whose target every walk must leave again, barely less;
// the 380-pair benchmark in docs/benchmarks.md shows the gain), keep at
// most 2 x block^2 pairs in flight, and keep the bounds.
struct Walks : RunObserver {
  int planned_calls = 0;
  std::vector<PairResult> walked;
  std::set<std::pair<Mhz, Mhz>> open;
  std::size_t most = 0;
  void planned(const RunState&) override { ++planned_calls; }
  void pair_started(ClockPair p, std::size_t, std::size_t) override {
    open.insert({p.init, p.target});
    most = std::max(most, open.size());
  }
  void pair_finished(const PairResult& r, const RunState&) override {
    open.erase({r.pair.init, r.pair.target});
    if (planned_calls >= 2) walked.push_back(r);  // the second plan comes from the sample
  }
};

class ChainedWalks : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(ChainedWalks, MeasureLessPastTheStops) {
  const std::uint64_t seed = GetParam();
  auto gpu = std::make_shared<sim::SimGpu>(sim::profile_named("h200"), seed);
  sim::SimWorkload workload(gpu);
  sim::SimClockControl clocks(gpu, 0);
  EngineSettings s;
  s.clocks = {1980, 1710, 1440, 1170, 900, 600};
  s.pairs = ordered_pairs(s.clocks);
  s.walk_block_clocks = 3;
  s.plan.calibration_iterations = 8192;  // phase 1 is not what this test is about
  Walks seen;
  Engine engine(workload, clocks, s, seen);
  const RunState st = engine.run();
  ASSERT_EQ(seen.walked.size(), 14u) << "15 pairs of clocks, 8 of them the sample";
  EXPECT_LE(seen.most, 18u);
  EXPECT_GT(seen.most, 2u) << "a walk holds more than one pair of clocks";
  int past = 0, alternating = 0, transits = 0;
  for (const PairResult& r : seen.walked) {
    expect_within_bounds(st, r, false);
    past += static_cast<int>(r.rows.size()) - r.stop_count();
    transits += r.transits;
    for (const PairResult& back : seen.walked)
      if (back.pair == ClockPair{r.pair.target, r.pair.init} && r.pair.init > r.pair.target)
        alternating += std::abs(r.stop_count() - back.stop_count());
  }
  std::printf("seed %llu: %zu pairs in flight at most; measured past the stops %d (alternating: %d); transits %d\n",
              static_cast<unsigned long long>(seed), seen.most, past, alternating, transits);
  ASSERT_GE(alternating, 50) << "the card needs some directions measured far more than their opposites";
  EXPECT_LE(past, alternating);
  EXPECT_LE(transits, 4) << "one to reach each part of a walk its pairs do not join";
}

INSTANTIATE_TEST_SUITE_P(Sim, ChainedWalks, ::testing::Values(31, 32));

// A capture far shorter than any switch, fixed by the user: every pair of a
// walk escalates its own capture and so its iteration (10 ms at 256 FMAs,
// then 100 ms at 4096), and keeps it (the user's capture is not reset), so
// the walk's launches change iteration back and forth. Each starts with its
// pairs' clocks calibrated at it: no calibration runs while a launch streams
// (the simulator refuses one, as phase 1 needs the card to itself). This
// run does not reach the case of a second pair joining a coarser launch at
// an iteration its clocks lack (the sample calibrated them all); the
// schedule restarts the launch there too.
TEST(Engine, ChainedWalksCalibrateBeforeEachLaunchTheyEscalateTo) {
  SimRun run("h200", 33);
  EngineSettings s = small({1980, 1710, 1440, 1170, 900, 600});
  s.min_measurements = s.max_measurements = 5;
  s.plan.capture_ms = 1;
  s.walk_block_clocks = 3;
  ASSERT_NO_THROW(run.run(s));
  ASSERT_EQ(run.recorder.results.size(), 30u);
  int retried = 0;
  for (const auto& r : run.recorder.results) {
    SCOPED_TRACE(std::to_string(r.pair.init) + "->" + std::to_string(r.pair.target));
    EXPECT_EQ(r.status, "measured") << to_string(r.reason.code);
    if (r.capture_retries > 0) ++retried;
    if (r.status == "measured") expect_within_bounds(run.state, r, false);
  }
  EXPECT_GE(retried, 20) << "the 1 ms capture holds no switch";
}

// A launch of many seconds (800 requests): every request is mapped with syncs taken right
// before it and at its detection, so the simulator's wandering drift (up to
// 10 ppm, wandering by 2 ppm a minute) adds nothing, late in the launch as
// early. Interpolating between the launch's own ends would not do: the
// same card's true offset bends away from that line by microseconds.
TEST(Engine, ALongLaunchKeepsEveryRequestOnTheGpuAxis) {
  SimRun run("h200", 23);
  EngineSettings s = small({1980, 990});
  s.min_measurements = s.max_measurements = 400;
  run.run(s);
  ASSERT_EQ(run.state.settle_ms.size(), 1u) << "one launch for both directions";
  for (const auto& r : run.recorder.results) {
    ASSERT_EQ(r.rows.size(), 400u);
    expect_within_bounds(run.state, r, false);
    // The last hundred, seconds into the launch, as close as the first.
    std::vector<double> first, last;
    for (std::size_t i = 0; i < 100; ++i) {
      first.push_back(std::abs(r.rows[i].switching_ms - r.rows[i].truth->switching_ms) * 1e3);
      last.push_back(std::abs(r.rows[300 + i].switching_ms - r.rows[300 + i].truth->switching_ms) * 1e3);
    }
    EXPECT_LT(summarise(last).max, 1.5) << "us";
    EXPECT_LT(summarise(last).median, summarise(first).median + 0.3) << "us";
  }
  // What interpolating over half a minute of launch would make of the
  // time between, with perfect syncs at its ends: off by more than the
  // 0.5 us the schedule allows.
  const Nanos from = run.gpu->now(), to = from + 30'000'000'000LL;
  const TimerSync a{run.gpu->true_gpu_time(from) - from, 0, 0, from};
  const TimerSync b{run.gpu->true_gpu_time(to) - to, 0, 0, to};
  double worst_ns = 0;
  for (int k = 1; k < 30; ++k) {
    const Nanos at = from + k * 1'000'000'000LL;
    worst_ns = std::max(worst_ns, std::abs(static_cast<double>(to_gpu_between(a, b, at) - run.gpu->true_gpu_time(at))));
  }
  EXPECT_GT(worst_ns, 500) << "the drift model must make the test able to fail";
}

// Coarse iterations (slow pairs and long routes get them): a ramp level can
// last only a few iterations, or less than one. The SMs' hinges, fitted over
// whole iterations, then saw the steeper step before it and dated arrival
// 0.6–1.6 target iterations early at 16384 FMAs (docs/methodology.md);
// the pooled hinges on the time axis must not. Both directions of a wide
// pair, every shape with levels, two lengths; the paper's detector is not
// held to its bounds here.
TEST(Engine, CoarseIterationsMeetThePooledBounds) {
  using Shape = sim::RampShape;
  const std::vector<std::tuple<std::int64_t, Shape, std::uint64_t>> cases = {
      {16384, Shape::four_steps, 3}, {16384, Shape::linear, 5},     {16384, Shape::overshoot, 7},
      {16384, Shape::stall, 9},      {65536, Shape::four_steps, 11}, {65536, Shape::linear, 13},
      {65536, Shape::overshoot, 15}, {65536, Shape::overshoot, 16}};
  for (const auto& [fmas, shape, seed] : cases) {
    SCOPED_TRACE(std::to_string(fmas) + " FMAs, " + sim::to_string(shape) + ", seed " + std::to_string(seed));
    sim::Injection inj;
    inj.ramp_shape = shape;
    SimRun run("h200", seed, inj);
    EngineSettings s = small({1980, 990});
    s.plan.iteration_fmas = fmas;
    s.plan.max_recorded_iterations = EngineSettings{}.plan.max_recorded_iterations;
    s.min_measurements = s.max_measurements = 12;
    run.run(s);
    ASSERT_EQ(run.recorder.results.size(), 2u);
    // A known limit: overshoots at 65536 FMAs that the detector does not flag
    // (the ones past the target are retried as misfits) come out up to two
    // target iterations early, half of one at the median (docs/methodology.md,
    // "Accuracy").
    const bool known_limit = fmas == 65536 && shape == Shape::overshoot;
    for (const auto& r : run.recorder.results) {
      expect_within_bounds(run.state, r, false, !known_limit);
      if (!known_limit) continue;
      const double it = iteration_ms(run.state, r, r.pair.target);
      std::vector<double> errors;
      for (const auto& row : r.rows) {
        if (row.set_aside) continue;
        const double e = row.switching_ms - row.truth->switching_ms;
        EXPECT_GE(e, -(2 * it + row.sync_uncertainty_us / 1e3));
        errors.push_back(std::abs(e));
      }
      EXPECT_LE(summarise(errors).median, 0.6 * it);
    }
  }
}

// Regression: the paper's detector took the simulated ramp's last step for
// arrival and reported 1980<->1890 about 300 µs early with an RSE under 1 %.
TEST(Engine, ClosePairIsMeasuredNotReportedEarly) {
  for (std::optional<std::int64_t> fmas : {std::optional<std::int64_t>(1024), std::optional<std::int64_t>()}) {
    SimRun run("h200", 29);
    EngineSettings s = small({1980, 1890});
    s.plan.iteration_fmas = fmas;
    if (fmas) s.plan.capture_ms = 70;
    run.run(s);
    ASSERT_EQ(run.recorder.results.size(), 2u);
    for (const auto& r : run.recorder.results) {
      expect_within_bounds(run.state, r, false);
      for (const auto& row : r.rows) {
        // At 1024 FMAs (the case) the last step of the ramp lies
        // within the paper's tolerance.
        if (row.paper_switching_ms && fmas) {
          EXPECT_LT(*row.paper_switching_ms - row.truth->switching_ms, -0.1) << "the paper's detector is early here";
        }
      }
    }
  }
}

// Two clock steps apart with a last ramp level within a boundary's noise of
// the target (linear ramps, overshoots, slow approaches), no SM can place the
// change at 1024 FMAs and every window was refused: the pairs were skipped
// ("5 measurements failed after 5 tries each"), and later moved to a coarser
// iteration after a measurement was refused on every try. The gate now
// chooses the coarser iteration before the first window
// (separable_iteration_fmas: 32768 FMAs here), both directions are measured,
// and at most 2 % of the measurements miss the truth by more than three
// times their stated uncertainty (printed: none of the 300 since the
// arrival's tail hinge, 608ae4d; 2 before it, both overshoots, seed 3:
// 21.2 us against 19.4, 42.5 against 21.2).
class ClosePairWithSlightRamps : public ::testing::TestWithParam<sim::RampShape> {};

TEST_P(ClosePairWithSlightRamps, IsMeasuredAtACoarserIteration) {
  int beyond_uncertainty = 0, measurements = 0;
  const sim::RampShape shape = GetParam();
  for (const std::uint64_t seed : {3, 4}) {
      SCOPED_TRACE(std::string(sim::to_string(shape)) + " seed " + std::to_string(seed));
      sim::Injection inj;
      inj.ramp_shape = shape;
      SimRun run("h200", seed, inj);
      const EngineSettings s = every_pair({1980, 1950}, 25);
      run.run(s);
      ASSERT_EQ(run.recorder.results.size(), 2u);
      for (const auto& r : run.recorder.results) {
        EXPECT_EQ(r.status, "measured") << r.pair.init << "->" << r.pair.target << ": " << to_string(r.reason.code);
        EXPECT_EQ(r.kept(), 25);
        EXPECT_EQ(r.iteration_fmas, 32768) << "the gate's iteration for 1980 <-> 1950";
        EXPECT_EQ(r.iteration_coarsenings, 0) << "moved before its first window, not after refusals";
        const double it_us = iteration_ms(run.state, r, r.pair.target) * 1e3;
        ASSERT_GT(it_us, 0);
        std::vector<double> abs_iterations, abs_us;
        double earliest = 0;
        for (const auto& row : r.rows) {
          const double e_us = (row.switching_ms - row.truth->switching_ms) * 1e3;
          abs_iterations.push_back(std::abs(e_us) / it_us);
          abs_us.push_back(std::abs(e_us));
          earliest = std::min(earliest, e_us / it_us);
          beyond_uncertainty += std::abs(e_us) > 3 * std::hypot(row.switching_uncertainty_us, row.sync_uncertainty_us);
          ++measurements;
          EXPECT_GE(e_us, -it_us - row.sync_uncertainty_us);  // never early beyond one target iteration
        }
        std::printf("%-13s seed %llu %d->%d at %lld FMAs: median |error| %.2f us, earliest %.2f, largest |error| %.2f "
                    "target iterations\n",
                    sim::to_string(shape), static_cast<unsigned long long>(seed), r.pair.init, r.pair.target,
                    static_cast<long long>(r.iteration_fmas), summarise(abs_us).median, earliest,
                    *std::max_element(abs_iterations.begin(), abs_iterations.end()));
        EXPECT_LE(summarise(abs_iterations).p99, 2.0);
      }
    }
  std::printf("beyond three times the stated uncertainty: %d of %d\n", beyond_uncertainty, measurements);
  EXPECT_LE(beyond_uncertainty, 0.02 * measurements);
}

INSTANTIATE_TEST_SUITE_P(Sim, ClosePairWithSlightRamps,
                         ::testing::Values(sim::RampShape::linear, sim::RampShape::overshoot,
                                           sim::RampShape::slow_approach),
                         [](const auto& info) { return std::string(sim::to_string(info.param)) == "slow-approach"
                                                           ? std::string("slow_approach")
                                                           : std::string(sim::to_string(info.param)); });

// The same pairs at an iteration the user fixed: it is never coarsened, so
// the pair is skipped, and its reason says how the tries failed and at
// which iteration (the CLI then names --iteration-fmas as the way out); the
// run keeps the iteration the pooled detector needed for each pair.
TEST(Engine, ClosePairAtAFixedIterationIsSkippedSayingWhy) {
  sim::Injection inj;
  inj.ramp_shape = sim::RampShape::slow_approach;
  SimRun run("h200", 3, inj);
  EngineSettings s;
  s.clocks = {1980, 1950};
  s.pairs = ordered_pairs(s.clocks);
  s.plan.iteration_fmas = 1024;
  s.max_attempts = s.max_failed_measurements = 2;
  run.run(s);
  ASSERT_EQ(run.recorder.results.size(), 2u);
  for (const auto& r : run.recorder.results) {
    SCOPED_TRACE(std::to_string(r.pair.init) + "->" + std::to_string(r.pair.target));
    EXPECT_EQ(r.status, "skipped");
    EXPECT_EQ(r.reason.code, SkipReason::Code::measurements_failed);
    EXPECT_EQ(r.reason.failure, MeasurementOutcome::not_confirmed);
    EXPECT_EQ(r.reason.fmas, 1024);
    EXPECT_TRUE(r.reason.fmas_fixed);
    EXPECT_EQ(r.iteration_coarsenings, 0);
  }
  // What the tool would have chosen, kept for the CLI's note (finer_than_needed).
  ASSERT_EQ(run.state.checks.size(), 2u);
  for (const PairCheck& c : run.state.checks) EXPECT_EQ(c.separable_fmas, 32768);
}

// The seeds a test runs, or those the environment variable `name` lists
// ("53 61"), to see its figures on others (docs/methodology.md quotes some).
std::vector<std::uint64_t> seeds_or(const char* name, std::vector<std::uint64_t> seeds) {
  if (const char* listed = std::getenv(name)) {
    std::vector<std::uint64_t> chosen;
    std::istringstream in(listed);
    for (std::uint64_t seed; in >> seed;) chosen.push_back(seed);
    if (!chosen.empty()) return chosen;
  }
  return seeds;
}

// The gate reads each clock's boundary noise from its calibration, and a
// slow wander common to every SM's timer (periods of 0.5-8 ms) hardly moves
// that noise while it tilts every line the pooled detector fits. At 100 ns
// RMS (the largest episode an H200 showed swung ~160 ns over ~6 ms, some
// 57 ns RMS: round 13, call 7 of the former hardware log (git history)) the gate's 8192
// FMAs for 1980 <-> 1890 are refused as not confirmed on every try of a
// measurement in one direction; the rest of that pair moves to four times
// the iteration (Engine::coarsen_iteration), counts it, and is measured
// there within the pooled bounds. Every measurement of either direction
// is within two target iterations and three times its stated uncertainty
// (with the sync's): before the detector measured the wander, three of
// seed 5's 20 windows came out 6.4 to 10.6 ms late with ~0.6 ms stated
// (docs/methodology.md, "A coarser iteration where every window is
// refused"). LATEST_COARSEN_SEEDS and LATEST_COARSEN_WANDER_NS print others.
// Which seeds coarsen moves with the detector: since the change-share rule
// (PooledSettings::relevant_change_share) seed 6, which did, is measured at
// 8192 FMAs (worst 0.99 target iterations late, 59 us stated) and seed 8,
// which did not, coarsens; seeds 9 and 10 coarsen with neither.
class Coarsening : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(Coarsening, PairRefusedOnEveryTryMovesToACoarserIteration) {
  const char* wander = std::getenv("LATEST_COARSEN_WANDER_NS");
  const std::uint64_t seed = GetParam();
  sim::Injection inj;
  inj.boundary_wander_ns = wander ? std::atof(wander) : 100;
  SimRun run("h200", seed, inj);
  const EngineSettings s = every_pair({1980, 1890}, 10);
  run.run(s);
  ASSERT_EQ(run.recorder.results.size(), 2u);
  ASSERT_EQ(run.state.checks.size(), 2u);
  int coarsened = 0;
  for (const auto& r : run.recorder.results) {
    SCOPED_TRACE(std::to_string(r.pair.init) + "->" + std::to_string(r.pair.target));
    const auto check = std::find_if(run.state.checks.begin(), run.state.checks.end(),
                                    [&](const PairCheck& c) { return c.pair == r.pair; });
    ASSERT_NE(check, run.state.checks.end());
    EXPECT_EQ(check->separable_fmas, 8192);
    // The direction left at 8192 FMAs is not held to the per-pair median
    // under this wander (seed 6 1980->1890 once: 8.7 us against 8.4), as
    // the wander test holds no close pair to it.
    expect_within_bounds(run.state, r, false, r.iteration_coarsenings > 0);
    EXPECT_EQ(r.rows.size(), 10u);
    const double it_us = iteration_ms(run.state, r, r.pair.target) * 1e3;
    const auto error_us = [](const MeasurementRow& row) { return (row.switching_ms - row.truth->switching_ms) * 1e3; };
    for (const auto& row : r.rows) {
      EXPECT_LE(std::abs(error_us(row)), 2 * it_us);
      EXPECT_LE(std::abs(error_us(row)), 3 * std::hypot(row.switching_uncertainty_us, row.sync_uncertainty_us));
    }
    const auto worst = std::max_element(r.rows.begin(), r.rows.end(), [&](const auto& a, const auto& b) {
      return std::abs(error_us(a)) < std::abs(error_us(b));
    });
    if (worst != r.rows.end()) {
      const double e_us = error_us(*worst);
      std::printf("coarsening seed %d, %.0f ns wander, %d->%d: %lld FMAs, %d coarsenings; worst error %.2f us "
                  "(%.2f target iterations), stated uncertainty %.2f us\n",
                  static_cast<int>(seed), inj.boundary_wander_ns, r.pair.init, r.pair.target,
                  static_cast<long long>(r.iteration_fmas), r.iteration_coarsenings, e_us, e_us / it_us,
                  worst->switching_uncertainty_us);
    }
    if (r.iteration_coarsenings == 0) continue;
    ++coarsened;
    EXPECT_EQ(r.iteration_coarsenings, 1);
    EXPECT_EQ(r.iteration_fmas, 4 * check->separable_fmas);
    EXPECT_GE(r.failed_windows(), s.max_attempts) << "one measurement refused on every try";
    EXPECT_GE(r.failed.count(to_string(MeasurementOutcome::not_confirmed)), 1u) << "the last try not confirmed";
  }
  EXPECT_GE(coarsened, 1);
}

INSTANTIATE_TEST_SUITE_P(Sim, Coarsening, ::testing::ValuesIn(seeds_or("LATEST_COARSEN_SEEDS", {5, 7, 8})));

// Pairs drawn at random over each profile's whole clock list, close ones
// included, several seeds: the pooled detector's bounds hold for every one.
TEST(Engine, RandomPairsOnEveryProfileMeetThePooledBounds) {
  for (const std::string profile : {"h200", "a100", "rtx6000"}) {
    for (std::uint64_t seed : {101, 202}) {
      const auto& clocks = sim::profile_named(profile).clocks;
      std::mt19937_64 rng(seed);
      std::uniform_int_distribution<std::size_t> pick(0, clocks.size() - 1);
      const std::size_t a = pick(rng);
      std::size_t b = pick(rng);
      if (b == a) b = (a + clocks.size() / 2) % clocks.size();
      // Two steps apart, beside a wide pair.
      const std::size_t c = a >= 2 ? a - 2 : a + 2;
      SimRun run(profile, seed);
      EngineSettings s = small({clocks[a], clocks[b]});
      s.clocks.push_back(clocks[c]);
      s.pairs.push_back({clocks[a], clocks[c]});
      s.pairs.push_back({clocks[c], clocks[a]});
      s.plan.iteration_fmas = 2048;  // neighbours of a close pair must be separable
      s.plan.capture_ms = 100;
      s.min_measurements = s.max_measurements = 12;
      run.run(s);
      for (const auto& r : run.recorder.results) {
        if (r.status == "skipped") {
          EXPECT_EQ(r.reason.code, SkipReason::Code::bands_overlap) << profile << " " << r.pair.init << "->" << r.pair.target;
          continue;
        }
        SCOPED_TRACE(profile + " seed " + std::to_string(seed));
        expect_within_bounds(run.state, r, false);
      }
    }
  }
}

// Some H200s' SMs share a wander of their boundaries over milliseconds, no
// clock change (round 12 of the former hardware log (git history): 15-25 ns within a
// millisecond); the pooled detector must not take it for one. At 4096 FMAs
// a line over 200 iterations spans milliseconds. A wide pair and one two
// steps apart, both ways, three seeds; at most a quarter of the windows
// refused (before the fine scan's reference followed the change, up to 14
// of 26 were, and some came out up to 199 µs late). The wide pair keeps every stated
// bound. The close pair, whose last ramp step is a quarter of 30 MHz, keeps
// "never early" and the p99, but its per-pair median |error| reached 3.6 µs
// against 3.3 in one of six (docs/methodology.md, "Pooled detector").
// Seeds 33 and 45: where the wander's own hinges gain over 2 noises² per
// SM, it marched the arrival 94 and 152 µs late while the wander's bar was
// capped at 8 per SM. LATEST_WANDER_SEEDS runs others (two of seeds 6-45
// still fail, early: docs/methodology.md).
TEST(Engine, WanderingBoundariesAreNoChange) {
  for (std::uint64_t seed : seeds_or("LATEST_WANDER_SEEDS", {3, 4, 5, 33, 45})) {
    sim::Injection inj;
    inj.boundary_wander_ns = 12;
    SimRun run("h200", seed, inj);
    EngineSettings s = small({1980, 1950, 990});
    s.pairs = {{1980, 990}, {990, 1980}, {1980, 1950}, {1950, 1980}};
    s.plan.iteration_fmas = 4096;
    s.min_measurements = s.max_measurements = 12;
    run.run(s);
    ASSERT_EQ(run.recorder.results.size(), 4u);
    for (const auto& r : run.recorder.results) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " " + std::to_string(r.pair.init) + "->" +
                   std::to_string(r.pair.target));
      const int refused = r.failed_windows();
      EXPECT_LE(refused, r.windows / 4);
      std::vector<double> errors_us, abs_us;
      for (const auto& row : r.rows) {
        errors_us.push_back((row.switching_ms - row.truth->switching_ms) * 1e3);
        abs_us.push_back(std::abs(errors_us.back()));
      }
      if (!errors_us.empty()) {
        const Summary e = summarise(errors_us);
        std::printf("wander seed %d %d->%d: error min %.2f max %.2f us, median |error| %.2f us; %d of %d windows refused\n",
                    static_cast<int>(seed), r.pair.init, r.pair.target, e.min, e.max, summarise(abs_us).median, refused,
                    r.windows);
      }
      const bool close = std::abs(r.pair.init - r.pair.target) < 100;
      expect_within_bounds(run.state, r, false, !close);
      if (!close) continue;
      const double it = iteration_ms(run.state, r, r.pair.target);
      std::vector<double> abs_errors;
      for (const auto& row : r.rows) {
        const double e = row.switching_ms - row.truth->switching_ms;
        EXPECT_GE(e, -(it + row.sync_uncertainty_us / 1e3));
        abs_errors.push_back(std::abs(e));
      }
      EXPECT_LE(summarise(abs_errors).p99, 2 * it);
    }
  }
}

// An observer sees every window with exactly what the detectors were given:
// detecting it again gives each pair's measurements, in order, bit for bit.
TEST(Engine, ObserversReadEachWindowAsTheDetectorsDid) {
  SimRun run("h200", 11);
  run.recorder.redetect = true;
  EngineSettings s = small({1980, 1500, 990});
  run.run(s);
  ASSERT_EQ(run.recorder.results.size(), 6u);
  for (const auto& r : run.recorder.results) {
    SCOPED_TRACE(std::to_string(r.pair.init) + "->" + std::to_string(r.pair.target));
    const auto& read = run.recorder.windows_read[{r.pair.init, r.pair.target}];
    EXPECT_GE(read.size(), static_cast<std::size_t>(r.windows));
    std::vector<double> accepted;
    for (const Measurement& m : read)
      if (m.outcome == MeasurementOutcome::accepted) accepted.push_back(m.switching_ms);
    ASSERT_FALSE(r.rows.empty());
    ASSERT_GE(accepted.size(), r.rows.size());
    // The rows are among the accepted windows, in order: the pilot's come
    // before them, and a request's slice can be read again, longer, before
    // the engine keeps it (docs/methodology.md, "Schedules").
    auto next = accepted.begin();
    for (std::size_t k = 0; k < r.rows.size(); ++k) {
      next = std::find(next, accepted.end(), r.rows[k].switching_ms);
      ASSERT_NE(next, accepted.end()) << "row " << k << " was not read: " << r.rows[k].switching_ms;
      ++next;
    }
  }
}

class EveryRampShape : public ::testing::TestWithParam<sim::RampShape> {};

// Every ramp shape of the simulator, forced on every switch, on wide,
// two-step and random pairs, several seeds and profiles, at the iteration
// the tool chooses: each pair within the stated bounds, its transition too
// (close pairs included), and where the detector is unsure it says so.
// On twelve seeds (LATEST_RAMP_SEEDS="31 47 53 61 71 83" and "97 101 113
// 127 131 137") one linear pair's median and the stall's uncertainty on
// the first set still miss (docs/methodology.md, "Simulator"). At a fixed 2048 FMAs linear
// ramps two steps apart were up to 2.13 target iterations early: the
// iteration the tool chooses for such pairs is what makes them exact
// (separable_iteration_fmas).
TEST_P(EveryRampShape, MeetsItsBounds) {
  const sim::RampShape shape = GetParam();
  std::vector<double> abs_us, iterations;
  int beyond_uncertainty = 0;  // |error| > 3 x (own uncertainty (+) sync uncertainty)
  double gpu_seconds = 0;
  // LATEST_RAMP_FMAS fixes the iteration, to see what a fixed one gives
  // (docs/methodology.md, "Pair validity and separability").
  const std::int64_t fixed_fmas = std::getenv("LATEST_RAMP_FMAS") ? std::atoll(std::getenv("LATEST_RAMP_FMAS")) : 0;
  for (const std::string profile : {"h200", "a100", "rtx6000"}) {
    for (std::uint64_t seed : seeds_or("LATEST_RAMP_SEEDS", {31, 47})) {
      const auto& clocks = sim::profile_named(profile).clocks;
      std::mt19937_64 rng(seed * 7919 + static_cast<std::uint64_t>(shape));
      std::uniform_int_distribution<std::size_t> pick(2, clocks.size() - 1);
      const std::size_t a = pick(rng);
      std::size_t b = pick(rng);
      if (b == a) b = (a + clocks.size() / 2) % clocks.size();
      sim::Injection inj;
      inj.ramp_shape = shape;
      SimRun run(profile, seed, inj);
      EngineSettings s = small({clocks[a], clocks[b], clocks[a - 2]});
      s.pairs = {{clocks[a], clocks[b]}, {clocks[b], clocks[a]}, {clocks[a], clocks[a - 2]}, {clocks[a - 2], clocks[a]}};
      if (fixed_fmas) s.plan.iteration_fmas = fixed_fmas;
      s.plan.capture_ms = 100;
      s.min_measurements = s.max_measurements = 12;
      const auto started = std::chrono::steady_clock::now();
      run.run(s);
      // What each run cost and at which iteration: docs/methodology.md quotes these lines.
      std::printf("  %s seed %llu: %.1f s host;", profile.c_str(), static_cast<unsigned long long>(seed),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
      for (const auto& r : run.recorder.results) {
        std::printf(" %d->%d %s n %zu at %lld FMAs windows %d retries %d %.1f GPU-s", r.pair.init, r.pair.target,
                    r.status.c_str(), r.rows.size(), static_cast<long long>(r.iteration_fmas), r.windows,
                    r.capture_retries, r.gpu_seconds);
        if (!r.rows.empty()) {  // in target iterations
          const double it = iteration_ms(run.state, r, r.pair.target);
          std::vector<double> abs_it;
          double first = 0;
          for (const auto& row : r.rows) {
            const double e = (row.switching_ms - row.truth->switching_ms) / it;
            abs_it.push_back(std::abs(e));
            first = std::min(first, e);
          }
          std::printf(" median |error| %.2f it earliest %.2f", summarise(abs_it).median, first);
        }
        std::printf(";");
        gpu_seconds += r.gpu_seconds;
      }
      std::printf("\n");
      for (const auto& r : run.recorder.results) {
        SCOPED_TRACE(profile + " seed " + std::to_string(seed) + " " + sim::to_string(shape));
        if (r.status == "skipped" && std::abs(r.pair.init - r.pair.target) == 15) continue;  // neighbours
        expect_within_bounds(run.state, r, false, true, true);
        const double it = iteration_ms(run.state, r, r.pair.target);
        for (const auto& row : r.rows) {
          const double e = row.switching_ms - row.truth->switching_ms;
          abs_us.push_back(std::abs(e) * 1e3);
          iterations.push_back(e / it);
          const double cover = std::hypot(row.switching_uncertainty_us, row.sync_uncertainty_us);
          beyond_uncertainty += std::abs(e) * 1e3 > 3 * cover;
        }
      }
    }
  }
  ASSERT_FALSE(iterations.empty());
  std::vector<double> abs_iterations;
  for (double x : iterations) abs_iterations.push_back(std::abs(x));
  const Summary abs = summarise(abs_us), rel = summarise(abs_iterations);
  const double earliest = *std::min_element(iterations.begin(), iterations.end());
  std::printf("%-14s n %zu  median |error| %.2f us  p99 |error| %.2f target iterations  earliest %.2f  %.1f GPU-s\n",
              sim::to_string(shape), iterations.size(), abs.median, rel.p99, earliest, gpu_seconds);
  std::printf("%-14s beyond three times the stated uncertainty: %d of %zu\n", sim::to_string(shape), beyond_uncertainty,
              iterations.size());
  EXPECT_LE(beyond_uncertainty, 0.02 * static_cast<double>(iterations.size()));
}

INSTANTIATE_TEST_SUITE_P(Sim, EveryRampShape, ::testing::ValuesIn(sim::kRampShapes),
                         [](const auto& info) {
                           std::string name = sim::to_string(info.param);
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// Misfit flags against the simulator's shapes: none on the default ramp,
// the stall on (nearly) every stalled switch, past-the-target on the
// overshoots that go past (about half: the sign is drawn per switch). Both
// detectors run on every window, so the flags come with the paper's too.
TEST(Engine, MisfitsAreFlaggedByShape) {
  const auto share = [](sim::RampShape shape, Misfit misfit, Detector detector, std::uint64_t seed) {
    sim::Injection inj;
    inj.ramp_shape = shape;
    SimRun run("h200", seed, inj);
    EngineSettings s = small({1980, 1500, 990});
    s.pairs = {{1500, 1980}, {1980, 990}};
    s.detector = detector;
    // Every outcome kept as a row (set aside where it misfits): the flags'
    // rates need no retries, and a pair stops at twice the maximum.
    s.misfit_retries = 0;
    s.min_measurements = s.max_measurements = 10;
    run.run(s);
    int flagged = 0, rows = 0, any = 0;
    for (const auto& r : run.recorder.results)
      for (const auto* kind : {&r.rows, &r.retried})  // every outcome, before retries
        for (const auto& row : *kind) {
          ++rows;
          flagged += (row.misfits & static_cast<unsigned>(misfit)) != 0;
          any += row.misfits != 0;
        }
    return std::make_pair(static_cast<double>(flagged) / rows, static_cast<double>(any) / rows);
  };
  for (std::uint64_t seed : {3, 4}) {
    EXPECT_EQ(share(sim::RampShape::four_steps, Misfit::stall, Detector::pooled, seed).second, 0.0);
    EXPECT_EQ(share(sim::RampShape::steps, Misfit::stall, Detector::pooled, seed).second, 0.0);
    EXPECT_GE(share(sim::RampShape::stall, Misfit::stall, Detector::pooled, seed).first, 0.9);
    EXPECT_GE(share(sim::RampShape::stall, Misfit::stall, Detector::paper, seed).first, 0.9);
    const double past = share(sim::RampShape::overshoot, Misfit::non_monotone, Detector::pooled, seed).first;
    EXPECT_GE(past, 0.2);
    EXPECT_LE(past, 0.8);
  }
}

// The clock a measurement got, from cycles over time: where the card takes
// a request for 1500 MHz and runs at 1485 with no reason given, the pair is
// flagged with the clock reached; the others reach their targets.
TEST(Engine, APairWhoseSmsRunAtAnotherClockIsFlagged) {
  for (std::uint64_t seed : {7, 8}) {
    sim::Injection inj;
    inj.unheld_mhz = 1500;
    SimRun run("h200", seed, inj);
    EngineSettings s = small({1980, 1500, 990});
    s.min_measurements = s.max_measurements = 6;
    run.run(s);
    ASSERT_EQ(run.recorder.results.size(), 6u);
    for (const auto& r : run.recorder.results) {
      SCOPED_TRACE(std::to_string(r.pair.init) + " -> " + std::to_string(r.pair.target) + ", seed " + std::to_string(seed));
      ASSERT_TRUE(r.reached_mhz);
      EXPECT_EQ(r.target_not_reached, r.pair.target == 1500);
      EXPECT_NEAR(*r.reached_mhz, r.pair.target == 1500 ? 1485 : r.pair.target, 1.0);
      for (const auto& row : r.rows) {
        ASSERT_TRUE(row.clock_before_mhz && row.clock_after_mhz);
        EXPECT_NEAR(*row.clock_before_mhz, r.pair.init == 1500 ? 1485 : r.pair.init, 1.0);
      }
    }
  }
}

// A misfit is measured again, up to twice; one still a misfit then is kept,
// set aside: out of the pair's statistics and its stop. On stalls every
// switch misfits, on overshoots about half do.
TEST(Engine, MisfitsAreMeasuredAgainAndSetAsideWhenRetriesRunOut) {
  for (std::uint64_t seed : {5, 6}) {
    sim::Injection inj;
    inj.ramp_shape = sim::RampShape::stall;
    SimRun stalled("h200", seed, inj);
    EngineSettings s = small({1980, 990});
    s.min_measurements = 10;
    s.max_measurements = 12;
    stalled.run(s);
    for (const auto& r : stalled.recorder.results) {
      ASSERT_EQ(r.status, "measured");
      const auto set_aside = r.rows.size() - static_cast<std::size_t>(r.kept());
      EXPECT_GT(set_aside, r.rows.size() / 2) << "most stalled switches stay misfits";
      EXPECT_GE(r.retried.size(), 2 * set_aside) << "each set aside after two retries";
      EXPECT_GT(r.misfit_retries.at("stall"), static_cast<int>(r.retried.size()) / 2);
      EXPECT_TRUE(r.kept() == 12 || r.rows.size() == 24u) << "the stop counts kept rows; twice as many bound the rest";
    }
    inj.ramp_shape = sim::RampShape::overshoot;
    SimRun over("h200", seed, inj);
    s.min_measurements = s.max_measurements = 20;
    over.run(s);
    for (const auto& r : over.recorder.results) {
      EXPECT_EQ(r.kept(), 20) << "set-aside rows do not count towards the stop";
      EXPECT_GT(r.retried.size(), 0u);
      for (const auto& row : r.rows) EXPECT_EQ(row.set_aside, row.misfits != 0);
    }
  }
}

// Traces: the first N measurements of each pair and as many misfits, each
// SM within its row bound, and nothing once the run's budget is spent.
TEST(Engine, TracesAreKeptForTheFirstMeasurementsWithinBounds) {
  const auto traced = [](int first, std::int64_t budget, std::optional<sim::RampShape> shape) {
    sim::Injection inj;
    inj.ramp_shape = shape;
    SimRun run("h200", 8, inj);
    EngineSettings s = small({1980, 990});
    s.min_measurements = s.max_measurements = 10;
    s.trace_first = first;
    s.trace_budget_bytes = budget;
    run.run(s);
    std::map<std::pair<int, int>, int> rows_per_sm;  // (measurement, sm)
    std::set<int> measurements;
    for (const auto& r : run.recorder.results)
      for (const auto& t : r.traces) {
        ++rows_per_sm[{r.pair.init * 1000 + t.measurement, t.sm}];
        measurements.insert(r.pair.init * 1000 + t.measurement);
      }
    int most = 0;
    for (const auto& [k, n] : rows_per_sm) most = std::max(most, n);
    return std::make_pair(measurements, most);
  };
  const auto [none, none_rows] = traced(0, 256ll << 20, std::nullopt);
  EXPECT_TRUE(none.empty());
  const auto [some, rows] = traced(3, 256ll << 20, std::nullopt);
  EXPECT_EQ(some, (std::set<int>{1980001, 1980002, 1980003, 990001, 990002, 990003}));
  EXPECT_LE(rows, EngineSettings{}.trace_rows_per_sm);
  EXPECT_GE(rows, 4 * EngineSettings{}.trace_margin);  // the ramp is there, thinned
  // Stalls are misfits: three more per pair.
  const auto [stalls, stall_rows] = traced(3, 256ll << 20, sim::RampShape::stall);
  EXPECT_EQ(stalls.size(), 12u);
  const auto [capped, capped_rows] = traced(3, 1 << 20, std::nullopt);
  EXPECT_TRUE(capped.empty()) << "one measurement's traces exceed a 1 MB budget";
}

// With the pooled detector only neighbouring clocks may be skipped as
// inseparable; two steps apart is measured, at the planned iteration length.
TEST(Engine, OnlyNeighboursAreSkippedAsInseparable) {
  SimRun run("h200", 19);
  EngineSettings s = small({1980, 1965, 1950});
  s.plan.iteration_fmas = 1024;  // where neighbours' bands overlap (at 2048 and more they do not)
  s.plan.capture_ms = 70;
  run.run(s);
  ASSERT_EQ(run.recorder.results.size(), 6u);
  for (const auto& r : run.recorder.results) {
    const bool neighbours = std::abs(r.pair.init - r.pair.target) == 15;
    if (neighbours) {
      EXPECT_EQ(r.status, "skipped") << r.pair.init << "->" << r.pair.target;
      EXPECT_EQ(r.reason.code, SkipReason::Code::bands_overlap);
    } else {
      expect_within_bounds(run.state, r, false);
    }
  }
}

TEST(Engine, A100DecreasesAreFasterThanIncreases) {
  SimRun run("a100", 5);
  run.run(small({1410, 705}));
  auto median = [](const PairResult& r) {
    std::vector<double> xs;
    for (const auto& row : r.rows) xs.push_back(row.switching_ms);
    std::sort(xs.begin(), xs.end());
    return xs[xs.size() / 2];
  };
  EXPECT_LT(median(run.recorder.pair(1410, 705)) * 2, median(run.recorder.pair(705, 1410)));
}

TEST(Engine, StopsOnRseAfterTheMinimum) {
  SimRun run("h200", 12);
  EngineSettings s = small({1980, 990});
  s.pairs = {{1980, 990}};
  s.min_measurements = 25;
  s.max_measurements = 400;
  s.rse = 0.05;
  run.run(s);
  const auto& r = run.recorder.pair(1980, 990);
  EXPECT_EQ(r.rows.size() % 25, 0u);
  EXPECT_LE(r.rse, 0.05);
  EXPECT_GE(r.rows.size(), 25u);
  // Not stopping before the minimum even when the RSE is already small.
  SimRun again("h200", 12);
  s.min_measurements = 60;
  again.run(s);
  EXPECT_EQ(again.recorder.pair(1980, 990).rows.size(), 75u);  // first check at 75
}

TEST(Engine, MaxMeasurementsStopsRegardless) {
  SimRun run("h200", 13);
  EngineSettings s = small({1980, 990});
  s.pairs = {{990, 1980}};
  s.min_measurements = 5;
  s.max_measurements = 7;
  s.rse = 1e-6;
  run.run(s);
  EXPECT_EQ(run.recorder.pair(990, 1980).rows.size(), 7u);
}

TEST(Engine, ThermalEventDiscardsTheNewestFiveAndCools) {
  EngineSettings s = small({1980, 990});
  s.pairs = {{1980, 990}};
  s.min_measurements = s.max_measurements = 30;
  // Fires during the measurements: a plan of the same card (phase 1 and
  // the pilot, identical in the run) says when they start. Virtual time
  // starts at 1 s.
  SimRun planned("h200", 14);
  Engine planner(planned.workload, planned.clocks, s, planned.recorder);
  sim::Injection inj;
  inj.thermal_at_s = {1.0 + planner.plan().cost.planning_gpu_seconds + 0.1};
  SimRun run("h200", 14, inj);
  run.run(s);
  const auto& r = run.recorder.pair(1980, 990);
  ASSERT_EQ(run.state.throttle_events.size(), 1u);
  EXPECT_EQ(run.state.throttle_events[0].kind, "thermal");
  EXPECT_EQ(r.discarded.at("thermal"), 5);
  EXPECT_EQ(r.rows.size(), 30u);
  // Discarded measurements leave a gap in the numbering.
  EXPECT_EQ(r.rows.back().index, 35);
}

TEST(Engine, PowerCappedClockSkipsItsPairs) {
  sim::Injection inj;
  inj.power_cap_mhz = 1500;
  SimRun run("h200", 15, inj);
  EngineSettings s = small({1980, 1200, 900});
  // 1200 MHz is a slow target (~95 ms): the planned iteration would be
  // 73 us at 900 MHz, where the pooled detector is not yet within its
  // bounds (issue 9); this test is about power capping.
  s.plan.iteration_fmas = 2048;
  s.plan.capture_ms = 300;
  run.run(s);
  for (const auto& r : run.recorder.results) {
    if (r.pair.init == 1980 || r.pair.target == 1980) {
      EXPECT_EQ(r.status, "skipped");
      EXPECT_TRUE(r.reason.code == SkipReason::Code::clock_power_capped ||
                  r.reason.code == SkipReason::Code::power_capping)
          << to_string(r.reason.code);
    } else {
      expect_within_bounds(run.state, r);
    }
  }
  EXPECT_TRUE(run.state.unusable_clocks.count(1980));
}

// Left to the tool, the gate looks at a pair's bands at the iteration it
// runs at: neighbours whose bands overlap at the run's fine iteration are
// measured at a coarser one, as they are in a clock set of their own.
TEST(Engine, NeighboursAreJudgedAtTheirOwnIteration) {
  SimRun run("h200", 19);
  EngineSettings s = small({1980, 1965, 1950});
  s.plan.capture_ms = 5;  // a fine run iteration, where neighbours' bands overlap
  s.min_measurements = s.max_measurements = 12;
  run.run(s);
  ASSERT_EQ(run.recorder.results.size(), 6u);
  for (const auto& r : run.recorder.results) {
    EXPECT_EQ(r.status, "measured") << r.pair.init << "->" << r.pair.target << ": " << to_string(r.reason.code);
    if (r.status == "measured") expect_within_bounds(run.state, r, false);
  }
  int coarser = 0;
  for (const auto& c : run.state.checks) {
    if (std::abs(c.pair.init - c.pair.target) == 15) {
      EXPECT_LE(c.band_overlap, s.max_band_overlap) << "at its own iteration";
    }
    coarser += c.separable_fmas > run.state.iteration_fmas;
  }
  EXPECT_GE(coarser, 4) << "the neighbours run coarser than the run's " << run.state.iteration_fmas << " FMAs";
}

TEST(Engine, InseparablePairsAreSkippedUnlessAsked) {
  SimRun run("h200", 16);
  EngineSettings s = small({1980, 1965});
  s.plan.iteration_fmas = 256;  // 640 ns iterations: neighbours within a tick
  s.plan.capture_ms = 20;
  run.run(s);
  for (const auto& r : run.recorder.results) {
    EXPECT_EQ(r.status, "skipped");
    EXPECT_EQ(r.reason.code, SkipReason::Code::bands_overlap) << to_string(r.reason.code);
    EXPECT_GT(r.reason.value, 0.5);
  }
  for (const auto& c : run.state.checks) EXPECT_GT(c.band_overlap, 0.5);
}

TEST(Engine, UncapturedSwitchRetriesWithALongerWindow) {
  SimRun run("h200", 17);
  EngineSettings s = small({1980, 990});
  s.pairs = {{1980, 990}};
  s.plan.capture_ms = 1;  // far shorter than any switch
  s.min_measurements = s.max_measurements = 5;
  run.run(s);
  const auto& r = run.recorder.pair(1980, 990);
  ASSERT_EQ(r.status, "measured") << to_string(r.reason.code);
  EXPECT_GE(r.failed.at("not_captured"), 1);
  EXPECT_DOUBLE_EQ(r.capture_ms, 10);  // 1 -> 10 ms, which holds a ~7 ms switch
  for (const auto& row : r.rows) EXPECT_GT(row.truth->switching_ms, 1);
  expect_within_bounds(run.state, r);
}

TEST(Engine, SwitchSlowerThanTheLongestWindowSkipsThePair) {
  SimRun run("h200", 18);
  EngineSettings s = small({1980, 990});
  s.pairs = {{1980, 990}};
  s.plan.capture_ms = 0.5;
  s.plan.max_capture_ms = 0.5;
  run.run(s);
  const auto& r = run.recorder.pair(1980, 990);
  EXPECT_EQ(r.status, "skipped");
  EXPECT_EQ(r.reason.code, SkipReason::Code::not_captured) << to_string(r.reason.code);
  EXPECT_DOUBLE_EQ(r.reason.value, 0.5);
}

// The gate over every profile's full clock matrix (issue 9, item 3): phase 1
// on every clock at the iteration length a 70 ms capture gets, then the
// gate; only neighbouring clocks are skipped. Prints the shares that
// docs/methodology.md quotes.
struct PlanObserver : RunObserver {
  int pairs = 0, skipped = 0, neighbours = 0;
  bool planned_called = false;
  void planned(const RunState& st) override {
    planned_called = true;
    for (const auto& c : st.checks) {
      ++pairs;
      if (!c.skip.skipped()) continue;
      ++skipped;
      neighbours += std::abs(c.pair.init - c.pair.target) == 15;
    }
  }
};

class FullMatrix : public ::testing::TestWithParam<const char*> {};

TEST_P(FullMatrix, SkipsOnlyNeighbours) {
  const std::string profile = GetParam();
  auto gpu = std::make_shared<sim::SimGpu>(sim::profile_named(profile), 1);
  sim::SimWorkload workload(gpu);
  sim::SimClockControl clocks(gpu, 0);
  EngineSettings s;
  s.clocks = sim::profile_named(profile).clocks;
  for (Mhz a : s.clocks)
    for (Mhz b : s.clocks)
      if (a != b) s.pairs.push_back({a, b});
  s.plan.capture_ms = 70;
  // A shorter calibration than the default's: the outcome is the same (a
  // neighbour pair more or less on rtx6000), in an eighth of the time.
  s.plan.calibration_iterations = 4096;
  PlanObserver seen;
  Engine engine(workload, clocks, s, seen, [&] { return seen.planned_called ? std::string("stop") : std::string(); });
  EXPECT_THROW(engine.run(), Interrupted);
  std::printf("%-8s %d of %d pairs skipped (%.2f %%), %d of them neighbours\n", profile.c_str(), seen.skipped,
              seen.pairs, 100.0 * seen.skipped / seen.pairs, seen.neighbours);
  EXPECT_EQ(seen.skipped, seen.neighbours) << profile;
  EXPECT_LT(seen.skipped, 0.02 * seen.pairs) << profile;
}

INSTANTIATE_TEST_SUITE_P(Sim, FullMatrix, ::testing::Values("h200", "a100", "rtx6000"));

TEST(Engine, StopFlagInterruptsBetweenWindows) {
  SimRun run("h200", 19);
  int polls = 0;
  EXPECT_THROW(run.run(small({1980, 990}), [&] { return ++polls > 40 ? std::string("SIGINT") : std::string(); }),
               Interrupted);
}

TEST(Engine, TimerSyncDriftIsMeasured) {
  // The simulated clocks drift by up to 8 ppm, as the H200's did (6 ppm):
  // the fit finds it, and the error bounds above hold because every request
  // time is interpolated between syncs taken before and after its window.
  SimRun run("h200", 20);
  run.run(small({1980, 990}));
  const SyncStats& s = run.state.sync;
  EXPECT_GT(s.count, 100);
  EXPECT_LT(std::abs(s.drift_ppm), 8.5);
  EXPECT_GT(s.max_drift_between_syncs_ns, 0);
}

}  // namespace
}  // namespace latest
