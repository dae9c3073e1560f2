#include "backends/nvml/nvml_clock_control.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/device_selector.hpp"
#include "results/atomic_file.hpp"

namespace latest::nvml {
namespace fs = std::filesystem;
using nlohmann::json;

fs::path state_directory(const NvmlOptions& o) {
  if (!o.state_dir.empty()) return o.state_dir;
  const char* env = std::getenv("LATEST_STATE_DIR");
  return env && *env ? fs::path(env) : fs::path("/var/tmp/latest");
}

bool read_only_from_environment() {
  const char* env = std::getenv("LATEST_READ_ONLY");
  return env && *env && std::string(env) != "0";
}

std::unique_ptr<NvmlClockControl> NvmlClockControl::open(const NvmlOptions& options) {
  auto lib = NvmlLibrary::open(options.read_only);
  unsigned count = 0;
  lib->check(lib->nvmlDeviceGetCount_v2(&count), "counting GPUs");
  if (count == 0)
    throw Error(ExitCode::not_found, "NVML sees no GPU", "check nvidia-smi, or use --backend sim");
  nvmlDevice_t device = nullptr;
  const std::string& d = options.device;
  const DeviceSelector sel = parse_device_selector(d);
  nvmlReturn_t rc = NVML_SUCCESS;
  switch (sel.kind) {
    case DeviceSelector::Kind::uuid: rc = lib->nvmlDeviceGetHandleByUUID(d.c_str(), &device); break;
    case DeviceSelector::Kind::bus_id: rc = lib->nvmlDeviceGetHandleByPciBusId_v2(d.c_str(), &device); break;
    case DeviceSelector::Kind::index:
      rc = lib->nvmlDeviceGetHandleByIndex_v2(static_cast<unsigned>(sel.index), &device);
      break;
  }
  if (rc == NVML_ERROR_NOT_FOUND || rc == NVML_ERROR_INVALID_ARGUMENT /* index out of range */)
    throw Error(ExitCode::not_found, fmt::format("device {} not found ({} GPUs visible to NVML)", d, count),
                "`latest info` lists the GPUs");
  lib->check(rc, fmt::format("opening device {}", d));
  return std::unique_ptr<NvmlClockControl>(new NvmlClockControl(std::move(lib), device, options));
}

NvmlClockControl::NvmlClockControl(std::shared_ptr<NvmlLibrary> lib, nvmlDevice_t device, NvmlOptions options)
    : lib_(std::move(lib)), device_(device), options_(std::move(options)) {
  char buf[128] = {};
  lib_->check(lib_->nvmlDeviceGetName(device_, buf, sizeof buf), "reading the GPU name");
  identity_.name = buf;
  std::fill(std::begin(buf), std::end(buf), 0);
  lib_->check(lib_->nvmlDeviceGetUUID(device_, buf, sizeof buf), "reading the GPU UUID");
  identity_.uuid = buf;
  nvmlPciInfo_t pci{};
  lib_->check(lib_->nvmlDeviceGetPciInfo_v3(device_, &pci), "reading the PCI bus id");
  identity_.pci_bus_id = pci.busId;
  unsigned index = 0;
  lib_->check(lib_->nvmlDeviceGetIndex(device_, &index), "reading the NVML index");
  identity_.index = static_cast<int>(index);
}

NvmlClockControl::~NvmlClockControl() {
  try {
    restore();
  } catch (...) {  // the CLI restores explicitly and reports; this is the last resort
  }
  release_lock();
}

Mhz NvmlClockControl::memory_clock() {
  unsigned mhz = 0;
  lib_->check(lib_->nvmlDeviceGetClockInfo(device_, NVML_CLOCK_MEM, &mhz), "reading the memory clock");
  return static_cast<Mhz>(mhz);
}

std::vector<Mhz> NvmlClockControl::supported_clocks() {
  // At the memory clock in force: that is the table a lock can choose from.
  const unsigned memory = static_cast<unsigned>(memory_clock());
  unsigned count = 512;
  std::vector<unsigned> mhz(count);
  nvmlReturn_t rc = lib_->nvmlDeviceGetSupportedGraphicsClocks(device_, memory, &count, mhz.data());
  if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
    mhz.resize(count);
    rc = lib_->nvmlDeviceGetSupportedGraphicsClocks(device_, memory, &count, mhz.data());
  }
  lib_->check(rc, "reading the supported graphics clocks");
  std::vector<Mhz> out(mhz.begin(), mhz.begin() + count);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<unsigned> NvmlClockControl::other_processes() {
  unsigned count = 0;
  nvmlReturn_t rc = lib_->nvmlDeviceGetComputeRunningProcesses_v3(device_, &count, nullptr);
  std::vector<nvmlProcessInfo_t> infos;
  if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
    count += 8;  // processes may start between the two calls
    infos.resize(count);
    rc = lib_->nvmlDeviceGetComputeRunningProcesses_v3(device_, &count, infos.data());
  }
  lib_->check(rc, "listing the processes on the GPU");
  std::vector<unsigned> pids;
  for (unsigned i = 0; i < count && i < infos.size(); ++i)
    if (infos[i].pid != static_cast<unsigned>(getpid())) pids.push_back(infos[i].pid);
  return pids;
}

