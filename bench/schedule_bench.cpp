// The two schedules side by side (issue 10): the chained one (many switches
// per launch) against the paper's (one switch per launch, a capture of 10x
// the longest pilot latency), on the same simulated card and seed. Totals
// go to the counters; per pair, one CSV line each to
// $LATEST_BENCH_OUT/schedule_pairs.csv when that is set.
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "backends/sim/sim_backend.hpp"
#include "core/engine.hpp"
#include "core/planner.hpp"
#include "core/statistics.hpp"

namespace latest {
namespace {

struct Collect : RunObserver {
  std::vector<PairResult> results;
  void pair_finished(const PairResult& r, const RunState&) override { results.push_back(r); }
};

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// The 20 clocks of the h200 profile (380 ordered pairs), or
// $LATEST_BENCH_CLOCKS (comma-separated MHz).
std::vector<Mhz> bench_clocks() {
  std::vector<Mhz> clocks = {1980, 1890, 1800, 1710, 1620, 1530, 1440, 1350, 1260, 1170,
                             1080, 990,  900,  810,  720,  630,  540,  450,  360,  345};
  if (const char* env = std::getenv("LATEST_BENCH_CLOCKS")) {
    clocks.clear();
    for (const char* p = env; *p;) {
      char* end = nullptr;
      clocks.push_back(static_cast<Mhz>(std::strtol(p, &end, 10)));
      p = *end == ',' ? end + 1 : end;
      if (end == p && *p) break;
    }
  }
  return clocks;
}

void BM_Schedules(benchmark::State& state) {
  const auto schedule = state.range(0) == 0 ? Schedule::chained : Schedule::paper;
  const std::uint64_t seed = 77;
  for (auto _ : state) {
    auto gpu = std::make_shared<sim::SimGpu>(sim::profile_named("h200"), seed);
    sim::SimWorkload workload(gpu);
    sim::SimClockControl control(gpu, 0);
    EngineSettings s;
    s.clocks = bench_clocks();
    s.pairs = ordered_pairs(s.clocks);
    s.schedule = schedule;
    Collect collect;
    const double cpu0 = process_cpu_seconds();
    Engine engine(workload, control, s, collect);
    const RunState st = engine.run();
    const double host_cpu = process_cpu_seconds() - cpu0;

    double measurements = 0, bytes = 0, detection_cpu = 0, true_sum_s = 0, windows = 0, pairs_s = 0, transits = 0,
           retries = 0;
    std::vector<double> abs_us, err_us;
    std::ofstream csv;
    if (const char* dir = std::getenv("LATEST_BENCH_OUT")) {
      csv.open(fmt::format("{}/schedule_pairs_{}.csv", dir, to_string(schedule)));
      csv << "init_mhz,target_mhz,status,measurements,gpu_seconds,windows,transits,capture_retries,bytes,"
             "median_abs_error_us,true_latency_sum_s\n";
    }
    for (const auto& r : collect.results) {
      double pair_true = 0;
      std::vector<double> pair_abs;
      for (const auto& row : r.rows) {
        const double e = (row.switching_ms - row.truth->switching_ms) * 1e3;
        err_us.push_back(e);
        abs_us.push_back(std::abs(e));
        pair_abs.push_back(std::abs(e));
        pair_true += row.truth->switching_ms / 1e3;
      }
      true_sum_s += pair_true;
      measurements += static_cast<double>(r.rows.size());
      bytes += static_cast<double>(r.bytes);
      detection_cpu += r.host_cpu_seconds;
      windows += r.windows;
      pairs_s += r.gpu_seconds;
      transits += r.transits;
      retries += r.capture_retries;
      if (csv)
        csv << fmt::format("{},{},{},{},{:.4f},{},{},{},{},{:.3f},{:.4f}\n", r.pair.init, r.pair.target, r.status,
                           r.rows.size(), r.gpu_seconds, r.windows, r.transits, r.capture_retries, r.bytes,
                           pair_abs.empty() ? NAN : quantile(pair_abs, 0.5), pair_true);
    }
    const Summary e = summarise(err_us);
    state.counters["gpu_seconds"] = st.cost.gpu_seconds;
    state.counters["planned_gpu_seconds"] = st.cost.planned_gpu_seconds;
    state.counters["planning_gpu_seconds"] = st.cost.planning_gpu_seconds;
    state.counters["measurements"] = measurements;
    state.counters["efficiency"] = true_sum_s / st.cost.gpu_seconds;
    state.counters["abs_err_us_p50"] = quantile(abs_us, 0.5);
    state.counters["abs_err_us_p99"] = quantile(abs_us, 0.99);
    state.counters["err_us_min"] = e.min;
    state.counters["err_us_max"] = e.max;
    state.counters["host_cpu_s"] = host_cpu;
    state.counters["detection_cpu_s"] = detection_cpu;
    state.counters["GB_copied"] = bytes / 1e9;
    state.counters["windows"] = windows;
    state.counters["pair_gpu_seconds"] = pairs_s;
    state.counters["transits"] = transits;
    state.counters["capture_retries"] = retries;
    state.counters["iteration_fmas"] = static_cast<double>(st.iteration_fmas);
    state.counters["capture_ms"] = st.capture_ms;
  }
}
BENCHMARK(BM_Schedules)->Arg(0)->Arg(1)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace
}  // namespace latest
