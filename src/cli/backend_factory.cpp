#include "cli/backend_factory.hpp"

#include <dlfcn.h>

#include <algorithm>

#include <fmt/format.h>

#include "backends/nvml/nvml_device.hpp"
#include "backends/sim/sim_backend.hpp"
#include "cli/arguments.hpp"
#include "core/error.hpp"
#ifdef LATEST_WITH_CUDA
#include "backends/cuda/cuda_workload.hpp"
#include "backends/cuda/emulated_workload.hpp"
#include "backends/cuda/gemm_load.hpp"
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

int sim_device_index(const DeviceSelector& sel, int count) {
  const std::string cards = count == 1 ? "one GPU, index 0" : fmt::format("{} GPUs, indices 0 to {}", count, count - 1);
  if (sel.kind != DeviceSelector::Kind::index)
    throw Error(ErrorKind::not_found, fmt::format("device '{}' not found on the simulator", sel.text),
                fmt::format("the simulator has {} (--sim-gpus)", cards));
  if (sel.index >= count)
    throw Error(ErrorKind::not_found, fmt::format("device {} not found: the simulator has {}", sel.index, cards),
                count == 1 ? "use --device 0, or simulate more cards with --sim-gpus N" : "use one of those indices");
  return sel.index;
}

// An NVML device with its run guard. Read-only, every change is refused
// (exit 4) before NVML is called, so there is nothing to guard.
struct NvmlSide {
  std::shared_ptr<nvml::NvmlDevice> device;
  std::shared_ptr<RunGuard> guard;
  std::shared_ptr<ClockControl> clocks;
};

NvmlSide open_nvml(const BackendOptions& o, const DeviceSelector& device) {
  NvmlSide side;
  side.device = nvml::NvmlDevice::open({device, o.read_only || nvml::read_only_from_environment(), o.clock_api});
  side.guard = std::make_shared<RunGuard>(side.device, GuardSettings{{}, o.allow_busy, o.clock_api});
  side.clocks = side.device->read_only() ? std::shared_ptr<ClockControl>(side.device)
                                         : std::make_shared<GuardedClockControl>(side.device, side.guard);
  return side;
}

void use_nvml(Backends& b, NvmlSide side) {
  b.query = side.device;
  b.clocks = std::move(side.clocks);
  if (!side.device->read_only()) b.guard = std::move(side.guard);
}

// --read-only on the simulator: what would change a clock fails as on a real
// card (exit 4), so a read-only run can be rehearsed without one.
class ReadOnlyClockControl final : public ClockControl {
 public:
  explicit ReadOnlyClockControl(std::shared_ptr<ClockControl> inner) : inner_(std::move(inner)) {}
  DeviceIdentity identity() override { return inner_->identity(); }
  std::vector<Mhz> supported_clocks() override { return inner_->supported_clocks(); }
  void set_clock(Mhz mhz) override {
    throw Error(ErrorKind::no_permission, fmt::format("read-only: setting the SM clock to {} MHz is refused", mhz),
                "leave out --read-only (and LATEST_READ_ONLY) to let the run change clocks");
  }
  Telemetry telemetry() override { return inner_->telemetry(); }

 private:
  std::shared_ptr<ClockControl> inner_;
};

Backends open_sim(const BackendOptions& o) {
  const auto& profile = sim::profile_named(o.sim_profile);
  sim::Injection injection;
  injection.thermal_at_s = o.sim_thermal_at_s;
  injection.power_cap_mhz = o.sim_power_cap_mhz;
  if (o.sim_ramp) injection.ramp_shape = sim::ramp_shape_named(*o.sim_ramp);
  if (o.sim_gpus < 1) throw Error(ErrorKind::bad_argument, "--sim-gpus must be at least 1");
  const int card = o.clock_control == "nvml" ? 0 : sim_device_index(o.device, o.sim_gpus);
  auto gpu = std::make_shared<sim::SimGpu>(profile, o.seed, injection, card);
  Backends b;
  b.workload = std::make_unique<sim::SimWorkload>(gpu);
  if (o.watch_seconds) b.load = std::make_unique<sim::SimBrakeLoad>(gpu, *o.watch_seconds);
  if (o.clock_control == "nvml") {
    // CI's pairing: the real NVML code path (through a fake library) with the simulated workload.
    use_nvml(b, open_nvml(o, o.device));
  } else {
    b.clocks = std::make_shared<sim::SimClockControl>(gpu, card);
    if (o.read_only || nvml::read_only_from_environment()) b.clocks = std::make_shared<ReadOnlyClockControl>(b.clocks);
  }
  return b;
}

