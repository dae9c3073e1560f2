// Routes and the advisor on a hand-made table (hand_table.json), against
// answers worked out by hand from its p95 column:
//   1000->1200 5.0  1000->1400 30.0  1000->1600 10.0  1200->1000 3.5  1200->1400 8.0  1200->1600 5.5
//   1400->1000 4.0  1400->1200 3.0   1400->1600 6.0   1600->1000 9.5  1600->1200 6.0  1600->1400 7.0
//   1200->1800 5.0  1000->1800 skipped; p05 = p95 - 1.5, max = p95 + 1.
#include <latest/latency_table.h>
#include <latest/latency_table.hpp>

#include <vector>

#include <gtest/gtest.h>

namespace {
using latest::LatencyTable;
using latest::Rule;
using latest::Statistic;

LatencyTable hand_table() { return LatencyTable::load(HAND_TABLE); }

TEST(Route, TakesADetourThatBeatsTheDirectChange) {
  // 1000->1400: direct 30; via 1200: 5 + 8 = 13; via 1600: 10 + 7 = 17; via 1200, 1600: 5 + 5.5 + 7 = 17.5.
  const auto r = hand_table().route(1000, 1400);
  EXPECT_EQ(r.clocks_mhz, (std::vector<unsigned>{1200, 1400}));
  EXPECT_EQ(r.wait_ms, (std::vector<double>{5.0, 8.0}));
  EXPECT_DOUBLE_EQ(r.latency_ms, 13.0);
  EXPECT_DOUBLE_EQ(r.direct_ms, 30.0);
  EXPECT_DOUBLE_EQ(r.low_ms, 5.0 + 6.5);  // the first wait, then 1200->1400's p05
  EXPECT_DOUBLE_EQ(r.high_ms, 5.0 + 8.0);
  // At max every hop is 1 ms longer: 6 + 9 = 15 against 31.
  EXPECT_DOUBLE_EQ(hand_table().route(1000, 1400, Statistic::max).latency_ms, 15.0);
}

TEST(Route, KeepsTheDirectChangeOnATieAndWithinTheMargin) {
  // 1600->1000: direct 9.5; via 1200: 6 + 3.5 = 9.5, a tie.
  const auto tie = hand_table().route(1600, 1000);
  EXPECT_EQ(tie.clocks_mhz, (std::vector<unsigned>{1000}));
  EXPECT_DOUBLE_EQ(tie.latency_ms, 9.5);
  EXPECT_DOUBLE_EQ(tie.low_ms, 8.0);
  // 1000->1600: via 1200 is 10.5 against 10.
  EXPECT_FALSE(hand_table().route(1000, 1600).detour());
  // 1000->1400 saves 17 ms through 1200: more than a 16 ms margin, not more than 17.
  EXPECT_TRUE(hand_table().route(1000, 1400, Statistic::p95, 16).detour());
  EXPECT_FALSE(hand_table().route(1000, 1400, Statistic::p95, 17).detour());
}

TEST(Route, NeedsTheDirectChangeMeasuredAndKnownClocks) {
  latest_table* t = nullptr;
  ASSERT_EQ(latest_table_load(HAND_TABLE, &t, nullptr, 0), LATEST_OK);
  latest_route r{};
  // 1000->1800 is skipped, though 1000->1200->1800 is measured.
  EXPECT_EQ(latest_table_route(t, 1000, 1800, "p95", 0, &r), LATEST_ERR_NOT_MEASURED);
  EXPECT_EQ(latest_table_route(t, 1000, 1300, "p95", 0, &r), LATEST_ERR_UNKNOWN_PAIR);
  EXPECT_EQ(latest_table_route(t, 1000, 1400, "p90", 0, &r), LATEST_ERR_BAD_ARGUMENT);
  EXPECT_EQ(latest_table_route(t, 1000, 1400, "p95", -1, &r), LATEST_ERR_BAD_ARGUMENT);
  EXPECT_EQ(latest_table_route(t, 1000, 1000, "p95", 0, &r), LATEST_OK);
  EXPECT_EQ(r.hops, 0u);
  latest_table_free(t);
}

TEST(Advise, BreakEvenSwitchesOnceThePhaseRepaysTheWayThereAndBack) {
  // 1000->1400 through 1200 (13), back 1400->1000 direct (4; via 1200 6.5):
  // the phase must last more than 13 + 4 = 17.
  const auto t = hand_table();
  const auto go = t.advise(1000, 1400, 100);
  EXPECT_STREQ(go.decision(), "switch");
  EXPECT_EQ(go.rule, Rule::break_even);
  EXPECT_EQ(go.route.clocks_mhz, (std::vector<unsigned>{1200, 1400}));
  EXPECT_EQ(go.back.clocks_mhz, (std::vector<unsigned>{1000}));
  EXPECT_DOUBLE_EQ(go.latency_ms, 13);
  EXPECT_DOUBLE_EQ(go.min_interval_ms, 17);
  EXPECT_DOUBLE_EQ(go.time_lost_ms, 17);
  const auto tie = t.advise(1000, 1400, 17);  // a tie stays: the phase must last more
  EXPECT_STREQ(tie.decision(), "stay");
  EXPECT_DOUBLE_EQ(tie.time_lost_ms, 17);  // the whole phase at the current clock
  EXPECT_STREQ(t.advise(1000, 1400, 17.01).decision(), "switch");
  // A caller whose gain per ms is half the penalty: 13 + 2 x 4 = 21.
  EXPECT_DOUBLE_EQ(t.advise(1000, 1400, 20, Statistic::p95, Rule::break_even, {0.5, 1}).min_interval_ms, 21);
  EXPECT_STREQ(t.advise(1000, 1400, 20, Statistic::p95, Rule::break_even, {0.5, 1}).decision(), "stay");
}

TEST(Advise, TheRulesDisagreeWhereTheWayBackIsFast) {
  // 1000->1600: 10 there, 9.5 back. Break-even: 19.5; 3x: 30.
  const auto t = hand_table();
  EXPECT_STREQ(t.advise(1000, 1600, 20).decision(), "switch");
  const auto three = t.advise(1000, 1600, 20, Statistic::p95, Rule::three_x);
  EXPECT_STREQ(three.decision(), "stay");
  EXPECT_DOUBLE_EQ(three.min_interval_ms, 30);
  EXPECT_STREQ(t.advise(1000, 1600, 30.5, Statistic::p95, Rule::three_x).decision(), "switch");
  // 3x on the detour 1000->1400: 3 x 13 = 39.
  EXPECT_DOUBLE_EQ(t.advise(1000, 1400, 0, Statistic::p95, Rule::three_x).min_interval_ms, 39);
}

TEST(Advise, StaysAtTheSameClockAndNeedsTheWayBackOnlyForBreakEven) {
  const auto t = hand_table();
  const auto same = t.advise(1200, 1200, 1000);
  EXPECT_STREQ(same.decision(), "stay");
  EXPECT_DOUBLE_EQ(same.time_lost_ms, 0);
  // 1200->1800 is measured, 1800->1200 is not.
  EXPECT_STREQ(t.advise(1200, 1800, 100, Statistic::p95, Rule::three_x).decision(), "switch");
  try {
    t.advise(1200, 1800, 100);
    FAIL() << "break-even without a way back";
  } catch (const latest::TableError& e) {
    EXPECT_EQ(e.status(), LATEST_ERR_NOT_MEASURED);
  }
  latest_table* c = nullptr;
  ASSERT_EQ(latest_table_load(HAND_TABLE, &c, nullptr, 0), LATEST_OK);
  latest_advice a{};
  const latest_cost_model no_gain{0, 1};
  EXPECT_EQ(latest_table_advise(c, 1000, 1400, 10, "p95", LATEST_RULE_BREAK_EVEN, &no_gain, 0, &a), LATEST_ERR_BAD_ARGUMENT);
  EXPECT_EQ(latest_table_advise(c, 1000, 1400, -1, "p95", LATEST_RULE_BREAK_EVEN, nullptr, 0, &a), LATEST_ERR_BAD_ARGUMENT);
  EXPECT_EQ(latest_table_advise(c, 1000, 1400, 10, "p95", static_cast<latest_rule>(7), nullptr, 0, &a),
            LATEST_ERR_BAD_ARGUMENT);
  latest_table_free(c);
}

}  // namespace
