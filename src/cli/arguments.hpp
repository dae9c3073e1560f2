#pragma once
// Turning command-line text into clocks and pairs, with messages that name
// the problem and its fix (exit code 2).
#include <string>
#include <vector>

#include "core/detection.hpp"
#include "core/types.hpp"

namespace latest::cli {

// "a,b,c" -> {"a", "b", "c"}, spaces dropped (an empty text is one empty item).
std::vector<std::string> split(const std::string& text, char sep);

// --measure-route: at least two clocks in the order a runtime requests them,
// none twice in a row, not ending where it starts (the syntax alone).
std::vector<Mhz> parse_route(const std::string& text);

// --freq: clocks in MHz ("600,900,1200"), ranges of the supported clocks
// ("600:1500", also mixed with clocks), or "all" (every supported clock).
// Rejects non-numbers, unsupported clocks (naming the nearest), ranges with
// no supported clock, a clock listed twice and fewer than two clocks.
std::vector<Mhz> parse_clock_list(const std::string& text, const std::vector<Mhz>& supported);
// The syntax alone, before any device is opened.
void check_clock_syntax(const std::string& text);

// Every requested clock must be supported; the message names the nearest
// supported ones.
void check_supported(const std::vector<Mhz>& clocks, const std::vector<Mhz>& supported);

// --pairs: all | increasing | decreasing | INIT:TARGET[,INIT:TARGET...]
// Explicit pairs must use clocks from `clocks`.
std::vector<ClockPair> resolve_pairs(const std::string& selection, const std::vector<Mhz>& clocks);

// --detector: pooled (the default) or paper.
Detector parse_detector(const std::string& text);

// Why an --output directory cannot be written: it is a file, or not writable.
std::string unwritable_output(const std::string& path);

// --output's placeholders, per GPU: %h host, %u GPU UUID, %i GPU index, %j
// the Slurm job id (SLURM_JOB_ID; "nojob" outside a job), %% a percent sign.
struct OutputPlaceholders {
  std::string host;
  std::string uuid;
  int index = 0;
  std::string job;  // empty: not in a Slurm job
};
std::string expand_output(const std::string& pattern, const OutputPlaceholders& values);
// Whether a pattern names a different directory per GPU (%u or %i).
bool output_per_gpu(const std::string& pattern);

// --device: an index, a UUID (GPU-... or MIG-...) or a PCI bus id.
DeviceSelector parse_device_selector(const std::string& text);

}  // namespace latest::cli
