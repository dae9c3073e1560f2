#pragma once
// `latest watch`: the card's own clock changes under a load, recorded per
// SM; no setting changes (docs/methodology.md, "Watching the card's own
// clock").
#include <string>

#include <CLI/CLI.hpp>

#include "cli/arguments.hpp"
#include "cli/backend_factory.hpp"

namespace latest::cli {

struct WatchOptions {
  BackendOptions backend;
  DeviceSelection devices;
  double seconds = 20;       // the load
  double tail_seconds = 5;   // the recorder alone after it
  int recorded_sms = 16;
  std::int64_t iteration_fmas = 4096;
  double sample_ms = 20;     // telemetry period
  std::string output = "latest-watch";
};
void add_watch_command(CLI::App& app, WatchOptions& options);
int run_watch(const WatchOptions& options);

}  // namespace latest::cli
