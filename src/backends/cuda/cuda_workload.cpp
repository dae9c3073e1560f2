#include "backends/cuda/cuda_workload.hpp"

#include <cuda_runtime.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "backends/cuda/kernels.hpp"
#include "core/error.hpp"

namespace latest::cuda {

int cuda_index_for_bus_id(const std::string& bus_id) {
  int index = -1;
  if (cudaDeviceGetByPCIBusId(&index, bus_id.c_str()) != cudaSuccess || index < 0)
    throw Error(ExitCode::not_found, fmt::format("CUDA does not see the GPU at {}", bus_id),
                "check CUDA_VISIBLE_DEVICES; `latest info` lists the GPUs");
  return index;
}

std::string bus_id_of(int cuda_index) {
  char bus[32] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, cuda_index) != cudaSuccess)
    throw Error(ExitCode::not_found, fmt::format("CUDA device {} not found", cuda_index));
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

void CudaWorkload::check(int rc, const char* what) const {
  if (rc == cudaSuccess) return;
  const auto err = static_cast<cudaError_t>(rc);
  ExitCode code = ExitCode::internal;
  if (err == cudaErrorNoDevice || err == cudaErrorInvalidDevice) code = ExitCode::not_found;
  if (err == cudaErrorInsufficientDriver || err == cudaErrorNoKernelImageForDevice) code = ExitCode::driver_missing;
  if (err == cudaErrorDevicesUnavailable) code = ExitCode::in_use;
  throw Error(code, fmt::format("CUDA: {} failed: {}", what, cudaGetErrorString(err)));
}

CudaWorkload::CudaWorkload(const CudaOptions& options) : options_(options), rng_(options.emulation ? options.emulation->seed : 1) {
  // Pin the measuring thread: the request time and the sync must not move
  // cores. The flipper gets the other allowed cores, so neither preempts the
  // other between a timestamp and the write it dates.
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  pthread_getaffinity_np(pthread_self(), sizeof allowed, &allowed);
  const int cpu = sched_getcpu() >= 0 ? sched_getcpu() : 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  flipper_cpus_ = allowed;
  if (CPU_COUNT(&flipper_cpus_) > 1) CPU_CLR(cpu, &flipper_cpus_);

  check(cudaSetDevice(options_.cuda_index), "selecting the device");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, options_.cuda_index), "reading the device properties");
  name_ = prop.name;
  char bus[32] = {};
  check(cudaDeviceGetPCIBusId(bus, sizeof bus, options_.cuda_index), "reading the PCI bus id");
  pci_bus_id_ = bus;
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "creating a stream");
  stream_ = stream;
  // More than half the SM's shared memory: a second block cannot fit.
  shared_bytes_ = static_cast<int>(prop.sharedMemPerMultiprocessor / 2 + 1024);
  shared_bytes_ = std::min<int>(shared_bytes_, static_cast<int>(prop.sharedMemPerBlockOptin));
  check(window_kernel_allow_shared(shared_bytes_), "raising the shared-memory limit");

  info_.backend = options_.emulation ? "cuda-emulated" : "cuda";
  info_.sm_count = prop.multiProcessorCount;
  check(cudaMalloc(&d_anchors_, sizeof(unsigned long long) * info_.sm_count), "allocating");
  check(cudaMalloc(&d_smids_, sizeof(int) * info_.sm_count), "allocating");
  check(cudaMalloc(&d_flag_, sizeof(unsigned)), "allocating");
  check(cudaMalloc(&d_flip_seen_, sizeof(unsigned long long)), "allocating");
  check(cudaMalloc(&d_switch_iterations_, sizeof(int) * info_.sm_count), "allocating");
  void* words = nullptr;
  // With unified addressing (every 64-bit Linux) a mapped host pointer is also the device pointer.
  check(cudaHostAlloc(&words, 64, cudaHostAllocMapped), "allocating mapped memory");
  auto* base = static_cast<unsigned char*>(words);
  h_ping_ = reinterpret_cast<volatile unsigned*>(base);
  h_pong_ = reinterpret_cast<volatile unsigned*>(base + 4);
  h_flag_ = reinterpret_cast<volatile unsigned*>(base + 8);
  h_stamp_ = reinterpret_cast<volatile unsigned long long*>(base + 16);
  *h_ping_ = 0;
  *h_pong_ = 0;
  *h_flag_ = 0;
  const TimerProbe probe = probe_timer();
  info_.timer_tick_ns = probe.tick_ns;
  // The card's own clock as its SMs count it, now that a context holds it up
  // (before one, the H200 idles at 345-435 MHz, which NVML would report).
  card_mhz_ = static_cast<Mhz>(std::lround(probe.sm_mhz));
  emulated_clock_ = options_.emulation ? card_mhz_ : 0;
}

