#include "backends/cuda/emulated_workload.hpp"

#include <cuda_runtime.h>

#include <algorithm>

#include "backends/cuda/kernels.hpp"
#include "core/error.hpp"

namespace latest::cuda {

EmulatedWorkload::EmulatedWorkload(std::unique_ptr<CudaWorkload> gpu, const Emulation& emulation)
    : gpu_(std::move(gpu)), emulation_(emulation), rng_(emulation.seed) {
  const auto sms = static_cast<std::size_t>(gpu_->info().sm_count);
  // One mapped block: the host's two words, what block 0 saw, and each SM's
  // switch (written once a switch, so PCIe traffic is negligible). With
  // unified addressing (every 64-bit Linux) a mapped host pointer is also
  // the device pointer.
  void* words = nullptr;
  check_cuda(cudaHostAlloc(&words, (4 + sms) * sizeof(unsigned long long) + sms * sizeof(unsigned), cudaHostAllocMapped),
             "allocating mapped memory");
  auto* base = static_cast<unsigned long long*>(words);
  signal_.host_flag = base;
  signal_.flip_seen = base + 2;
  signal_.switch_ns = base + 4;
  signal_.switch_number = reinterpret_cast<unsigned*>(base + 4 + sms);
  signal_.host_flag[0] = 0;
  signal_.host_flag[1] = 0;
  check_cuda(cudaMalloc(&signal_.device_flag, 2 * sizeof(unsigned long long)), "allocating");
  emulated_clock_ = gpu_->card_mhz();
}

EmulatedWorkload::~EmulatedWorkload() {
  gpu_.reset();  // its destructor ends the last launch, which uses the words below
  cudaFree(signal_.device_flag);
  if (signal_.host_flag) cudaFreeHost(const_cast<unsigned long long*>(signal_.host_flag));
}

WorkloadInfo EmulatedWorkload::info() const {
  WorkloadInfo info = gpu_->info();
  info.backend = "cuda-emulated";
  return info;
}

double EmulatedWorkload::stretched(std::int64_t fmas, Mhz clock) const {
  // At the card's real clock, an iteration stretched by card/clock lasts
  // what `fmas` would last at `clock`.
  double f = static_cast<double>(fmas);
  if (clock > 0) f *= static_cast<double>(gpu_->card_mhz()) / clock;
  return f;
}

Nanos EmulatedWorkload::launch(const WindowSpec& spec) {
  pending_ = spec;
  pending_target_ = 0;
  return gpu_->launch(spec, stretched(spec.iteration_fmas, emulated_clock_), signal_);
}

Nanos EmulatedWorkload::start_stream(const WindowSpec& spec) {
  pending_ = spec;
  pending_target_ = 0;
  word_ = 0;
  const Nanos launched = gpu_->start_stream(spec, stretched(spec.iteration_fmas, emulated_clock_), signal_);
  streaming_ = true;
  return launched;
}

void EmulatedWorkload::stop_stream() {
  if (!streaming_) return;
  if (pending_target_) emulated_clock_ = pending_target_;
  streaming_ = false;
  pending_.reset();
  pending_target_ = 0;
  gpu_->stop_stream();
}

void EmulatedWorkload::clock_requested(Nanos host_ns, Mhz target) {
  if (!pending_ || (!streaming_ && pending_->iterations == 0)) {
    emulated_clock_ = target;  // between launches the emulated clock changes at once
    return;
  }
  if (last_sync_.host_ns == 0)
    throw Error(ErrorKind::internal, "an emulated switch was requested before any timer sync");
  std::uniform_real_distribution<double> dist(emulation_.min_latency_ms, emulation_.max_latency_ms);
  const double latency_ms = dist(rng_);
  if (pending_target_) emulated_clock_ = pending_target_;
  pending_target_ = target;
  const auto fmas = static_cast<unsigned>(CudaWorkload::kernel_fmas(stretched(pending_->iteration_fmas, target)));
  const unsigned long long number = (word_ >> 32) + 1;
  word_ = number << 32 | fmas;
  requested_ = EmulatedSwitch{};
  requested_.request_host_ns = host_ns;
  // On the GPU's axis through the sync taken last (right before the request
  // in a stream, before the wake-up in a window): its drift over that time
  // moves the switch against the host's clock, never against the truth,
  // which is the GPU time itself.
  requested_.switch_gpu_ns = last_sync_.to_gpu(host_ns + static_cast<Nanos>(latency_ms * 1e6));
  MonotonicRawTime clock;
  // The time first, then the word that names it (x86 keeps the stores' order).
  const Nanos before = clock.now_ns();
  signal_.host_flag[1] = switch_time_word(number, static_cast<unsigned long long>(requested_.switch_gpu_ns));
  signal_.host_flag[0] = word_;
  const Nanos after = clock.now_ns();
  requested_.flip_bracket_ns = after - before;
  requested_.write_host_ns = before + (after - before) / 2;
}

WindowRecords EmulatedWorkload::collect() {
  WindowRecords out = gpu_->collect();
  pending_.reset();
  if (pending_target_) emulated_clock_ = pending_target_;
  return out;
}

std::optional<Nanos> in_effect_on_every_sm(const std::vector<unsigned long long>& switch_ns) {
  if (switch_ns.empty()) return std::nullopt;
  unsigned long long last = 0;
  for (unsigned long long t : switch_ns) {
    if (t == 0) return std::nullopt;  // an SM never took it up
    last = std::max(last, t);
  }
  return static_cast<Nanos>(last);
}

SwitchTruth resolve(const EmulatedSwitch& em, const TimerSync& before, const TimerSync& after) {
  SwitchTruth truth{static_cast<double>(em.switch_gpu_ns - to_gpu_between(before, after, em.request_host_ns)) / 1e6};
  if (em.seen_gpu_ns)
    truth.delivery_us = static_cast<double>(*em.seen_gpu_ns - to_gpu_between(before, after, em.write_host_ns)) / 1e3;
  if (em.in_effect_gpu_ns) truth.in_effect_us = static_cast<double>(*em.in_effect_gpu_ns - em.switch_gpu_ns) / 1e3;
  truth.flip_bracket_us = static_cast<double>(em.flip_bracket_ns) / 1e3;
  return truth;
}

std::optional<SwitchTruth> EmulatedWorkload::truth(const TimerSync& before, const TimerSync& after) const {
  const std::optional<EmulatedSwitch> em = emulated_switch();
  if (!em) return std::nullopt;
  return resolve(*em, before, after);
}

std::optional<EmulatedSwitch> EmulatedWorkload::emulated_switch() const {
  if (pending_target_ == 0) return std::nullopt;  // none requested in this launch
  EmulatedSwitch em = requested_;
  if (signal_.flip_seen[1] == word_) em.seen_gpu_ns = static_cast<Nanos>(signal_.flip_seen[0]);
  // Only the SMs that took up this switch count; one that has not means no
  // time at which every SM had.
  const auto number = static_cast<unsigned>(word_ >> 32);
  std::vector<unsigned long long> switched(static_cast<std::size_t>(gpu_->info().sm_count));
  for (std::size_t b = 0; b < switched.size(); ++b)
    switched[b] = signal_.switch_number[b] == number ? signal_.switch_ns[b] : 0;
  em.in_effect_gpu_ns = in_effect_on_every_sm(switched);
  return em;
}

}  // namespace latest::cuda
