#pragma once
// The detectors judged on the card's own clock changes (docs/methodology.md,
// "Real changes as the judge"). An autonomous change has no request and
// clocks nobody calibrated, and the detectors must not be handed the
// judge's answer: each gets a pseudo-request drawn 0.2-2 ms before the
// change's first departure, calibrations from the levels held either side
// (the same records, away from every change), and the iteration durations
// alone. Its arrival is compared with the judge's (the latest SM's, from
// cycles).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/detection.hpp"
#include "core/pooled_detection.hpp"
#include "core/watch/clock_steps.hpp"

namespace latest {

struct JudgeSettings {
  // The pseudo-request: 0.2-2 ms before the change, never before the
  // change ahead of it has arrived.
  double min_request_ms = 0.2, max_request_ms = 2;
  // A calibration stretch keeps this far from any change and lasts at most
  // this long: under a power cap an H100 holds a clock for 0.05-2 ms, so the
  // levels either side are what there is to calibrate on.
  Nanos calibration_gap_ns = 20'000;
  Nanos calibration_ns = 7'000'000;
  Nanos before_request_ns = 2'500'000;   // the window's start before the pseudo-request
  Nanos after_change_ns = 10'000'000;    // and its end after the judged arrival
  std::uint64_t seed = 1;                // of the pseudo-requests: each change's own draw
  PooledSettings pooled;
  DetectionSettings paper;
};

struct JudgedChange {
  int step = 0;  // the card step (steps.csv)
  double before_mhz = 0, after_mhz = 0;
  Nanos request_ns = 0;       // the pseudo-request
  Nanos judge_arrival_ns = 0; // the latest SM's arrival, from cycles
  double judge_uncertainty_ns = 0;
  double target_iteration_ns = 0;  // from the target's calibration
  MeasurementOutcome pooled = MeasurementOutcome::not_captured, paper = MeasurementOutcome::not_captured;
  std::optional<double> pooled_error_ns, paper_error_ns;  // detector's arrival less the judge's
  unsigned pooled_misfits = 0;
  std::vector<double> pooled_sm_errors_ns;  // per SM the pooled detector accepted
  std::string skipped;  // why the change was not judged; empty where it was
};

// Judges every change of `steps` that `sms` hold with room around it.
// `supported` are the card's clocks (for the detectors' tolerances).
std::vector<JudgedChange> judge_detectors(const std::vector<SmRecords>& sms, const std::vector<CardStep>& steps,
                                          const std::vector<Mhz>& supported, std::int64_t iteration_fmas,
                                          double timer_tick_ns, const JudgeSettings& settings);

}  // namespace latest
