// For each recorded window (tests/core/data/README.md's layout), the
// request's GPU time (s), the SMs with an iteration over 1.3 times both
// neighbours that starts within 50 us of the switch (request + true
// latency), and where there are any: the range of those iterations'
// lengths (us), of their starts and of their ends after the switch (us),
// the same ends after the in-effect time (the latest SM's switch), the
// largest excess over the longer neighbour (us) and the SMs' indices; then
// the SMs with such an iteration anywhere. Until 2026-12-07 it dated every
// iteration one iteration early (it began its running time at the first
// start and added the first iteration's length only after the second):
// call1-halts.txt was written so and its starts are early by the window's
// first iteration (4.8 us into 1980 MHz, 2.6 us into 990); its lengths and
// SMs stand. fixture-halts.txt is this version over the four windows of
// tests/core/data/h200-round51-halted-sms-windows.tar.xz. From the
// repository root, with a build in build/:
//   g++ -std=c++20 -O2 -Isrc -Itests/core docs/hardware/data/2026-12-06-round51/halts.cpp
//     build/liblatest_core.a -lfmt -lpthread -o /tmp/halts    (one line)
//   /tmp/halts DIR/*/*.bin
// (fixture-halts.txt: DIR the unpacked fixture, run from within it over
// refused-w94.bin w253.bin w308.bin w310.bin)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "recorded_window.hpp"

using namespace latest;

int main(int argc, char** argv) {
  for (int a = 1; a < argc; ++a) {
    const RecordedWindow w = load_recorded_window(argv[a]);
    const Nanos named = w.request_gpu_ns + static_cast<Nanos>(w.true_ms * 1e6);
    const Nanos in_effect = named + std::llround(w.in_effect_us * 1e3);
    double largest = 0, shortest = 1e18, longest = 0, earliest = 1e18, latest = -1e18, first_end = 1e18, last_end = -1e18;
    std::string which;
    std::vector<bool> here(w.records.sms.size()), any(w.records.sms.size());
    for (const LongIteration& l : long_iterations(w.records)) {
      const auto& d = w.records.sms[l.sm].duration_ns;
      const Nanos t = l.start;
      any[l.sm] = true;
      if (t <= named - 50'000 || t >= named + 50'000) continue;
      if (!here[l.sm]) which += " " + std::to_string(w.records.sms[l.sm].sm);
      here[l.sm] = true;
      largest = std::max(largest, static_cast<double>(d[l.i]) - std::max(d[l.i - 1], d[l.i + 1]));
      shortest = std::min(shortest, static_cast<double>(d[l.i]));
      longest = std::max(longest, static_cast<double>(d[l.i]));
      earliest = std::min(earliest, static_cast<double>(t - named));
      latest = std::max(latest, static_cast<double>(t - named));
      first_end = std::min(first_end, static_cast<double>(t + d[l.i] - named));
      last_end = std::max(last_end, static_cast<double>(t + d[l.i] - named));
    }
    const auto near = std::count(here.begin(), here.end(), true);
    const auto anywhere = std::count(any.begin(), any.end(), true);
    std::printf("%s %d->%d, request at %.3f s: %d SMs with a long iteration near the switch", argv[a], w.initial.mhz,
                w.target.mhz, static_cast<double>(w.request_gpu_ns) / 1e9, static_cast<int>(near));
    if (near > 0)
      std::printf(
          " (%.2f-%.2f us long, starting %+.2f to %+.2f us after it, ending %+.2f to %+.2f, that is %+.2f to %+.2f after "
          "the in-effect time, largest excess %.1f us; SMs%s)",
          shortest / 1e3, longest / 1e3, earliest / 1e3, latest / 1e3, first_end / 1e3, last_end / 1e3,
          (first_end - static_cast<double>(in_effect - named)) / 1e3,
          (last_end - static_cast<double>(in_effect - named)) / 1e3, largest / 1e3, which.c_str());
    std::printf(", %d anywhere\n", static_cast<int>(anywhere));
  }
}
