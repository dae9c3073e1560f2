#pragma once
// The main job: measure switching latency for every requested pair.
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/arguments.hpp"
#include "cli/backend_factory.hpp"
#include "core/engine.hpp"

namespace latest::cli {

// Every option of the main job, parsed at the edge (the command line) into
// typed values; nothing after it reads their text again.
struct MeasureOptions {
  std::optional<ClockSet> freq;
  DeviceSelection devices;  // --device: one GPU, a list, or all
  std::string pairs = "all";
  std::string output = "latest-results";
  double rse = 0.05;
  // Unset: 25, or --max-measurements where that is lower (the run says so).
  std::optional<int> min_measurements;
  int max_measurements = 500;
  bool plan_only = false;
  bool json = false;  // --plan --json
  bool save_traces = false;
  std::optional<double> save_traces_limit_mb;
  std::string progress = "auto";  // auto | tty | lines | none
  std::optional<int> trace_first;
  bool include_inseparable = false;
  double max_band_overlap = 0.0;
  std::optional<std::int64_t> iteration_fmas;
  std::optional<double> capture_ms;
  std::optional<double> wakeup_ms;
  double max_capture_ms = 10'000;
  std::int64_t max_records = 32768;
  Detector detector = Detector::pooled;  // --detector auto is pooled
  Schedule schedule = Schedule::chained;
  bool break_lock = false;  // take the output directory's lock from another host
  // --measure-route A,M,...,B with the table whose latencies set the waits.
  std::string measure_route;
  std::string table;
  std::string statistic = "p95";
  BackendOptions backend;
};

// The options that pick and guard the device, shared by the commands.
void add_device_options(CLI::App& app, BackendOptions& options);

// Adds the measurement options to `app` (the top-level command).
void add_measure_options(CLI::App& app, MeasureOptions& options);
int run_measure(const MeasureOptions& options);
// The same options, for --measure-route (measure_route.cpp).
int run_measure_route(const MeasureOptions& options);
// Settings shared by both: the options as the engine takes them.
EngineSettings engine_settings(const MeasureOptions& o, const std::vector<Mhz>& clocks,
                               const std::vector<ClockPair>& pairs, bool simulated);
void validate(const MeasureOptions& o);

}  // namespace latest::cli
