#include "cli/skip_reasons.hpp"

#include <fmt/format.h>

namespace latest::cli {

std::string describe(const SkipReason& r) {
  using Code = SkipReason::Code;
  switch (r.code) {
    case Code::none: return {};
    case Code::clock_power_capped:
      return fmt::format("power capping while calibrating {} MHz (reasons 0x{:x})", r.clock, r.raw_reasons);
    case Code::means_indistinguishable:
      return "phase-1 means are not distinguishable (the interval of their difference contains 0)";
    case Code::bands_overlap:
      return fmt::format(
          "the ±2σ bands overlap {:.2f} (limit {:.2f}): an iteration at the initial clock could pass as "
          "arrived; use longer iterations (--iteration-fmas) or --include-inseparable",
          r.value, r.limit);
    case Code::power_capping: return "power capping: one of the clocks cannot be held";
    case Code::not_captured:
      return fmt::format("switch not captured within the longest window ({} ms, --max-capture-ms)", r.value);
    case Code::measurements_failed:
      return fmt::format("{} measurements failed after {} tries each", r.count, r.tries);
  }
  return to_string(r.code);
}

}  // namespace latest::cli
