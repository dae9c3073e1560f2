// The latency-table library through its C API and its C++ wrapper: values,
// every status code, and tables that are JSON but not tables.
#include <latest/latency_table.h>
#include <latest/latency_table.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {
using nlohmann::json;

std::filesystem::path scratch(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("latest-table-test-" + name);
  std::filesystem::create_directories(dir);
  return dir;
}

json stats(double base) {
  return {{"min", base}, {"p05", base + 0.1}, {"median", base + 0.2}, {"mean", base + 0.25},
          {"p95", base + 0.4}, {"p99", base + 0.5}, {"max", base + 0.6}};
}

json valid_table() {
  return {{"schema_version", 1},
          {"kind", "latest latency table"},
          {"gpu", {{"model", "NVIDIA H200"}, {"uuids", {"GPU-a", "GPU-b"}}}},
          {"conditions", {{"driver", nullptr}, {"memory_mhz", {3201}}, {"power_limit_w", nullptr},
                          {"clock_api", "locked"}, {"tool_version", "0.1.0"}, {"detector", "pooled"}}},
          {"clocks_mhz", {990, 1500, 1980}},
          {"pairs",
           {{{"init_mhz", 1980}, {"target_mhz", 990}, {"status", "measured"}, {"n", 25}, {"outlier_share", 0.04},
             {"switching_ms", stats(5)}, {"transition_ms", stats(1)}},
            {{"init_mhz", 990}, {"target_mhz", 1980}, {"status", "skipped"}, {"reason", "power capped"}},
            {{"init_mhz", 1500}, {"target_mhz", 990}, {"status", "missing"}}}}};
}

std::string write(const std::string& name, const std::string& text) {
  const auto path = scratch(name) / "t.json";
  std::ofstream(path) << text;
  return path.string();
}

int load(const std::string& path, std::string* message = nullptr) {
  latest_table* t = nullptr;
  char err[512];
  const int rc = latest_table_load(path.c_str(), &t, err, sizeof err);
  if (message) *message = err;
  if (rc == LATEST_OK) EXPECT_NE(t, nullptr);
  else EXPECT_EQ(t, nullptr);
  latest_table_free(t);
  return rc;
}

TEST(LatencyTable, AnswersEveryStatisticOfAMeasuredPair) {
  const std::string path = write("valid", valid_table().dump());
  latest_table* t = nullptr;
  ASSERT_EQ(latest_table_load(path.c_str(), &t, nullptr, 0), LATEST_OK);
  const char* names[] = {"min", "p05", "median", "mean", "p95", "p99", "max"};
  const double offsets[] = {0, 0.1, 0.2, 0.25, 0.4, 0.5, 0.6};
  for (int i = 0; i < 7; ++i) {
    double v = -1;
    ASSERT_EQ(latest_table_latency_ms(t, 1980, 990, names[i], &v), LATEST_OK) << names[i];
    EXPECT_DOUBLE_EQ(v, 5 + offsets[i]);
    ASSERT_EQ(latest_table_transition_ms(t, 1980, 990, names[i], &v), LATEST_OK);
    EXPECT_DOUBLE_EQ(v, 1 + offsets[i]);
  }
  double v = 0;
  EXPECT_EQ(latest_table_latency_ms(t, 990, 1980, "p95", &v), LATEST_ERR_NOT_MEASURED) << "skipped";
  EXPECT_EQ(latest_table_latency_ms(t, 1500, 990, "p95", &v), LATEST_ERR_NOT_MEASURED) << "missing";
  EXPECT_EQ(latest_table_latency_ms(t, 1500, 1980, "p95", &v), LATEST_ERR_NOT_MEASURED) << "not listed at all";
  EXPECT_EQ(latest_table_latency_ms(t, 1980, 1234, "p95", &v), LATEST_ERR_UNKNOWN_PAIR);
  EXPECT_EQ(latest_table_latency_ms(t, 1980, 1980, "p95", &v), LATEST_ERR_UNKNOWN_PAIR);
  EXPECT_EQ(latest_table_latency_ms(t, 1980, 990, "p90", &v), LATEST_ERR_BAD_ARGUMENT);
  EXPECT_EQ(latest_table_latency_ms(t, 1980, 990, nullptr, &v), LATEST_ERR_BAD_ARGUMENT);
  EXPECT_EQ(latest_table_latency_ms(t, 1980, 990, "p95", nullptr), LATEST_ERR_BAD_ARGUMENT);
  EXPECT_EQ(latest_table_latency_ms(nullptr, 1980, 990, "p95", &v), LATEST_ERR_BAD_ARGUMENT);

  size_t n = 0;
  ASSERT_EQ(latest_table_clocks(t, nullptr, 0, &n), LATEST_OK);
  EXPECT_EQ(n, 3u);
  unsigned clocks[3];
  EXPECT_EQ(latest_table_clocks(t, clocks, 2, &n), LATEST_ERR_BAD_ARGUMENT);
  ASSERT_EQ(latest_table_clocks(t, clocks, 3, &n), LATEST_OK);
  EXPECT_EQ(clocks[0], 990u);
  EXPECT_EQ(clocks[2], 1980u);

  int m = -1;
  ASSERT_EQ(latest_table_matches_device(t, "NVIDIA H200", 3201, &m), LATEST_OK);
  EXPECT_EQ(m, 1);
  ASSERT_EQ(latest_table_matches_device(t, "GPU-b", 0, &m), LATEST_OK);
  EXPECT_EQ(m, 1);
  ASSERT_EQ(latest_table_matches_device(t, "NVIDIA H200", 2619, &m), LATEST_OK);
  EXPECT_EQ(m, 0) << "another memory clock";
  ASSERT_EQ(latest_table_matches_device(t, "NVIDIA A100", 0, &m), LATEST_OK);
  EXPECT_EQ(m, 0);
  EXPECT_STREQ(latest_table_model(t), "NVIDIA H200");
  latest_table_free(t);
}

