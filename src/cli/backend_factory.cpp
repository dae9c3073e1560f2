#include "cli/backend_factory.hpp"

#include <dlfcn.h>

#include <fmt/format.h>

#include "backends/sim/sim_backend.hpp"
#include "core/error.hpp"

namespace latest::cli {
namespace {

// How many CUDA devices the driver sees, without linking to it: -1 when there
// is no driver at all.
int cuda_device_count() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return -1;
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int*);
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
  auto count = reinterpret_cast<CountFn>(dlsym(lib, "cuDeviceGetCount"));
  int n = 0;
  if (!init || !count || init(0) != 0 || count(&n) != 0) n = 0;
  dlclose(lib);
  return n;
}

int sim_device_index(const std::string& device) {
  try {
    std::size_t used = 0;
    const int idx = std::stoi(device, &used);
    if (used == device.size() && idx >= 0) {
      if (idx != 0)
        throw Error(ExitCode::not_found, fmt::format("device {} not found: the simulator has one GPU, index 0", idx),
                    "use --device 0");
      return idx;
    }
  } catch (const std::invalid_argument&) {
  } catch (const std::out_of_range&) {
  }
  throw Error(ExitCode::not_found, fmt::format("device '{}' not found on the simulator", device),
              "the simulated GPU is --device 0");
}

Backends open_sim(const BackendOptions& o) {
  const auto& profile = sim::profile_named(o.sim_profile);
  const int index = sim_device_index(o.device);
  sim::Injection injection;
  injection.thermal_at_s = o.sim_thermal_at_s;
  injection.power_cap_mhz = o.sim_power_cap_mhz;
  auto gpu = std::make_shared<sim::SimGpu>(profile, o.seed, injection);
  Backends b;
  b.workload = std::make_unique<sim::SimWorkload>(gpu);
  b.clocks = std::make_unique<sim::SimClockControl>(gpu, index);
  return b;
}

}  // namespace

Backends open_backends(const BackendOptions& o) {
  if (o.backend == "sim") return open_sim(o);
  if (o.backend != "auto" && o.backend != "cuda")
    throw Error(ExitCode::usage, fmt::format("unknown backend '{}'", o.backend), "use --backend auto, cuda or sim");
  const int devices = cuda_device_count();
  if (o.backend == "cuda") {
    if (devices < 0)
      throw Error(ExitCode::driver_missing, "the NVIDIA driver is not installed (libcuda.so.1 not found)",
                  "install the driver, or use --backend sim to run on the simulated GPU");
    if (devices == 0)
      throw Error(ExitCode::not_found, "the NVIDIA driver found no CUDA device",
                  "check nvidia-smi and CUDA_VISIBLE_DEVICES, or use --backend sim");
    throw Error(ExitCode::not_supported, "this build of latest has no CUDA backend yet",
                "use --backend sim; the CUDA backend is planned work");
  }
  if (devices > 0)
    throw Error(ExitCode::not_supported, "a CUDA device is present, but this build of latest has no CUDA backend yet",
                "use --backend sim to run on the simulated GPU");
  Backends b = open_sim(o);
  b.notice = fmt::format("latest: no CUDA device ({}); using the simulated GPU (profile {}, seed {})",
                         devices < 0 ? "no driver" : "driver found no device", o.sim_profile, o.seed);
  return b;
}

}  // namespace latest::cli
