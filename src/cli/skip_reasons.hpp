#pragma once
// A skipped pair's reason in words, naming the options that change it; and
// what a fixed iteration or a crowded SM gives up, naming the way out.
#include <string>
#include <vector>

#include "core/engine.hpp"

namespace latest::cli {

std::string describe(const SkipReason& reason);

// Where a fixed --iteration-fmas is finer than the pooled detector needs for
// some measured pairs (PairCheck::separable_fmas), a note saying how many,
// the one that needs the most, and the way out; empty otherwise.
std::string finer_than_needed(const std::vector<PairCheck>& checks, std::int64_t fixed_fmas);

// The most warps per SM (--warps) whose records were shown to measure as
// one warp's (docs/decisions/0006-one-warp-per-sm.md).
constexpr int kWarpsShownSound = 4;

// Above kWarpsShownSound, a note of what that load did to the records where
// it was measured, and the way out; empty otherwise.
std::string crowded_sm_note(int warps);

// NVML's clock-event reason bits in words ("software power cap, ...").
std::string clock_event_reasons_text(unsigned long long raw);

}  // namespace latest::cli
