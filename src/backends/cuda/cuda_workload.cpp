#include "backends/cuda/cuda_workload.hpp"

#include <cuda_runtime.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "backends/cuda/kernels.hpp"
#include "core/error.hpp"

namespace latest::cuda {

int cuda_index_for_bus_id(const std::string& bus_id) {
  int index = -1;
  if (cudaDeviceGetByPCIBusId(&index, bus_id.c_str()) != cudaSuccess || index < 0)
    throw Error(ErrorKind::not_found, fmt::format("CUDA does not see the GPU at {}", bus_id),
                "check CUDA_VISIBLE_DEVICES; `latest info` lists the GPUs");
  return index;
}

std::string bus_id_of(int cuda_index) {
  char bus[32] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, cuda_index) != cudaSuccess)
    throw Error(ErrorKind::not_found, fmt::format("CUDA device {} not found", cuda_index));
  return bus;
}

int cuda_runtime_device_count() {
  int n = 0;
  const cudaError_t rc = cudaGetDeviceCount(&n);
  if (rc == cudaErrorNoDevice) return 0;
  return rc == cudaSuccess ? n : -1;
}

Nanos MonotonicRawTime::now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<Nanos>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void MonotonicRawTime::sleep_until(Nanos host_ns) {
  // Sleep coarsely, then spin the last 200 us on the raw clock: NTP never
  // steps or slews it, and the request time must be exact.
  for (;;) {
    const Nanos left = host_ns - now_ns();
    if (left <= 0) return;
    if (left > 300'000) {
      timespec ts{0, static_cast<long>(std::min<Nanos>(left - 200'000, 100'000'000))};
      nanosleep(&ts, nullptr);
    }
  }
}

void check_cuda(int rc, const char* what) {
  if (rc == cudaSuccess) return;
  const auto err = static_cast<cudaError_t>(rc);
  ErrorKind code = ErrorKind::internal;
  if (err == cudaErrorNoDevice || err == cudaErrorInvalidDevice) code = ErrorKind::not_found;
  if (err == cudaErrorInsufficientDriver || err == cudaErrorNoKernelImageForDevice) code = ErrorKind::driver_missing;
  if (err == cudaErrorDevicesUnavailable) code = ErrorKind::in_use;
  throw Error(code, fmt::format("CUDA: {} failed: {}", what, cudaGetErrorString(err)));
}

CudaWorkload::CudaWorkload(const CudaOptions& options) : options_(options) {
  // Pin the measuring thread: the request time and the sync must not move
  // cores. Helper threads get the other allowed cores, so neither preempts
  // the other between a timestamp and what it dates.
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  pthread_getaffinity_np(pthread_self(), sizeof allowed, &allowed);
  const int cpu = sched_getcpu() >= 0 ? sched_getcpu() : 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  helper_cpus_ = allowed;
  if (CPU_COUNT(&helper_cpus_) > 1) CPU_CLR(cpu, &helper_cpus_);

  check_cuda(cudaSetDevice(options_.cuda_index), "selecting the device");
  cudaDeviceProp prop{};
  check_cuda(cudaGetDeviceProperties(&prop, options_.cuda_index), "reading the device properties");
  char bus[32] = {};
  check_cuda(cudaDeviceGetPCIBusId(bus, sizeof bus, options_.cuda_index), "reading the PCI bus id");
  pci_bus_id_ = bus;
  for (void** s : {&stream_, &copy_stream_, &sync_stream_}) {
    cudaStream_t stream;
    check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "creating a stream");
    *s = stream;
  }
  // More than half the SM's shared memory: a second block cannot fit.
  shared_bytes_ = static_cast<int>(prop.sharedMemPerMultiprocessor / 2 + 1024);
  shared_bytes_ = std::min<int>(shared_bytes_, static_cast<int>(prop.sharedMemPerBlockOptin));
  check_cuda(window_kernel_allow_shared(shared_bytes_), "raising the shared-memory limit");

  info_.backend = "cuda";
  info_.sm_count = prop.multiProcessorCount;
  check_cuda(cudaMalloc(&d_anchors_, sizeof(unsigned long long) * info_.sm_count), "allocating");
  check_cuda(cudaMalloc(&d_smids_, sizeof(int) * info_.sm_count), "allocating");
  check_cuda(cudaMalloc(&d_heads_, sizeof(unsigned long long) * info_.sm_count), "allocating");
  check_cuda(cudaMalloc(&d_stop_, sizeof(unsigned)), "allocating");
  void* words = nullptr;
  // With unified addressing (every 64-bit Linux) a mapped host pointer is also the device pointer.
  check_cuda(cudaHostAlloc(&words, 64, cudaHostAllocMapped), "allocating mapped memory");
  auto* base = static_cast<unsigned char*>(words);
  h_ping_ = reinterpret_cast<volatile unsigned*>(base);
  h_pong_ = reinterpret_cast<volatile unsigned*>(base + 4);
  h_stamp_ = reinterpret_cast<volatile unsigned long long*>(base + 16);
  *h_ping_ = 0;
  *h_pong_ = 0;
  const TimerProbe probe = probe_timer();
  info_.timer_tick_ns = probe.tick_ns;
  // The card's own clock as its SMs count it, now that a context holds it up
  // (before one, the H200 idles at 345-435 MHz, which NVML would report).
  card_mhz_ = static_cast<Mhz>(std::lround(probe.sm_mhz));
}

CudaWorkload::~CudaWorkload() {
  try {
    stop_stream();
  } catch (...) {  // a destructor reports nothing; the context goes with the process
  }
  for (void* s : {stream_, copy_stream_, sync_stream_})
    if (s) cudaStreamSynchronize(static_cast<cudaStream_t>(s));
  cudaFree(d_anchors_);
  cudaFree(d_smids_);
  cudaFree(d_ring_);
  cudaFree(d_heads_);
  cudaFree(d_stop_);
  if (h_ring_) cudaFreeHost(h_ring_);
  if (h_heads_) cudaFreeHost(h_heads_);
  if (h_stop_) cudaFreeHost(h_stop_);
  if (h_ping_) cudaFreeHost(const_cast<unsigned*>(h_ping_));
  for (void* s : {stream_, copy_stream_, sync_stream_})
    if (s) cudaStreamDestroy(static_cast<cudaStream_t>(s));
}

CudaWorkload::TimerProbe CudaWorkload::probe_timer() {
  unsigned long long* d = nullptr;
  check_cuda(cudaMalloc(&d, 3 * sizeof *d), "allocating");
  check_cuda(launch_timer_probe(d, 20'000'000, stream_), "launching the timer probe");
  unsigned long long out[3] = {};
  check_cuda(cudaMemcpyAsync(out, d, sizeof out, cudaMemcpyDeviceToHost, static_cast<cudaStream_t>(stream_)), "copying");
  check_cuda(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)), "probing the timer");
  cudaFree(d);
  return {static_cast<double>(out[0]), out[1] ? 1e3 * static_cast<double>(out[2]) / static_cast<double>(out[1]) : 0.0};
}

