#include "results/result_store.hpp"

#include <filesystem>
#include <fstream>

#include <functional>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "results/atomic_file.hpp"

namespace latest {
namespace {
namespace fs = std::filesystem;

std::string skip_code(const SkipReason& r) { return to_string(r.code); }

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("latest-test-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  return dir;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), {}};
}

PairResult measured(Mhz a, Mhz b) {
  PairResult r;
  r.pair = {a, b};
  r.status = "measured";
  MeasurementRow row;
  row.index = 1;
  row.switching_ms = 5.25;
  row.transition_ms = 1.5;
  row.call_ms = 0.3;
  row.accepted_sms = 132;
  row.max_sm = 7;
  row.sm_spread_ms = 0.004;
  row.sync_uncertainty_us = 1.2;
  r.rows.push_back(row);
  row.index = 2;
  row.truth = SwitchTruth{5.2, 1.4};
  row.temperature_c = 51.5;
  row.paper_switching_ms = 5.2541;
  row.paper_transition_ms = 1.25;
  row.switching_uncertainty_us = 0.125;
  r.rows.push_back(row);
  r.rse = 0.01;
  return r;
}

TEST(ResultStore, CsvHasExactlyTheDocumentedColumns) {
  const std::string csv = measurements_csv(measured(1980, 990).rows);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "index,switching_latency_ms,transition_latency_ms,call_latency_ms,accepted_sms,max_sm,sm_spread_ms,"
            "sync_uncertainty_us,temperature_c,power_w,true_latency_ms,true_transition_ms,"
            "paper_switching_latency_ms,paper_transition_latency_ms,switching_uncertainty_us,set_aside");
  EXPECT_NE(csv.find("\n1,5.250000,1.500000,0.300000,132,7,0.004000,1.200,,,,,,,0.000,0\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\n2,5.250000,1.500000,0.300000,132,7,0.004000,1.200,51.5,,5.200000,1.400000,5.254100,1.250000,"
                     "0.125,0\n"),
            std::string::npos)
      << csv;
}

TEST(ResultStore, FileNamesCarryPairHostAndGpu) {
  EXPECT_EQ(pair_file_name({1980, 990}, "node-1", 3), "1980_990_node-1_3.csv");
  EXPECT_EQ(host_name_for_files().find('_'), std::string::npos);
}

TEST(ResultStore, AtomicWriteLeavesNoTemporaries) {
  const fs::path dir = fresh_dir("atomic");
  write_file_atomically(dir / "a.txt", "one");
  write_file_atomically(dir / "a.txt", "two");
  EXPECT_EQ(slurp(dir / "a.txt"), "two");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  EXPECT_FALSE(directory_writable("/dev/null/below"));
  EXPECT_TRUE(directory_writable(dir / "not" / "yet"));
  fs::remove_all(dir);
}

TEST(ResultStore, ResumesTheSameRunAndRefusesAnother) {
  const fs::path dir = fresh_dir("resume");
  const nlohmann::json key = {{"freq_mhz", {1980, 990}}};
  RunState state;
  {
    ResultStore store(dir, key, {}, skip_code);
    EXPECT_TRUE(store.resume().empty());
    EXPECT_FALSE(store.wrote_anything());
    store.finish("failed");
    EXPECT_FALSE(fs::exists(dir)) << "nothing written, nothing left";
    store.planned(state);
    store.pair_finished(measured(1980, 990), state);
    PairResult skipped;
    skipped.pair = {990, 1980};
    skipped.status = "skipped";
    skipped.reason.code = SkipReason::Code::measurements_failed;
    store.pair_finished(skipped, state);
    store.finish("interrupted");
  }
  const auto manifest = nlohmann::json::parse(slurp(dir / "manifest.json"));
  EXPECT_EQ(manifest["schema_version"], kManifestSchemaVersion);
  EXPECT_EQ(manifest["status"], "interrupted");
  EXPECT_EQ(manifest["pairs"].size(), 2u);
  {
    ResultStore again(dir, key, {}, skip_code);
    const auto done = again.resume();
    EXPECT_EQ(done.size(), 2u);
  }
  // A measured pair whose CSV went missing is measured again.
  fs::remove(dir / pair_file_name({1980, 990}, host_name_for_files(), 0));
  {
    ResultStore again(dir, key, {}, skip_code);
    const auto done = again.resume();
    EXPECT_EQ(done.size(), 1u);
    EXPECT_TRUE(done.count({990, 1980}));
  }
  // A directory of result schema 1 (an older latest) is not resumed.
  {
    auto old = nlohmann::json::parse(slurp(dir / "manifest.json"));
    old["schema_version"] = 1;
    write_file_atomically(dir / "manifest.json", old.dump());
    ResultStore again(dir, key, {}, skip_code);
    try {
      again.resume();
      FAIL() << "a schema-1 directory must be refused";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::bad_argument);
      EXPECT_NE(std::string(e.what()).find("result schema 1"), std::string::npos) << e.what();
      EXPECT_NE(e.hint().find("another --output"), std::string::npos) << e.hint();
    }
    old["schema_version"] = kManifestSchemaVersion;
    write_file_atomically(dir / "manifest.json", old.dump());
  }
  // A manifest whose fields have the wrong JSON type: refused, the file named.
  for (const auto& damage : std::vector<std::function<void(nlohmann::json&)>>{
           [](nlohmann::json& m) { m["pairs"] = nullptr; },
           [](nlohmann::json& m) { m["pairs"][0]["init_mhz"] = "1980"; },
           [](nlohmann::json& m) { m["pairs"][0]["status"] = 5; },
           [](nlohmann::json& m) { m["schema_version"] = "2"; },
           [](nlohmann::json& m) { m = nlohmann::json::array(); }}) {
    const auto good = slurp(dir / "manifest.json");
    auto m = nlohmann::json::parse(good);
    damage(m);
    write_file_atomically(dir / "manifest.json", m.dump());
    ResultStore again(dir, key, {}, skip_code);
    try {
      again.resume();
      ADD_FAILURE() << "resumed from " << m.dump().substr(0, 80);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::bad_argument);
      EXPECT_NE(std::string(e.what()).find("manifest.json is damaged"), std::string::npos) << e.what();
    }
    write_file_atomically(dir / "manifest.json", good);
  }
  ResultStore other(dir, {{"freq_mhz", {1980, 1500}}}, {}, skip_code);
  try {
    other.resume();
    FAIL() << "a different run must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::bad_argument);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace latest
