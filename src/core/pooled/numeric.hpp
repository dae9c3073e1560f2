#pragma once
// What the pooled detector's parts share (pooled_detection.cpp): a whole
// number of ns from a double, a 128-bit integer for exact sums, and the
// attribute that compiles a loop for AVX2 too. Of internal linkage, as
// boundaries.hpp says why.
#include <cmath>
#include <cstdint>

// Compiled for AVX2 too where the CPU has it (the loops marked with it).
#if defined(__x86_64__) && defined(__GNUC__)
#define LATEST_AVX2_CLONE __attribute__((target_clones("avx2", "default")))
#else
#define LATEST_AVX2_CLONE
#endif

namespace latest::pooled {
namespace {

__extension__ using Wide = __int128;

// std::llround, inline: the nearest whole number, halves away from zero.
// A call into libm each time, it was a twentieth of the detector's host
// time on short windows (times of bins, reaches and hinges, taken in loops).
// x − trunc(x) is exact for any double; beyond ±2^62, and for NaN, libm's.
inline std::int64_t nearest(double x) {
  if (!(std::abs(x) < 0x1p62)) return std::llround(x);
  const auto t = static_cast<std::int64_t>(x);
  const double rest = x - static_cast<double>(t);
  return rest >= 0.5 ? t + 1 : rest <= -0.5 ? t - 1 : t;
}

}  // namespace
}  // namespace latest::pooled