TimerSync CudaWorkload::synchronize() {
  const int rounds = options_.sync_rounds;
  // While a stream runs, its polling warp answers (kernels.hpp); between
  // launches, a sync kernel, counting its pings from 1. The stream's pings
  // have the top bit set, so each differs from the last one answered.
  const bool by_kernel = !streaming_;
  if (by_kernel) {
    *h_ping_ = 0;
    *h_pong_ = 0;
    check_cuda(launch_sync(h_ping_, h_stamp_, h_pong_, rounds, sync_stream_), "launching the timer sync");
  }
  TimerSync best;
  best.round_trip_ns = 1e18;
  for (int k = 1; k <= rounds; ++k) {
    const unsigned ping = by_kernel ? static_cast<unsigned>(k) : 0x80000000u | ++stream_pings_;
    const Nanos h1 = time_.now_ns();
    *h_ping_ = ping;
    while (*h_pong_ != ping) {
      if (time_.now_ns() - h1 > 2'000'000'000)
        throw Error(ErrorKind::internal, "CUDA: the GPU did not answer the timer sync within 2 s",
                    "another process may hold the GPU; run latest alone on it");
    }
    const Nanos h2 = time_.now_ns();
    const auto g = static_cast<Nanos>(*h_stamp_);
    if (static_cast<double>(h2 - h1) < best.round_trip_ns) {
      best.round_trip_ns = static_cast<double>(h2 - h1);
      best.offset_ns = g - (h1 + h2) / 2;
      best.host_ns = (h1 + h2) / 2;
    }
  }
  if (by_kernel) check_cuda(cudaStreamSynchronize(static_cast<cudaStream_t>(sync_stream_)), "finishing the timer sync");
  best.uncertainty_ns = best.round_trip_ns / 2;
  return best;
}

int CudaWorkload::kernel_fmas(double fmas) {
  return std::max(8, static_cast<int>(std::lround(fmas / 8)) * 8);
}

Nanos CudaWorkload::launch(const WindowSpec& spec) {
  return launch(spec, static_cast<double>(spec.iteration_fmas), SwitchSignal{});
}

namespace {

// Exactly one recording block per SM, or the per-SM statistics mean nothing.
void check_one_block_per_sm(const std::vector<int>& smids, int sm_count) {
  std::set<int> seen(smids.begin(), smids.end());
  if (seen.size() != smids.size() || *seen.begin() < 0 || *seen.rbegin() >= sm_count)
    throw Error(ErrorKind::not_supported,
                fmt::format("could not place one recording block on each of the {} SMs ({} distinct SMs seen)",
                            smids.size(), seen.size()),
                "another process may be using the GPU; run latest alone on it");
}

// A window's ring holds all its iterations: their count rounded up to a
// power of two.
int window_shift(std::int64_t iterations) {
  int shift = 0;
  while ((1ll << shift) < iterations) ++shift;
  return shift;
}

void* pinned(std::size_t bytes) {
  void* p = nullptr;
  check_cuda(cudaHostAlloc(&p, bytes, cudaHostAllocDefault), "allocating pinned memory");
  return p;
}

}  // namespace

std::vector<std::pair<long long, long long>> ring_copies(long long from, long long until, int ring_shift) {
  const long long slots = 1ll << ring_shift;
  std::vector<std::pair<long long, long long>> copies;
  for (long long at = from; at < std::min(until, from + slots);) {
    const long long first = at & (slots - 1);
    const long long n = std::min(std::min(until, from + slots) - at, slots - first);
    copies.emplace_back(first, n);
    at += n;
  }
  return copies;
}

long long read_ring_block(const std::uint64_t* ring, int blocks, int block, int ring_shift, long long from,
                          long long until, SmRecords& out) {
  const long long mask = (1ll << ring_shift) - 1;
  long long i = from;
  for (; i < until; ++i) {
    const std::uint64_t word = ring[static_cast<std::size_t>((i & mask) * blocks + block)];
    const auto tag = static_cast<unsigned>((word >> kRingDurationBits) & 63u);
    const unsigned expected = ring_tag(i, ring_shift);
    if (tag != expected) {
      // Not written yet: the slot still holds the lap before (or nothing).
      const unsigned before = i <= mask ? 0u : ring_tag(i - mask - 1, ring_shift);
      if (tag == before) break;
      throw Error(ErrorKind::internal,
                  fmt::format("the stream's records came faster than the host drained them (record {} of block {} "
                              "was overwritten)",
                              i, block),
                  "use longer iterations (--iteration-fmas), or keep other work off this machine's CPUs");
    }
    out.duration_ns.push_back(static_cast<std::uint32_t>(word & ((1u << kRingDurationBits) - 1)));
    out.cycles.push_back(static_cast<std::uint32_t>(word >> 32));
  }
  return i - from;
}

SmRecords& PendingRecords::room_for(std::size_t more, Nanos first_start_ns) {
  if (empty()) current_.first_start_ns = first_start_ns;
  if (current_.duration_ns.size() + more > current_.duration_ns.capacity()) {
    if (!current_.duration_ns.empty()) full_.push_back(std::exchange(current_, SmRecords{}));
    current_.duration_ns.reserve(std::max(more, kChunk));
    current_.cycles.reserve(std::max(more, kChunk));
  }
  return current_;
}

SmRecords PendingRecords::take() {
  if (full_.empty()) return std::exchange(current_, SmRecords{});
  SmRecords all = std::move(full_.front());
  std::size_t count = current_.duration_ns.size();
  for (const SmRecords& chunk : full_) count += chunk.duration_ns.size();
  all.duration_ns.reserve(count);
  all.cycles.reserve(count);
  for (std::size_t k = 1; k <= full_.size(); ++k) {
    const SmRecords& chunk = k < full_.size() ? full_[k] : current_;
    all.duration_ns.insert(all.duration_ns.end(), chunk.duration_ns.begin(), chunk.duration_ns.end());
    all.cycles.insert(all.cycles.end(), chunk.cycles.begin(), chunk.cycles.end());
  }
  full_.clear();
  current_ = SmRecords{};
  return all;
}

WindowKernelArgs CudaWorkload::kernel_args(const WindowSpec& spec, double fmas, const SwitchSignal& signal) {
  WindowKernelArgs a;
  a.anchors = d_anchors_;
  a.smids = d_smids_;
  a.warmup = spec.warmup_iterations;
  a.heads = d_heads_;
  a.stop = d_stop_;
  a.ping = h_ping_;
  a.stamp = h_stamp_;
  a.pong = h_pong_;
  a.fmas = kernel_fmas(fmas);
  if (!signal.host_flag) return a;
  const auto sms = static_cast<std::size_t>(info_.sm_count);
  a.emulate = 1;
  signal.host_flag[0] = 0;
  signal.host_flag[1] = 0;
  signal.flip_seen[0] = 0;
  signal.flip_seen[1] = 0;
  for (std::size_t b = 0; b < sms; ++b) {
    signal.switch_ns[b] = 0;
    signal.switch_number[b] = 0;
  }
  check_cuda(cudaMemsetAsync(signal.device_flag, 0, 2 * sizeof(unsigned long long), static_cast<cudaStream_t>(stream_)),
             "clearing the flag");
  // With unified addressing (every 64-bit Linux) a mapped host pointer is also the device pointer.
  a.host_flag = signal.host_flag;
  a.device_flag = signal.device_flag;
  a.flip_seen = const_cast<unsigned long long*>(signal.flip_seen);
  a.switch_ns = const_cast<unsigned long long*>(signal.switch_ns);
  a.switch_number = const_cast<unsigned*>(signal.switch_number);
  return a;
}

void CudaWorkload::reserve_ring(std::size_t words) {
  if (words <= ring_words_) return;
  cudaFree(d_ring_);
  d_ring_ = nullptr;
  ring_words_ = 0;
  check_cuda(cudaMalloc(&d_ring_, words * sizeof(std::uint64_t)), "allocating the records");
  ring_words_ = words;
}

Nanos CudaWorkload::launch(const WindowSpec& spec, double fmas, const SwitchSignal& signal) {
  if (streaming_) throw Error(ErrorKind::internal, "a window launched while a stream runs");
  const auto sms = static_cast<std::size_t>(info_.sm_count);
  const int shift = window_shift(spec.iterations);
  reserve_ring(sms << shift);
  const auto stream = static_cast<cudaStream_t>(stream_);
  check_cuda(cudaMemsetAsync(d_stop_, 0, sizeof(unsigned), stream), "clearing");
  WindowKernelArgs a = kernel_args(spec, fmas, signal);
  a.iterations = spec.iterations;
  a.ring = d_ring_;
  a.ring_shift = shift;
  pending_ = spec;
  const Nanos launched = time_.now_ns();
  check_cuda(launch_window(a, info_.sm_count, options_.warps, shared_bytes_, stream_), "launching the window");
  return launched;
}

WindowRecords CudaWorkload::collect() {
  if (!pending_) throw Error(ErrorKind::internal, "collect without launch");
  const WindowSpec spec = *pending_;
  pending_.reset();
  check_cuda(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)), "running the window");
  WindowRecords out;
  if (spec.iterations == 0) return out;
  const auto sms = static_cast<std::size_t>(info_.sm_count);
  std::vector<unsigned long long> anchors(sms);
  std::vector<int> smids(sms);
  std::vector<std::uint64_t> ring(sms * static_cast<std::size_t>(spec.iterations));
  check_cuda(cudaMemcpy(anchors.data(), d_anchors_, sms * sizeof(unsigned long long), cudaMemcpyDeviceToHost), "copying");
  check_cuda(cudaMemcpy(smids.data(), d_smids_, sms * sizeof(int), cudaMemcpyDeviceToHost), "copying");
  check_cuda(cudaMemcpy(ring.data(), d_ring_, ring.size() * sizeof(std::uint64_t), cudaMemcpyDeviceToHost),
             "copying the records");
  check_one_block_per_sm(smids, info_.sm_count);
  out.sms.resize(sms);
  for (std::size_t b = 0; b < sms; ++b) {
    SmRecords& r = out.sms[static_cast<std::size_t>(smids[b])];
    r.sm = smids[b];
    r.first_start_ns = static_cast<Nanos>(anchors[b]);
    r.duration_ns.reserve(static_cast<std::size_t>(spec.iterations));
    r.cycles.reserve(static_cast<std::size_t>(spec.iterations));
    if (read_ring_block(ring.data(), static_cast<int>(sms), static_cast<int>(b), window_shift(spec.iterations), 0,
                        spec.iterations, r) != spec.iterations)
      throw Error(ErrorKind::internal, fmt::format("the window's block {} left records unwritten", b));
  }
  out.bytes = static_cast<std::int64_t>(anchors.size() * 8 + smids.size() * 4 + ring.size() * 8);
  return out;
}

