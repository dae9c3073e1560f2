// The pooled detector's one pass over every record (Boundaries, built for
// each SM of the default window: src/core/pooled/boundaries.hpp) beside a
// plain sum of the same records, alternated, each the least of 40 rounds,
// with a 128 MB buffer read between calls so that the records come from
// memory (as in a detection; argument `cached` leaves them in cache).
// Boundaries::Marks is the caller's opaque storage, so the same source
// builds against another commit's headers. From the repository root, with
// a Release build in build/:
//   g++ -std=c++20 -O3 -DNDEBUG -fno-math-errno -Isrc -Ibench \
//     docs/benchmarks/detector-host-time/records_pass.cpp build/liblatest_sim.a build/liblatest_core.a \
//     -lfmt -lpthread -o /tmp/records_pass
// and for BASE: `git archive BASE src | tar -x -C /tmp/base`, then the same
// with -I/tmp/base/src before -Isrc. Touches no GPU.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/pooled/boundaries.hpp"
#include "core/pooled_detection.hpp"
#include "detection_case.hpp"

using namespace latest;

namespace {
double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

int main(int argc, char** argv) {
  const bool cached = argc > 1 && std::strcmp(argv[1], "cached") == 0;
  const DetectionCase c = detection_case();
  std::vector<pooled::Boundaries::Marks> marks(c.window.sms.size());
  std::vector<std::uint8_t> uneven;
  std::vector<char> evict(128 << 20, 1);
  const double long_ratio = PooledSettings{}.long_iteration;
  double best_sum = 1e9, best_pass = 1e9;
  std::uint64_t sink = 0;
  for (int round = 0; round < 40; ++round) {
    for (int k = 0; k < 2; ++k) {
      if (!cached)
        for (std::size_t i = 0; i < evict.size(); i += 64) ++evict[i];
      const double t0 = now_ms();
      if ((round + k) % 2 == 0) {
        for (const auto& sm : c.window.sms)
          for (const std::uint32_t d : sm.duration_ns) sink += d;
        best_sum = std::min(best_sum, now_ms() - t0);
      } else {
        for (std::size_t s = 0; s < c.window.sms.size(); ++s) {
          const pooled::Boundaries e(c.window.sms[s], long_ratio, marks[s], uneven);
          sink += static_cast<std::uint64_t>(e.at_block(0));
        }
        best_pass = std::min(best_pass, now_ms() - t0);
      }
    }
  }
  std::printf("%zu SMs x %zu records, %s: plain sum %.3f ms, the pass (Boundaries) %.3f ms  (%llu)\n",
              c.window.sms.size(), c.window.sms.front().duration_ns.size(), cached ? "in cache" : "from memory",
              best_sum, best_pass, static_cast<unsigned long long>(sink % 7));
}
