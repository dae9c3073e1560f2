// Emulated switching's truth, host-side (no GPU needed): mapping the flip
// onto the GPU's axis, and when a switch was in effect on every SM.
#include "backends/cuda/emulated_workload.hpp"

#include <gtest/gtest.h>

namespace latest::cuda {
namespace {

TEST(Emulation, DelaysMapTheFlipLikeTheRequest) {
  // The GPU clock runs 1000 ns/s ahead between the syncs; the flip, half-way,
  // maps with half of that.
  TimerSync before, after;
  before.host_ns = 0;
  before.offset_ns = 1'000;
  after.host_ns = 1'000'000'000;
  after.offset_ns = 2'000;
  const EmulatedSwitch em{490'000'000, 500'000'000, 40, 500'001'500 + 2'100, 500'001'500 + 4'500};
  const SwitchTruth t = resolve(em, before, after);
  ASSERT_TRUE(t.delivery_us && t.in_effect_us && t.flip_bracket_us);
  EXPECT_DOUBLE_EQ(*t.delivery_us, 2.1);
  EXPECT_DOUBLE_EQ(*t.in_effect_us, 4.5);
  EXPECT_DOUBLE_EQ(*t.flip_bracket_us, 0.04);
  // L = 10 ms on the host's clock is 10 ms + 10 ns on the GPU's.
  EXPECT_DOUBLE_EQ(t.switching_ms, 10.00001);

  const EmulatedSwitch unseen{490'000'000, 500'000'000, 40, std::nullopt, std::nullopt};
  const SwitchTruth u = resolve(unseen, before, after);
  EXPECT_FALSE(u.delivery_us || u.in_effect_us);
}

TEST(Emulation, InEffectWhenTheLatestSmSwitched) {
  EXPECT_EQ(in_effect_on_every_sm({1'000'300, 1'000'100, 1'002'900, 1'000'000}), 1'002'900);
  EXPECT_FALSE(in_effect_on_every_sm({1'000'300, 0, 1'000'200})) << "an SM that never switched";
  EXPECT_FALSE(in_effect_on_every_sm({}));
}

}  // namespace
}  // namespace latest::cuda
