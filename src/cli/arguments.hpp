#pragma once
// Turning command-line text into clocks and pairs, with messages that name
// the problem and its fix (exit code 2).
#include <string>
#include <vector>

#include "core/detection.hpp"
#include "core/planner.hpp"
#include "core/types.hpp"

namespace latest::cli {

// "a,b,c" -> {"a", "b", "c"}, spaces dropped (an empty text is one empty item).
std::vector<std::string> split(const std::string& text, char sep);

// --measure-route: at least two clocks in the order a runtime requests them,
// none twice in a row, not ending where it starts (the syntax alone).
std::vector<Mhz> parse_route(const std::string& text);

// One item of --freq: a clock, or a range LO:HI of supported clocks (0:0:
// every supported clock).
struct ClockItem {
  Mhz low = 0, high = 0;
  bool range = false;
};
// --freq as parsed at the edge, before any device is opened: clocks in MHz
// ("600,900,1200"), ranges of the supported clocks ("600:1500", also mixed
// with clocks), or "all" (every supported clock). Rejects non-numbers and
// ranges that run downwards.
struct ClockSet {
  std::string text;  // as given, for messages and the manifest
  std::vector<ClockItem> items;
};
ClockSet parse_clock_set(const std::string& text);
// The clocks of a set on a device: rejects unsupported clocks (naming the
// nearest), ranges with no supported clock, a clock listed twice and fewer
// than two clocks.
std::vector<Mhz> resolve_clock_set(const ClockSet& set, const std::vector<Mhz>& supported);
// Both at once.
std::vector<Mhz> parse_clock_list(const std::string& text, const std::vector<Mhz>& supported);

// Every requested clock must be supported; the message names the nearest
// supported ones.
void check_supported(const std::vector<Mhz>& clocks, const std::vector<Mhz>& supported);

// --pairs: all | increasing | decreasing | INIT:TARGET[,INIT:TARGET...]
// Explicit pairs must use clocks from `clocks`.
std::vector<ClockPair> resolve_pairs(const std::string& selection, const std::vector<Mhz>& clocks);

// --detector: pooled (the default; "auto" is pooled too) or paper.
Detector parse_detector(const std::string& text);
// --schedule: chained (the default) or paper.
Schedule parse_schedule(const std::string& text);

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
// --device where a command takes several GPUs: "all" (every GPU of the
// backend), or one or more selectors ("0,2,5"), none twice.
struct DeviceSelection {
  std::string text = "0";  // as given
  bool all = false;
  std::vector<DeviceSelector> devices = {{DeviceSelector::Kind::index, "0", 0}};
};
DeviceSelection parse_device_selection(const std::string& text);

}  // namespace latest::cli
