// Needs a CUDA GPU; skips visibly elsewhere (CTest label "gpu"). Read-only:
// `info` and emulated switching, nothing that changes a clock.
#include <dlfcn.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/process.hpp"

namespace {
using namespace latest::testing;

bool have_gpu() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) return false;
  dlclose(lib);
  return run({"info", "--backend", "cuda", "--iterations", "1024"}).code == 0;
}

TEST(Gpu, InfoReadsTheCardWithoutChangingIt) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU here";
  const Result r = run({"info", "--backend", "cuda", "--iterations", "4096"}, {{"LATEST_READ_ONLY", "1"}});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("timer sync: best round trip"), std::string::npos);
  EXPECT_NE(r.out.find("calibration at the current clock"), std::string::npos);
}

TEST(Gpu, SelftestMeasuresTheEmulatedLatency) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU here";
  const fs::path dir = scratch("gpu-selftest");
  const Result r = run({"selftest", "--latency-ms", "1:20", "-n", "20", "--output", dir.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(slurp(dir / "selftest.json"));
  double longest_ns = 0;
  for (const auto& [mhz, ns] : doc["iteration_ns"].items()) longest_ns = std::max(longest_ns, ns.get<double>());
  // Emulation granularity plus the end of the first clean iteration: at most
  // two of the longer iterations, plus delivery and sync (docs/hardware/h200.md).
  const double median = doc["error_us"]["median"];
  EXPECT_GT(median, 0);
  EXPECT_LT(median, 3 * longest_ns / 1e3 + 10);
  fs::remove_all(dir);
}

}  // namespace
