#include "core/watch/detector_judge.hpp"

#include <algorithm>
#include <cmath>

#include "core/calibration.hpp"
#include "core/planner.hpp"
#include "core/watch/watch.hpp"

namespace latest {
namespace {

// A draw in [0, 1) of its own for each change: the same change gets the
// same pseudo-request from the whole recording and from its saved window.
double uniform_for(std::uint64_t seed, int step) {
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ULL * static_cast<std::uint64_t>(step + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

WindowRecords slice_all(const std::vector<SmRecords>& sms, Nanos from, Nanos to) {
  WindowRecords w;
  for (const SmRecords& r : sms) w.sms.push_back(slice_records(r, from, to));
  return w;
}

Mhz nearest_clock(double mhz, const std::vector<Mhz>& supported) {
  if (supported.empty()) return static_cast<Mhz>(std::lround(mhz));
  return *std::min_element(supported.begin(), supported.end(),
                           [&](Mhz a, Mhz b) { return std::abs(a - mhz) < std::abs(b - mhz); });
}

// Every SM has at least this many iterations in each stretch and window.
constexpr std::size_t kMinIterations = 100;

bool enough(const WindowRecords& w) {
  return !w.sms.empty() && std::all_of(w.sms.begin(), w.sms.end(), [](const SmRecords& r) {
    return r.duration_ns.size() >= kMinIterations;
  });
}

void compare(const Measurement& m, const CardStep& step, JudgedChange& j, bool pooled) {
  if (m.outcome != MeasurementOutcome::accepted) return;
  const double arrival = static_cast<double>(j.request_ns) + m.switching_ms * 1e6;
  const double error = arrival - static_cast<double>(j.judge_arrival_ns);
  (pooled ? j.pooled_error_ns : j.paper_error_ns) = error;
  if (!pooled) return;
  for (const SmDetection& d : m.per_sm) {
    if (d.outcome != SmOutcome::accepted) continue;
    for (const SmStep& s : step.sms)
      if (s.sm == d.sm) j.pooled_sm_errors_ns.push_back(static_cast<double>(d.arrival_ns - s.arrival_ns));
  }
}

Nanos first_departure(const CardStep& step) {
  Nanos t = step.sms.front().departure_ns;
  for (const SmStep& sm : step.sms) t = std::min(t, sm.departure_ns);
  return t;
}

// Where the change's pseudo-request and records may lie: after the change
// before it has arrived everywhere, before the next one departs anywhere.
struct Room {
  Nanos from = 0, to = 0;
};

Room room_around(const std::vector<SmRecords>& sms, const std::vector<CardStep>& steps, std::size_t k) {
  Room r{sms.front().first_start_ns, INT64_MAX};
  if (k > 0) r.from = steps[k - 1].arrival_ns();
  if (k + 1 < steps.size()) r.to = first_departure(steps[k + 1]);
  return r;
}

JudgedChange judge_one(const std::vector<SmRecords>& sms, const std::vector<CardStep>& steps, std::size_t k,
                       const std::vector<Mhz>& supported, std::int64_t fmas, double tick, const JudgeSettings& s) {
  const CardStep& step = steps[k];
  JudgedChange j;
  j.step = static_cast<int>(k);
  j.before_mhz = step.before_mhz();
  j.after_mhz = step.after_mhz();
  const Nanos departure = first_departure(step);
  for (const SmStep& sm : step.sms)
    if (sm.arrival_ns >= j.judge_arrival_ns) j.judge_arrival_ns = sm.arrival_ns, j.judge_uncertainty_ns = sm.arrival_uncertainty_ns;
  if (step.sms.size() != sms.size()) return j.skipped = "not every recorded SM took it", j;
  // The calibrations come from the levels held either side, a gap away from
  // this change and its neighbours; the window ends before the next change.
  const Room room = room_around(sms, steps, k);
  const Nanos held_before = departure - room.from;
  if (held_before < static_cast<Nanos>(1e6 * s.min_request_ms))
    return j.skipped = "held too briefly before it for a pseudo-request", j;
  const double latest_request_ms = std::min(s.max_request_ms, 1e-6 * static_cast<double>(held_before));
  j.request_ns = departure - static_cast<Nanos>(1e6 * (s.min_request_ms + (latest_request_ms - s.min_request_ms) *
                                                                            uniform_for(s.seed, j.step)));
  const Nanos initial_from = std::max(room.from + s.calibration_gap_ns, departure - s.calibration_gap_ns - s.calibration_ns);
  const Nanos target_to = std::min(room.to - s.calibration_gap_ns, j.judge_arrival_ns + s.calibration_gap_ns + s.calibration_ns);
  const WindowRecords initial = slice_all(sms, initial_from, departure - s.calibration_gap_ns);
  const WindowRecords target = slice_all(sms, j.judge_arrival_ns + s.calibration_gap_ns, target_to);
  const WindowRecords window = slice_all(sms, std::max(room.from, j.request_ns - s.before_request_ns),
                                         std::min(room.to, j.judge_arrival_ns + s.after_change_ns));
  if (!enough(initial) || !enough(target) || !enough(window))
    return j.skipped = "held too briefly either side for calibrations", j;
  const ClockCalibration ci = calibrate_from_records(nearest_clock(j.before_mhz, supported), fmas, initial, tick);
  const ClockCalibration ct = calibrate_from_records(nearest_clock(j.after_mhz, supported), fmas, target, tick);
  j.target_iteration_ns = ct.pooled.iteration.mean;
  DetectionSettings det = s.paper;
  det.initial_tol_ns = neighbour_tolerance_ns(ci.mhz, ci.pooled.iteration.mean, supported);
  det.target_tol_ns = neighbour_tolerance_ns(ct.mhz, ct.pooled.iteration.mean, supported);
  const Measurement paper = detect_switch(window, j.request_ns, ci, ct, det);
  const Measurement pooled =
      detect_switch_pooled(window, j.request_ns, ci, ct, det.initial_tol_ns, det.target_tol_ns, s.pooled);
  j.paper = paper.outcome;
  j.pooled = pooled.outcome;
  j.pooled_misfits = pooled.misfits;
  compare(paper, step, j, false);
  compare(pooled, step, j, true);
  return j;
}

}  // namespace

std::vector<JudgedChange> judge_detectors(const std::vector<SmRecords>& sms, const std::vector<CardStep>& steps,
                                          const std::vector<Mhz>& supported, std::int64_t fmas, double tick,
                                          const JudgeSettings& s) {
  std::vector<JudgedChange> out;
  for (std::size_t k = 0; k < steps.size(); ++k) out.push_back(judge_one(sms, steps, k, supported, fmas, tick, s));
  return out;
}

}  // namespace latest
