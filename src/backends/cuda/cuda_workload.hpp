#pragma once
// The workload side on a real GPU: the window kernel on every SM, timer
// synchronisation through mapped pinned memory against CLOCK_MONOTONIC_RAW,
// and, for `latest selftest`, emulated switching: at host time t_s + L the
// host flips a mapped word and the kernel's iterations take the length the
// target clock would give, without any clock changing (SPEC §5.2).
#include <sched.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include "core/workload.hpp"

namespace latest::cuda {

// The CUDA index (after CUDA_VISIBLE_DEVICES) of a PCI bus id; throws
// Error(not_found) when CUDA does not see it.
int cuda_index_for_bus_id(const std::string& bus_id);
std::string bus_id_of(int cuda_index);
// Whether the CUDA runtime sees a device: -1 no driver, else the count.
int cuda_runtime_device_count();

class MonotonicRawTime final : public TimeSource {
 public:
  Nanos now_ns() override;
  void sleep_until(Nanos host_ns) override;
};

struct Emulation {
  double min_latency_ms = 1;   // L is uniform in [min, max]
  double max_latency_ms = 50;
  std::uint64_t seed = 1;
};

struct CudaOptions {
  int cuda_index = 0;
  int warps = 1;  // per SM; one recording thread (SPEC §4: 1 warp gives the least noise)
  std::optional<Emulation> emulation;
  int sync_rounds = 64;
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
  void clock_requested(Nanos host_ns, Mhz target) override;
  std::optional<SwitchTruth> truth() const override { return truth_; }

  std::string pci_bus_id() const { return pci_bus_id_; }
  std::string device_name() const { return name_; }

 private:
  struct TimerProbe {
    double tick_ns = 0;
    double sm_mhz = 0;  // clock64() cycles per %globaltimer µs
  };
  TimerProbe probe_timer();
  void check(int rc, const char* what) const;
  int fmas_for(std::int64_t fmas, Mhz clock) const;
  void join_flipper();
  // The truth of the window's emulated switch; `smids` maps blocks to SMs.
  std::optional<SwitchTruth> emulated_truth(const WindowRecords& records, const std::vector<int>& smids);

  CudaOptions options_;
  WorkloadInfo info_;
  MonotonicRawTime time_;
  std::string name_, pci_bus_id_;
  void* stream_ = nullptr;
  int shared_bytes_ = 0;
  // Device buffers, grown as windows need.
  unsigned long long* d_anchors_ = nullptr;
  std::uint32_t* d_durations_ = nullptr;
  std::uint32_t* d_cycles_ = nullptr;
  int* d_smids_ = nullptr;
  std::size_t durations_capacity_ = 0;
  unsigned* d_flag_ = nullptr;
  unsigned long long* d_flip_seen_ = nullptr;
  int* d_switch_iterations_ = nullptr;
  // Mapped pinned words for sync and emulation.
  volatile unsigned* h_ping_ = nullptr;
  volatile unsigned long long* h_stamp_ = nullptr;
  volatile unsigned* h_pong_ = nullptr;
  volatile unsigned* h_flag_ = nullptr;
  unsigned ping_counter_ = 0;

  std::optional<WindowSpec> pending_;
  Mhz card_mhz_ = 0;  // measured with clock64(): what emulation stretches from
  Mhz emulated_clock_ = 0;
  Mhz pending_target_ = 0;
  std::thread flipper_;
  std::atomic<Nanos> flipped_at_{0};
  std::atomic<Nanos> flip_bracket_ns_{0};
  cpu_set_t flipper_cpus_{};
  Nanos requested_at_ = 0;
  std::mt19937_64 rng_;
  std::optional<SwitchTruth> truth_;
};

}  // namespace latest::cuda
