// Speed, volume and accuracy of the methodology on the simulated H200.
// Results go to docs/benchmarks.md; nothing here is a pass/fail test.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include <benchmark/benchmark.h>

#include "backends/sim/sim_backend.hpp"
#include "detection_case.hpp"
#include "core/accuracy.hpp"
#include "core/detection.hpp"
#include "core/engine.hpp"
#include "core/planner.hpp"
#include "core/pooled_detection.hpp"
#include "core/statistics.hpp"

namespace latest {
namespace {

// One recorded window as the default plan sizes it: 32768 iterations on each
// of 132 SMs. Wall time of the simulator itself.
void BM_SimulatorWindow(benchmark::State& state) {
  sim::SimGpu gpu(sim::profile_named("h200"), 1);
  const auto iterations = state.range(0);
  for (auto _ : state) {
    gpu.launch({1024, 0, iterations});
    benchmark::DoNotOptimize(gpu.collect());
  }
  state.counters["sm_iterations/s"] =
      benchmark::Counter(static_cast<double>(iterations) * 132 * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SimulatorWindow)->Arg(8192)->Arg(32768)->Unit(benchmark::kMillisecond)->UseRealTime();

struct Quiet : RunObserver {
  std::vector<PairResult> results;
  void pair_finished(const PairResult& r, const RunState&) override { results.push_back(r); }
  // Where asked for, both detectors timed on every window the engine reads
  // (the pilots' and the plan's sample's too), one after the other, the
  // order turned each round, the least of three rounds each: ms in all.
  bool time_detectors = false;
  double pooled_ms = 0, paper_ms = 0;
  int windows = 0;
  void window_read(const WindowRead& w) override {
    if (!time_detectors) return;
    DetectionSettings paper;
    paper.initial_tol_ns = w.initial_tol_ns;
    paper.target_tol_ns = w.target_tol_ns;
    double least[2] = {1e30, 1e30};
    for (int round = 0; round < 3; ++round)
      for (int turn = 0; turn < 2; ++turn) {
        const int which = (turn + round) % 2;
        const auto t0 = std::chrono::steady_clock::now();
        benchmark::DoNotOptimize(
            which == 0 ? detect_switch_pooled(w.records, w.request_gpu_ns, w.initial, w.target, w.initial_tol_ns,
                                              w.target_tol_ns, PooledSettings{})
                       : detect_switch(w.records, w.request_gpu_ns, w.initial, w.target, paper));
        least[which] = std::min(least[which],
                                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
    pooled_ms += least[0];
    paper_ms += least[1];
    ++windows;
  }
};

// The engine on the simulated h200 over every ordered pair of `clocks`.
struct SimRun {
  RunState state;
  Quiet quiet;
};
SimRun run_engine(std::uint64_t seed, std::vector<Mhz> clocks, std::optional<int> measurements = std::nullopt,
                  sim::Injection injection = {}, bool time_detectors = false) {
  auto gpu = std::make_shared<sim::SimGpu>(sim::profile_named("h200"), seed, std::move(injection));
  sim::SimWorkload workload(gpu);
  sim::SimClockControl control(gpu, 0);
  EngineSettings s;
  s.clocks = std::move(clocks);
  s.pairs = ordered_pairs(s.clocks);
  if (measurements) s.min_measurements = s.max_measurements = *measurements;
  SimRun run;
  run.quiet.time_detectors = time_detectors;
  Engine engine(workload, control, s, run.quiet);
  run.state = engine.run();
  return run;
}

// The engine end to end on h200, pairs among 1980/1500/990/600 MHz, stopping
// at RSE 5 %: accuracy against the truth, device seconds per pair, and host
// cost per measurement.
void BM_EngineAccuracyAndCost(benchmark::State& state) {
  for (auto _ : state) {
    const SimRun run = run_engine(42, {1980, 1500, 990, 600});
    const RunState& st = run.state;
    const Quiet& quiet = run.quiet;
    const Accuracy acc = accuracy_against_truth(quiet.results);
    std::vector<double> abs_us, gpu_s;
    for (const auto& m : acc.measurements) abs_us.push_back(std::abs(m.error_us));
    double bytes = 0, cpu = 0, windows = 0;
    for (const auto& r : quiet.results) {
      gpu_s.push_back(r.gpu_seconds);
      bytes += static_cast<double>(r.bytes);
      cpu += r.host_cpu_seconds;
      windows += r.windows;
    }
    const Summary err_iter = acc.error_iterations.value_or(Summary{});
    state.counters["err_iter_p50"] = err_iter.median;
    state.counters["err_iter_p95"] = err_iter.p95;
    state.counters["err_iter_p99"] = err_iter.p99;
    state.counters["err_iter_max"] = err_iter.max;
    state.counters["err_iter_min"] = err_iter.min;
    state.counters["abs_err_us_p50"] = quantile(abs_us, 0.5);
    state.counters["abs_err_us_max"] = quantile(abs_us, 1.0);
    state.counters["gpu_s_per_pair_median"] = quantile(gpu_s, 0.5);
    state.counters["gpu_s_per_pair_max"] = quantile(gpu_s, 1.0);
    state.counters["measurements"] = static_cast<double>(acc.measurements.size());
    state.counters["MB_per_window"] = bytes / windows / 1e6;
    state.counters["host_ms_per_window"] = cpu / windows * 1e3;
    state.counters["iteration_fmas"] = static_cast<double>(st.iteration_fmas);
    state.counters["capture_ms"] = st.capture_ms;
  }
}
BENCHMARK(BM_EngineAccuracyAndCost)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

// Both detectors on the same windows (the engine accepts by the pooled one,
// the paper's runs on every accepted window too): h200, seed 7, clocks 1980,
// 1890 (a close pair, 6 steps), 1500 and 990 MHz, all 12 pairs, 40
// measurements each. Errors in target iterations against the truth, and
// each detector's host time per window. The argument: the RMS (ns) of a
// common wander of the SMs' boundaries (as on some H200s), 0 for none.
void BM_DetectorsOnTheSameRecords(benchmark::State& state) {
  sim::Injection injection;
  injection.boundary_wander_ns = static_cast<double>(state.range(0));
  for (auto _ : state) {
    const SimRun run = run_engine(7, {1980, 1890, 1500, 990}, 40, injection, true);
    const RunState& st = run.state;
    const Quiet& quiet = run.quiet;
    std::vector<double> pooled, paper, pooled_abs, paper_abs, pooled_us;
    for (const auto& r : quiet.results) {
      // The run's calibration, scaled to the pair's iteration where the
      // gate moved the pair to a coarser one (the state keeps the run's only).
      double it = 0;
      for (const auto& c : st.calibrations)
        if (c.mhz == r.pair.target && c.iteration_fmas > 0)
          it = c.pooled.iteration.mean / 1e6 * static_cast<double>(r.iteration_fmas) /
               static_cast<double>(c.iteration_fmas);
      for (const auto& row : r.rows) {
        pooled.push_back((row.switching_ms - row.truth->switching_ms) / it);
        pooled_abs.push_back(std::abs(pooled.back()));
        pooled_us.push_back(std::abs(row.switching_ms - row.truth->switching_ms) * 1e3);
        if (!row.paper_switching_ms) continue;
        paper.push_back((*row.paper_switching_ms - row.truth->switching_ms) / it);
        paper_abs.push_back(std::abs(paper.back()));
      }
    }
    const auto put = [&](const char* name, const std::vector<double>& err, const std::vector<double>& abs_err) {
      const Summary e = summarise(err), a = summarise(abs_err);
      state.counters[std::string(name) + "_abs_p50"] = a.median;
      state.counters[std::string(name) + "_abs_p99"] = a.p99;
      state.counters[std::string(name) + "_abs_max"] = a.max;
      state.counters[std::string(name) + "_earliest"] = e.min;
      state.counters[std::string(name) + "_n"] = static_cast<double>(e.n);
    };
    put("pooled", pooled, pooled_abs);
    put("paper", paper, paper_abs);
    state.counters["pooled_abs_us_p50"] = quantile(pooled_us, 0.5);
    // Host time per window: the mean over every window read.
    state.counters["pooled_host_ms"] = quiet.pooled_ms / std::max(1, quiet.windows);
    state.counters["paper_host_ms"] = quiet.paper_ms / std::max(1, quiet.windows);
    state.counters["windows"] = quiet.windows;
  }
}
BENCHMARK(BM_DetectorsOnTheSameRecords)->Arg(0)->Arg(12)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

void BM_DetectSwitchPaper(benchmark::State& state) {
  const DetectionCase c = detection_case();
  DetectionSettings d;
  d.target_tol_ns = 20;
  d.initial_tol_ns = 10;
  for (auto _ : state) benchmark::DoNotOptimize(detect_switch(c.window, c.request_gpu, c.init, c.target, d));
}
BENCHMARK(BM_DetectSwitchPaper)->Unit(benchmark::kMillisecond);

void BM_DetectSwitchPooled(benchmark::State& state) {
  const DetectionCase c = detection_case();
  for (auto _ : state)
    benchmark::DoNotOptimize(detect_switch_pooled(c.window, c.request_gpu, c.init, c.target, 10, 20, PooledSettings{}));
}
BENCHMARK(BM_DetectSwitchPooled)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace latest

BENCHMARK_MAIN();
