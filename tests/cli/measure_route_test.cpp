// --measure-route on the simulator, end to end as a user takes it: measure
// three clocks, make their table, ask it for the route, measure that route
// beside the direct change. On the simulated H200, 750 -> 1875 MHz has side
// clusters up to ~37 ms (p95 ~37 ms) while 750 -> 525 and 525 -> 1875 are
// single clusters of ~5 and ~9 ms: the table should predict a detour.
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/process.hpp"

namespace {
using namespace latest::testing;
using nlohmann::json;

std::string fmt_ms(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", v);
  return text;
}

TEST(MeasureRoute, ThePredictedDetourIsMeasuredWithinItsBandAndBeatsTheDirectChange) {
  const fs::path dir = scratch("route");
  const std::string runs = (dir / "run").string(), table = (dir / "table.json").string();
  ASSERT_EQ(run({"--backend", "sim", "--freq", "525,750,1875", "--seed", "5", "--output", runs, "--progress", "none"}).code, 0);
  ASSERT_EQ(run({"table", runs, "-o", table}).code, 0);
  const Result asked = run({"route", "--table", table, "--from", "750", "--to", "1875", "--json"});
  ASSERT_EQ(asked.code, 0) << asked.err;
  const json route = json::parse(asked.out);
  ASSERT_EQ(route["clocks_mhz"], json({525, 1875})) << "the table should predict the detour through 525 MHz";
  const double low = route["band_ms"][0], high = route["band_ms"][1];

  for (const std::string seed : {"11", "12", "13"}) {
    const std::string out = (dir / ("measured-" + seed)).string();
    const Result r = run({"--backend", "sim", "--measure-route", "750,525,1875", "--table", table, "--seed", seed,
                          "--output", out, "--progress", "lines"});
    ASSERT_EQ(r.code, 0) << r.err;
    // Each progress line names its own route.
    EXPECT_NE(r.err.find("route 1/2 750 -> 525 -> 1875 MHz: n="), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("route 2/2 750 -> 1875 MHz (direct): n="), std::string::npos) << r.err;
    const json doc = json::parse(slurp(fs::path(out) / "routes.json"));
    ASSERT_EQ(doc["routes"].size(), 2u);
    const json& detour = doc["routes"][0];
    const json& direct = doc["routes"][1];
    EXPECT_EQ(detour["clocks_mhz"], json({525, 1875}));
    EXPECT_EQ(direct["clocks_mhz"], json({1875}));
    EXPECT_EQ(direct["from_mhz"], 750);
    // The run's waits are the table's: the wait at 525 is 750 -> 525's p95.
    EXPECT_DOUBLE_EQ(detour["wait_ms"][0].get<double>(), route["wait_ms"][0].get<double>());
    EXPECT_GE(detour["n"].get<int>(), 25);
    const double median = detour["measured_ms"]["median"];
    EXPECT_GE(median, low) << "seed " << seed;
    EXPECT_LE(median, high) << "seed " << seed;
    EXPECT_EQ(detour["median_in_band"], true);
    // At the statistic the table was asked at (p95), measured both ways.
    EXPECT_LT(detour["measured_ms"]["p95"].get<double>(), direct["measured_ms"]["p95"].get<double>()) << "seed " << seed;
    EXPECT_EQ(doc["route_beats_direct"], true);
    EXPECT_NE(r.out.find("the route is faster"), std::string::npos) << r.out;
    // The page compares the same: both routes, the band, the verdict.
    const std::string page = slurp(fs::path(out) / "routes.html");
    EXPECT_NE(page.find("<td>750 → 525 → 1875 MHz</td>"), std::string::npos);
    EXPECT_NE(page.find("<td>750 → 1875 MHz</td><td>direct</td>"), std::string::npos);
    EXPECT_NE(page.find(fmt_ms(low) + " – " + fmt_ms(high)), std::string::npos) << "the predicted band";
    EXPECT_NE(page.find("the route is <b>faster</b>"), std::string::npos);
  }
}

TEST(MeasureRoute, RefusalsNameTheProblem) {
  const fs::path dir = scratch("route-refused");
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--backend", "sim", "--measure-route", "750,525,1875"}, 2, "--measure-route needs --table"},
      {{"--backend", "sim", "--measure-route", "750", "--table", HAND_TABLE}, 2, "at least two clocks"},
      {{"--backend", "sim", "--measure-route", "750,x", "--table", HAND_TABLE}, 2, "'x' in --measure-route is not a clock in MHz"},
      {{"--backend", "sim", "--measure-route", "1000,1000,1400", "--table", HAND_TABLE}, 2, "twice in a row"},
      {{"--backend", "sim", "--measure-route", "1000,1400,1000", "--table", HAND_TABLE}, 2, "ends where it starts"},
      {{"--backend", "sim", "--measure-route", "1000,1800,1400", "--table", HAND_TABLE}, 2,
       "no latency for the hop 1000 -> 1800 MHz (the pair was skipped or not measured)"},
      {{"--backend", "sim", "--measure-route", "1000,1300,1400", "--table", HAND_TABLE}, 2,
       "no latency for the hop 1000 -> 1300 MHz (a clock the table does not list)"},
      {{"--backend", "sim", "--measure-route", "1000,1200", "--table", HAND_TABLE, "--freq", "1000,1200"}, 2,
       "--freq is not used"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = c.args;
    args.insert(args.end(), {"--output", dir.string()});
    const Result r = run(args);
    EXPECT_EQ(r.code, c.code) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir)) << "a refused run leaves no files";
  }
}

}  // namespace