Nanos CudaWorkload::start_stream(const WindowSpec& spec) {
  return start_stream(spec, static_cast<double>(spec.iteration_fmas), SwitchSignal{});
}

Nanos CudaWorkload::start_stream(const WindowSpec& spec, double fmas, const SwitchSignal& signal) {
  if (streaming_ || pending_) throw Error(ErrorKind::internal, "a stream started while a launch runs");
  // One block per recorded SM; with fewer blocks than SMs the rest are left
  // to other work, and which SMs the blocks got is read from the kernel.
  stream_blocks_ = spec.recorded_sms > 0 ? std::min(spec.recorded_sms, info_.sm_count) : info_.sm_count;
  const auto sms = static_cast<std::size_t>(stream_blocks_);
  const auto all = static_cast<std::size_t>(info_.sm_count);
  const std::size_t slots = std::size_t{1} << kRingShift;
  const auto stream = static_cast<cudaStream_t>(stream_);
  reserve_ring(slots * all);
  if (!h_ring_) {
    h_ring_ = static_cast<std::uint64_t*>(pinned(slots * all * sizeof(std::uint64_t)));
    h_heads_ = static_cast<unsigned long long*>(pinned(2 * all * sizeof(unsigned long long)));
    h_stop_ = static_cast<unsigned*>(pinned(sizeof(unsigned)));
    *h_stop_ = 1;
  }
  // A slot of an earlier stream would pass for this one's: the ring starts empty.
  check_cuda(cudaMemsetAsync(d_ring_, 0, slots * sms * sizeof(std::uint64_t), stream), "clearing the ring");
  check_cuda(cudaMemsetAsync(d_heads_, 0, sms * sizeof(unsigned long long), stream), "clearing");
  check_cuda(cudaMemsetAsync(d_stop_, 0, sizeof(unsigned), stream), "clearing");
  check_cuda(cudaMemsetAsync(d_anchors_, 0, sms * sizeof(unsigned long long), stream), "clearing");
  WindowKernelArgs a = kernel_args(spec, fmas, signal);
  a.iterations = -1;
  a.ring = d_ring_;
  a.ring_shift = kRingShift;
  // The drains read the anchors from another stream: these clears first.
  check_cuda(cudaStreamSynchronize(stream), "clearing the ring");
  anchored_ = false;
  consumed_.assign(sms, 0);
  next_start_.assign(sms, 0);
  pending_records_.assign(all, PendingRecords{});
  recorded_.clear();
  if (sms == all)
    for (int s = 0; s < info_.sm_count; ++s) recorded_.push_back(s);
  pending_bytes_ = 0;
  drain_error_ = nullptr;
  const Nanos launched = time_.now_ns();
  last_pull_ns_ = launched;
  check_cuda(launch_window(a, stream_blocks_, options_.warps, shared_bytes_, stream_), "launching the stream");
  streaming_ = true;
  drainer_ = std::thread([this] { drain_in_background(); });
  return launched;
}

