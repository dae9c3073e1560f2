#include "guard/run_guard.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "results/atomic_file.hpp"

namespace latest {
namespace fs = std::filesystem;
using nlohmann::json;

fs::path state_directory(const GuardSettings& s) {
  if (!s.state_dir.empty()) return s.state_dir;
  const char* env = std::getenv("LATEST_STATE_DIR");
  return env && *env ? fs::path(env) : fs::path("/var/tmp/latest");
}

RunGuard::RunGuard(std::shared_ptr<ClockState> device, GuardSettings settings)
    : device_(std::move(device)), settings_(std::move(settings)), identity_(device_->identity()) {}

RunGuard::~RunGuard() {
  try {
    restore();
  } catch (...) {  // the CLI restores explicitly and reports; this is the last resort
  }
  release_lock();
}

fs::path RunGuard::state_file() const {
  return state_directory(settings_) / fmt::format("latest-{}.state.json", identity_.uuid);
}

void RunGuard::take_over() {
  if (taken_) return;
  const fs::path dir = state_directory(settings_);
  std::error_code ec;
  fs::create_directories(dir, ec);
  const fs::path lock_path = dir / fmt::format("latest-{}.lock", identity_.uuid);
  lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0)
    throw Error(ErrorKind::no_permission, fmt::format("cannot open the GPU lock {}", lock_path.string()),
                "set LATEST_STATE_DIR to a writable directory");
  if (flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(lock_fd_);
    lock_fd_ = -1;
    throw Error(ErrorKind::in_use, fmt::format("another latest run holds GPU {} ({})", identity_.index, identity_.uuid),
                "wait for it to finish; two runs would fight over the clocks");
  }
  if (!settings_.allow_busy) {
    const auto pids = device_->other_processes();
    if (!pids.empty()) {
      release_lock();
      throw Error(ErrorKind::in_use,
                  fmt::format("{} other process(es) use GPU {}: pid {}", pids.size(), identity_.index, fmt::join(pids, ", ")),
                  "their work would disturb the measurement and they would run at our clocks; wait, or pass "
                  "--allow-busy-gpu");
    }
  }
  taken_ = true;
  // A previous run died with the clocks changed: its saved state is the true prior state.
  if (fs::exists(state_file())) return;
  const SavedClocks saved = device_->save();
  const json app = saved.application_graphics_mhz && saved.application_memory_mhz
                       ? json{{"graphics_mhz", *saved.application_graphics_mhz},
                              {"memory_mhz", *saved.application_memory_mhz}}
                       : json(nullptr);
  const json state = {{"uuid", identity_.uuid},
                      {"pci_bus_id", identity_.pci_bus_id},
                      {"pid", getpid()},
                      {"clock_api", settings_.clock_api},
                      {"applications_clocks", app},
                      {"locked_clocks", "defaults"}};
  write_file_atomically(state_file(), state.dump(2) + "\n");
  wrote_state_ = true;
}

void RunGuard::give_up() {
  if (wrote_state_) {
    std::error_code ec;
    fs::remove(state_file(), ec);
    wrote_state_ = false;
  }
  taken_ = false;
  release_lock();
}

std::string RunGuard::reset_from_state_file() {
  const fs::path path = state_file();
  json state;
  if (fs::exists(path)) {
    std::ifstream in(path);
    state = json::parse(in, nullptr, false);
  }
  SavedClocks saved;
  const json app = state.is_object() ? state.value("applications_clocks", json(nullptr)) : json(nullptr);
  if (app.is_object()) {
    saved.application_graphics_mhz = app.at("graphics_mhz").get<Mhz>();
    saved.application_memory_mhz = app.at("memory_mhz").get<Mhz>();
  }
  device_->put_back(saved);
  std::string done = "locked clocks reset to the defaults";
  if (saved.application_graphics_mhz)
    done += fmt::format("; application clocks restored to {} MHz (memory {} MHz)", *saved.application_graphics_mhz,
                        *saved.application_memory_mhz);
  else
    done += "; application clocks reset to the defaults";
  std::error_code ec;
  fs::remove(path, ec);
  return done;
}

void RunGuard::restore() {
  if (!changed_) {
    if (taken_) give_up();
    return;
  }
  changed_ = false;  // one try: a failure is reported, `latest reset` is the way back
  taken_ = false;
  wrote_state_ = false;
  reset_from_state_file();
  release_lock();
}

void RunGuard::release_lock() {
  if (lock_fd_ >= 0) {
    flock(lock_fd_, LOCK_UN);
    ::close(lock_fd_);
    lock_fd_ = -1;
  }
}

void GuardedClockControl::set_clock(Mhz mhz) {
  guard_->take_over();
  try {
    device_->set_clock(mhz);
  } catch (...) {
    if (!guard_->has_changes()) guard_->give_up();  // nothing changed: leave no state file behind
    throw;
  }
  guard_->note_change();
}

}  // namespace latest
