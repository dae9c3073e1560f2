#pragma once
// Vocabulary shared by the methodology and the backends.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace latest {

using Mhz = int;
// Host times are CLOCK_MONOTONIC_RAW (or the simulator's virtual clock) in ns;
// GPU times are %globaltimer ns. TimerSync maps one onto the other.
using Nanos = std::int64_t;

struct ClockPair {
  Mhz init = 0;
  Mhz target = 0;
  bool operator==(const ClockPair&) const = default;
  bool increasing() const { return target > init; }
};

// Host-to-GPU time mapping from a ping-pong exchange: gpu = host + offset.
struct TimerSync {
  Nanos offset_ns = 0;
  double uncertainty_ns = 0;  // half the best round trip
  double round_trip_ns = 0;
  Nanos host_ns = 0;          // when it was taken
  Nanos to_gpu(Nanos host) const { return host + offset_ns; }
};

// The GPU time of `host` from synchronisations taken before and after it:
// the offset is interpolated, so a steady drift between the two clocks (6 ppm
// was seen on the H200) cancels.
inline Nanos to_gpu_between(const TimerSync& before, const TimerSync& after, Nanos host) {
  if (after.host_ns <= before.host_ns) return before.to_gpu(host);
  const double f = static_cast<double>(host - before.host_ns) / static_cast<double>(after.host_ns - before.host_ns);
  return host + before.offset_ns + static_cast<Nanos>(f * static_cast<double>(after.offset_ns - before.offset_ns));
}

// One kernel launch: every SM runs `warmup_iterations` unrecorded iterations,
// then `iterations` recorded ones, each `iteration_fmas` dependent FMAs long.
struct WindowSpec {
  std::int64_t iteration_fmas = 0;
  std::int64_t warmup_iterations = 0;
  std::int64_t iterations = 0;
  // SMs a stream records, the rest left to other work (`latest watch`); 0:
  // every SM, one block each, as measurements need.
  int recorded_sms = 0;
};

// Compact per-SM records (8 bytes an iteration): iteration i spans
// [start_i, start_i + duration_ns[i]], and start_{i+1} = start_i + duration_ns[i]
// because one %globaltimer read closes an iteration and opens the next.
struct SmRecords {
  int sm = 0;
  Nanos first_start_ns = 0;
  std::vector<std::uint32_t> duration_ns;
  // clock64() cycles of each iteration: cycles / ns is its effective clock.
  std::vector<std::uint32_t> cycles;
};

struct WindowRecords {
  std::vector<SmRecords> sms;
  std::int64_t bytes = 0;  // what crossed from the device
};

// Known truth of the latest switch, from the simulator or emulated switching,
// on the GPU's time axis (the one measurements use).
struct SwitchTruth {
  SwitchTruth() = default;
  explicit SwitchTruth(double switching, double transition = 0) : switching_ms(switching), transition_ms(transition) {}
  double switching_ms = 0;   // arrival - request
  double transition_ms = 0;  // arrival - departure
  // Emulated switching's delays:
  std::optional<double> delivery_us;      // the host's write to block 0's poll seeing it (PCIe);
  std::optional<double> in_effect_us;     // the switch's time to its being in effect on every SM;
  std::optional<double> flip_bracket_us;  // how closely the host dated its write.
};

// Which GPU a command means, as the user named it. The CLI parses the text;
// each backend resolves the selector its own way.
struct DeviceSelector {
  enum class Kind { index, uuid, bus_id } kind = Kind::index;
  std::string text;  // as given
  int index = 0;     // for Kind::index
  static DeviceSelector by_bus_id(std::string bus_id) { return {Kind::bus_id, std::move(bus_id), 0}; }
};

struct DeviceIdentity {
  std::string name;
  std::string uuid;
  std::string pci_bus_id;
  int index = 0;
  int sm_count = 0;
};

}  // namespace latest