void CudaWorkload::pull() {
  const Nanos started = time_.now_ns();
  const Nanos previous = std::exchange(last_pull_ns_, started);
  const auto sms = static_cast<std::size_t>(stream_blocks_);
  const auto copy = static_cast<cudaStream_t>(copy_stream_);
  unsigned long long* anchors = h_heads_ + sms;
  check_cuda(cudaMemcpyAsync(h_heads_, d_heads_, sms * sizeof(unsigned long long), cudaMemcpyDeviceToHost, copy),
             "copying the stream's heads");
  if (!anchored_) {
    check_cuda(cudaMemcpyAsync(anchors, d_anchors_, sms * sizeof(unsigned long long), cudaMemcpyDeviceToHost, copy),
               "copying the stream's anchors");
    stream_smids_.assign(sms, -1);
    check_cuda(cudaMemcpyAsync(stream_smids_.data(), d_smids_, sms * sizeof(int), cudaMemcpyDeviceToHost, copy),
               "copying the stream's SMs");
  }
  check_cuda(cudaStreamSynchronize(copy), "draining the stream");
  pending_bytes_ += static_cast<std::int64_t>(sms * sizeof(unsigned long long));
  if (!anchored_) {
    // Every block writes its SM and anchor before its first record.
    if (std::any_of(anchors, anchors + sms, [](unsigned long long t) { return t == 0; })) return;
    check_one_block_per_sm(stream_smids_, info_.sm_count);
    for (std::size_t b = 0; b < sms; ++b) next_start_[b] = static_cast<Nanos>(anchors[b]);
    recorded_.assign(stream_smids_.begin(), stream_smids_.end());
    std::sort(recorded_.begin(), recorded_.end());
    anchored_ = true;
  }
  const long long lo = *std::min_element(consumed_.begin(), consumed_.end());
  const auto hi = static_cast<long long>(*std::max_element(h_heads_, h_heads_ + sms));
  if (hi <= lo) return;
  // What one pull reads: one ring's worth at most (ring_copies).
  const long long until = std::min(hi, lo + (1ll << kRingShift));
  const std::size_t row = sms * sizeof(std::uint64_t);
  for (const auto& [first, n] : ring_copies(lo, hi, kRingShift)) {
    check_cuda(cudaMemcpyAsync(reinterpret_cast<char*>(h_ring_) + first * row,
                               reinterpret_cast<const char*>(d_ring_) + first * row, static_cast<std::size_t>(n) * row,
                               cudaMemcpyDeviceToHost, copy),
               "copying the stream's records");
    pending_bytes_ += static_cast<std::int64_t>(static_cast<std::size_t>(n) * row);
  }
  check_cuda(cudaStreamSynchronize(copy), "draining the stream");
  for (std::size_t b = 0; b < sms; ++b) {
    SmRecords& rec = pending_records_[static_cast<std::size_t>(stream_smids_[b])].room_for(
        static_cast<std::size_t>(std::max(0ll, until - consumed_[b])), next_start_[b]);
    const std::size_t had = rec.duration_ns.size();
    try {
      consumed_[b] += read_ring_block(h_ring_, static_cast<int>(sms), static_cast<int>(b), kRingShift, consumed_[b],
                                      until, rec);
    } catch (const Error& e) {
      // How long the host left the ring unread: a stall of this process
      // (or of its CPUs) longer than the ring's records last shows here.
      throw Error(e.kind(),
                  fmt::format("{}; the host had last read the ring {:.1f} ms before, and it holds {} records an SM",
                              e.what(), static_cast<double>(started - previous) / 1e6, 1ll << kRingShift),
                  e.hint());
    }
    for (std::size_t i = had; i < rec.duration_ns.size(); ++i) next_start_[b] += rec.duration_ns[i];
  }
}

