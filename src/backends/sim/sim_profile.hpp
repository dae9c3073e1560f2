#pragma once
// Modelled cards for the simulated GPU: clock tables, iteration noise and a
// latency model per (initial, target) pair, shaped after the paper's Tables
// I–II and Figs. 4–6 and the H200 readings in SPEC §4.
#include <array>
#include <iterator>
#include <string>
#include <vector>

#include "core/types.hpp"

namespace latest::sim {

struct LatencyCluster {
  double weight = 1;     // relative share of switches
  double center_ms = 0;
  double sd_ms = 0;
};

// How long one pair's switches take on the modelled card.
struct PairLatencyModel {
  std::vector<LatencyCluster> clusters;
  double outlier_probability = 0;   // a switch far above the clusters
  double outlier_max_factor = 3;    // outliers land in (max center, factor * max center]
  double transition_fraction = 0.2; // transition = this share of the switch (ramp)
};

struct NoiseModel {
  double cycles_per_fma = 4;       // dependent FMA latency
  double overhead_cycles = 590;    // loop, timer reads and store per iteration
  double sm_overhead_spread = 8;   // per-SM extra cycles, uniform in [0, spread)
  double jitter_sd_ns = 5;         // timer read jitter, before the tick quantises it
  double slow_iteration_probability = 0;  // interrupts and the like
  double slow_iteration_factor = 1.5;
};

// How the clock walks from departure to arrival (docs/methodology.md,
// "Simulator"). Whatever the shape, the clock is at the target for good from
// the arrival on.
enum class RampShape {
  four_steps,     // four equal steps, evenly spaced (the default)
  steps,          // 1 to 8 equal steps
  linear,         // many small steps
  overshoot,      // past the target (above or below), settling at arrival
  stall,          // SMs halted a few µs while the clock relocks, just before arrival
  slow_approach,  // the last step small and long
};
constexpr RampShape kRampShapes[] = {RampShape::four_steps, RampShape::steps, RampShape::linear, RampShape::overshoot, RampShape::stall,
                                     RampShape::slow_approach};
const char* to_string(RampShape shape);
RampShape ramp_shape_named(const std::string& name);  // throws Error(bad_argument)

struct SimProfile {
  std::string name;
  std::string device_name;
  int sm_count = 0;
  std::vector<Mhz> clocks;  // ascending
  Mhz memory_mhz = 0;
  double timer_tick_ns = 32;
  // Each switch draws its ramp shape with these weights (kRampShapes' order).
  // By default four equal steps: the harder shapes still miss the pooled
  // bounds on a few pairs of twelve seeds (docs/methodology.md, "The simulator"),
  // so they are chosen with --sim-ramp and forced one by one in the tests.
  std::array<double, std::size(kRampShapes)> ramp_shape_weights = {1, 0, 0, 0, 0, 0};
  int sm_groups = 8;                // GPCs: SMs of one group take a clock change together
  double max_group_skew_ns = 2000;  // per switch, each group follows the clock up to this late
  NoiseModel noise;
  // Board power at idle and at the top clock under our load (the card's
  // rated limit bounds the latter).
  double idle_power_w = 90, max_power_w = 590;
  double call_latency_min_ms = 0.15;  // t_r - t_s of the set-clock call
  double call_latency_max_ms = 0.5;
  // Cards of one model differ (the paper's variability): each card but the
  // first scales a pair's latencies by a factor fixed per card and pair,
  // uniform within ±card_variation / 2.
  double card_variation = 0.12;
  // The card itself, fixed per profile and card (the run's --seed only
  // draws from it). Card 0 is the profile's own.
  PairLatencyModel latency_model(ClockPair pair, int card = 0) const;
};

const SimProfile& profile_named(const std::string& name);  // throws Error(usage)
std::vector<std::string> profile_names();

}  // namespace latest::sim
