#include "core/calibration.hpp"

#include <algorithm>
#include <cmath>

namespace latest {
namespace {

Band band_from(const MomentAccumulator& acc, double sd_floor,
               const std::vector<const SmRecords*>& sms) {
  Band band;
  band.iteration = acc.moments();
  band.iteration.sd = std::max(band.iteration.sd, sd_floor);
  std::int64_t outside = 0, total = 0;
  for (const SmRecords* sm : sms) {
    for (std::uint32_t d : sm->duration_ns) {
      outside += band.contains(d) ? 0 : 1;
      ++total;
    }
  }
  band.outside_fraction = total > 0 ? static_cast<double>(outside) / static_cast<double>(total) : 0.0;
  return band;
}

}  // namespace

ClockCalibration calibrate_from_records(Mhz mhz, std::int64_t iteration_fmas,
                                        const WindowRecords& records, double timer_tick_ns) {
  ClockCalibration cal;
  cal.mhz = mhz;
  cal.iteration_fmas = iteration_fmas;
  const double sd_floor = kSdFloorTicks * timer_tick_ns;
  int max_sm = -1;
  for (const auto& sm : records.sms) max_sm = std::max(max_sm, sm.sm);
  cal.per_sm.resize(static_cast<std::size_t>(max_sm + 1));
  MomentAccumulator pooled;
  std::vector<const SmRecords*> all;
  for (const auto& sm : records.sms) {
    MomentAccumulator acc;
    for (std::uint32_t d : sm.duration_ns) {
      acc.add(d);
      pooled.add(d);
    }
    cal.per_sm[static_cast<std::size_t>(sm.sm)] = band_from(acc, sd_floor, {&sm});
    all.push_back(&sm);
  }
  cal.pooled = band_from(pooled, sd_floor, all);
  double cycles = 0, ns = 0;
  for (const auto& sm : records.sms) {
    if (sm.cycles.size() != sm.duration_ns.size()) continue;
    for (std::size_t i = 0; i < sm.cycles.size(); ++i) {
      cycles += sm.cycles[i];
      ns += sm.duration_ns[i];
    }
  }
  cal.effective_mhz = ns > 0 ? cycles / ns * 1000.0 : 0.0;
  return cal;
}

}  // namespace latest
