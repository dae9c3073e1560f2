#pragma once
// Phase 1 results: per clock, the iteration-duration statistics per SM and
// pooled, and the wake-up time.
#include <optional>
#include <vector>

#include "core/statistics.hpp"
#include "core/types.hpp"

namespace latest {

// The ±2σ band an SM's iterations fall in at one clock.
struct Band {
  Moments iteration;          // duration statistics, ns
  double outside_fraction = 0;  // share of calibration iterations outside ±2σ
  double low() const { return iteration.mean - 2 * iteration.sd; }
  double high() const { return iteration.mean + 2 * iteration.sd; }
  bool contains(double duration_ns) const { return low() <= duration_ns && duration_ns <= high(); }
};

struct ClockCalibration {
  Mhz mhz = 0;
  std::int64_t iteration_fmas = 0;
  Band pooled;
  std::vector<Band> per_sm;  // indexed by SM; n == 0 where the SM gave too few
  std::optional<double> wakeup_ms;  // request to arrival, from the first kernel
  double effective_mhz = 0;         // clock64 cycles over %globaltimer ns, all SMs (0: no cycles)
  // SMs that gave fewer than this many iterations fall back to the pooled band.
  static constexpr std::int64_t min_sm_samples = 100;
  const Band& band_for(int sm) const {
    if (sm >= 0 && static_cast<std::size_t>(sm) < per_sm.size() &&
        per_sm[sm].iteration.n >= min_sm_samples)
      return per_sm[sm];
    return pooled;
  }
};

// One iteration's reading is the difference of two timer reads, each cut to
// the tick, so it can sit a tick away from the clock's usual values however
// steady the clock is. When the true duration is close to a whole number of
// ticks such flips are rare in calibration (small σ) yet come in bursts of
// tens of iterations whenever the phase sits on a tick edge, as after a
// switch. So σ is floored at 0.75 tick: the ±2σ band is at least ±1.5 ticks.
inline constexpr double kSdFloorTicks = 0.75;

// Builds the bands of one clock from a window's records, with σ floored as
// above.
ClockCalibration calibrate_from_records(Mhz mhz, std::int64_t iteration_fmas,
                                        const WindowRecords& records, double timer_tick_ns);

}  // namespace latest
