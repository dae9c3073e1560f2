#include "core/schedules/paper_schedule.hpp"

namespace latest {

std::vector<PairResult> PaperSchedule::measure_group(const std::vector<ClockPair>& group, std::size_t first_number,
                                                     std::size_t count) {
  std::vector<PairResult> results;
  for (std::size_t i = 0; i < group.size(); ++i) {
    core_.observer().pair_started(group[i], first_number + i, count);
    results.push_back(measure_pair(group[i], first_number + i, count));
    core_.state().cost.gpu_seconds = core_.seconds_since_start();
    core_.observer().pair_finished(results.back(), core_.state());
  }
  return results;
}

PairResult PaperSchedule::measure_pair(ClockPair pair, std::size_t number, std::size_t count) {
  const EngineSettings& s = core_.settings();
  PairProgress p;
  p.result.pair = pair;
  p.result.status = "measured";
  p.number = number;
  p.capture_ms = p.usual_capture_ms = core_.state().capture_ms;
  p.fmas = p.usual_fmas = core_.pair_fmas(pair);
  PairResult& result = p.result;
  const Nanos pair_start = core_.workload().time().now_ns();
  int raises = 0;  // of the wake-up, for the next tries of this measurement only
  try {
    while (!p.done) {
      const auto& ci = core_.calibration(pair.init, p.fmas);
      const auto& ct = core_.calibration(pair.target, p.fmas);
      const WindowPlan plan = plan_window(p.capture_ms, core_.wakeup_for(pair.init, raises), ci, ct, s.plan);
      core_.set_measurement_gpu_ms(plan.gpu_ms);
      Attempt a = core_.measure_window(pair, plan);
      result.host_cpu_seconds += a.detection_cpu_s;
      ++result.windows;
      result.bytes += a.records.bytes;
      result.iteration_fmas = p.fmas;
      result.capture_ms = p.capture_ms;
      result.wakeup_ms = plan.wakeup_ms;
      const bool not_held = a.measurement.outcome == MeasurementOutcome::initial_not_held;
      raises = not_held && p.failed_attempts + 1 < s.max_attempts ? raises + 1 : 0;
      if (a.measurement.outcome == MeasurementOutcome::accepted) {
        p.done = core_.accept(p, a, count);
      } else {
        core_.reject(p, a);
      }
    }
  } catch (const SkipPair& skip) {
    core_.skip(p, skip.reason);
  }
  result.gpu_seconds = static_cast<double>(core_.workload().time().now_ns() - pair_start) / 1e9;
  return result;
}

}  // namespace latest
