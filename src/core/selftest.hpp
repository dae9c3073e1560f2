#pragma once
// `latest selftest` (SPEC §5.2): which clocks it emulates, how its windows
// are set, and its verdict. The latency L is known, so there is no pilot.
#include <cstdint>
#include <optional>
#include <vector>

#include "core/accuracy.hpp"
#include "core/engine.hpp"

namespace latest {

struct SelftestSettings {
  double max_latency_ms = 50;  // the longest L
  int measurements = 100;      // per pair
  std::optional<std::int64_t> iteration_fmas;
  bool save_traces = false;
  Detector detector = Detector::pooled;
  Schedule schedule = Schedule::chained;
};

// The card's own clock (the highest supported) and the supported clock
// nearest half of it.
std::vector<Mhz> default_selftest_clocks(const std::vector<Mhz>& supported);

// Every ordered pair of `clocks`, a fixed number of measurements each, and a
// capture that holds the longest L.
EngineSettings selftest_engine_settings(const std::vector<Mhz>& clocks, const SelftestSettings& settings);

enum class SelftestVerdict { passed, failed, not_evaluated };
// The criterion of Accuracy::within_bound; not evaluated where no
// measurement knows when the switch took effect.
SelftestVerdict selftest_verdict(const Accuracy& accuracy);

}  // namespace latest
