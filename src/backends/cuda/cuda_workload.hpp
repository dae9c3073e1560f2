#pragma once
// The workload side on a real GPU: the window kernel on every SM, and timer
// synchronisation through mapped pinned memory against CLOCK_MONOTONIC_RAW.
// Emulated switching (emulated_workload.hpp) is built on its public surface.
#include <sched.h>

#include <optional>
#include <string>
#include <vector>

#include "core/workload.hpp"

namespace latest::cuda {

// The CUDA index (after CUDA_VISIBLE_DEVICES) of a PCI bus id; throws
// Error(not_found) when CUDA does not see it.
int cuda_index_for_bus_id(const std::string& bus_id);
std::string bus_id_of(int cuda_index);
// Whether the CUDA runtime sees a device: -1 no driver, else the count.
int cuda_runtime_device_count();
// Throws Error of the kind a CUDA runtime error code maps to.
void check_cuda(int rc, const char* what);

class MonotonicRawTime final : public TimeSource {
 public:
  Nanos now_ns() override;
  void sleep_until(Nanos host_ns) override;
};

struct CudaOptions {
  int cuda_index = 0;
  int warps = 1;  // per SM; one recording thread (SPEC §4: 1 warp gives the least noise)
  int sync_rounds = 64;
};

// Device words through which a window's iteration length can be switched
// while it runs (emulated switching): the kernel polls `host_flag` and
// fills the rest. The workload clears them before the launch.
struct SwitchSignal {
  volatile unsigned* host_flag = nullptr;        // mapped: 0, then the new FMAs per iteration
  unsigned* device_flag = nullptr;               // block 0 broadcasts through it
  unsigned long long* flip_seen_ns = nullptr;    // when block 0 saw the host flag
  unsigned long long* switch_ns = nullptr;       // per block: when the new length took effect, 0 never
  int phase_salt = 0;                            // where in an iteration it lands (kernels.hpp)
};

class CudaWorkload final : public Workload {
 public:
  explicit CudaWorkload(const CudaOptions& options);
  ~CudaWorkload() override;

  WorkloadInfo info() const override { return info_; }
  TimeSource& time() override { return time_; }
  TimerSync synchronize() override;
  Nanos launch(const WindowSpec& spec) override;
  WindowRecords collect() override;

  // A window of `fmas` FMAs per iteration (rounded to a multiple of 8)
  // whose length `signal` may switch.
  Nanos launch(const WindowSpec& spec, double fmas, const SwitchSignal& signal);
  // FMAs per iteration as the kernel runs them: a multiple of 8, at least 8.
  static int kernel_fmas(double fmas);

  std::string pci_bus_id() const { return pci_bus_id_; }
  // The clock the SMs run at, from clock64() once a context holds it up.
  Mhz card_mhz() const { return card_mhz_; }
  // The CPUs this process may use, less the pinned measuring thread's: for
  // helper threads that must not preempt it.
  const cpu_set_t& helper_cpus() const { return helper_cpus_; }

 private:
  struct TimerProbe {
    double tick_ns = 0;
    double sm_mhz = 0;  // clock64() cycles per %globaltimer µs
  };
  TimerProbe probe_timer();

  CudaOptions options_;
  WorkloadInfo info_;
  MonotonicRawTime time_;
  std::string pci_bus_id_;
  void* stream_ = nullptr;
  int shared_bytes_ = 0;
  // Device buffers, grown as windows need.
  unsigned long long* d_anchors_ = nullptr;
  std::uint32_t* d_durations_ = nullptr;
  std::uint32_t* d_cycles_ = nullptr;
  int* d_smids_ = nullptr;
  std::size_t durations_capacity_ = 0;
  // Mapped pinned words for the timer sync.
  volatile unsigned* h_ping_ = nullptr;
  volatile unsigned long long* h_stamp_ = nullptr;
  volatile unsigned* h_pong_ = nullptr;

  std::optional<WindowSpec> pending_;
  Mhz card_mhz_ = 0;
  cpu_set_t helper_cpus_{};
};

}  // namespace latest::cuda
