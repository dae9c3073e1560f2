#include "cli/backend_factory.hpp"

#include <dlfcn.h>

#include <fmt/format.h>

#include "backends/nvml/nvml_clock_control.hpp"
#include "backends/sim/sim_backend.hpp"
#include "core/device_selector.hpp"
#include "core/error.hpp"
#ifdef LATEST_WITH_CUDA
#include "backends/cuda/cuda_workload.hpp"
#include "backends/cuda/emulated_clock_control.hpp"
#endif

namespace latest::cli {
namespace {

// Whether the NVIDIA driver's CUDA library can be loaded, without linking to it.
bool driver_present() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return false;
  dlclose(lib);
  return true;
}

int sim_device_index(const std::string& device) {
  const DeviceSelector sel = parse_device_selector(device);
  if (sel.kind != DeviceSelector::Kind::index)
    throw Error(ExitCode::not_found, fmt::format("device '{}' not found on the simulator", device),
                "the simulated GPU is --device 0");
  if (sel.index != 0)
    throw Error(ExitCode::not_found, fmt::format("device {} not found: the simulator has one GPU, index 0", sel.index),
                "use --device 0");
  return 0;
}

nvml::NvmlOptions nvml_options(const BackendOptions& o, const std::string& device) {
  nvml::NvmlOptions n;
  n.device = device;
  n.read_only = o.read_only || nvml::read_only_from_environment();
  n.clock_api = o.clock_api;
  n.allow_busy = o.allow_busy;
  return n;
}

Backends open_sim(const BackendOptions& o) {
  const auto& profile = sim::profile_named(o.sim_profile);
  sim::Injection injection;
  injection.thermal_at_s = o.sim_thermal_at_s;
  injection.power_cap_mhz = o.sim_power_cap_mhz;
  auto gpu = std::make_shared<sim::SimGpu>(profile, o.seed, injection);
  Backends b;
  b.workload = std::make_unique<sim::SimWorkload>(gpu);
  if (o.clock_control == "nvml") {
    // CI's pairing: the real NVML code path (through a fake library) with the simulated workload.
    b.clocks = nvml::NvmlClockControl::open(nvml_options(o, o.device));
  } else {
    b.clocks = std::make_unique<sim::SimClockControl>(gpu, sim_device_index(o.device));
  }
  return b;
}

#ifdef LATEST_WITH_CUDA
Backends open_cuda(const BackendOptions& o) {
  // CUDA and NVML number GPUs differently: match them by PCI bus id.
  int cuda_index = 0;
  const DeviceSelector sel = parse_device_selector(o.device);
  if (sel.kind == DeviceSelector::Kind::uuid) {
    cuda_index = cuda::cuda_index_for_bus_id(nvml::NvmlClockControl::open(nvml_options(o, sel.text))->identity().pci_bus_id);
  } else if (sel.kind == DeviceSelector::Kind::bus_id) {
    cuda_index = cuda::cuda_index_for_bus_id(sel.text);
  } else {
    cuda_index = sel.index;
    const int count = cuda::cuda_runtime_device_count();
    if (cuda_index >= count)
      throw Error(ExitCode::not_found, fmt::format("device {} not found: CUDA sees {} GPU(s)", cuda_index, count),
                  "check CUDA_VISIBLE_DEVICES; `latest info` lists the GPUs");
  }
  cuda::CudaOptions co;
  co.cuda_index = cuda_index;
  co.warps = o.warps;
  Backends b;
  if (o.emulation) {
    // Read-only NVML: identity, clock table and telemetry. The workload
    // measures the card's own clock itself.
    nvml::NvmlOptions ro;
    ro.read_only = true;
    ro.device = cuda::bus_id_of(cuda_index);
    auto nvml_clocks = nvml::NvmlClockControl::open(ro);
    co.emulation = cuda::Emulation{o.emulation->min_latency_ms, o.emulation->max_latency_ms, o.seed};
    b.workload = std::make_unique<cuda::CudaWorkload>(co);
    b.clocks = std::make_unique<cuda::EmulatedClockControl>(std::move(nvml_clocks));
    return b;
  }
  auto workload = std::make_unique<cuda::CudaWorkload>(co);
  b.clocks = nvml::NvmlClockControl::open(nvml_options(o, workload->pci_bus_id()));
  b.workload = std::move(workload);
  return b;
}
#endif

}  // namespace

std::unique_ptr<ClockControl> open_nvml_clocks(const BackendOptions& o) {
  return nvml::NvmlClockControl::open(nvml_options(o, o.device));
}

Backends open_backends(const BackendOptions& o) {
  if (o.clock_control != "auto" && o.clock_control != "sim" && o.clock_control != "nvml")
    throw Error(ExitCode::usage, fmt::format("unknown clock control '{}'", o.clock_control),
                "use --clock-control auto, sim or nvml");
  if (o.backend == "sim") return open_sim(o);
  if (o.backend != "auto" && o.backend != "cuda")
    throw Error(ExitCode::usage, fmt::format("unknown backend '{}'", o.backend), "use --backend auto, cuda or sim");
  const bool driver = driver_present();
  if (o.backend == "cuda" && !driver)
    throw Error(ExitCode::driver_missing, "the NVIDIA driver is not installed (libcuda.so.1 not found)",
                "install the driver, or use --backend sim to run on the simulated GPU");
#ifdef LATEST_WITH_CUDA
  if (driver) {
    const int devices = cuda::cuda_runtime_device_count();
    if (devices > 0) return open_cuda(o);
    if (o.backend == "cuda")
      throw Error(devices < 0 ? ExitCode::driver_missing : ExitCode::not_found,
                  devices < 0 ? "the NVIDIA driver does not work with this CUDA runtime"
                              : "the NVIDIA driver found no CUDA device",
                  "check nvidia-smi and CUDA_VISIBLE_DEVICES, or use --backend sim");
  }
#else
  if (o.backend == "cuda" || driver)
    throw Error(ExitCode::not_supported, "this build of latest has no CUDA backend (nvcc was not found when it was built)",
                "rebuild on a machine with the CUDA toolkit, or use --backend sim");
#endif
  Backends b = open_sim(o);
  b.notice = fmt::format("latest: no CUDA device ({}); using the simulated GPU (profile {}, seed {})",
                         driver ? "driver found no device" : "no driver", o.sim_profile, o.seed);
  return b;
}

}  // namespace latest::cli
