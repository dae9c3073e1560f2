#include "backends/nvml/nvml_device.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

namespace latest::nvml {
namespace {

DeviceIdentity identity_of(const NvmlLibrary& lib, nvmlDevice_t device) {
  DeviceIdentity id;
  char buf[128] = {};
  lib.check(lib.nvmlDeviceGetName(device, buf, sizeof buf), "reading the GPU name");
  id.name = buf;
  std::fill(std::begin(buf), std::end(buf), 0);
  lib.check(lib.nvmlDeviceGetUUID(device, buf, sizeof buf), "reading the GPU UUID");
  id.uuid = buf;
  nvmlPciInfo_t pci{};
  lib.check(lib.nvmlDeviceGetPciInfo_v3(device, &pci), "reading the PCI bus id");
  id.pci_bus_id = pci.busId;
  unsigned index = 0;
  lib.check(lib.nvmlDeviceGetIndex(device, &index), "reading the NVML index");
  id.index = static_cast<int>(index);
  return id;
}

unsigned device_count(const NvmlLibrary& lib) {
  unsigned count = 0;
  lib.check(lib.nvmlDeviceGetCount_v2(&count), "counting GPUs");
  return count;
}

}  // namespace

bool read_only_from_environment() {
  const char* env = std::getenv("LATEST_READ_ONLY");
  return env && *env && std::string(env) != "0";
}

std::shared_ptr<NvmlDevice> NvmlDevice::open(const NvmlOptions& options) {
  auto lib = NvmlLibrary::open(options.read_only);
  const unsigned count = device_count(*lib);
  if (count == 0)
    throw Error(ErrorKind::not_found, "NVML sees no GPU", "check nvidia-smi, or use --backend sim");
  nvmlDevice_t device = nullptr;
  const DeviceSelector& sel = options.device;
  nvmlReturn_t rc = NVML_SUCCESS;
  switch (sel.kind) {
    case DeviceSelector::Kind::uuid: rc = lib->nvmlDeviceGetHandleByUUID(sel.text.c_str(), &device); break;
    case DeviceSelector::Kind::bus_id: rc = lib->nvmlDeviceGetHandleByPciBusId_v2(sel.text.c_str(), &device); break;
    case DeviceSelector::Kind::index:
      rc = lib->nvmlDeviceGetHandleByIndex_v2(static_cast<unsigned>(sel.index), &device);
      break;
  }
  if (rc == NVML_ERROR_NOT_FOUND || rc == NVML_ERROR_INVALID_ARGUMENT /* index out of range */)
    throw Error(ErrorKind::not_found, fmt::format("device {} not found ({} GPUs visible to NVML)", sel.text, count),
                "`latest info` lists the GPUs");
  lib->check(rc, fmt::format("opening device {}", sel.text));
  return std::shared_ptr<NvmlDevice>(new NvmlDevice(std::move(lib), device, options));
}

NvmlDevice::NvmlDevice(std::shared_ptr<NvmlLibrary> lib, nvmlDevice_t device, NvmlOptions options)
    : lib_(std::move(lib)), device_(device), options_(std::move(options)), identity_(identity_of(*lib_, device_)) {}

Mhz NvmlDevice::clock(unsigned type, const char* what) {
  unsigned mhz = 0;
  lib_->check(lib_->nvmlDeviceGetClockInfo(device_, type, &mhz), what);
  return static_cast<Mhz>(mhz);
}

std::vector<Mhz> NvmlDevice::supported_clocks() {
  // At the memory clock in force: that is the table a lock can choose from.
  const auto memory = static_cast<unsigned>(clock(NVML_CLOCK_MEM, "reading the memory clock"));
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

std::vector<unsigned> NvmlDevice::other_processes() {
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

void NvmlDevice::set_clock(Mhz mhz) {
  // Read-only mode refuses inside call_setter, before NVML is called.
  const auto f = static_cast<unsigned>(mhz);
  if (options_.clock_api == "application") {
    const auto memory = static_cast<unsigned>(clock(NVML_CLOCK_MEM, "reading the memory clock"));
    lib_->call_setter(fmt::format("setting application clocks to {} MHz", mhz), [&](const NvmlLibrary::Setters& s) {
      return s.nvmlDeviceSetApplicationsClocks(device_, memory, f);
    });
  } else {
    lib_->call_setter(fmt::format("locking the SM clock at {} MHz", mhz), [&](const NvmlLibrary::Setters& s) {
      return s.nvmlDeviceSetGpuLockedClocks(device_, f, f);
    });
  }
}

SavedClocks NvmlDevice::save() {
  SavedClocks saved;
  unsigned graphics = 0, memory = 0;
  // Not every GPU has application clocks: then there is nothing to keep.
  if (lib_->nvmlDeviceGetApplicationsClock(device_, NVML_CLOCK_GRAPHICS, &graphics) == NVML_SUCCESS &&
      lib_->nvmlDeviceGetApplicationsClock(device_, NVML_CLOCK_MEM, &memory) == NVML_SUCCESS) {
    saved.application_graphics_mhz = static_cast<Mhz>(graphics);
    saved.application_memory_mhz = static_cast<Mhz>(memory);
  }
  return saved;
}

void NvmlDevice::put_back(const SavedClocks& saved) {
  lib_->call_setter("resetting the locked clocks", [&](const NvmlLibrary::Setters& s) {
    return s.nvmlDeviceResetGpuLockedClocks(device_);
  });
  if (saved.application_graphics_mhz && saved.application_memory_mhz) {
    const auto g = static_cast<unsigned>(*saved.application_graphics_mhz);
    const auto m = static_cast<unsigned>(*saved.application_memory_mhz);
    lib_->call_setter("restoring the application clocks", [&](const NvmlLibrary::Setters& s) {
      return s.nvmlDeviceSetApplicationsClocks(device_, m, g);
    });
  } else {
    lib_->call_setter("resetting the application clocks", [&](const NvmlLibrary::Setters& s) {
      return s.nvmlDeviceResetApplicationsClocks(device_);
    });
  }
}

Telemetry NvmlDevice::telemetry() {
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
  // Sensors some boards lack: unknown rather than an error.
  unsigned v = 0;
  if (lib_->nvmlDeviceGetTemperature(device_, NVML_TEMPERATURE_GPU, &v) == NVML_SUCCESS) t.temperature_c = v;
  if (lib_->nvmlDeviceGetPowerUsage(device_, &v) == NVML_SUCCESS) t.power_w = v / 1000.0;
  if (lib_->nvmlDeviceGetClockInfo(device_, NVML_CLOCK_MEM, &v) == NVML_SUCCESS) t.memory_mhz = static_cast<Mhz>(v);
  if (lib_->nvmlDeviceGetClockInfo(device_, NVML_CLOCK_SM, &v) == NVML_SUCCESS) t.sm_mhz = static_cast<Mhz>(v);
  return t;
}

std::vector<DeviceIdentity> NvmlDevice::all_devices() {
  const unsigned count = device_count(*lib_);
  std::vector<DeviceIdentity> all;
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t d = nullptr;
    lib_->check(lib_->nvmlDeviceGetHandleByIndex_v2(i, &d), fmt::format("opening device {}", i));
    all.push_back(identity_of(*lib_, d));
  }
  return all;
}

DeviceStatus NvmlDevice::status() {
  DeviceStatus s;
  s.sm_clock_mhz = clock(NVML_CLOCK_SM, "reading the SM clock");
  unsigned app = 0;
  if (lib_->nvmlDeviceGetApplicationsClock(device_, NVML_CLOCK_GRAPHICS, &app) == NVML_SUCCESS)
    s.application_clock_mhz = static_cast<Mhz>(app);
  char driver[96] = {};
  lib_->check(lib_->nvmlSystemGetDriverVersion(driver, sizeof driver), "reading the driver version");
  s.driver_version = driver;
  unsigned limit_mw = 0;
  if (lib_->nvmlDeviceGetPowerManagementLimit(device_, &limit_mw) == NVML_SUCCESS) s.power_limit_w = limit_mw / 1000.0;
  s.other_processes = other_processes();
  unsigned restricted = 1;
  // Older drivers and some boards do not say: unknown.
  if (lib_->nvmlDeviceGetAPIRestriction(device_, NVML_RESTRICTED_API_SET_APPLICATION_CLOCKS, &restricted) ==
      NVML_SUCCESS)
    s.application_clocks_restricted = restricted != 0;
  return s;
}

std::vector<int> NvmlDevice::near_cpus() {
  // A bitmask of 64-bit words, CPU k at bit k % 64 of word k / 64.
  constexpr unsigned kWords = 1024 / 64;
  unsigned long mask[kWords] = {};
  std::vector<int> cpus;
  if (lib_->nvmlDeviceGetCpuAffinity(device_, kWords, mask) != NVML_SUCCESS) return cpus;
  for (unsigned w = 0; w < kWords; ++w)
    for (unsigned b = 0; b < 64; ++b)
      if (mask[w] >> b & 1UL) cpus.push_back(static_cast<int>(w * 64 + b));
  return cpus;
}

}  // namespace latest::nvml