#ifdef LATEST_WITH_CUDA
Backends open_cuda(const BackendOptions& o) {
  // CUDA and NVML number GPUs differently: match them by PCI bus id.
  int cuda_index = 0;
  const DeviceSelector& sel = o.device;
  if (sel.kind == DeviceSelector::Kind::uuid) {
    nvml::NvmlOptions by_uuid{sel, true, o.clock_api};
    cuda_index = cuda::cuda_index_for_bus_id(nvml::NvmlDevice::open(by_uuid)->identity().pci_bus_id);
  } else if (sel.kind == DeviceSelector::Kind::bus_id) {
    cuda_index = cuda::cuda_index_for_bus_id(sel.text);
  } else {
    cuda_index = sel.index;
    const int count = cuda::cuda_runtime_device_count();
    if (cuda_index >= count)
      throw Error(ErrorKind::not_found, fmt::format("device {} not found: CUDA sees {} GPU(s)", cuda_index, count),
                  "check CUDA_VISIBLE_DEVICES; `latest info` lists the GPUs");
  }
  cuda::CudaOptions co;
  co.cuda_index = cuda_index;
  co.warps = o.warps;
  Backends b;
  if (o.watch_seconds) {
    // Read-only NVML: telemetry and the settings checked before and after.
    // The load is made first: it notes the cores before the workload pins
    // this thread to one.
    b.load = std::make_unique<cuda::GemmLoad>(cuda_index, o.gemm_size);
    auto card = nvml::NvmlDevice::open({DeviceSelector::by_bus_id(cuda::bus_id_of(cuda_index)), true, o.clock_api});
    b.workload = std::make_unique<cuda::CudaWorkload>(co);
    b.query = card;
    b.clocks = card;
    return b;
  }
  if (o.emulation) {
    // Read-only NVML: identity, clock table and telemetry. The workload
    // measures the card's own clock itself.
    auto card = nvml::NvmlDevice::open({DeviceSelector::by_bus_id(cuda::bus_id_of(cuda_index)), true, o.clock_api});
    b.workload = std::make_unique<cuda::EmulatedWorkload>(
        std::make_unique<cuda::CudaWorkload>(co),
        cuda::Emulation{o.emulation->min_latency_ms, o.emulation->max_latency_ms, o.seed});
    b.query = card;
    b.clocks = std::make_shared<cuda::EmulatedClockControl>(card);
    return b;
  }
  auto workload = std::make_unique<cuda::CudaWorkload>(co);
  use_nvml(b, open_nvml(o, DeviceSelector::by_bus_id(workload->pci_bus_id())));
  b.workload = std::move(workload);
  return b;
}
#endif

}  // namespace

std::vector<DeviceSelector> resolve_devices(const DeviceSelection& selection, const BackendOptions& o) {
  if (!selection.all) {
    // Every GPU of a list is found before any is measured: a wrong last one
    // fails the command before the first runs for an hour.
    if (selection.devices.size() > 1)
      for (const DeviceSelector& d : selection.devices) {
        BackendOptions one = o;
        one.device = d;
        open_backends(one);
      }
    return selection.devices;
  }
  // Every GPU of the backend that --backend resolves to.
  BackendOptions first = o;
  first.device = {DeviceSelector::Kind::index, "0", 0};
  int count = 0;
  {
    const Backends b = open_backends(first);
    if (b.workload->info().backend == "sim") {
      count = o.sim_gpus;
    } else {
#ifdef LATEST_WITH_CUDA
      count = cuda::cuda_runtime_device_count();
#endif
    }
  }
  std::vector<DeviceSelector> out;
  for (int i = 0; i < count; ++i) out.push_back({DeviceSelector::Kind::index, std::to_string(i), i});
  return out;
}

std::shared_ptr<RunGuard> open_nvml_guard(const BackendOptions& o) {
  return open_nvml(o, o.device).guard;
}

Backends open_backends(const BackendOptions& o) {
  if (o.clock_control != "auto" && o.clock_control != "sim" && o.clock_control != "nvml")
    throw Error(ErrorKind::bad_argument, fmt::format("unknown clock control '{}'", o.clock_control),
                "use --clock-control auto, sim or nvml");
  if (o.backend == "sim") return open_sim(o);
  if (o.backend != "auto" && o.backend != "cuda")
    throw Error(ErrorKind::bad_argument, fmt::format("unknown backend '{}'", o.backend), "use --backend auto, cuda or sim");
  const bool driver = driver_present();
  if (o.backend == "cuda" && !driver)
    throw Error(ErrorKind::driver_missing, "the NVIDIA driver is not installed (libcuda.so.1 not found)",
                "install the driver, or use --backend sim to run on the simulated GPU");
#ifdef LATEST_WITH_CUDA
  if (driver) {
    const int devices = cuda::cuda_runtime_device_count();
    if (devices > 0) return open_cuda(o);
    if (o.backend == "cuda")
      throw Error(devices < 0 ? ErrorKind::driver_missing : ErrorKind::not_found,
                  devices < 0 ? "the NVIDIA driver does not work with this CUDA runtime"
                              : "the NVIDIA driver found no CUDA device",
                  "check nvidia-smi and CUDA_VISIBLE_DEVICES, or use --backend sim");
  }
#else
  if (o.backend == "cuda" || driver)
    throw Error(ErrorKind::not_supported, "this build of latest has no CUDA backend (nvcc was not found when it was built)",
                "rebuild on a machine with the CUDA toolkit, or use --backend sim");
#endif
  Backends b = open_sim(o);
  b.notice = fmt::format("latest: no CUDA device ({}); using the simulated GPU (profile {}, seed {})",
                         driver ? "driver found no device" : "no driver", o.sim_profile, o.seed);
  return b;
}

}  // namespace latest::cli
