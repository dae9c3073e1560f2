// A skipped pair's reason names how its tries failed and the way out that
// is true for that run: a user-fixed iteration is never coarsened, so only
// then does the text point at --iteration-fmas.
#include "cli/skip_reasons.hpp"

#include <string>

#include <gtest/gtest.h>

namespace latest::cli {
namespace {

SkipReason failed(MeasurementOutcome failure, std::int64_t fmas, bool fixed) {
  return {.code = SkipReason::Code::measurements_failed, .count = 5, .tries = 5, .failure = failure, .fmas = fmas,
          .fmas_fixed = fixed};
}

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

TEST(SkipReasons, UnconfirmedAtAFixedIterationNamesTheOption) {
  const std::string text = describe(failed(MeasurementOutcome::not_confirmed, 2048, true));
  EXPECT_TRUE(has(text, "5 measurements failed after 5 tries each")) << text;
  EXPECT_TRUE(has(text, "no lasting change to the target's rate")) << text;
  EXPECT_TRUE(has(text, "fixed --iteration-fmas 2048")) << text;
}

TEST(SkipReasons, UnconfirmedAtTheToolsOwnIterationSaysHowCoarse) {
  const std::string text = describe(failed(MeasurementOutcome::not_confirmed, 65536, false));
  EXPECT_TRUE(has(text, "even at 65536 FMAs per iteration")) << text;
  EXPECT_FALSE(has(text, "--iteration-fmas")) << text;
}

TEST(SkipReasons, OtherFailuresSayWhatFailedAndNoIterationAdvice) {
  const std::string held = describe(failed(MeasurementOutcome::initial_not_held, 1024, true));
  EXPECT_TRUE(has(held, "initial clock not held")) << held;
  EXPECT_FALSE(has(held, "--iteration-fmas")) << held;
  const std::string captured = describe(failed(MeasurementOutcome::not_captured, 1024, false));
  EXPECT_TRUE(has(captured, "no switch within the window")) << captured;
  EXPECT_FALSE(has(captured, "FMAs")) << captured;
}

// A fixed iteration finer than the pooled detector needs for some measured
// pairs is said once, with how many, the one needing the most and the way
// out; skipped pairs and pairs it suffices for are not counted.
TEST(SkipReasons, AFixedIterationFinerThanNeededIsSaid) {
  const auto check = [](Mhz a, Mhz b, std::int64_t needs, bool skipped = false) {
    PairCheck c;
    c.pair = {a, b};
    c.separable_fmas = needs;
    if (skipped) c.skip = {.code = SkipReason::Code::bands_overlap};
    return c;
  };
  const std::vector<PairCheck> checks = {check(1980, 990, 2048), check(1980, 1950, 32768), check(1950, 1980, 32768),
                                         check(1980, 1965, 65536, true)};
  const std::string text = finer_than_needed(checks, 2048);
  EXPECT_TRUE(has(text, "--iteration-fmas 2048 is finer than the pooled detector needs for 2 measured pairs")) << text;
  EXPECT_TRUE(has(text, "1980->1950 needs 32768")) << text;
  EXPECT_TRUE(has(text, "leave --iteration-fmas out")) << text;
  EXPECT_EQ(finer_than_needed(checks, 32768), "");
  EXPECT_EQ(finer_than_needed({check(1980, 990, 0)}, 1024), "") << "the paper's detector: nothing needed";
}

// More warps per SM than were shown to measure as one says what the load
// did where it was measured, and the way out; up to that, nothing.
TEST(SkipReasons, ACrowdedSmIsSaid) {
  for (int warps = 1; warps <= kWarpsShownSound; ++warps) EXPECT_EQ(crowded_sm_note(warps), "") << warps;
  const std::string text = crowded_sm_note(8);
  EXPECT_TRUE(has(text, "--warps 8: the recording warp shares its SM with 7 others")) << text;
  EXPECT_TRUE(has(text, "docs/decisions/0006-one-warp-per-sm.md")) << text;
  EXPECT_TRUE(has(text, "Use 4 or fewer")) << text;
  EXPECT_TRUE(has(crowded_sm_note(kWarpsShownSound + 1), "--warps 5")) << "the first load beyond what was shown";
}

}  // namespace
}  // namespace latest::cli
