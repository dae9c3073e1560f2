// Emulated switching's truth, host-side (no GPU needed): mapping the
// request onto the GPU's axis, when a switch was in effect on every SM, and
// the words that name a switch's time (kernels.hpp).
#include "backends/cuda/emulated_workload.hpp"

#include <gtest/gtest.h>

#include "backends/cuda/kernels.hpp"

namespace latest::cuda {
namespace {

TEST(Emulation, TheTruthIsTheNamedTimeAgainstTheMappedRequest) {
  // The GPU clock runs 1000 ns/s ahead between the syncs: the request at
  // 0.49 s maps with 490 ns of that, the write at 0.4901 s with 490.1.
  TimerSync before, after;
  before.host_ns = 0;
  before.offset_ns = 1'000;
  after.host_ns = 1'000'000'000;
  after.offset_ns = 2'000;
  EmulatedSwitch em;
  em.request_host_ns = 490'000'000;
  em.write_host_ns = 490'100'000;
  em.flip_bracket_ns = 40;
  em.switch_gpu_ns = 500'001'500;
  em.seen_gpu_ns = 490'101'490 + 2'100;
  em.in_effect_gpu_ns = 500'001'500 + 4'500;
  const SwitchTruth t = resolve(em, before, after);
  ASSERT_TRUE(t.delivery_us && t.in_effect_us && t.flip_bracket_us);
  EXPECT_DOUBLE_EQ(*t.delivery_us, 2.1);
  EXPECT_DOUBLE_EQ(*t.in_effect_us, 4.5) << "from the named time, not from the write";
  EXPECT_DOUBLE_EQ(*t.flip_bracket_us, 0.04);
  // L on the GPU's axis: from the mapped request to the named time.
  EXPECT_DOUBLE_EQ(t.switching_ms, 10.00001);

  EmulatedSwitch unseen = em;
  unseen.seen_gpu_ns.reset();
  unseen.in_effect_gpu_ns.reset();
  const SwitchTruth u = resolve(unseen, before, after);
  EXPECT_FALSE(u.delivery_us || u.in_effect_us);
  EXPECT_DOUBLE_EQ(u.switching_ms, 10.00001);
}

TEST(Emulation, InEffectWhenTheLatestSmSwitched) {
  EXPECT_EQ(in_effect_on_every_sm({1'000'300, 1'000'100, 1'002'900, 1'000'000}), 1'002'900);
  EXPECT_FALSE(in_effect_on_every_sm({1'000'300, 0, 1'000'200})) << "an SM that never switched";
  EXPECT_FALSE(in_effect_on_every_sm({}));
}

TEST(Emulation, TheTimeWordNamesItsSwitchAndItsTime) {
  const unsigned long long at = 1'796'121'811'740'805'123ull;  // an H200's %globaltimer, above 2^56
  const unsigned long long time_word = switch_time_word(3, at);
  EXPECT_TRUE(same_switch(time_word, 3ull << 32 | 2048));
  EXPECT_FALSE(same_switch(time_word, 4ull << 32 | 2048)) << "a torn pair: the next switch's word, this one's time";
  EXPECT_FALSE(same_switch(time_word, 2ull << 32 | 2048));
  // The SMs read the time near it: up to a 50 ms latency before, or after.
  EXPECT_EQ(switch_time(time_word, at - 50'000'000), at);
  EXPECT_EQ(switch_time(time_word, at + 1'000), at);
  EXPECT_EQ(switch_time(time_word, at), at);
}

}  // namespace
}  // namespace latest::cuda