fs::path NvmlClockControl::state_file() const {
  return state_directory(options_) / fmt::format("latest-{}.state.json", identity_.uuid);
}

void NvmlClockControl::take_over() {
  const fs::path dir = state_directory(options_);
  std::error_code ec;
  fs::create_directories(dir, ec);
  const fs::path lock_path = dir / fmt::format("latest-{}.lock", identity_.uuid);
  lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0)
    throw Error(ExitCode::no_permission, fmt::format("cannot open the GPU lock {}", lock_path.string()),
                "set LATEST_STATE_DIR to a writable directory");
  if (flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(lock_fd_);
    lock_fd_ = -1;
    throw Error(ExitCode::in_use, fmt::format("another latest run holds GPU {} ({})", identity_.index, identity_.uuid),
                "wait for it to finish; two runs would fight over the clocks");
  }
  if (!options_.allow_busy) {
    const auto pids = other_processes();
    if (!pids.empty()) {
      release_lock();
      throw Error(ExitCode::in_use,
                  fmt::format("{} other process(es) use GPU {}: pid {}", pids.size(), identity_.index, fmt::join(pids, ", ")),
                  "their work would disturb the measurement and they would run at our clocks; wait, or pass "
                  "--allow-busy-gpu");
    }
  }
  taken_ = true;
  if (fs::exists(state_file())) {
    // A previous run died with the clocks changed: its saved state is the true prior state.
    return;
  }
  unsigned graphics = 0, memory = 0;
  if (lib_->nvmlDeviceGetApplicationsClock(device_, NVML_CLOCK_GRAPHICS, &graphics) == NVML_SUCCESS &&
      lib_->nvmlDeviceGetApplicationsClock(device_, NVML_CLOCK_MEM, &memory) == NVML_SUCCESS) {
    saved_app_graphics_ = graphics;
    saved_app_memory_ = memory;
  }
  const json state = {
      {"uuid", identity_.uuid},
      {"pci_bus_id", identity_.pci_bus_id},
      {"pid", getpid()},
      {"clock_api", options_.clock_api},
      {"applications_clocks",
       saved_app_graphics_ ? json{{"graphics_mhz", *saved_app_graphics_}, {"memory_mhz", *saved_app_memory_}} : json(nullptr)},
      // NVML has no getter for a lock someone else set: restoring resets locks to the defaults.
      {"locked_clocks", "defaults"}};
  write_file_atomically(state_file(), state.dump(2) + "\n");
  wrote_state_ = true;
}

