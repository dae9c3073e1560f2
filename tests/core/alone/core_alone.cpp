// Links latest_core alone: calibrates two clocks from made-up records and
// finds a switch 2 ms after the request, as the engine would.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/calibration.hpp"
#include "core/detection.hpp"

using namespace latest;

namespace {

// One SM's records: `before` iterations of `from` ns, then `to` ns ones.
SmRecords records(int sm, int before, std::uint32_t from, int after, std::uint32_t to) {
  SmRecords r;
  r.sm = sm;
  r.first_start_ns = 1'000'000;
  for (int i = 0; i < before; ++i) r.duration_ns.push_back(from + (i % 2) * 32);
  for (int i = 0; i < after; ++i) r.duration_ns.push_back(to + (i % 2) * 32);
  return r;
}

WindowRecords steady(std::uint32_t ns) {
  WindowRecords w;
  for (int sm = 0; sm < 4; ++sm) w.sms.push_back(records(sm, 4000, ns, 0, ns));
  return w;
}

}  // namespace

int main() {
  const ClockCalibration fast = calibrate_from_records(1980, 1024, steady(2368), 32);
  const ClockCalibration slow = calibrate_from_records(990, 1024, steady(4736), 32);
  WindowRecords window;
  // 1000 fast iterations (2.384 ms on average) from 1 ms on; the request at 1.384 ms.
  for (int sm = 0; sm < 4; ++sm) window.sms.push_back(records(sm, 1000, 2368, 2000, 4736));
  const Nanos request = 1'000'000 + 2'384'000 - 2'000'000;
  DetectionSettings settings;
  const Measurement m = detect_switch(window, request, fast, slow, settings);
  std::printf("outcome %s, switching latency %.4f ms on %d SMs\n", to_string(m.outcome), m.switching_ms,
              m.accepted_sms);
  // The first clean target iteration ends one target iteration after the change.
  const double expected_ms = 2.0 + 4.736 / 1e3;
  const bool ok = m.outcome == MeasurementOutcome::accepted && m.accepted_sms == 4 &&
                  std::abs(m.switching_ms - expected_ms) < 1e-6;
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
