#include <cstdint>
#include <vector>
#include <chrono>
#include <cstdio>
#include <algorithm>
#include <random>
using Nanos = std::int64_t;
constexpr std::int64_t kRecordBlock = 64;
__attribute__((target_clones("avx2","default"),noinline)) void block_pass(const std::uint32_t* d, std::int64_t n, std::uint64_t tenths, Nanos* sums, std::uint8_t* uneven) {
  const auto block = [&](std::int64_t b, std::int64_t from, std::int64_t to) {
    std::uint32_t sum = 0, shortest = ~0u, longest = 0;
    for (std::int64_t i = from; i < to; ++i) { sum += d[i]; shortest = std::min(shortest, d[i]); longest = std::max(longest, d[i]); }
    if (from > 0) shortest = std::min(shortest, d[from - 1]);
    if (to < n) shortest = std::min(shortest, d[to]);
    if (static_cast<std::uint64_t>(longest) * static_cast<std::uint64_t>(to - from) < (1ull << 32)) sums[b] = sum;
    else { sums[b] = 0; for (std::int64_t i = from; i < to; ++i) sums[b] += d[i]; }
    uneven[b] = 10ull * longest > tenths * shortest;
  };
  std::int64_t from = 0, b = 0;
  for (; from + kRecordBlock <= n; from += kRecordBlock, ++b) block(b, from, from + kRecordBlock);
  if (from < n) block(b, from, n);
}
__attribute__((target_clones("avx2","default"),noinline)) std::uint64_t sum_only(const std::uint32_t* d, std::int64_t n) {
  std::uint64_t s = 0; for (std::int64_t i = 0; i < n; ++i) s += d[i]; return s; }
int main() {
  const int sms = 132, n = 32768;
  std::vector<std::vector<std::uint32_t>> data(sms, std::vector<std::uint32_t>(n));
  std::mt19937 g(1); for (auto& v : data) for (auto& x : v) x = 1000 + g() % 20;
  std::vector<Nanos> sums(n / 64 + 1); std::vector<std::uint8_t> un(n / 64 + 1);
  for (int mode = 0; mode < 3; ++mode) {
    double best = 1e9; std::uint64_t sink = 0;
    for (int r = 0; r < 200; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      for (int s = 0; s < sms; ++s) {
        const auto* p = data[mode == 1 ? 0 : s].data();
        if (mode == 2) sink += sum_only(p, n); else block_pass(p, n, 30, sums.data(), un.data());
      }
      best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::printf("mode %d (%s): %.3f ms %llu\n", mode, mode == 0 ? "17 MB" : mode == 1 ? "one SM, cached" : "sum only 17MB", best, (unsigned long long)sink);
  }
}
