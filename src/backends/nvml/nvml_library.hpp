#pragma once
// NVML, loaded with dlopen: libnvidia-ml.so.1, or LATEST_NVML_LIBRARY.
// Queries are public; setters are reachable only through call_setter(), the
// single place where read-only mode is enforced.
#include <functional>
#include <memory>
#include <string>

#include "backends/nvml/nvml_api.hpp"
#include "core/error.hpp"

namespace latest::nvml {

class NvmlLibrary {
 public:
  // Throws Error(driver_missing) when the library cannot be loaded or has no
  // usable driver behind it.
  static std::shared_ptr<NvmlLibrary> open(bool read_only);
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

#define LATEST_NVML_MEMBER(name, params) nvmlReturn_t(*name) params = nullptr;
  LATEST_NVML_QUERIES(LATEST_NVML_MEMBER)
#undef LATEST_NVML_MEMBER

  // nvmlDeviceGetCurrentClocksEventReasons, or its older name
  // nvmlDeviceGetCurrentClocksThrottleReasons on drivers before R535.
  nvmlReturn_t (*clock_event_reasons)(nvmlDevice_t, unsigned long long*) = nullptr;

  // Throws Error with the exit code NVML's return code maps to.
  void check(nvmlReturn_t rc, const std::string& what) const;
  std::string error_string(nvmlReturn_t rc) const;

  // The only way to change the card. In read-only mode it refuses without
  // calling NVML (the fake NVML counts calls, so tests prove it makes none).
  struct Setters {
#define LATEST_NVML_MEMBER(name, params) nvmlReturn_t(*name) params = nullptr;
    LATEST_NVML_SETTERS(LATEST_NVML_MEMBER)
#undef LATEST_NVML_MEMBER
  };
  void call_setter(const std::string& what, const std::function<nvmlReturn_t(const Setters&)>& call);
  bool read_only() const { return read_only_; }

 private:
  NvmlLibrary() = default;
  void* handle_ = nullptr;
  const char* (*error_string_)(nvmlReturn_t) = nullptr;
  Setters setters_;
  bool read_only_ = false;
  std::string path_;
};

// NVML return code -> the kind of error it is.
ErrorKind error_kind_for(nvmlReturn_t rc);

}  // namespace latest::nvml
