#pragma once
// Modelled cards for the simulated GPU: clock tables, iteration noise and a
// latency model per (initial, target) pair, shaped after the paper's Tables
// I–II and Figs. 4–6 and the H200 readings in SPEC §4.
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

struct SimProfile {
  std::string name;
  std::string device_name;
  int sm_count = 0;
  std::vector<Mhz> clocks;  // ascending
  Mhz memory_mhz = 0;
  double timer_tick_ns = 32;
  NoiseModel noise;
  double call_latency_min_ms = 0.15;  // t_r - t_s of the set-clock call
  double call_latency_max_ms = 0.5;
  // The card itself, fixed per profile (the run's --seed only draws from it).
  PairLatencyModel latency_model(ClockPair pair) const;
};

const SimProfile& profile_named(const std::string& name);  // throws Error(usage)
std::vector<std::string> profile_names();

}  // namespace latest::sim
