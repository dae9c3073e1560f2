#pragma once
// One default-size window (132 SMs x 32768 iterations, 1980 -> 990 MHz) and
// the calibrations, for the host cost of each detector alone: the window of
// BM_DetectSwitch* and of docs/hardware/data/h200-2026-12-02-hostbench.
#include "backends/sim/sim_backend.hpp"
#include "core/calibration.hpp"
#include "core/types.hpp"

namespace latest {

struct DetectionCase {
  WindowRecords window;
  Nanos request_gpu = 0;
  ClockCalibration init, target;
};

inline DetectionCase detection_case() {
  DetectionCase c;
  sim::SimGpu gpu(sim::profile_named("h200"), 3);
  gpu.launch({1024, 0, 32768});
  const auto cal_rec = gpu.collect();
  const ClockCalibration init = calibrate_from_records(1980, 1024, cal_rec, 32);
  gpu.request_clock(gpu.now(), 990);
  gpu.advance_to(gpu.now() + 1'000'000'000);
  gpu.launch({1024, 0, 32768});
  const ClockCalibration target = calibrate_from_records(990, 1024, gpu.collect(), 32);
  gpu.request_clock(gpu.now(), 1980);
  gpu.advance_to(gpu.now() + 1'000'000'000);
  const Nanos launched = gpu.launch({1024, 0, 32768});
  gpu.advance_to(launched + 2'000'000);
  const Nanos request = gpu.now();
  gpu.request_clock(request, 990);
  c.window = gpu.collect();
  c.request_gpu = gpu.synchronize().to_gpu(request);
  c.init = init;
  c.target = target;
  return c;
}

}  // namespace latest