void CudaWorkload::drain_in_background() {
  pthread_setaffinity_np(pthread_self(), sizeof helper_cpus_, &helper_cpus_);
  while (streaming_) {
    timespec ts{0, 1'000'000};
    nanosleep(&ts, nullptr);
    const std::lock_guard<std::mutex> hold(ring_mutex_);
    if (!streaming_ || drain_error_) continue;
    try {
      pull();
    } catch (...) {
      drain_error_ = std::current_exception();
    }
  }
}

WindowRecords CudaWorkload::drain() {
  if (!streaming_) throw Error(ErrorKind::internal, "drain without a stream");
  std::vector<PendingRecords> taken(pending_records_.size());
  std::vector<int> recorded;
  WindowRecords out;
  {
    const std::lock_guard<std::mutex> hold(ring_mutex_);
    if (drain_error_) std::rethrow_exception(drain_error_);
    pull();
    std::swap(taken, pending_records_);
    recorded = recorded_;
    out.bytes = pending_bytes_;
    pending_bytes_ = 0;
  }
  // Joined outside the lock: the helper thread reads the ring meanwhile.
  // Records are in SM order, as a window's are: every SM, or those recorded.
  for (const int sm : recorded) {
    out.sms.push_back(taken[static_cast<std::size_t>(sm)].take());
    out.sms.back().sm = sm;
  }
  return out;
}

void CudaWorkload::stop_stream() {
  if (!streaming_) return;
  {
    const std::lock_guard<std::mutex> hold(ring_mutex_);
    streaming_ = false;
  }
  if (drainer_.joinable()) drainer_.join();
  check_cuda(cudaMemcpyAsync(d_stop_, h_stop_, sizeof(unsigned), cudaMemcpyHostToDevice,
                             static_cast<cudaStream_t>(copy_stream_)),
             "stopping the stream");
  check_cuda(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)), "ending the stream");
}

}  // namespace latest::cuda
