#pragma once
// The paper's detector (SPEC §3.3), kept for comparison (`--detector
// paper`): per SM, when did the iterations stop looking like the initial
// clock (departure) and when were they confirmed at the target clock
// (arrival); then the maximum over all SMs. The default detector is the
// pooled one (pooled_detection.hpp); both fill a Measurement.
#include <string>
#include <vector>

#include "core/calibration.hpp"
#include "core/types.hpp"

namespace latest {

struct DetectionSettings {
  // Iterations after the candidate whose mean is tested against the target.
  std::int64_t confirmation_iterations = 500;
  // A candidate with fewer iterations after it than this is "not captured".
  std::int64_t min_confirmation_iterations = 100;
  // Iterations before t_s checked against the initial clock (0: no check).
  std::int64_t precheck_iterations = 200;
  // Candidates tested per SM before giving up on it; bounds host time when
  // the bands overlap.
  int max_candidates = 64;
  // Departure (t_d) is the start of the first run of this many consecutive
  // iterations beyond the initial band on the target's side.
  int departure_window = 8;
  double confidence = 0.95;
  // |mean difference| below which a confirmation passes even when the
  // interval excludes 0: half the distance to the nearest other clock.
  double target_tol_ns = 0;
  double initial_tol_ns = 0;
};

enum class SmOutcome {
  accepted,
  initial_not_held,     // the iterations before t_s were not at the initial clock
  no_candidate,         // no iteration after t_s fell in the target band
  short_confirmation,   // the candidate came too close to the window's end
  confirmation_failed,  // every candidate failed the confirmation test
};
const char* to_string(SmOutcome outcome);

struct SmDetection {
  int sm = 0;
  SmOutcome outcome = SmOutcome::no_candidate;
  Nanos arrival_ns = 0;    // t_e, GPU time
  Nanos departure_ns = 0;  // t_d, GPU time
};

// The paper detector's test whether durations[from, to) hold `band`: their
// mean within `tol_ns` of the band's, or not told apart from it at
// `confidence` (Welch). The candidates of one SM test stretches that slide
// forward, so exact integer sums are kept as they slide, and where they
// decide clearly (by far more than any rounding) a test costs O(1); else the
// running mean and variance over the stretch decide, as they always did.
// The running moments over each failing candidate's confirmation stretch
// were most of the host time on close pairs (docs/methodology.md).
class BandTest {
 public:
  __extension__ using Wide = __int128;
  explicit BandTest(const std::vector<std::uint32_t>& durations) : d_(durations) {}
  bool holds(std::size_t from, std::size_t to, const Band& band, double tol_ns, double confidence);

 private:
  const std::vector<std::uint32_t>& d_;
  std::size_t from_ = 0, to_ = 0;  // the stretch the sums are over
  std::int64_t sum_ = 0;
  Wide squares_ = 0;
};

SmDetection detect_on_sm(const SmRecords& sm, Nanos request_gpu_ns, const Band& initial,
                         const Band& target, const DetectionSettings& settings);

enum class MeasurementOutcome { accepted, initial_not_held, not_captured, not_confirmed };
const char* to_string(MeasurementOutcome outcome);

// Which detector's numbers a run reports; both always run on the same records.
enum class Detector { pooled, paper };
const char* to_string(Detector detector);

// Records that do not fit the model the detector assumes (a clean ramp of
// one rate after another, the same for every SM). A measurement with any is
// still reported; its flags and traces let a user show us the card.
enum class Misfit : unsigned {
  stall = 1u << 0,         // every SM halted just before the change, 1 µs or more
  non_monotone = 1u << 1,  // the rate went past the target before it settled
  sms_disagree = 1u << 2,  // SMs changed far apart, the latest few 1 µs after the rest, or some halted
};
constexpr Misfit kMisfits[] = {Misfit::stall, Misfit::non_monotone, Misfit::sms_disagree};
const char* to_string(Misfit misfit);

struct Measurement {
  MeasurementOutcome outcome = MeasurementOutcome::not_captured;
  double switching_ms = 0;    // request to arrival (paper: max over accepted SMs of t_e - t_s)
  double transition_ms = 0;   // departure to arrival
  double uncertainty_us = 0;  // the detector's own, without the timer sync's
  int accepted_sms = 0;
  int max_sm = -1;            // the SM that set switching_ms
  double sm_spread_ms = 0;    // max - min of t_e over accepted SMs
  unsigned misfits = 0;       // Misfit bits (the pooled detector's)
  std::vector<SmDetection> per_sm;
};

Measurement detect_switch(const WindowRecords& records, Nanos request_gpu_ns,
                          const ClockCalibration& initial, const ClockCalibration& target,
                          const DetectionSettings& settings);

}  // namespace latest
