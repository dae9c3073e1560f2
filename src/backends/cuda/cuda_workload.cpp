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
  cudaStream_t stream;
  check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "creating a stream");
  stream_ = stream;
  // More than half the SM's shared memory: a second block cannot fit.
  shared_bytes_ = static_cast<int>(prop.sharedMemPerMultiprocessor / 2 + 1024);
  shared_bytes_ = std::min<int>(shared_bytes_, static_cast<int>(prop.sharedMemPerBlockOptin));
  check_cuda(window_kernel_allow_shared(shared_bytes_), "raising the shared-memory limit");

  info_.backend = "cuda";
  info_.sm_count = prop.multiProcessorCount;
  check_cuda(cudaMalloc(&d_anchors_, sizeof(unsigned long long) * info_.sm_count), "allocating");
  check_cuda(cudaMalloc(&d_smids_, sizeof(int) * info_.sm_count), "allocating");
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
  if (stream_) cudaStreamSynchronize(static_cast<cudaStream_t>(stream_));
  cudaFree(d_anchors_);
  cudaFree(d_durations_);
  cudaFree(d_cycles_);
  cudaFree(d_smids_);
  if (h_ping_) cudaFreeHost(const_cast<unsigned*>(h_ping_));
  if (stream_) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
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
  *h_ping_ = 0;
  *h_pong_ = 0;
  check_cuda(launch_sync(h_ping_, h_stamp_, h_pong_, rounds, stream_), "launching the timer sync");
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
  check_cuda(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)), "finishing the timer sync");
  best.uncertainty_ns = best.round_trip_ns / 2;
  return best;
}

int CudaWorkload::kernel_fmas(double fmas) {
  return std::max(8, static_cast<int>(std::lround(fmas / 8)) * 8);
}

Nanos CudaWorkload::launch(const WindowSpec& spec) {
  return launch(spec, static_cast<double>(spec.iteration_fmas), SwitchSignal{});
}

Nanos CudaWorkload::launch(const WindowSpec& spec, double fmas, const SwitchSignal& signal) {
  const auto sms = static_cast<std::size_t>(info_.sm_count);
  const auto need = sms * static_cast<std::size_t>(std::max<std::int64_t>(spec.iterations, 1));
  if (need > durations_capacity_) {
    cudaFree(d_durations_);
    cudaFree(d_cycles_);
    d_durations_ = d_cycles_ = nullptr;
    check_cuda(cudaMalloc(&d_durations_, need * sizeof(std::uint32_t)), "allocating the window's records");
    check_cuda(cudaMalloc(&d_cycles_, need * sizeof(std::uint32_t)), "allocating the window's records");
    durations_capacity_ = need;
  }
  WindowKernelArgs a;
  a.anchors = d_anchors_;
  a.durations = d_durations_;
  a.cycles = d_cycles_;
  a.smids = d_smids_;
  a.warmup = spec.warmup_iterations;
  a.iterations = spec.iterations;
  a.fmas = kernel_fmas(fmas);
  if (signal.host_flag) {
    const auto stream = static_cast<cudaStream_t>(stream_);
    a.emulate = 1;
    *signal.host_flag = 0;
    check_cuda(cudaMemsetAsync(signal.device_flag, 0, sizeof(unsigned), stream), "clearing the flag");
    check_cuda(cudaMemsetAsync(signal.flip_seen_ns, 0, sizeof(unsigned long long), stream), "clearing the flip stamp");
    check_cuda(cudaMemsetAsync(signal.switch_ns, 0, sizeof(unsigned long long) * sms, stream),
               "clearing the switch times");
    a.host_flag = signal.host_flag;
    a.device_flag = signal.device_flag;
    a.flip_seen_ns = signal.flip_seen_ns;
    a.switch_ns = signal.switch_ns;
    a.phase_salt = signal.phase_salt;
  }
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
  std::vector<std::uint32_t> durations(sms * static_cast<std::size_t>(spec.iterations));
  std::vector<std::uint32_t> cycles(durations.size());
  check_cuda(cudaMemcpy(anchors.data(), d_anchors_, sms * sizeof(unsigned long long), cudaMemcpyDeviceToHost), "copying");
  check_cuda(cudaMemcpy(smids.data(), d_smids_, sms * sizeof(int), cudaMemcpyDeviceToHost), "copying");
  check_cuda(cudaMemcpy(durations.data(), d_durations_, durations.size() * sizeof(std::uint32_t), cudaMemcpyDeviceToHost),
        "copying the records");
  check_cuda(cudaMemcpy(cycles.data(), d_cycles_, cycles.size() * sizeof(std::uint32_t), cudaMemcpyDeviceToHost),
        "copying the cycle counts");
  // Exactly one recording block per SM, or the per-SM statistics mean nothing.
  std::set<int> seen(smids.begin(), smids.end());
  if (seen.size() != sms || *seen.begin() < 0 || *seen.rbegin() >= info_.sm_count)
    throw Error(ErrorKind::not_supported,
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
  return out;
}

}  // namespace latest::cuda
