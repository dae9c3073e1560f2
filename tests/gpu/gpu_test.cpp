// Needs a CUDA GPU; skips visibly elsewhere (CTest label "gpu"). Read-only:
// `info` and emulated switching, nothing that changes a clock.
#include <dlfcn.h>

#include <cmath>

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
  // Both schedules: a stream drained while it runs, and a window a switch.
  for (const char* schedule : {"chained", "paper"}) {
    SCOPED_TRACE(schedule);
    const fs::path dir = scratch("gpu-selftest");
    const Result r = run({"selftest", "--latency-ms", "1:20", "-n", "20", "--schedule", schedule, "--output", dir.string()});
    ASSERT_EQ(r.code, 0) << r.err;
    const auto doc = nlohmann::json::parse(slurp(dir / "selftest.json"));
    const auto& acc = doc["accuracy"];
    EXPECT_EQ(acc["measurements"].size(), 40u);
    // The measured latency is late by the flip's delivery and the moment it
    // took effect inside each SM's iteration; the pooled detector adds about
    // nothing to that (the paper's would add one target iteration, SPEC §2).
    EXPECT_GT(acc["error_us"]["min"].get<double>(), 0);
    EXPECT_GE(acc["in_effect_us"]["median"].get<double>(), acc["delivery_us"]["median"].get<double>());
    EXPECT_LT(std::abs(acc["error_minus_in_effect_us"]["median"].get<double>()), 1.0)
        << acc["error_minus_in_effect_us"].dump();
    EXPECT_TRUE(acc["within_bound"].get<bool>()) << acc["excess_over_bound_us"].dump();
    fs::remove_all(dir);
  }
}

}  // namespace
