// What the CUDA backend's helper thread pays to hold a stream's records
// while the engine does not drain them: pulls of 390 records an SM (1 ms at
// 2.56 us an iteration, 1024 FMAs at 1980 MHz) into 132 SMs' holders, never
// drained, up to 600 k records an SM; every pull over 50 ms, the longest
// and all pulls' time.
// As the records were held before (each SM's two vectors grown by
// push_back), and as PendingRecords holds them (room made before each
// read; src/backends/cuda/cuda_workload.hpp). No GPU needed; from the
// repository root, with a build in build/:
//   g++ -std=c++20 -O2 -Isrc docs/benchmarks/stream-pending/pending_growth.cpp build/liblatest_cuda.a \
//     build/liblatest_core.a -L/usr/local/cuda/lib64 -lcudart -lfmt -lpthread -o /tmp/pending_growth
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "backends/cuda/cuda_workload.hpp"

using namespace latest;

namespace {
constexpr int kSms = 132, kPerPull = 390;
constexpr long kRecords = 600'000;

template <class Room>
void run(const char* label, Room room) {
  double worst = 0, all = 0;
  long worst_at = 0;
  for (long n = 0; n < kRecords; n += kPerPull) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int s = 0; s < kSms; ++s) {
      SmRecords& r = room(s);
      for (int k = 0; k < kPerPull; ++k) {
        r.duration_ns.push_back(2560 + static_cast<std::uint32_t>(k & 7));
        r.cycles.push_back(5000 + static_cast<std::uint32_t>(k));
      }
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    all += ms;
    if (ms > worst) worst = ms, worst_at = n;
    if (ms > 50) std::printf("  %s: a pull of %.0f ms at %ld records an SM\n", label, ms, n);
  }
  std::printf("%-26s longest pull %7.1f ms (at %6ld records an SM), all pulls %6.0f ms\n", label, worst, worst_at, all);
}
}  // namespace

int main() {
  for (int round = 0; round < 2; ++round) {
    {
      std::vector<SmRecords> held(kSms);
      run("one vector an SM (before)", [&](int s) -> SmRecords& { return held[static_cast<std::size_t>(s)]; });
    }
    {
      std::vector<cuda::PendingRecords> held(kSms);
      run("PendingRecords", [&](int s) -> SmRecords& { return held[static_cast<std::size_t>(s)].room_for(kPerPull, 0); });
    }
  }
}
