#pragma once
// The workload side on a real GPU: the window kernel on every SM, and timer
// synchronisation through mapped pinned memory against CLOCK_MONOTONIC_RAW.
// Emulated switching (emulated_workload.hpp) is built on its public surface.
#include <sched.h>

#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/workload.hpp"

namespace latest::cuda {

struct WindowKernelArgs;

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

// Words through which the iteration length can be switched while a window
// or stream runs (emulated switching): the kernel polls `host_flag` and
// fills the rest (kernels.hpp says what each holds). The workload clears
// them before each launch.
struct SwitchSignal {
  volatile unsigned long long* host_flag = nullptr;  // mapped, two words: the switch and its time
  unsigned long long* device_flag = nullptr;         // two words block 0 broadcasts them through
  volatile unsigned long long* flip_seen = nullptr;  // mapped: when block 0 saw the host word, and the word
  volatile unsigned long long* switch_ns = nullptr;  // mapped, per block: when the latest switch took effect
  volatile unsigned* switch_number = nullptr;        // mapped, per block: which switch that was
};

// The slots of records [from, until) as (first slot, count) runs of the
// ring: one, or two where they wrap; at most one ring's worth (records a lap
// or more behind are lost, which their tags show when read).
std::vector<std::pair<long long, long long>> ring_copies(long long from, long long until, int ring_shift);

// Reads block `block`'s records from `from` up to `until` (exclusive) out of
// a host copy of the stream's ring (kernels.hpp) into `out`, stopping at the
// first slot its lap has not written yet; returns how many it read. A slot
// a later lap wrote means the kernel overwrote records nobody had read:
// Error(internal), naming the fix.
long long read_ring_block(const std::uint64_t* ring, int blocks, int block, int ring_shift, long long from,
                          long long until, SmRecords& out);

// One SM's records read from a stream's ring and not drained yet, kept in
// chunks with room made before each read: the thread that reads the ring
// never copies records to grow. Grown as one vector, the records held while
// the engine did not drain were copied (and fresh pages touched) at each
// doubling: on a 2-core VM 0.10-0.27 s at 65 k records an SM (132 SMs)
// and 0.20-0.57 s at 131 k, longer than the ring lasts at 1024 FMAs (about
// 0.17 s at 1980 MHz), so the ring could overrun (docs/benchmarks.md,
// "Records held for the engine").
class PendingRecords {
 public:
  static constexpr std::size_t kChunk = std::size_t{1} << 12;  // records
  bool empty() const { return full_.empty() && current_.duration_ns.empty(); }
  // Where the next `more` records go (they may fill a chunk to its end, or
  // start one): push them onto it. `first_start_ns` names where the first
  // record began, while none is held.
  SmRecords& room_for(std::size_t more, Nanos first_start_ns);
  // Every record held, in order, as one SM's; none is left.
  SmRecords take();

 private:
  std::vector<SmRecords> full_;
  SmRecords current_;
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
  // A stream's records reach the host through a ring in device memory that
  // a helper thread copies every millisecond, so a long wait of the engine
  // between drains loses nothing.
  bool can_stream() const override { return true; }
  Nanos start_stream(const WindowSpec& spec) override;
  WindowRecords drain() override;
  void stop_stream() override;

  // A window or stream of `fmas` FMAs per iteration (rounded to a multiple
  // of 8) whose length `signal` may switch.
  Nanos launch(const WindowSpec& spec, double fmas, const SwitchSignal& signal);
  Nanos start_stream(const WindowSpec& spec, double fmas, const SwitchSignal& signal);
  // FMAs per iteration as the kernel runs them: a multiple of 8, at least 8.
  static int kernel_fmas(double fmas);

  std::string pci_bus_id() const { return pci_bus_id_; }
  // The clock the SMs run at, from clock64() once a context holds it up.
  Mhz card_mhz() const { return card_mhz_; }

 private:
  struct TimerProbe {
    double tick_ns = 0;
    double sm_mhz = 0;  // clock64() cycles per %globaltimer µs
  };
  TimerProbe probe_timer();
  // The arguments a window and a stream share; clears the signal's words.
  WindowKernelArgs kernel_args(const WindowSpec& spec, double fmas, const SwitchSignal& signal);
  // A ring of at least `words` words.
  void reserve_ring(std::size_t words);
  // Copies the ring's new records into pending_; under ring_mutex_.
  void pull();
  void drain_in_background();

  CudaOptions options_;
  WorkloadInfo info_;
  MonotonicRawTime time_;
  std::string pci_bus_id_;
  void* stream_ = nullptr;       // windows and streams
  void* copy_stream_ = nullptr;  // a stream's drains and its stop, while it runs
  void* sync_stream_ = nullptr;  // timer syncs, also while a stream runs
  int shared_bytes_ = 0;
  unsigned long long* d_anchors_ = nullptr;
  int* d_smids_ = nullptr;
  // The records' ring (kernels.hpp), grown as windows need; a stream uses
  // its first 1 << kRingShift slots.
  unsigned long long* d_ring_ = nullptr;
  std::size_t ring_words_ = 0;
  unsigned long long* d_heads_ = nullptr;
  unsigned* d_stop_ = nullptr;
  // Mapped pinned words for the timer sync.
  volatile unsigned* h_ping_ = nullptr;
  volatile unsigned long long* h_stamp_ = nullptr;
  volatile unsigned* h_pong_ = nullptr;
  unsigned stream_pings_ = 0;

  std::optional<WindowSpec> pending_;

  // The running stream: the ring's host copy (pinned), the per-block record
  // counts the kernel publishes, and the word that ends it.
  static constexpr int kRingShift = 16;  // 65,536 records per SM, 66 ms at 1 us an iteration
  std::uint64_t* h_ring_ = nullptr;
  unsigned long long* h_heads_ = nullptr;  // pinned: [0, sms) heads, then the anchors
  unsigned* h_stop_ = nullptr;             // pinned word holding 1, copied to d_stop_ to end the stream
  std::atomic<bool> streaming_{false};
  std::thread drainer_;
  std::mutex ring_mutex_;
  std::exception_ptr drain_error_;
  bool anchored_ = false;
  int stream_blocks_ = 0;
  std::vector<int> stream_smids_;          // per block
  std::vector<int> recorded_;              // the SMs the stream records, ascending (once known)
  std::vector<long long> consumed_;        // per block: records read
  std::vector<Nanos> next_start_;          // per block: the start of its next record
  Nanos last_pull_ns_ = 0;                 // when the ring was last read (host time)
  std::vector<PendingRecords> pending_records_;  // per SM: read, not yet drained
  std::int64_t pending_bytes_ = 0;
  Mhz card_mhz_ = 0;
  cpu_set_t helper_cpus_{};
};

}  // namespace latest::cuda