CudaWorkload::~CudaWorkload() {
  join_flipper();
  if (stream_) cudaStreamSynchronize(static_cast<cudaStream_t>(stream_));
  cudaFree(d_anchors_);
  cudaFree(d_durations_);
  cudaFree(d_cycles_);
  cudaFree(d_smids_);
  cudaFree(d_flag_);
  cudaFree(d_flip_seen_);
  cudaFree(d_switch_iterations_);
  if (h_ping_) cudaFreeHost(const_cast<unsigned*>(h_ping_));
  if (stream_) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

CudaWorkload::TimerProbe CudaWorkload::probe_timer() {
  unsigned long long* d = nullptr;
  check(cudaMalloc(&d, 3 * sizeof *d), "allocating");
  check(launch_timer_probe(d, 20'000'000, stream_), "launching the timer probe");
  unsigned long long out[3] = {};
  check(cudaMemcpyAsync(out, d, sizeof out, cudaMemcpyDeviceToHost, static_cast<cudaStream_t>(stream_)), "copying");
  check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)), "probing the timer");
  cudaFree(d);
  return {static_cast<double>(out[0]), out[1] ? 1e3 * static_cast<double>(out[2]) / static_cast<double>(out[1]) : 0.0};
}

TimerSync CudaWorkload::synchronize() {
  const int rounds = options_.sync_rounds;
  *h_ping_ = 0;
  *h_pong_ = 0;
  check(launch_sync(h_ping_, h_stamp_, h_pong_, rounds, stream_), "launching the timer sync");
  TimerSync best;
  best.round_trip_ns = 1e18;
  for (int k = 1; k <= rounds; ++k) {
    const Nanos h1 = time_.now_ns();
    *h_ping_ = static_cast<unsigned>(k);
    while (*h_pong_ != static_cast<unsigned>(k)) {
    }
    const Nanos h2 = time_.now_ns();
    const auto g = static_cast<Nanos>(*h_stamp_);
    if (static_cast<double>(h2 - h1) < best.round_trip_ns) {
      best.round_trip_ns = static_cast<double>(h2 - h1);
      best.offset_ns = g - (h1 + h2) / 2;
      best.host_ns = (h1 + h2) / 2;
    }
  }
  check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)), "finishing the timer sync");
  best.uncertainty_ns = best.round_trip_ns / 2;
  return best;
}

int CudaWorkload::fmas_for(std::int64_t fmas, Mhz clock) const {
  // Emulation: at the card's real clock, an iteration stretched by
  // card/clock lasts what `fmas` would last at `clock`. Kept a multiple of 8.
  double f = static_cast<double>(fmas);
  if (options_.emulation && clock > 0) f *= static_cast<double>(card_mhz_) / clock;
  return std::max(8, static_cast<int>(std::lround(f / 8)) * 8);
}

Nanos CudaWorkload::launch(const WindowSpec& spec) {
  const auto sms = static_cast<std::size_t>(info_.sm_count);
  const auto need = sms * static_cast<std::size_t>(std::max<std::int64_t>(spec.iterations, 1));
  if (need > durations_capacity_) {
    cudaFree(d_durations_);
    cudaFree(d_cycles_);
    d_durations_ = d_cycles_ = nullptr;
    check(cudaMalloc(&d_durations_, need * sizeof(std::uint32_t)), "allocating the window's records");
    check(cudaMalloc(&d_cycles_, need * sizeof(std::uint32_t)), "allocating the window's records");
    durations_capacity_ = need;
  }
  WindowKernelArgs a;
  a.anchors = d_anchors_;
  a.durations = d_durations_;
  a.cycles = d_cycles_;
  a.smids = d_smids_;
  a.warmup = spec.warmup_iterations;
  a.iterations = spec.iterations;
  a.fmas = fmas_for(spec.iteration_fmas, emulated_clock_);
  if (options_.emulation) {
    a.emulate = 1;
    *h_flag_ = 0;
    check(cudaMemsetAsync(d_flag_, 0, sizeof(unsigned), static_cast<cudaStream_t>(stream_)), "clearing the flag");
    check(cudaMemsetAsync(d_flip_seen_, 0, sizeof(unsigned long long), static_cast<cudaStream_t>(stream_)),
          "clearing the flip stamp");
    check(cudaMemsetAsync(d_switch_iterations_, 0xff, sizeof(int) * info_.sm_count,
                          static_cast<cudaStream_t>(stream_)),
          "clearing the switch iterations");
    a.host_flag = h_flag_;
    a.device_flag = d_flag_;
    a.flip_seen_ns = d_flip_seen_;
    a.switch_iterations = d_switch_iterations_;
  }
  pending_ = spec;
  pending_target_ = 0;
  const Nanos launched = time_.now_ns();
  check(launch_window(a, info_.sm_count, options_.warps, shared_bytes_, stream_), "launching the window");
  return launched;
}

void CudaWorkload::join_flipper() {
  if (flipper_.joinable()) flipper_.join();
}

