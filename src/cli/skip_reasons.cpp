#include "cli/skip_reasons.hpp"

#include <fmt/format.h>

namespace latest::cli {

std::string clock_event_reasons_text(unsigned long long raw) {
  // NVML's clocks-event reason bits (nvmlClocksEventReasons*).
  static const std::pair<unsigned long long, const char*> kNames[] = {
      {0x1, "GPU idle"},          {0x2, "application clocks setting"}, {0x4, "software power cap"},
      {0x8, "hardware slowdown"}, {0x10, "sync boost"},                 {0x20, "software thermal slowdown"},
      {0x40, "hardware thermal slowdown"}, {0x80, "hardware power brake"}, {0x100, "display clock setting"}};
  if (raw == 0) return "the driver gave no reason";
  std::string out;
  for (const auto& [bit, name] : kNames)
    if (raw & bit) out += (out.empty() ? "" : ", ") + std::string(name);
  return out.empty() ? fmt::format("reasons 0x{:x}", raw) : out;
}

namespace {

std::string measurement_failure_text(MeasurementOutcome outcome) {
  switch (outcome) {
    case MeasurementOutcome::initial_not_held: return "with the initial clock not held before the request";
    case MeasurementOutcome::not_captured: return "with no switch within the window";
    case MeasurementOutcome::not_confirmed: return "with no lasting change to the target's rate found";
    case MeasurementOutcome::accepted: break;
  }
  return to_string(outcome);
}

}  // namespace

std::string describe(const SkipReason& r) {
  using Code = SkipReason::Code;
  switch (r.code) {
    case Code::none: return {};
    case Code::clock_power_capped:
      return fmt::format("power capping while calibrating {} MHz ({})", r.clock, clock_event_reasons_text(r.raw_reasons));
    case Code::means_indistinguishable:
      return "phase-1 means are not distinguishable (the interval of their difference contains 0)";
    case Code::bands_overlap:
      return fmt::format(
          "the ±2σ bands overlap {:.2f} (limit {:.2f}): an iteration at the initial clock could pass as "
          "arrived; use longer iterations (--iteration-fmas) or --include-inseparable",
          r.value, r.limit);
    case Code::power_capping:
      return fmt::format("power capping: one of the clocks cannot be held ({})", clock_event_reasons_text(r.raw_reasons));
    case Code::not_captured:
      return fmt::format("switch not captured within the longest window ({} ms, --max-capture-ms)", r.value);
    case Code::measurements_failed: {
      std::string text = fmt::format("{} measurements failed after {} tries each, most {}", r.count, r.tries,
                                     measurement_failure_text(r.failure));
      if (r.failure != MeasurementOutcome::not_confirmed) return text;
      if (r.fmas_fixed)
        return text + fmt::format(" at the fixed --iteration-fmas {}: leave it out (such a pair then moves to longer "
                                  "iterations) or fix a longer one",
                                  r.fmas);
      return text + fmt::format(" even at {} FMAs per iteration", r.fmas);
    }
  }
  return to_string(r.code);
}

std::string finer_than_needed(const std::vector<PairCheck>& checks, std::int64_t fixed_fmas) {
  std::size_t finer = 0;
  const PairCheck* most = nullptr;
  for (const PairCheck& c : checks) {
    if (c.skip.skipped() || c.separable_fmas <= fixed_fmas) continue;
    ++finer;
    if (!most || c.separable_fmas > most->separable_fmas) most = &c;
  }
  if (!most) return {};
  return fmt::format(
      "--iteration-fmas {} is finer than the pooled detector needs for {} measured pair{} ({}->{} needs {}): where "
      "the clock's last ramp step is slight their latencies can be early by more than one iteration; leave "
      "--iteration-fmas out to let the tool choose (docs/methodology.md, \"Pairs: validity, separability and the iteration\")",
      fixed_fmas, finer, finer == 1 ? "" : "s", most->pair.init, most->pair.target, most->separable_fmas);
}

std::string crowded_sm_note(int warps) {
  if (warps <= kWarpsShownSound) return {};
  return fmt::format(
      "--warps {}: the recording warp shares its SM with {} others, and from 8 warps on its own iterations slowed "
      "and varied with theirs. On an H100 under emulated switching (docs/decisions/0006-one-warp-per-sm.md) up to {} "
      "warps measured as one did; at 8 a third of the measurements came out 2-58 us late, most stating far less "
      "uncertainty; at 16 and 31 no window passed. Use {} or fewer unless the load is what you study "
      "(docs/methodology.md, \"Records and volume\")",
      warps, warps - 1, kWarpsShownSound, kWarpsShownSound);
}

}  // namespace latest::cli
