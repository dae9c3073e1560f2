#pragma once
// The pooled change-point detector (the default; docs/methodology.md,
// "Pooled detector"). All SMs share one clock, so their records are used
// together, on the GPU's time axis:
// - per SM, the iteration boundaries of the final segment lie on a line
//   (time = a + b·index, b the target's iteration); the same for the initial
//   segment before the request;
// - a boundary's residual against that line is its lag or lead; before the
//   clock reached the target for good, every SM's residual has the same sign,
//   so the pooled residual of all SMs in one time bin is a z statistic whose
//   power grows with the number of SMs;
// - the change is near where the last significant bin ends; per SM, a hinge
//   fit of the residuals there (before the change they grow by a step per
//   iteration that the pooled clock ratio fixes, after it they are zero)
//   places it inside its mixed iteration; the latest SM's change is the
//   arrival, since every SM must run at the target;
// - the segment after each SM's change must be homogeneous: its rate right
//   after the change and at the window's end must agree, tested across SMs.
#include "core/calibration.hpp"
#include "core/detection.hpp"
#include "core/types.hpp"

namespace latest {

struct PooledSettings {
  double z = 6;                          // significance of a pooled bin (thousands of bins are scanned)
  // A rate change smaller than this share of the tolerance (half the step
  // to the nearest clock) is no change: far below any clock step. At 0.1
  // (0.75 MHz on 15 MHz steps) a last level 0.6–1.5 MHz short of the target
  // passed for it, thousands of iterations early. On one H200 under
  // emulated switching, 0.04 rejected 3 of 83 windows at 4096 FMAs where
  // 0.1 rejected 79 of 159.
  double relevant_rate_share = 0.04;
  // The scans for the arrival and its tail hinge also pass over rate
  // levels closer to the target than this share of the whole change, in
  // clock terms: 0.5 % of 990 MHz is 5 MHz, a third of a clock step. Every
  // level of the simulator's ramps lies 2 % or more of the change from the
  // target, and one clock step of the widest H200 pair (345 <-> 1980 MHz)
  // 0.9 %.
  double relevant_change_share = 0.005;
  std::int64_t line_iterations = 500;    // boundaries fitted for a segment's line
  std::int64_t min_confirmation_iterations = 100;  // after the arrival, on every SM
  std::int64_t precheck_iterations = 200;          // before t_s: the initial line
  // An iteration this many times both its neighbours is long: an interrupt
  // where few SMs have one at that moment, a stall where at least
  // `global_share` of them do.
  double long_iteration = 1.3;
  double global_share = 0.25;
  // Boundaries per SM, the latest off the final line, that each place the change.
  std::int64_t points_per_sm = 8;
};

// Both the initial and target calibrations identify the segments; the
// tolerances (half the step to the nearest supported clock) say which clock a
// fitted rate is.
Measurement detect_switch_pooled(const WindowRecords& records, Nanos request_gpu_ns,
                                 const ClockCalibration& initial, const ClockCalibration& target,
                                 double initial_tol_ns, double target_tol_ns, const PooledSettings& settings);

}  // namespace latest
