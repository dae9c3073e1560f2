// call1-halts.txt: for each recorded window (tests/core/data/README.md's
// layout), the SMs with an iteration over 1.3 times both neighbours within
// 50 us of the switch (request + true latency), the largest such excess, and
// the SMs with one anywhere. From the repository root, with a build in build/:
//   g++ -std=c++20 -O2 -Isrc -Itests/core docs/hardware/data/2026-12-06-round51/halts.cpp \
//     build/liblatest_core.a -lfmt -lpthread -o /tmp/halts
//   /tmp/halts DIR/*/*.bin
#include <algorithm>
#include <cstdio>

#include "recorded_window.hpp"

using namespace latest;

int main(int argc, char** argv) {
  for (int a = 1; a < argc; ++a) {
    const RecordedWindow w = load_recorded_window(argv[a]);
    const Nanos named = w.request_gpu_ns + static_cast<Nanos>(w.true_ms * 1e6);
    int near = 0, anywhere = 0;
    double largest = 0;
    for (const auto& sm : w.records.sms) {
      const auto& d = sm.duration_ns;
      Nanos t = sm.first_start_ns;
      bool here = false, any = false;
      for (std::size_t i = 1; i + 1 < d.size(); t += d[i], ++i) {
        if (10ull * d[i] <= 13ull * d[i - 1] || 10ull * d[i] <= 13ull * d[i + 1]) continue;
        any = true;
        if (t > named - 50'000 && t < named + 50'000) {
          here = true;
          largest = std::max(largest, static_cast<double>(d[i]) - std::max(d[i - 1], d[i + 1]));
        }
      }
      near += here;
      anywhere += any;
    }
    std::printf("%s %d->%d: %d SMs with a long iteration near the switch (largest excess %.1f us), %d anywhere\n",
                argv[a], w.initial.mhz, w.target.mhz, near, largest / 1e3, anywhere);
  }
}