// A table's flags reach the runtime system; a name this library does not
// know (a newer table's) is left out, and a table without flags has none.
TEST(LatencyTable, FlagsOfAPairAreItsBits) {
  json j = valid_table();
  j["pairs"][0]["flags"] = {"noisy", "target_not_reached", "from-a-newer-table"};
  latest_table* t = nullptr;
  ASSERT_EQ(latest_table_load(write("flags", j.dump()).c_str(), &t, nullptr, 0), LATEST_OK);
  unsigned f = 0;
  ASSERT_EQ(latest_table_flags(t, 1980, 990, &f), LATEST_OK);
  EXPECT_EQ(f, LATEST_FLAG_NOISY | LATEST_FLAG_TARGET_NOT_REACHED);
  EXPECT_EQ(latest_table_flags(t, 990, 1980, &f), LATEST_ERR_NOT_MEASURED);
  EXPECT_EQ(latest_table_flags(t, 1980, 1234, &f), LATEST_ERR_UNKNOWN_PAIR);
  EXPECT_EQ(latest_table_flags(t, 1980, 990, nullptr), LATEST_ERR_BAD_ARGUMENT);
  latest_table_free(t);
  j["pairs"][0]["flags"] = {"noisy"};
  EXPECT_EQ(latest::LatencyTable::load(write("flags", j.dump())).flags(1980, 990), LATEST_FLAG_NOISY);
  EXPECT_EQ(latest::LatencyTable::load(write("flags", valid_table().dump())).flags(1980, 990), 0u);
}

TEST(LatencyTable, EveryLoadFailureHasItsCodeAndNamesTheFile) {
  std::string message;
  EXPECT_EQ(load("/nonexistent/table.json", &message), LATEST_ERR_UNREADABLE);
  EXPECT_NE(message.find("/nonexistent/table.json"), std::string::npos);
  const std::string broken = write("broken", "{\"schema_version\": 1,");
  EXPECT_EQ(load(broken, &message), LATEST_ERR_INVALID_JSON);
  EXPECT_NE(message.find(broken), std::string::npos);
  json future = valid_table();
  future["schema_version"] = 2;
  EXPECT_EQ(load(write("future", future.dump()), &message), LATEST_ERR_SCHEMA_VERSION);
  EXPECT_NE(message.find("schema version 2"), std::string::npos);
  latest_table* t = reinterpret_cast<latest_table*>(1);
  EXPECT_EQ(latest_table_load(nullptr, &t, nullptr, 0), LATEST_ERR_BAD_ARGUMENT);
  EXPECT_EQ(t, nullptr);
  EXPECT_EQ(latest_table_load("x", nullptr, nullptr, 0), LATEST_ERR_BAD_ARGUMENT);
}

