// `latest advise` and `latest route` on the hand-made table
// (tests/table/hand_table.json; its answers are worked out in
// tests/table/advisor_test.cpp): JSON fields, words, refusals.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/process.hpp"

namespace {
using namespace latest::testing;
using nlohmann::json;

json run_json(const std::vector<std::string>& args) {
  const Result r = run(args);
  EXPECT_EQ(r.code, 0) << r.err;
  return json::parse(r.out);
}

TEST(AdviseCommand, DecisionIsStayOrSwitchWithTheRouteAndTheRule) {
  const json go = run_json({"advise", "--table", HAND_TABLE, "--from", "1000", "--to", "1400", "--phase-ms", "100", "--json"});
  EXPECT_EQ(go["decision"], "switch");
  EXPECT_EQ(go["rule"], "break-even");
  EXPECT_EQ(go["statistic"], "p95");
  EXPECT_EQ(go["route"]["clocks_mhz"], json({1200, 1400})) << "the requests, as the library's route";
  EXPECT_EQ(go["route"]["from_mhz"], 1000);
  EXPECT_EQ(go["route"]["detour"], true);
  EXPECT_DOUBLE_EQ(go["latency_ms"].get<double>(), 13);
  EXPECT_DOUBLE_EQ(go["min_interval_ms"].get<double>(), 17);
  EXPECT_DOUBLE_EQ(go["time_lost_ms"].get<double>(), 17);
  EXPECT_EQ(go["back"]["clocks_mhz"], json({1000}));
  const json stay = run_json({"advise", "--table", HAND_TABLE, "--from", "1000", "--to", "1600", "--phase-ms", "20",
                              "--rule", "3x", "--json"});
  EXPECT_EQ(stay["decision"], "stay");
  EXPECT_EQ(stay["rule"], "3x");
  EXPECT_DOUBLE_EQ(stay["min_interval_ms"].get<double>(), 30);
  const Result words = run({"advise", "--table", HAND_TABLE, "--from", "1000", "--to", "1600", "--phase-ms", "20"});
  EXPECT_EQ(words.code, 0);
  EXPECT_NE(words.out.find("switch: 1000 -> 1600 MHz (break-even rule, p95)"), std::string::npos) << words.out;
  EXPECT_NE(words.out.find("longer than 19.500 ms"), std::string::npos) << words.out;
}

TEST(RouteCommand, ADetourOnlyBeyondTheMargin) {
  const json detour = run_json({"route", "--table", HAND_TABLE, "--from", "1000", "--to", "1400", "--json"});
  EXPECT_EQ(detour["clocks_mhz"], json({1200, 1400}));
  EXPECT_EQ(detour["wait_ms"], json({5.0, 8.0}));
  EXPECT_EQ(detour["band_ms"], json({11.5, 13.0}));
  EXPECT_DOUBLE_EQ(detour["direct_ms"].get<double>(), 30);
  const json direct =
      run_json({"route", "--table", HAND_TABLE, "--from", "1000", "--to", "1400", "--margin-ms", "17", "--json"});
  EXPECT_EQ(direct["clocks_mhz"], json({1400}));
  EXPECT_EQ(direct["detour"], false);
  const Result words = run({"route", "--table", HAND_TABLE, "--from", "1000", "--to", "1400", "--statistic", "max"});
  EXPECT_NE(words.out.find("1000 -> 1200 (wait 6.000 ms) -> 1400 MHz: 15.000 ms at max"), std::string::npos) << words.out;
  EXPECT_NE(words.out.find("the detour saves 16.000 ms"), std::string::npos) << words.out;
}

TEST(AdviseCommand, RefusalsNameTheProblemAndTheWayOut) {
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string says, hint;
  };
  const std::vector<Case> cases = {
      {{"route", "--table", HAND_TABLE, "--from", "1000", "--to", "1300"}, 2, "does not list 1300 MHz", "1000, 1200, 1400"},
      {{"route", "--table", HAND_TABLE, "--from", "1000", "--to", "1800"}, 2, "no latency for 1000 -> 1800 MHz",
       "latest --freq 1000,1800"},
      {{"advise", "--table", HAND_TABLE, "--from", "1200", "--to", "1800", "--phase-ms", "50"}, 2,
       "no latency for 1800 -> 1200 MHz (skipped or not measured): the break-even rule needs the way back", "--rule 3x"},
      {{"route", "--table", HAND_TABLE, "--from", "1000", "--to", "1400", "--statistic", "p90"}, 2,
       "unknown --statistic 'p90'", "p95"},
      {{"route", "--table", "/nonexistent/t.json", "--from", "1000", "--to", "1400"}, 6, "cannot be opened",
       "latest table"},
      {{"advise", "--table", HAND_TABLE, "--from", "1000", "--to", "1400"}, 2, "--phase-ms", ""},
      {{"advise", "--table", HAND_TABLE, "--from", "1000", "--to", "1400", "--phase-ms", "5", "--rule", "2x"}, 2, "2x", ""},
  };
  for (const auto& c : cases) {
    const Result r = run(c.args);
    EXPECT_EQ(r.code, c.code) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.hint), std::string::npos) << r.err;
  }
}

}  // namespace
