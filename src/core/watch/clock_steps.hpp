#pragma once
// The judge of the card's own clock changes (docs/methodology.md, "Watching
// the card's own clock"). An SM's clock64() cycles over %globaltimer
// nanoseconds are its clock; over a stretch of iterations the sum of cycles
// over the sum of nanoseconds is exact but for one timer tick at each end,
// so a level held for a millisecond is known to a fraction of a MHz. The
// records of each SM are cut into levels (binary segmentation on those
// sums), levels closer than a clock step are merged, short levels between
// monotone neighbours make a ramp, and each change is placed where the
// cycles' total says the clock left one level for the next.
#include <cstdint>
#include <optional>
#include <vector>

#include "core/types.hpp"

namespace latest {

struct StepSettings {
  // Levels closer than this are one clock: half the 15 MHz step of the
  // cards' clock tables.
  double min_step_mhz = 7.5;
  // Significance of a cut: millions of boundaries are scanned per SM.
  double z = 8;
  std::int64_t min_level_iterations = 4;
  // A level held shorter than this, between a higher and a lower one, is a
  // step of a ramp rather than a clock of its own.
  Nanos ramp_level_ns = 1'000'000;
  // SM changes in one direction, each this close in time to the one
  // before, are one change of the card. An H100 under a power cap changes
  // its clock every 25 us to 2 ms, its SMs within a few us of each other
  // (docs/hardware.md).
  Nanos card_window_ns = 20'000;
  double timer_tick_ns = 32;
};

// One change of one SM's clock, on the GPU's time axis.
struct SmStep {
  int sm = 0;
  // Where the clock left the level before (departure) and reached the level
  // after (arrival); equal for a jump within one iteration.
  Nanos departure_ns = 0;
  Nanos arrival_ns = 0;
  double departure_uncertainty_ns = 0;
  double arrival_uncertainty_ns = 0;
  double before_mhz = 0;
  double after_mhz = 0;
  std::vector<double> ramp_levels_mhz;  // the levels in between; empty for a jump
  // How long the level before had held, and how long the level after holds;
  // empty where the records begin or end first.
  std::optional<Nanos> held_before_ns;
  std::optional<Nanos> holds_ns;
  bool jump() const { return ramp_levels_mhz.empty(); }
};

// One change of the card: the same change seen on each recorded SM.
struct CardStep {
  std::vector<SmStep> sms;   // by arrival
  std::vector<int> groups;   // per entry of `sms`: SMs that changed together share a number
  Nanos arrival_ns() const;  // the median SM's
  Nanos spread_ns() const;   // the latest SM's arrival less the earliest's
  double before_mhz() const; // medians over the SMs
  double after_mhz() const;
};

// A level of one SM's clock: iterations [first, end) of its records.
struct ClockLevel {
  std::int64_t first = 0;
  std::int64_t end = 0;
  double mhz = 0;
};

// An SM's records cut into levels of its clock, each differing from its
// neighbours by at least the settings' step.
std::vector<ClockLevel> find_levels(const SmRecords& records, const StepSettings& settings);

// The changes between an SM's levels (find_levels'), jumps and ramps, each
// placed and dated.
std::vector<SmStep> steps_between(const SmRecords& records, const std::vector<ClockLevel>& levels,
                                  const StepSettings& settings);
inline std::vector<SmStep> find_sm_steps(const SmRecords& records, const StepSettings& settings) {
  return steps_between(records, find_levels(records, settings), settings);
}

// SM changes grouped into changes of the card, in time order.
std::vector<CardStep> group_card_steps(std::vector<SmStep> steps, const StepSettings& settings);

}  // namespace latest
