#include "backends/cuda/kernels.hpp"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace latest::cuda {
namespace {

__device__ __forceinline__ unsigned long long global_timer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ int sm_id() {
  unsigned r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return static_cast<int>(r);
}

// A volatile load the compiler keeps where it is written.
__device__ __forceinline__ unsigned load_volatile(const unsigned* p) {
  unsigned v;
  asm volatile("ld.volatile.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}

// A dependent chain: each FMA needs the previous result, so an iteration is
// a fixed number of cycles. Unrolled by 8 inside a run-time loop (SPEC §4);
// `fmas` is a multiple of 8.
__device__ __forceinline__ float fma_chain(float x, int fmas) {
  for (int i = 0; i < fmas; i += 8) {
#pragma unroll
    for (int k = 0; k < 8; ++k) x = fmaf(x, 0.999999f, 1e-7f);
  }
  return x;
}

__device__ __forceinline__ unsigned long long load_volatile(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.volatile.u64 %0, [%1];" : "=l"(v) : "l"(p));
  return v;
}

// The poller: one thread of block 0's extra warp (window_kernel).
__device__ void poll_host(const WindowKernelArgs& a, volatile int* done, bool emulating, bool streaming) {
  unsigned long long seen = 0;
  unsigned answered = *a.ping;
  while (!*done) {
    const unsigned long long word = emulating ? *a.host_flag : 0ull;
    const unsigned ping = *a.ping;
    if (ping != answered) {
      *a.stamp = global_timer();
      __threadfence_system();
      *a.pong = ping;
      __threadfence_system();
      answered = ping;
    }
    if (word != seen) {
      // The time was written first; read after the word, it is this switch's.
      a.device_flag[1] = a.host_flag[1];
      __threadfence();
      atomicExch(a.device_flag, word);
      __threadfence();
      a.flip_seen[0] = global_timer();
      a.flip_seen[1] = word;
      seen = word;
      if (!streaming) break;
    }
  }
}

__global__ void window_kernel(WindowKernelArgs a) {
  extern __shared__ unsigned char occupy[];  // only there to keep other blocks off this SM
  __shared__ volatile int done;
  const bool emulating = a.emulate != 0;
  const bool streaming = a.iterations < 0;
  if (threadIdx.x == 0) {
    done = 0;
    a.smids[blockIdx.x] = sm_id();
    occupy[0] = 0;
  }
  __syncthreads();
  // One more warp per block. In block 0 its first thread polls the host's
  // words over PCIe, so the other SMs never queue on PCIe reads (SPEC §4);
  // elsewhere it exits. It answers the timer sync's pings while a stream
  // runs (a sync kernel beside the stream would disturb the iterations of
  // the SM it lands on), and under emulated switching it broadcasts each
  // switch through device memory. It polls in windows too, so that SM 0
  // works alike in the calibration and in a stream. A window's poll stops
  // after its one switch.
  if (threadIdx.x >= blockDim.x - 32) {
    if (blockIdx.x == 0 && threadIdx.x == blockDim.x - 32) poll_host(a, &done, emulating, streaming);
    return;
  }
  const bool recorder = threadIdx.x == 0;
  float x = 1.0f + threadIdx.x;
  for (long long i = 0; i < a.warmup; ++i) x = fma_chain(x, a.fmas);
  // Each block starts timing blockIdx/gridDim of an iteration after the
  // first, so that the SMs' boundaries spread over the iteration, as on the
  // simulator. Launched together they cluster (within 4 us of an 18.3 us
  // iteration on the H200), and a stall's length between their mixed
  // iterations is then unknown over most of an iteration: emulated
  // switches came out early beyond the sync uncertainty on two of three
  // cards without it (9 of 2,340), on none with it (0 of 2,000).
  x = fma_chain(x, static_cast<int>(static_cast<long long>(a.fmas) * blockIdx.x / gridDim.x) / 8 * 8);
  unsigned long long prev = global_timer();
  long long prev_cycles = clock64();
  if (recorder) {
    a.anchors[blockIdx.x] = prev;
    __threadfence_system();  // once: the host may read the anchor as soon as a record is there
  }
  const long long slot_mask = (1ll << a.ring_shift) - 1;
  // Emulation reads the broadcast words as an iteration starts and uses
  // them in the next one, so the loads' latency hides behind the chain:
  // emulated iterations last what plain ones do (reading on the critical
  // path made the first target iteration up to 3 ticks long on the H200).
  // The words name the time the switch is to take effect. The iteration
  // that holds it is mixed, as under a real clock change: the FMAs that fit
  // before it (from the last iteration's length) at the length before, the
  // rest at the new one, with the switch dated between. So every SM takes
  // the switch at that time, wherever it falls in the SM's iteration, as
  // every SM meets a real clock change at once; one that got the words too
  // late takes it as its next iteration starts. The stop word is read the
  // same way. A window and a stream do the same work an iteration (the same
  // record, the same loads), so a window's calibration holds for a stream's
  // records.
  int fmas = a.fmas;
  unsigned long long applied = 0, word = 0, at = 0, last_ns = 0;
  for (long long i = 0; streaming || i < a.iterations; ++i) {
    const unsigned long long next_word = emulating ? load_volatile(a.device_flag) : 0ull;
    const unsigned long long next_at = emulating ? load_volatile(a.device_flag + 1) : 0ull;
    const unsigned stop = load_volatile(a.stop);
    // Where the named switch falls, once both words are of one switch (a
    // torn pair waits an iteration): the FMAs of this iteration before its
    // time, as far as the last iteration's length tells; all of them where
    // it lies beyond this iteration, none where it has passed. Computed in
    // full every iteration, switch pending or not: extra work only while one
    // is pending made those iterations longer than the calibration's.
    const long long into = static_cast<long long>(switch_time(at, prev)) - static_cast<long long>(prev);
    const bool due = (word != applied) & (last_ns > 0) & same_switch(at, word) & (into < static_cast<long long>(last_ns));
    const float share = static_cast<float>(into) / static_cast<float>(last_ns > 0 ? last_ns : 1);
    const int split = into > 0 ? static_cast<int>(share * static_cast<float>(fmas)) / 8 * 8 : 0;
    const int before = due ? split : fmas;
    if (before < fmas) {
      const int next_fmas = static_cast<int>(word & 0xffffffffu);
      x = fma_chain(x, before);
      const unsigned long long switched_ns = global_timer();
      x = fma_chain(x, static_cast<int>(static_cast<long long>(next_fmas) * (fmas - before) / fmas) / 8 * 8);
      fmas = next_fmas;
      applied = word;
      if (recorder) {
        a.switch_ns[blockIdx.x] = switched_ns;
        a.switch_number[blockIdx.x] = static_cast<unsigned>(word >> 32);
      }
    } else {
      x = fma_chain(x, fmas);
    }
    const unsigned long long now = global_timer();
    const long long now_cycles = clock64();
    if (recorder) {
      const auto ns = static_cast<std::uint32_t>(now - prev);
      const auto cycles = static_cast<std::uint32_t>(now_cycles - prev_cycles);
      const unsigned long long clamped = ns < (1u << kRingDurationBits) ? ns : (1u << kRingDurationBits) - 1;
      a.ring[(i & slot_mask) * gridDim.x + blockIdx.x] =
          (static_cast<unsigned long long>(cycles) << 32) |
          (static_cast<unsigned long long>(ring_tag(i, a.ring_shift)) << kRingDurationBits) | clamped;
      a.heads[blockIdx.x] = static_cast<unsigned long long>(i + 1);
    }
    last_ns = now - prev;
    prev = now;
    prev_cycles = now_cycles;
    if (stop) break;
    word = next_word;
    at = next_at;
  }
  if (x == 12345.678f) a.smids[blockIdx.x] = -1;  // keeps the chain alive
  if (recorder && blockIdx.x == 0) done = 1;
}

__global__ void sync_kernel(volatile unsigned* ping, volatile unsigned long long* stamp, volatile unsigned* pong,
                            int rounds) {
  for (int k = 1; k <= rounds; ++k) {
    while (*ping != static_cast<unsigned>(k)) {
    }
    *stamp = global_timer();
    __threadfence_system();
    *pong = static_cast<unsigned>(k);
    __threadfence_system();
  }
}

// Spins for `spin_ns` on one thread: the smallest non-zero %globaltimer step
// (the tick) over the whole spin, and ns and clock64() cycles over its second
// half, when the clock has had time to settle.
__global__ void timer_probe_kernel(unsigned long long* out, long long spin_ns) {
  const unsigned long long start = global_timer();
  unsigned long long best = ~0ull, prev = start, half_ns = 0;
  long long half_cycles = 0;
  for (;;) {
    const unsigned long long now = global_timer();
    if (now != prev && now - prev < best) best = now - prev;
    prev = now;
    if (!half_ns && now - start >= static_cast<unsigned long long>(spin_ns / 2)) {
      half_ns = now;
      half_cycles = clock64();
    }
    if (now - start >= static_cast<unsigned long long>(spin_ns)) {
      out[0] = best;
      out[1] = now - half_ns;
      out[2] = static_cast<unsigned long long>(clock64() - half_cycles);
      return;
    }
  }
}

__global__ void fill_half_kernel(__half* out, std::size_t count, unsigned seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed * 0x9E3779B9u;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    out[i] = __float2half(static_cast<float>(h & 0xffffu) / 32768.0f - 1.0f);
  }
}

}  // namespace

int launch_fill_half(void* halves, std::size_t count, unsigned seed, void* stream) {
  fill_half_kernel<<<1024, 256, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<__half*>(halves), count, seed);
  return cudaGetLastError();
}

int window_kernel_allow_shared(int shared_bytes) {
  return cudaFuncSetAttribute(window_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes);
}

int launch_window(const WindowKernelArgs& args, int blocks, int warps, int shared_bytes, void* stream) {
  const int threads = (warps + 1) * 32;
  window_kernel<<<blocks, threads, shared_bytes, static_cast<cudaStream_t>(stream)>>>(args);
  return cudaGetLastError();
}

int launch_sync(volatile unsigned* ping, volatile unsigned long long* stamp, volatile unsigned* pong, int rounds,
                void* stream) {
  sync_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(ping, stamp, pong, rounds);
  return cudaGetLastError();
}

int launch_timer_probe(unsigned long long* out, long long spin_ns, void* stream) {
  timer_probe_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(out, spin_ns);
  return cudaGetLastError();
}

}  // namespace latest::cuda
