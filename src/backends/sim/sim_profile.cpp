#include "backends/sim/sim_profile.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "core/error.hpp"

namespace latest::sim {
namespace {

std::vector<Mhz> clock_range(Mhz low, Mhz high, Mhz step) {
  std::vector<Mhz> clocks;
  for (Mhz f = low; f <= high; f += step) clocks.push_back(f);
  return clocks;
}

// A fixed uniform number in [0, 1) per (profile, salt, a, b): the card's own
// character, identical in every run.
double card_uniform(const std::string& profile, std::uint64_t salt, int a, int b) {
  std::uint64_t x = 0xCBF29CE484222325ULL;  // FNV-1a: stable across compilers
  for (char c : profile) x = (x ^ static_cast<unsigned char>(c)) * 0x100000001B3ULL;
  x ^= salt * 0x9E3779B97F4A7C15ULL;
  x ^= static_cast<std::uint64_t>(a) * 0xBF58476D1CE4E5B9ULL;
  x ^= static_cast<std::uint64_t>(b) * 0x94D049BB133111EBULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  x ^= x >> 31;
  return static_cast<double>(x >> 11) * 0x1.0p-53;
}

// Adds 1–4 extra clusters above the main one for a share of pairs (Fig. 5).
void add_side_clusters(const std::string& p, ClockPair pair, double share, double max_factor,
                       PairLatencyModel& m) {
  if (card_uniform(p, 11, pair.init, pair.target) >= share) return;
  const double main = m.clusters.front().center_ms;
  const int extra = 1 + static_cast<int>(card_uniform(p, 12, pair.init, pair.target) * 4);
  for (int k = 0; k < extra; ++k) {
    const double factor = 1.4 + (max_factor - 1.4) * card_uniform(p, 13 + k, pair.init, pair.target);
    const double weight = 0.05 + 0.25 * card_uniform(p, 20 + k, pair.init, pair.target);
    m.clusters.push_back({weight, main * factor, main * factor * 0.03});
  }
}

PairLatencyModel hopper_model(const std::string& p, ClockPair pair) {
  // Target clock dominates (Fig. 3 rows): most targets switch in 5–11 ms,
  // about one in eight is slow (20–140 ms best case, Table II).
  PairLatencyModel m;
  const double ut = card_uniform(p, 1, 0, pair.target);
  double base = 4.9 + 6.0 * ut * ut;
  if (card_uniform(p, 2, 0, pair.target) < 0.12) base = 20 + 120 * card_uniform(p, 3, 0, pair.target);
  base *= 1 + 0.1 * card_uniform(p, 4, pair.init, pair.target);
  m.clusters.push_back({1, base, base * 0.03});
  add_side_clusters(p, pair, 0.15, 4.0, m);
  // Table II's named GH200 pairs.
  if (pair == ClockPair{1095, 1260}) m.clusters.push_back({0.06, 470, 5});
  if (pair == ClockPair{1980, 1605}) m.clusters = {{1, 5.3, 0.08}};
  if (pair == ClockPair{1665, 1935}) m.clusters = {{1, 5.1, 0.1}};
  m.outlier_probability = 0.01;
  m.outlier_max_factor = 3;
  m.transition_fraction = 0.05 + 0.25 * card_uniform(p, 5, pair.init, pair.target);
  return m;
}

PairLatencyModel a100_model(const std::string& p, ClockPair pair) {
  // Decreases are fast and tight, increases slower (Fig. 4b).
  PairLatencyModel m;
  const double u = card_uniform(p, 1, pair.init, pair.target);
  const double base = pair.increasing() ? 12.0 + 9.0 * card_uniform(p, 2, 0, pair.target) + u
                                        : 4.4 + 1.4 * u;
  m.clusters.push_back({1, base, base * 0.02});
  add_side_clusters(p, pair, 0.04, 2.5, m);
  if (pair == ClockPair{1125, 795}) m.clusters.push_back({0.05, 22.0, 0.3});
  m.outlier_probability = 0.005;
  m.outlier_max_factor = 1.5;
  m.transition_fraction = 0.1 + 0.2 * card_uniform(p, 5, pair.init, pair.target);
  return m;
}

PairLatencyModel turing_model(const std::string& p, ClockPair pair) {
  // Wide and unpredictable: 0.5–350 ms, many pairs with several clusters.
  PairLatencyModel m;
  const double ut = card_uniform(p, 1, 0, pair.target);
  const double base = std::exp(std::log(2.0) + 4.6 * ut) * (1 + 0.2 * card_uniform(p, 4, pair.init, pair.target));
  m.clusters.push_back({1, base, base * 0.05});
  add_side_clusters(p, pair, 0.30, 2.5, m);
  if (pair == ClockPair{930, 990}) m.clusters = {{1, 200, 6}, {0.3, 345, 3}};
  if (pair == ClockPair{1650, 1560}) m.clusters = {{0.3, 0.6, 0.03}, {1, 12.5, 0.3}};
  m.outlier_probability = 0.02;
  m.outlier_max_factor = 1.8;
  m.transition_fraction = 0.05 + 0.3 * card_uniform(p, 5, pair.init, pair.target);
  return m;
}

std::map<std::string, SimProfile> make_profiles() {
  std::map<std::string, SimProfile> profiles;
  SimProfile h200;
  h200.name = "h200";
  h200.device_name = "Simulated NVIDIA H200";
  h200.sm_count = 132;
  h200.clocks = clock_range(345, 1980, 15);
  h200.memory_mhz = 3201;
  profiles[h200.name] = h200;

  SimProfile gh200 = h200;
  gh200.name = "gh200";
  gh200.device_name = "Simulated NVIDIA GH200";
  gh200.memory_mhz = 2619;
  profiles[gh200.name] = gh200;

  SimProfile a100;
  a100.name = "a100";
  a100.device_name = "Simulated NVIDIA A100-SXM4";
  a100.sm_count = 108;
  a100.clocks = clock_range(210, 1410, 15);
  a100.memory_mhz = 1215;
  a100.idle_power_w = 55;
  a100.max_power_w = 380;  // rated 400 W
  a100.noise.slow_iteration_probability = 1e-5;
  a100.sm_groups = 7;
  profiles[a100.name] = a100;

  SimProfile rtx;
  rtx.name = "rtx6000";
  rtx.device_name = "Simulated Quadro RTX 6000";
  rtx.sm_count = 72;
  rtx.clocks = clock_range(300, 2100, 15);
  rtx.memory_mhz = 7001;
  rtx.idle_power_w = 35;
  rtx.max_power_w = 240;  // rated 260 W
  rtx.noise.slow_iteration_probability = 5e-5;
  rtx.noise.jitter_sd_ns = 8;
  rtx.sm_groups = 6;
  profiles[rtx.name] = rtx;
  return profiles;
}

const std::map<std::string, SimProfile>& profiles() {
  static const auto all = make_profiles();
  return all;
}

}  // namespace

const char* to_string(RampShape shape) {
  switch (shape) {
    case RampShape::four_steps: return "four-steps";
    case RampShape::steps: return "steps";
    case RampShape::linear: return "linear";
    case RampShape::overshoot: return "overshoot";
    case RampShape::stall: return "stall";
    case RampShape::slow_approach: return "slow-approach";
  }
  return "?";
}

RampShape ramp_shape_named(const std::string& name) {
  std::vector<std::string> names;
  for (RampShape shape : kRampShapes) {
    if (name == to_string(shape)) return shape;
    names.emplace_back(to_string(shape));
  }
  throw Error(ErrorKind::bad_argument, fmt::format("unknown ramp shape '{}'", name),
              fmt::format("choose one of: {}", fmt::join(names, ", ")));
}

PairLatencyModel SimProfile::latency_model(ClockPair pair, int card) const {
  // h200 borrows the GH200 model: no H200 latencies are published.
  PairLatencyModel m = name == "h200" || name == "gh200" ? hopper_model("gh200", pair)
                       : name == "a100"                  ? a100_model(name, pair)
                                                         : turing_model(name, pair);
  if (card > 0) {
    const double factor = 1 + card_variation * (card_uniform(name, 40 + static_cast<std::uint64_t>(card), pair.init, pair.target) - 0.5);
    for (auto& c : m.clusters) {
      c.center_ms *= factor;
      c.sd_ms *= factor;
    }
  }
  return m;
}

const SimProfile& profile_named(const std::string& name) {
  const auto& all = profiles();
  auto it = all.find(name);
  if (it == all.end())
    throw Error(ErrorKind::bad_argument, fmt::format("unknown simulator profile '{}'", name),
                fmt::format("choose one of: {}", fmt::join(profile_names(), ", ")));
  return it->second;
}

std::vector<std::string> profile_names() {
  std::vector<std::string> names;
  for (const auto& [name, _] : profiles()) names.push_back(name);
  return names;
}

}  // namespace latest::sim