void CudaWorkload::clock_requested(Nanos host_ns, Mhz target) {
  if (!options_.emulation) return;
  if (!pending_ || pending_->iterations == 0) {
    emulated_clock_ = target;  // between windows the emulated clock changes at once
    return;
  }
  std::uniform_real_distribution<double> dist(options_.emulation->min_latency_ms, options_.emulation->max_latency_ms);
  const double latency_ms = dist(rng_);
  join_flipper();
  requested_at_ = host_ns;
  pending_target_ = target;
  flipped_at_ = 0;
  const Nanos when = host_ns + static_cast<Nanos>(latency_ms * 1e6);
  const auto fmas = static_cast<unsigned>(fmas_for(pending_->iteration_fmas, target));
  flipper_ = std::thread([this, when, fmas] {
    pthread_setaffinity_np(pthread_self(), sizeof flipper_cpus_, &flipper_cpus_);
    MonotonicRawTime clock;
    clock.sleep_until(when);
    // The write is dated by the midpoint of two reads around it.
    const Nanos before = clock.now_ns();
    *h_flag_ = fmas;
    const Nanos after = clock.now_ns();
    flip_bracket_ns_ = after - before;
    flipped_at_ = before + (after - before) / 2;
  });
}

WindowRecords CudaWorkload::collect() {
  if (!pending_) throw Error(ExitCode::internal, "collect without launch");
  const WindowSpec spec = *pending_;
  pending_.reset();
  check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)), "running the window");
  join_flipper();
  WindowRecords out;
  if (spec.iterations == 0) return out;
  const auto sms = static_cast<std::size_t>(info_.sm_count);
  std::vector<unsigned long long> anchors(sms);
  std::vector<int> smids(sms);
  std::vector<std::uint32_t> durations(sms * static_cast<std::size_t>(spec.iterations));
  std::vector<std::uint32_t> cycles(durations.size());
  check(cudaMemcpy(anchors.data(), d_anchors_, sms * sizeof(unsigned long long), cudaMemcpyDeviceToHost), "copying");
  check(cudaMemcpy(smids.data(), d_smids_, sms * sizeof(int), cudaMemcpyDeviceToHost), "copying");
  check(cudaMemcpy(durations.data(), d_durations_, durations.size() * sizeof(std::uint32_t), cudaMemcpyDeviceToHost),
        "copying the records");
  check(cudaMemcpy(cycles.data(), d_cycles_, cycles.size() * sizeof(std::uint32_t), cudaMemcpyDeviceToHost),
        "copying the cycle counts");
  // Exactly one recording block per SM, or the per-SM statistics mean nothing.
  std::set<int> seen(smids.begin(), smids.end());
  if (seen.size() != sms || *seen.begin() < 0 || *seen.rbegin() >= info_.sm_count)
    throw Error(ExitCode::not_supported,
                fmt::format("could not place one recording block on each of the {} SMs ({} distinct SMs seen)", sms,
                            seen.size()),
                "another process may be using the GPU; run latest alone on it");
  out.sms.resize(sms);
  for (std::size_t b = 0; b < sms; ++b) {
    SmRecords& r = out.sms[static_cast<std::size_t>(smids[b])];
    r.sm = smids[b];
    r.first_start_ns = static_cast<Nanos>(anchors[b]);
    const auto from = static_cast<std::ptrdiff_t>(b * spec.iterations);
    const auto to = static_cast<std::ptrdiff_t>((b + 1) * spec.iterations);
    r.duration_ns.assign(durations.begin() + from, durations.begin() + to);
    r.cycles.assign(cycles.begin() + from, cycles.begin() + to);
  }
  out.bytes = static_cast<std::int64_t>(anchors.size() * 8 + smids.size() * 4 + durations.size() * 8);
  if (options_.emulation && pending_target_) {
    truth_ = emulated_truth(out, smids);
    emulated_clock_ = pending_target_;
  }
  return out;
}

std::optional<SwitchTruth> CudaWorkload::emulated_truth(const WindowRecords& records, const std::vector<int>& smids) {
  const Nanos flipped = flipped_at_;
  if (flipped <= 0) return std::nullopt;  // no flip was scheduled in this window
  SwitchTruth truth{static_cast<double>(flipped - requested_at_) / 1e6};
  EmulatedSwitch& em = truth.emulated.emplace();
  em.request_host_ns = requested_at_;
  em.flip_host_ns = flipped;
  em.flip_bracket_ns = flip_bracket_ns_;
  unsigned long long seen_ns = 0;
  check(cudaMemcpy(&seen_ns, d_flip_seen_, sizeof seen_ns, cudaMemcpyDeviceToHost), "copying");
  if (seen_ns > 0) em.seen_gpu_ns = static_cast<Nanos>(seen_ns);
  // Blocks wrote by block index; the records are by SM id.
  const auto sms = static_cast<std::size_t>(info_.sm_count);
  std::vector<int> switched(sms);
  check(cudaMemcpy(switched.data(), d_switch_iterations_, sms * sizeof(int), cudaMemcpyDeviceToHost), "copying");
  Nanos last = 0;
  for (std::size_t b = 0; b < sms; ++b) {
    const SmRecords& r = records.sms[static_cast<std::size_t>(smids[b])];
    if (switched[b] < 0) return truth;  // an SM never took it up: no in-effect time
    Nanos start = r.first_start_ns;
    for (int i = 0; i < switched[b]; ++i) start += r.duration_ns[static_cast<std::size_t>(i)];
    last = std::max(last, start);
  }
  em.in_effect_gpu_ns = last;
  return truth;
}

}  // namespace latest::cuda
