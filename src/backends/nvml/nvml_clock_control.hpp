#pragma once
// The clock side on real GPUs, through NVML. Before the first change it takes
// a per-GPU lock, refuses a GPU other processes use, and saves the prior
// state to a per-GPU state file; restore() puts that state back and removes
// the file. `latest reset` restores from the file after a crash.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "backends/nvml/nvml_library.hpp"
#include "core/clock_control.hpp"

namespace latest::nvml {

struct NvmlOptions {
  std::string device = "0";  // NVML index, UUID (GPU-...) or PCI bus id
  bool read_only = false;
  std::string clock_api = "locked";  // locked | application
  bool allow_busy = false;           // measure although other processes use the GPU
  std::filesystem::path state_dir;   // empty: $LATEST_STATE_DIR or /var/tmp/latest
};

std::filesystem::path state_directory(const NvmlOptions& options);
// LATEST_READ_ONLY=1 (or any value but 0 and empty) turns read-only mode on.
bool read_only_from_environment();

class NvmlClockControl final : public ClockControl {
 public:
  static std::unique_ptr<NvmlClockControl> open(const NvmlOptions& options);
  ~NvmlClockControl() override;

  DeviceIdentity identity() override { return identity_; }
  std::vector<Mhz> supported_clocks() override;
  void set_clock(Mhz mhz) override;
  void restore() override;
  Telemetry telemetry() override;

  NvmlLibrary& library() { return *lib_; }
  nvmlDevice_t device() const { return device_; }
  std::vector<unsigned> other_processes();
  Mhz memory_clock();
  // Where the state of this GPU is saved while latest has it changed.
  std::filesystem::path state_file() const;

  // `latest reset`: restores the state file's prior state, or resets to the
  // driver defaults when there is none. Returns what it did, for the user.
  std::string reset_from_state_file();

 private:
  NvmlClockControl(std::shared_ptr<NvmlLibrary> lib, nvmlDevice_t device, NvmlOptions options);
  void take_over();  // lock, process check, save state: before the first change
  void release_lock();
  void give_up_take_over();

  std::shared_ptr<NvmlLibrary> lib_;
  nvmlDevice_t device_;
  NvmlOptions options_;
  DeviceIdentity identity_;
  bool taken_ = false;       // lock held and prior state saved
  bool wrote_state_ = false;  // this run wrote the state file
  bool changed_ = false;      // a setter succeeded
  int lock_fd_ = -1;
  std::optional<unsigned> saved_app_graphics_, saved_app_memory_;
};

}  // namespace latest::nvml
