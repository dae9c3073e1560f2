#include "backends/nvml/nvml_library.hpp"

#include <dlfcn.h>

#include <cstdlib>

#include <fmt/format.h>

namespace latest::nvml {

ErrorKind error_kind_for(nvmlReturn_t rc) {
  switch (rc) {
    case NVML_ERROR_NOT_SUPPORTED: return ErrorKind::not_supported;
    case NVML_ERROR_NO_PERMISSION: return ErrorKind::no_permission;
    case NVML_ERROR_NOT_FOUND: return ErrorKind::not_found;
    case NVML_ERROR_DRIVER_NOT_LOADED: return ErrorKind::driver_missing;
    case NVML_ERROR_GPU_IS_LOST: return ErrorKind::gpu_lost;
    default: return ErrorKind::internal;
  }
}

std::shared_ptr<NvmlLibrary> NvmlLibrary::open(bool read_only) {
  std::shared_ptr<NvmlLibrary> lib(new NvmlLibrary());
  lib->read_only_ = read_only;
  const char* override_path = std::getenv("LATEST_NVML_LIBRARY");
  lib->path_ = override_path && *override_path ? override_path : "libnvidia-ml.so.1";
  lib->handle_ = dlopen(lib->path_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib->handle_)
    throw Error(ErrorKind::driver_missing, fmt::format("NVML could not be loaded ({}): {}", lib->path_, dlerror()),
                "install the NVIDIA driver, or set LATEST_NVML_LIBRARY to libnvidia-ml.so.1's path");
  const auto resolve = [&](const char* name) {
    void* sym = dlsym(lib->handle_, name);
    if (!sym)
      throw Error(ErrorKind::driver_missing, fmt::format("{} lacks {}: the driver is too old", lib->path_, name),
                  "update the NVIDIA driver (R525 or newer)");
    return sym;
  };
#define LATEST_NVML_RESOLVE(name, params) lib->name = reinterpret_cast<decltype(lib->name)>(resolve(#name));
  LATEST_NVML_QUERIES(LATEST_NVML_RESOLVE)
#undef LATEST_NVML_RESOLVE
#define LATEST_NVML_RESOLVE(name, params) \
  lib->setters_.name = reinterpret_cast<decltype(lib->setters_.name)>(resolve(#name));
  LATEST_NVML_SETTERS(LATEST_NVML_RESOLVE)
#undef LATEST_NVML_RESOLVE
  void* reasons = dlsym(lib->handle_, "nvmlDeviceGetCurrentClocksEventReasons");
  if (!reasons) reasons = resolve("nvmlDeviceGetCurrentClocksThrottleReasons");
  lib->clock_event_reasons = reinterpret_cast<decltype(lib->clock_event_reasons)>(reasons);
  lib->error_string_ = reinterpret_cast<const char* (*)(nvmlReturn_t)>(dlsym(lib->handle_, "nvmlErrorString"));
  const nvmlReturn_t rc = lib->nvmlInit_v2();
  if (rc != NVML_SUCCESS)
    throw Error(rc == NVML_ERROR_NO_PERMISSION ? ErrorKind::no_permission : ErrorKind::driver_missing,
                fmt::format("NVML did not start: {}", lib->error_string(rc)),
                "check that the NVIDIA driver is loaded (nvidia-smi)");
  return lib;
}

NvmlLibrary::~NvmlLibrary() {
  if (handle_) {
    if (nvmlShutdown) nvmlShutdown();
    dlclose(handle_);
  }
}

std::string NvmlLibrary::error_string(nvmlReturn_t rc) const {
  const char* s = error_string_ ? error_string_(rc) : nullptr;
  return s ? fmt::format("{} (NVML {})", s, rc) : fmt::format("NVML error {}", rc);
}

void NvmlLibrary::check(nvmlReturn_t rc, const std::string& what) const {
  if (rc == NVML_SUCCESS) return;
  std::string hint;
  switch (rc) {
    case NVML_ERROR_NO_PERMISSION:
      hint = "changing clocks needs root (or, for application clocks, `nvidia-smi -acp UNRESTRICTED` by an admin); "
             "`latest info` shows what this user may do";
      break;
    case NVML_ERROR_NOT_SUPPORTED:
      hint = "this GPU or driver does not offer it; try --clock-api application";
      break;
    case NVML_ERROR_GPU_IS_LOST:
      hint = "the GPU fell off the bus: check dmesg and nvidia-smi; a reboot may be needed";
      break;
    default: break;
  }
  throw Error(error_kind_for(rc), fmt::format("{} failed: {}", what, error_string(rc)), hint);
}

void NvmlLibrary::call_setter(const std::string& what, const std::function<nvmlReturn_t(const Setters&)>& call) {
  if (read_only_)
    throw Error(ErrorKind::no_permission, fmt::format("{} refused: read-only mode", what),
                "drop --read-only / LATEST_READ_ONLY=1 to let latest change clocks");
  check(call(setters_), what);
}

}  // namespace latest::nvml
