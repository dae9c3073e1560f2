#pragma once
// A skipped pair's reason in words, naming the options that change it.
#include <string>

#include "core/engine.hpp"

namespace latest::cli {

std::string describe(const SkipReason& reason);

// NVML's clock-event reason bits in words ("software power cap, ...").
std::string clock_event_reasons_text(unsigned long long raw);

}  // namespace latest::cli
