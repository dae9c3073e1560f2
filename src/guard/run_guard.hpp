#pragma once
// Everything that keeps a shared card safe while a run changes its clocks,
// for any vendor (after GEOPM's SaveControl): before the first change it takes
// a per-GPU lock, refuses a GPU other processes use, and saves the prior
// settings to a per-GPU state file; restore() puts them back and removes the
// file; `latest reset` restores from the file after a crash. The device
// supplies only the calls in ClockState.
#include <filesystem>
#include <memory>
#include <string>

#include "core/clock_control.hpp"

namespace latest {

struct GuardSettings {
  std::filesystem::path state_dir;  // empty: $LATEST_STATE_DIR or /var/tmp/latest
  bool allow_busy = false;          // change clocks although other processes use the GPU
  std::string clock_api;            // recorded in the state file, for the reader
};

std::filesystem::path state_directory(const GuardSettings& settings);

class RunGuard {
 public:
  RunGuard(std::shared_ptr<ClockState> device, GuardSettings settings);
  // Last resort: puts back what is still changed (the CLI restores
  // explicitly and reports), and releases the lock.
  ~RunGuard();
  RunGuard(const RunGuard&) = delete;
  RunGuard& operator=(const RunGuard&) = delete;

  // Before the first change: lock, busy check, saved state. Throws
  // Error(in_use) or Error(no_permission). Does nothing once taken.
  void take_over();
  // After a change succeeded: from now on restore() has work to do.
  void note_change() { changed_ = true; }
  bool has_changes() const { return changed_; }
  // Nothing was changed after all: no state file stays, the lock goes.
  void give_up();
  // Puts back the prior state (once; a failure is reported and `latest
  // reset` is the way back). Idempotent.
  void restore();
  // `latest reset`: restores the state file's prior state, or the driver
  // defaults when there is none. Returns what it did, for the user.
  std::string reset_from_state_file();

  std::filesystem::path state_file() const;
  const DeviceIdentity& identity() const { return identity_; }

 private:
  void release_lock();

  std::shared_ptr<ClockState> device_;
  GuardSettings settings_;
  DeviceIdentity identity_;
  bool taken_ = false;        // lock held and prior state saved
  bool wrote_state_ = false;  // this run wrote the state file
  bool changed_ = false;      // a change succeeded
  int lock_fd_ = -1;
};

// The clock side a run drives when it may change clocks: the guard takes
// over before the first change and learns of every success.
class GuardedClockControl final : public ClockControl {
 public:
  GuardedClockControl(std::shared_ptr<ClockControl> device, std::shared_ptr<RunGuard> guard)
      : device_(std::move(device)), guard_(std::move(guard)) {}
  DeviceIdentity identity() override { return device_->identity(); }
  std::vector<Mhz> supported_clocks() override { return device_->supported_clocks(); }
  void set_clock(Mhz mhz) override;
  Telemetry telemetry() override { return device_->telemetry(); }

 private:
  std::shared_ptr<ClockControl> device_;
  std::shared_ptr<RunGuard> guard_;
};

}  // namespace latest
