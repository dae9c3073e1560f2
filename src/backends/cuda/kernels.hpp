#pragma once
// Host-callable wrappers around the device code in kernels.cu. The device
// side is kept thin: it only runs FMA chains and reads timers; everything
// else is host C++.
#include <cstddef>
#include <cstdint>

// The ring's tag is computed alike on both sides.
#ifdef __CUDACC__
#define LATEST_HOST_DEVICE __host__ __device__
#else
#define LATEST_HOST_DEVICE
#endif

namespace latest::cuda {

// Records go to a ring in device memory, slot-major (slot s of every block
// lies together, so the slots new since a stream's last drain are one or two
// contiguous copies); a window's ring holds all its iterations. Each slot is one 64-bit word written by one
// store: clock64() cycles in the high half, then a lap tag, then the
// %globaltimer ns. The tag says which lap of the ring wrote the slot, so the
// host tells a new record from one not yet overwritten, and from records it
// lost, without any fence on the device.
inline constexpr int kRingDurationBits = 26;  // 67 ms an iteration at most
inline constexpr unsigned kRingLaps = 63;     // tags 1..63; 0 is a slot never written
LATEST_HOST_DEVICE inline constexpr unsigned ring_tag(long long record, int ring_shift) {
  return static_cast<unsigned>((record >> ring_shift) % kRingLaps) + 1;
}

// An emulated switch is two mapped words (WindowKernelArgs::host_flag): the
// switch word, (number << 32) | FMAs per iteration, and the time word, the
// %globaltimer at which it takes effect (low 56 bits) under the low byte of
// the same number, so that an SM tells a torn pair (one word of the next
// switch, one of the last) and waits.
inline constexpr int kSwitchTimeBits = 56;
inline constexpr unsigned long long kSwitchTimeMask = (1ull << kSwitchTimeBits) - 1;
LATEST_HOST_DEVICE inline constexpr unsigned long long switch_time_word(unsigned long long number,
                                                                        unsigned long long gpu_ns) {
  return (number & 0xffu) << kSwitchTimeBits | (gpu_ns & kSwitchTimeMask);
}
LATEST_HOST_DEVICE inline constexpr bool same_switch(unsigned long long time_word, unsigned long long switch_word) {
  return (time_word >> kSwitchTimeBits) == ((switch_word >> 32) & 0xffu);
}
// The named time, its high bits taken from `now` (a %globaltimer read near it).
LATEST_HOST_DEVICE inline constexpr unsigned long long switch_time(unsigned long long time_word,
                                                                   unsigned long long now) {
  return (now & ~kSwitchTimeMask) | (time_word & kSwitchTimeMask);
}

struct WindowKernelArgs {
  unsigned long long* anchors = nullptr;  // per block: %globaltimer before iteration 0
  int* smids = nullptr;                   // per block
  long long warmup = 0;
  // A window records `iterations` per block; a stream (iterations < 0)
  // records until *stop is non-zero.
  long long iterations = 0;
  unsigned long long* ring = nullptr;  // [slot][block], 1 << ring_shift slots
  int ring_shift = 0;
  unsigned long long* heads = nullptr;  // per block: records written, a hint for the host
  const unsigned* stop = nullptr;  // device word, read by windows too (0)
  // Mapped words of the timer sync (launch_sync's protocol), answered by
  // block 0's polling warp.
  volatile unsigned* ping = nullptr;
  volatile unsigned long long* stamp = nullptr;
  volatile unsigned* pong = nullptr;
  int fmas = 0;     // FMAs per iteration
  int emulate = 0;  // emulated switching on
  // Mapped pinned words the host writes for each emulated switch, ahead of
  // it: [1] the time word first, then [0] the switch word (above; numbers
  // from 1). 0 before the first.
  volatile unsigned long long* host_flag = nullptr;
  unsigned long long* device_flag = nullptr;  // two device words block 0 broadcasts them through
  // Mapped: when block 0's poll saw the host word, and the word it saw.
  unsigned long long* flip_seen = nullptr;
  // Mapped, per block: the %globaltimer at which the latest emulated switch
  // took effect on that SM, and that switch's number. Every SM splits the
  // iteration that holds the switch's time at that time, wherever in the
  // iteration it falls, as a real clock change meets every SM at once.
  unsigned long long* switch_ns = nullptr;
  unsigned* switch_number = nullptr;
};

// One block per SM (dynamic shared memory keeps a second out), `warps` warps
// each, plus the polling warp; thread 0 records. Asynchronous on `stream`.
int launch_window(const WindowKernelArgs& args, int blocks, int warps, int shared_bytes, void* stream);
int window_kernel_allow_shared(int shared_bytes);

// Ping-pong for timer synchronisation: answers `rounds` pings through
// mapped memory with a %globaltimer stamp.
int launch_sync(volatile unsigned* ping, volatile unsigned long long* stamp, volatile unsigned* pong, int rounds,
                void* stream);

// One thread spins `spin_ns`; out[0] = smallest non-zero %globaltimer step,
// out[1] and out[2] = ns and clock64() cycles over the second half.
int launch_timer_probe(unsigned long long* out, long long spin_ns, void* stream);

// Fills `count` halves with values in [-1, 1) drawn from `seed`.
int launch_fill_half(void* halves, std::size_t count, unsigned seed, void* stream);

}  // namespace latest::cuda
