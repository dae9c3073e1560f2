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
  const auto& acc = doc["accuracy"];
  EXPECT_EQ(acc["measurements"].size(), 40u);
  // The measured latency is late by the flip's delivery (in effect on every
  // SM) plus one target iteration, the end of the first clean one (SPEC §2).
  EXPECT_GT(acc["error_us"]["min"].get<double>(), 0);
  EXPECT_GE(acc["in_effect_us"]["median"].get<double>(), acc["delivery_us"]["median"].get<double>());
  const double iterations = acc["error_minus_in_effect_target_iterations"]["median"];
  EXPECT_GT(iterations, 0.5);
  EXPECT_TRUE(acc["within_bound"].get<bool>()) << acc["excess_over_bound_us"].dump();
  fs::remove_all(dir);
}

}  // namespace
