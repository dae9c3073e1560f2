#pragma once
// A small fast generator for the simulator's hot loops (xoshiro256**), seeded
// through splitmix64 so that nearby seeds give unrelated streams.
#include <cmath>
#include <cstdint>

namespace latest::sim {

class Random {
 public:
  explicit Random(std::uint64_t seed) {
    for (auto& s : state_) s = splitmix(seed);
  }
  std::uint64_t next() {
    const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const std::uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Approximately standard normal: the sum of four uniforms (Irwin–Hall),
  // from one draw. Good enough for timer jitter, and fast.
  double approx_normal() {
    const std::uint64_t r = next();
    const double sum = static_cast<double>((r & 0xFFFF) + ((r >> 16) & 0xFFFF) + ((r >> 32) & 0xFFFF) + (r >> 48));
    return (sum / 65536.0 - 2.0) * 1.7320508075688772;
  }
  double normal() {  // Box–Muller, for the few draws that want exact tails
    const double u1 = 1.0 - uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static std::uint64_t splitmix(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  std::uint64_t state_[4];
};

}  // namespace latest::sim
