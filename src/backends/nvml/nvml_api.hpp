#pragma once
// The few NVML declarations LATEST uses, written from NVML's API reference so
// that no nvml.h is needed to build. The library is loaded with dlopen at run
// time (NvmlLibrary), which also lets tests put a fake in its place.
#include <cstdint>

namespace latest::nvml {

using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;

enum : nvmlReturn_t {
  NVML_SUCCESS = 0,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_GPU_IS_LOST = 15,
};

enum : unsigned { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };
enum : unsigned { NVML_TEMPERATURE_GPU = 0 };
enum : unsigned { NVML_RESTRICTED_API_SET_APPLICATION_CLOCKS = 0 };
enum : unsigned { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 };

// Clock-event (throttle) reason bits.
inline constexpr std::uint64_t kReasonGpuIdle = 0x1;
inline constexpr std::uint64_t kReasonApplicationsClocksSetting = 0x2;
inline constexpr std::uint64_t kReasonSwPowerCap = 0x4;
inline constexpr std::uint64_t kReasonHwSlowdown = 0x8;
inline constexpr std::uint64_t kReasonSyncBoost = 0x10;
inline constexpr std::uint64_t kReasonSwThermalSlowdown = 0x20;
inline constexpr std::uint64_t kReasonHwThermalSlowdown = 0x40;
inline constexpr std::uint64_t kReasonHwPowerBrakeSlowdown = 0x80;

struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned domain;
  unsigned bus;
  unsigned device;
  unsigned pciDeviceId;
  unsigned pciSubSystemId;
  char busId[32];
};

struct nvmlProcessInfo_t {  // nvmlProcessInfo_v2_t, used by the _v3 query
  unsigned pid;
  unsigned long long usedGpuMemory;
  unsigned gpuInstanceId;
  unsigned computeInstanceId;
};

// Every entry point, once: name, return, parameters. Setters are marked so
// that the read-only gate can be checked to be the only way to them.
#define LATEST_NVML_QUERIES(X)                                                                          \
  X(nvmlInit_v2, (void))                                                                                \
  X(nvmlShutdown, (void))                                                                               \
  X(nvmlSystemGetDriverVersion, (char* version, unsigned length))                                       \
  X(nvmlDeviceGetCount_v2, (unsigned* count))                                                           \
  X(nvmlDeviceGetHandleByIndex_v2, (unsigned index, nvmlDevice_t* device))                              \
  X(nvmlDeviceGetHandleByUUID, (const char* uuid, nvmlDevice_t* device))                                \
  X(nvmlDeviceGetHandleByPciBusId_v2, (const char* bus_id, nvmlDevice_t* device))                       \
  X(nvmlDeviceGetIndex, (nvmlDevice_t device, unsigned* index))                                         \
  X(nvmlDeviceGetName, (nvmlDevice_t device, char* name, unsigned length))                              \
  X(nvmlDeviceGetUUID, (nvmlDevice_t device, char* uuid, unsigned length))                              \
  X(nvmlDeviceGetPciInfo_v3, (nvmlDevice_t device, nvmlPciInfo_t* pci))                                 \
  X(nvmlDeviceGetSupportedMemoryClocks, (nvmlDevice_t device, unsigned* count, unsigned* mhz))          \
  X(nvmlDeviceGetSupportedGraphicsClocks, (nvmlDevice_t device, unsigned memory_mhz, unsigned* count, unsigned* mhz)) \
  X(nvmlDeviceGetClockInfo, (nvmlDevice_t device, unsigned type, unsigned* mhz))                        \
  X(nvmlDeviceGetApplicationsClock, (nvmlDevice_t device, unsigned type, unsigned* mhz))                \
  X(nvmlDeviceGetTemperature, (nvmlDevice_t device, unsigned sensor, unsigned* celsius))                \
  X(nvmlDeviceGetPowerUsage, (nvmlDevice_t device, unsigned* milliwatts))                               \
  X(nvmlDeviceGetPowerManagementLimit, (nvmlDevice_t device, unsigned* milliwatts))                     \
  X(nvmlDeviceGetComputeRunningProcesses_v3, (nvmlDevice_t device, unsigned* count, nvmlProcessInfo_t* infos)) \
  X(nvmlDeviceGetAPIRestriction, (nvmlDevice_t device, unsigned api, unsigned* state))                  \
  X(nvmlDeviceGetCpuAffinity, (nvmlDevice_t device, unsigned cpu_set_size, unsigned long* cpu_set))

#define LATEST_NVML_SETTERS(X)                                                                          \
  X(nvmlDeviceSetGpuLockedClocks, (nvmlDevice_t device, unsigned min_mhz, unsigned max_mhz))           \
  X(nvmlDeviceResetGpuLockedClocks, (nvmlDevice_t device))                                             \
  X(nvmlDeviceSetApplicationsClocks, (nvmlDevice_t device, unsigned memory_mhz, unsigned graphics_mhz)) \
  X(nvmlDeviceResetApplicationsClocks, (nvmlDevice_t device))

}  // namespace latest::nvml
