// Host time per window on the windows of the side-by-side benchmark
// (BM_DetectorsOnTheSameRecords, bench/engine_bench.cpp: the engine on the
// simulated h200, seed 7, every ordered pair of 1980, 1890, 1500 and 990
// MHz, 40 measurements each, the default chained schedule): as the engine
// reads each window (RunObserver::window_read), the four detectors of
// detector_timing.hpp are timed on it, alternated, the minimum of three
// rounds each. run.sh builds it where ENGINE=1. Arguments: the seed (7),
// then `each` to list every window as it is read (pair, mean iterations a
// SM, the pooled detector's and the issue day's paper detector's ms, their
// ratio, the pooled outcome).
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>

#include "backends/sim/sim_backend.hpp"
#include "core/engine.hpp"
#include "detector_timing.hpp"

using namespace host_time;

namespace {
struct Timing final : RunObserver {
  bool each = false;
  Tally all;
  std::map<std::pair<Mhz, Mhz>, Tally> pairs;
  std::size_t records = 0, sm_windows = 0;  // for the mean iterations a SM
  void window_read(const WindowRead& w) override {
    const WindowTimes t =
        time_detectors(w.records, w.request_gpu_ns, w.initial, w.target, w.initial_tol_ns, w.target_tol_ns, 3);
    all.add(t);
    pairs[{w.pair.init, w.pair.target}].add(t);
    std::size_t n = 0;
    for (const auto& sm : w.records.sms) n += sm.duration_ns.size();
    records += n;
    sm_windows += w.records.sms.size();
    if (each)
      std::printf("window %4d -> %4d: %6zu iterations a SM, pooled %.3f ms, paper then %.3f: %.2f (%s)\n", w.pair.init,
                  w.pair.target, n / std::max<std::size_t>(1, w.records.sms.size()), t.ms[kPooled], t.ms[kPaperThen],
                  t.ms[kPooled] / t.ms[kPaperThen], to_string(t.pooled.outcome));
  }
};
}  // namespace

int main(int argc, char** argv) {
  const std::uint64_t seed = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 7;
  auto gpu = std::make_shared<sim::SimGpu>(sim::profile_named("h200"), seed);
  sim::SimWorkload workload(gpu);
  sim::SimClockControl control(gpu, 0);
  EngineSettings s;
  s.clocks = {1980, 1890, 1500, 990};
  s.pairs = ordered_pairs(s.clocks);
  s.min_measurements = s.max_measurements = 40;
  Timing timing;
  timing.each = argc > 2 && std::string(argv[2]) == "each";
  Engine(workload, control, s, timing).run();
  for (const auto& [pair, t] : timing.pairs) {
    const auto n = static_cast<double>(t.ratios.size());
    std::printf("%4d -> %4d: %3zu windows, pooled %.3f ms a window (base %.3f), paper then %.3f: %.2f\n", pair.first,
                pair.second, t.ratios.size(), t.total[kPooled] / n, t.total[kBase] / n, t.total[kPaperThen] / n,
                t.total[kPooled] / t.total[kPaperThen]);
  }
  std::printf("mean %.0f iterations a SM\n",
              static_cast<double>(timing.records) / static_cast<double>(std::max<std::size_t>(1, timing.sm_windows)));
  timing.all.print("all");
}
