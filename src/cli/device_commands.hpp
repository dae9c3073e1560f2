#pragma once
// `latest reset`, `latest info` and `latest selftest`.
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/backend_factory.hpp"

namespace latest::cli {

struct ResetOptions {
  DeviceSelector device{DeviceSelector::Kind::index, "0", 0};
};
void add_reset_command(CLI::App& app, ResetOptions& options);
int run_reset(const ResetOptions& options);

struct InfoOptions {
  BackendOptions backend;
  std::int64_t iterations = 8192;  // per SM in the short calibration
  std::int64_t fmas = 1024;
  std::string json;  // write everything, per-SM statistics included, here
  bool all_clocks = false;  // --clocks: print every supported clock
};
void add_info_command(CLI::App& app, InfoOptions& options);
int run_info(const InfoOptions& options);

struct SelftestOptions {
  BackendOptions backend;
  DeviceSelection devices;
  std::optional<ClockSet> freq;  // default: the card's clock and about half of it
  std::string latency_ms = "1:50";
  int measurements = 100;  // per pair
  std::optional<std::int64_t> iteration_fmas;  // default: sized from the window, as in a measurement
  bool save_traces = false;
  Detector detector = Detector::pooled;
  Schedule schedule = Schedule::chained;
  std::string output = "latest-selftest";
};
void add_selftest_command(CLI::App& app, SelftestOptions& options);
int run_selftest(const SelftestOptions& options);

}  // namespace latest::cli