void NvmlClockControl::set_clock(Mhz mhz) {
  // Read-only mode refuses inside call_setter, before anything is locked or saved.
  if (!taken_ && !lib_->read_only()) take_over();
  const auto f = static_cast<unsigned>(mhz);
  try {
    if (options_.clock_api == "application") {
      const unsigned memory = static_cast<unsigned>(memory_clock());
      lib_->call_setter(fmt::format("setting application clocks to {} MHz", mhz), [&](const NvmlLibrary::Setters& s) {
        return s.nvmlDeviceSetApplicationsClocks(device_, memory, f);
      });
    } else {
      lib_->call_setter(fmt::format("locking the SM clock at {} MHz", mhz), [&](const NvmlLibrary::Setters& s) {
        return s.nvmlDeviceSetGpuLockedClocks(device_, f, f);
      });
    }
  } catch (...) {
    if (!changed_) give_up_take_over();  // nothing changed: leave no state file behind
    throw;
  }
  changed_ = true;
}

void NvmlClockControl::give_up_take_over() {
  if (wrote_state_) {
    std::error_code ec;
    fs::remove(state_file(), ec);
    wrote_state_ = false;
  }
  taken_ = false;
  release_lock();
}

std::string NvmlClockControl::reset_from_state_file() {
  std::string done;
  const fs::path path = state_file();
  json state;
  if (fs::exists(path)) {
    std::ifstream in(path);
    state = json::parse(in, nullptr, false);
  }
  lib_->call_setter("resetting the locked clocks", [&](const NvmlLibrary::Setters& s) {
    return s.nvmlDeviceResetGpuLockedClocks(device_);
  });
  done = "locked clocks reset to the defaults";
  const json app = state.is_object() ? state.value("applications_clocks", json(nullptr)) : json(nullptr);
  if (app.is_object()) {
    const unsigned g = app.at("graphics_mhz"), m = app.at("memory_mhz");
    lib_->call_setter("restoring the application clocks", [&](const NvmlLibrary::Setters& s) {
      return s.nvmlDeviceSetApplicationsClocks(device_, m, g);
    });
    done += fmt::format("; application clocks restored to {} MHz (memory {} MHz)", g, m);
  } else {
    lib_->call_setter("resetting the application clocks", [&](const NvmlLibrary::Setters& s) {
      return s.nvmlDeviceResetApplicationsClocks(device_);
    });
    done += "; application clocks reset to the defaults";
  }
  std::error_code ec;
  fs::remove(path, ec);
  return done;
}

void NvmlClockControl::restore() {
  if (!changed_) {
    if (taken_) give_up_take_over();
    return;
  }
  changed_ = false;  // one try: a failure is reported, `latest reset` is the way back
  taken_ = false;
  wrote_state_ = false;
  reset_from_state_file();
  release_lock();
}

void NvmlClockControl::release_lock() {
  if (lock_fd_ >= 0) {
    flock(lock_fd_, LOCK_UN);
    ::close(lock_fd_);
    lock_fd_ = -1;
  }
}

Telemetry NvmlClockControl::telemetry() {
  Telemetry t;
  unsigned long long reasons = 0;
  lib_->check(lib_->clock_event_reasons(device_, &reasons), "reading the clock-event reasons");
  t.throttle.raw_reasons = reasons;
  // HW slowdown fires for heat as well as power brake; it is cooled like heat.
  t.throttle.thermal = reasons & (kReasonSwThermalSlowdown | kReasonHwThermalSlowdown | kReasonHwSlowdown);
  t.throttle.power = reasons & (kReasonSwPowerCap | kReasonHwPowerBrakeSlowdown);
  t.throttle.other = reasons & ~(kReasonGpuIdle | kReasonApplicationsClocksSetting | kReasonSyncBoost |
                                 kReasonSwThermalSlowdown | kReasonHwThermalSlowdown | kReasonHwSlowdown |
                                 kReasonSwPowerCap | kReasonHwPowerBrakeSlowdown);
  unsigned v = 0;
  if (lib_->nvmlDeviceGetTemperature(device_, NVML_TEMPERATURE_GPU, &v) == NVML_SUCCESS) t.temperature_c = v;
  if (lib_->nvmlDeviceGetPowerUsage(device_, &v) == NVML_SUCCESS) t.power_w = v / 1000.0;
  if (lib_->nvmlDeviceGetClockInfo(device_, NVML_CLOCK_MEM, &v) == NVML_SUCCESS) t.memory_mhz = static_cast<Mhz>(v);
  return t;
}

}  // namespace latest::nvml
