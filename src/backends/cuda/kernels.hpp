#pragma once
// Host-callable wrappers around the device code in kernels.cu. The device
// side is kept thin: it only runs FMA chains and reads timers; everything
// else is host C++.
#include <cstdint>

namespace latest::cuda {

struct WindowKernelArgs {
  unsigned long long* anchors = nullptr;  // per block: %globaltimer before iteration 0
  std::uint32_t* durations = nullptr;     // [block][iterations]: %globaltimer ns
  std::uint32_t* cycles = nullptr;        // [block][iterations]: clock64() cycles
  int* smids = nullptr;                   // per block
  long long warmup = 0;
  long long iterations = 0;
  int fmas = 0;        // FMAs per iteration
  int emulate = 0;     // emulated switching on
  // Mapped pinned word the host flips: 0 until the emulated switch, then the
  // FMAs per iteration the target clock calls for.
  volatile unsigned* host_flag = nullptr;
  unsigned* device_flag = nullptr;          // device word block 0 broadcasts through
  unsigned long long* flip_seen_ns = nullptr;  // device: when block 0 saw the host flip
  // Per block: the %globaltimer at which the emulated switch took effect on
  // that SM, 0 if it never did. The switch lands inside an iteration, at
  // k/16 of it (k from `phase_salt` and the block), as a real clock change
  // lands at a random point of each SM's iteration.
  unsigned long long* switch_ns = nullptr;
  int phase_salt = 0;
};

// One block per SM (dynamic shared memory keeps a second out), `warps` warps
// each, plus the polling warp when emulating; thread 0 records. Asynchronous
// on `stream`.
int launch_window(const WindowKernelArgs& args, int blocks, int warps, int shared_bytes, void* stream);
int window_kernel_allow_shared(int shared_bytes);

// Ping-pong for timer synchronisation: answers `rounds` pings through
// mapped memory with a %globaltimer stamp.
int launch_sync(volatile unsigned* ping, volatile unsigned long long* stamp, volatile unsigned* pong, int rounds,
                void* stream);

// One thread spins `spin_ns`; out[0] = smallest non-zero %globaltimer step,
// out[1] and out[2] = ns and clock64() cycles over the second half.
int launch_timer_probe(unsigned long long* out, long long spin_ns, void* stream);

}  // namespace latest::cuda
