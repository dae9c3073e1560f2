// selftest.json's accuracy block.
#include <random>

#include <gtest/gtest.h>

#include "results/accuracy_json.hpp"
#include "support/emulated_results.hpp"

namespace latest {
namespace {
using testing::emulated_pair;

TEST(Accuracy, SelftestJsonHoldsTheSpreadsTheVerdictAndEveryMeasurement) {
  std::mt19937_64 rng(13);
  const Accuracy a = accuracy_against_truth({emulated_pair({990, 1980}, 2500, 1.0, rng)});
  const nlohmann::json doc = to_json(a);
  EXPECT_TRUE(doc["within_bound"].get<bool>());
  EXPECT_DOUBLE_EQ(doc["error_minus_in_effect_us"]["median"].get<double>(), a.residual_us->median);
  EXPECT_EQ(doc["excess_over_bound_us"]["n"].get<std::size_t>(), 50u);
  EXPECT_DOUBLE_EQ(doc["early_share"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(doc["late_beyond_bound_share"].get<double>(), 0);  // one iteration late: within the bound
  ASSERT_EQ(doc["measurements"].size(), 50u);
  const auto& first = doc["measurements"][0];
  EXPECT_EQ(first["init_mhz"].get<int>(), 990);
  EXPECT_DOUBLE_EQ(first["target_iteration_ns"].get<double>(), 2500);
  EXPECT_DOUBLE_EQ(first["bound_us"].get<double>(), 2.5 + 1.1);
  EXPECT_DOUBLE_EQ(first["error_minus_in_effect_us"].get<double>(), *a.measurements[0].residual_us);
  EXPECT_FALSE(first.contains("flip_bracket_us"));  // not emulated here: unknown, so absent
}

}  // namespace
}  // namespace latest
