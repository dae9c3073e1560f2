#pragma once
// SIGINT, SIGTERM and SIGHUP only set a flag; the engine polls it between
// windows and unwinds, so the clocks are restored on the main path.
#include <string>

namespace latest::cli {

void install_stop_handlers();
// Empty while no signal has arrived; else the signal's name.
std::string stop_requested();

}  // namespace latest::cli