TEST(LatencyTable, JsonThatIsNoTableIsRefusedByPath) {
  struct Case {
    std::string name;
    std::function<void(json&)> damage;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"pairs-null", [](json& j) { j["pairs"] = nullptr; }, "pairs is null where array belongs"},
      {"no-gpu", [](json& j) { j.erase("gpu"); }, "gpu is missing"},
      {"clock-string", [](json& j) { j["pairs"][0]["init_mhz"] = "1980"; }, "pairs[0].init_mhz is string"},
      {"negative", [](json& j) { j["pairs"][0]["switching_ms"]["min"] = -5; }, "pairs[0].switching_ms.min is not a latency"},
      {"nan-as-null", [](json& j) { j["pairs"][0]["switching_ms"]["mean"] = nullptr; }, "switching_ms.mean is null"},
      {"order", [](json& j) { j["pairs"][0]["switching_ms"]["max"] = 1; }, "statistics out of order"},
      {"stranger", [](json& j) { j["pairs"][0]["target_mhz"] = 1234; }, "is not a pair of two of the table's clocks"},
      {"repeat", [](json& j) { j["pairs"].push_back(j["pairs"][0]); }, "pairs[3] repeats a pair"},
      {"status", [](json& j) { j["pairs"][1]["status"] = "maybe"; }, "'maybe' is none of"},
      {"unsorted", [](json& j) { j["clocks_mhz"] = {1980, 990, 1500}; }, "not ascending"},
      {"zero-n", [](json& j) { j["pairs"][0]["n"] = 0; }, "pairs[0].n is not a count"},
      {"array", [](json& j) { j = json::array(); }, "the document is not an object"},
      {"routes", [](json& j) { j["kind"] = "latest measured routes"; }, "this is a \"latest measured routes\", not a latency table"},
      {"flags-string", [](json& j) { j["pairs"][0]["flags"] = "noisy"; }, "pairs[0].flags is string"},
      {"flags-number", [](json& j) { j["pairs"][0]["flags"] = {1}; }, "pairs[0].flags holds something other than names"},
  };
  for (const auto& c : cases) {
    json j = valid_table();
    c.damage(j);
    std::string message;
    EXPECT_EQ(load(write(c.name, j.dump()), &message), LATEST_ERR_INVALID_TABLE) << c.name;
    EXPECT_NE(message.find(c.says), std::string::npos) << c.name << ": " << message;
  }
}

TEST(LatencyTable, CppWrapperThrowsItsOwnErrorWithTheStatus) {
  const auto t = latest::LatencyTable::load(write("cpp", valid_table().dump()));
  EXPECT_DOUBLE_EQ(t.latency_ms(1980, 990, latest::Statistic::median), 5.2);
  EXPECT_DOUBLE_EQ(t.latency_ms(1980, 990), 5.4) << "p95 by default";
  EXPECT_DOUBLE_EQ(t.transition_ms(1980, 990, latest::Statistic::max), 1.6);
  EXPECT_EQ(t.clocks(), (std::vector<unsigned>{990, 1500, 1980}));
  EXPECT_TRUE(t.matches("GPU-a", 3201));
  EXPECT_EQ(t.model(), "NVIDIA H200");
  try {
    (void)t.latency_ms(990, 1980);
    ADD_FAILURE() << "a skipped pair answered";
  } catch (const latest::TableError& e) {
    EXPECT_EQ(e.status(), LATEST_ERR_NOT_MEASURED);
    EXPECT_NE(std::string(e.what()).find("990 -> 1980"), std::string::npos);
  }
  try {
    (void)latest::LatencyTable::load("/nonexistent.json");
    ADD_FAILURE();
  } catch (const latest::TableError& e) {
    EXPECT_EQ(e.status(), LATEST_ERR_UNREADABLE);
  }
}

}  // namespace
