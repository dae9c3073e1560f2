#include "analysis/analysis.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "support/process.hpp"
#include "support/sim_results.hpp"

namespace latest::analysis {
namespace {
using latest::testing::scratch;
using latest::testing::slurp;
using nlohmann::json;

TEST(Dbscan, SmallKnownCase) {
  // Two dense groups, one lone point; min_samples counts the point itself.
  const std::vector<double> xs = {1.0, 1.1, 1.2, 5.0, 5.1, 5.2, 9.0};
  const auto labels = dbscan_1d(xs, 0.15, 2);
  EXPECT_EQ(labels, (std::vector<int>{0, 0, 0, 1, 1, 1, -1}));
  // Clusters are numbered by their first core point in input order.
  EXPECT_EQ(dbscan_1d({5.0, 1.0, 5.1, 1.1}, 0.2, 2), (std::vector<int>{0, 1, 0, 1}));
  // Distance exactly eps counts as a neighbour.
  EXPECT_EQ(dbscan_1d({0.0, 0.5, 1.0}, 0.5, 3), (std::vector<int>{0, 0, 0}));
}

TEST(Dbscan, ScheduleFollowsThePaper) {
  EXPECT_EQ(min_samples_schedule(500), (std::vector<int>{20, 18, 16, 14, 12}));
  EXPECT_EQ(min_samples_schedule(100), (std::vector<int>{4}));
  EXPECT_EQ(min_samples_schedule(25), (std::vector<int>{2}));
  EXPECT_EQ(min_samples_schedule(3), (std::vector<int>{2}));
}

TEST(Dbscan, AdaptiveStopsAtTenPercentNoiseOrFlags) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> main(20, 0.5);
  std::vector<double> xs;
  for (int i = 0; i < 200; ++i) xs.push_back(main(rng));
  for (int i = 0; i < 6; ++i) xs.push_back(60 + 15 * i);  // rare far outliers
  const auto paper = AdaptiveSettings::paper();
  const auto a = adaptive_dbscan(xs, paper);
  EXPECT_FALSE(a.flagged);
  EXPECT_EQ(a.clusters, 1);
  EXPECT_GE(a.noise, 6);
  EXPECT_LE(a.noise, 206 / 10);
  // The first setting of the schedule with at most 10 % noise wins.
  for (int m : min_samples_schedule(xs.size())) {
    const auto labels = dbscan_1d(xs, a.eps, m);
    if (std::count(labels.begin(), labels.end(), -1) <= 20) {
      EXPECT_EQ(a.min_samples, m);
      break;
    }
  }
  // 4 of 30 points alone (13 %): no setting gets to 10 %, the least noisy is kept.
  std::vector<double> ys(26, 0.0);
  for (double far : {10.0, 20.0, 30.0, 40.0}) ys.push_back(far);
  const auto b = adaptive_dbscan(ys, paper);
  EXPECT_TRUE(b.flagged);
  EXPECT_EQ(b.noise, 4);
  EXPECT_EQ(b.min_samples, 2);
}

// The settled filter (the default) invents no clusters: single-mode data with
// 1 % outliers far above, 200 seeds per n, gives one cluster in at least 95 %
// of cases and at most 5 % outliers on average; two and three clearly
// separated modes (16 sd apart) are all found. The paper's schedule, shown
// for comparison, splits n = 25 into phantom clusters most of the time.
TEST(Dbscan, SettledFilterInventsNoClustersAtSmallN) {
  for (int n : {25, 50, 100, 200, 500}) {
    int one_cluster = 0, paper_one_cluster = 0, two = 0, three = 0;
    double noise_share = 0;
    for (int seed = 0; seed < 200; ++seed) {
      std::mt19937_64 rng(static_cast<std::uint64_t>(seed * 7919 + n));
      std::normal_distribution<double> mode(10, 0.3);
      std::uniform_real_distribution<double> u(0, 1);
      std::vector<double> xs, two_modes, three_modes;
      for (int i = 0; i < n; ++i) {
        xs.push_back(u(rng) < 0.01 ? 13 + 6 * u(rng) : mode(rng));
        two_modes.push_back(mode(rng) + (i % 2 ? 5 : 0));
        three_modes.push_back(mode(rng) + 5 * (i % 3));
      }
      const auto a = adaptive_dbscan(xs);
      one_cluster += a.clusters == 1;
      noise_share += static_cast<double>(a.noise) / n / 200;
      paper_one_cluster += adaptive_dbscan(xs, AdaptiveSettings::paper()).clusters == 1;
      two += adaptive_dbscan(two_modes).clusters == 2;
      three += adaptive_dbscan(three_modes).clusters == 3;
    }
    // The figures docs/methodology.md quotes ("Outliers").
    std::printf("n %3d: one cluster %5.1f %% (paper's schedule %5.1f %%), mean outliers %.1f %%\n", n,
                one_cluster / 2.0, paper_one_cluster / 2.0, 100 * noise_share);
    EXPECT_GE(one_cluster, 190) << "n " << n;
    EXPECT_LE(noise_share, 0.05) << "n " << n;
    EXPECT_EQ(two, 200) << "n " << n;
    EXPECT_EQ(three, 200) << "n " << n;
    if (n == 25) {
      EXPECT_LT(paper_one_cluster, 100) << "the paper's schedule at n = 25";
    }
  }
}

// Cases with clusters, noise and ties, drawn with a fixed seed.
std::vector<json> sklearn_cases() {
  std::mt19937_64 rng(2026);
  std::vector<json> cases;
  for (int c = 0; c < 60; ++c) {
    std::vector<double> xs;
    const int clusters = 1 + static_cast<int>(rng() % 5);
    for (int k = 0; k < clusters; ++k) {
      std::normal_distribution<double> d(5.0 + 40.0 * k + std::uniform_real_distribution<double>(0, 10)(rng),
                                         0.2 + std::uniform_real_distribution<double>(0, 2)(rng));
      const int n = 5 + static_cast<int>(rng() % 120);
      for (int i = 0; i < n; ++i) xs.push_back(d(rng));
    }
    const int noise = static_cast<int>(rng() % 12);
    for (int i = 0; i < noise; ++i) xs.push_back(std::uniform_real_distribution<double>(0, 250)(rng));
    if (c % 3 == 0)  // ties, and distances of exactly eps on a binary grid
      for (auto& x : xs) x = std::round(x * 4) / 4;
    std::shuffle(xs.begin(), xs.end(), rng);
    const double eps = c % 3 == 0 ? 0.5 : std::uniform_real_distribution<double>(0.2, 3)(rng);
    const int min_samples = 2 + static_cast<int>(rng() % 12);
    cases.push_back({{"values", xs}, {"eps", eps}, {"min_samples", min_samples}});
  }
  return cases;
}

TEST(Dbscan, EqualsScikitLearn) {
  const auto dir = scratch("sklearn");
  std::filesystem::create_directories(dir);
  const auto cases = sklearn_cases();
  std::ofstream(dir / "cases.json") << json(cases).dump();
  const std::string cmd = "/usr/bin/python3 " SKLEARN_SCRIPT " " + (dir / "cases.json").string() + " " +
                          (dir / "sklearn.json").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "needs Debian's python3-sklearn: " << cmd;
  const json expected = json::parse(slurp(dir / "sklearn.json"));
  int with_silhouette = 0;
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const auto xs = cases[c]["values"].get<std::vector<double>>();
    const auto ours = dbscan_1d(xs, cases[c]["eps"], cases[c]["min_samples"]);
    const auto theirs = expected[c]["labels"].get<std::vector<int>>();
    ASSERT_EQ(ours.size(), theirs.size());
    // Same noise points, and the same grouping up to the cluster numbers.
    std::map<int, int> ours_to_theirs, theirs_to_ours;
    for (std::size_t i = 0; i < xs.size(); ++i) {
      ASSERT_EQ(ours[i] < 0, theirs[i] < 0) << "case " << c << " point " << i;
      if (ours[i] < 0) continue;
      const auto [a, fresh_a] = ours_to_theirs.emplace(ours[i], theirs[i]);
      const auto [b, fresh_b] = theirs_to_ours.emplace(theirs[i], ours[i]);
      ASSERT_EQ(a->second, theirs[i]) << "case " << c;
      ASSERT_EQ(b->second, ours[i]) << "case " << c;
    }
    const double s = silhouette_1d(xs, ours);
    if (expected[c]["silhouette"].is_null()) {
      EXPECT_TRUE(std::isnan(s)) << "case " << c;
    } else {
      ++with_silhouette;
      EXPECT_NEAR(s, expected[c]["silhouette"].get<double>(), 1e-9) << "case " << c;
    }
  }
  EXPECT_GT(with_silhouette, 20) << "the cases must exercise the silhouette";
  std::filesystem::remove_all(dir);
}

class AnalysisProfile : public ::testing::TestWithParam<std::pair<std::string, std::vector<Mhz>>> {};

TEST_P(AnalysisProfile, ProducesConsistentOutputs) {
  const auto& [profile, clocks] = GetParam();
  const auto dir = scratch("analysis-" + profile);
  latest::testing::write_sim_results(dir, profile, 3, clocks);
  const Analysis a = analyse({dir});
  ASSERT_EQ(a.gpus.size(), 1u);
  const GpuAnalysis& g = a.gpus[0];
  ASSERT_EQ(g.pairs.size(), 6u);
  double worst_max = 0, best_min = INFINITY;
  for (const auto& p : g.pairs) {
    EXPECT_EQ(p.all.n, 25u);
    EXPECT_EQ(p.filtered.n + static_cast<std::size_t>(p.clustering.noise), p.all.n);
    EXPECT_LE(p.filtered.min, p.filtered.median);
    EXPECT_LE(p.filtered.median, p.filtered.max);
    worst_max = std::max(worst_max, p.filtered.max);
    best_min = std::min(best_min, p.filtered.min);
  }
  EXPECT_DOUBLE_EQ(g.switching.worst.max.value, worst_max);
  EXPECT_DOUBLE_EQ(g.switching.best.min.value, best_min);
  EXPECT_EQ(g.switching.pairs, 6u);
  const auto out = dir / "analysis";
  write_analysis(a, out);
  for (const char* f : {"measurements.csv", "pairs.csv", "matrix_min.csv", "matrix_max.csv", "matrices.json", "summary.txt", "summary.json"})
    EXPECT_TRUE(std::filesystem::exists(out / f)) << f;
  EXPECT_NE(slurp(out / "summary.txt").find("Switching latency: request until every SM runs at the target clock"),
            std::string::npos) << "the terms, at the top of summary.txt";
  const json m = json::parse(slurp(out / "matrices.json"));
  const auto& axes = m["gpus"][0]["clocks_mhz"];
  for (std::size_t i = 0; i < axes.size(); ++i)
    for (std::size_t j = 0; j < axes.size(); ++j) {
      const auto& v = m["gpus"][0]["max_ms"][i][j];
      if (i == j) {
        EXPECT_TRUE(v.is_null());
        continue;
      }
      for (const auto& p : g.pairs)
        if (p.pair == ClockPair{axes[i].get<Mhz>(), axes[j].get<Mhz>()}) {
          EXPECT_DOUBLE_EQ(v.get<double>(), p.filtered.max);
        }
    }
  // One row per measurement, with cluster and outlier columns.
  const std::string rows = slurp(out / "measurements.csv");
  EXPECT_EQ(std::count(rows.begin(), rows.end(), '\n'), 1 + 6 * 25);
  EXPECT_EQ(rows.substr(0, rows.find('\n')),
            "host,gpu_uuid,init_mhz,target_mhz,index,switching_latency_ms,transition_latency_ms,cluster,outlier");
  const json summary = json::parse(slurp(out / "summary.json"));
  EXPECT_DOUBLE_EQ(summary["gpus"][0]["switching_latency"]["worst_case"]["max"]["ms"].get<double>(), worst_max);
  EXPECT_FALSE(summary["gpus"][0]["transition_latency"].is_null());
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Sim, AnalysisProfile,
                         ::testing::Values(std::make_pair(std::string("h200"), std::vector<Mhz>{1980, 1500, 990}),
                                           std::make_pair(std::string("gh200"), std::vector<Mhz>{1980, 1305, 900}),
                                           std::make_pair(std::string("a100"), std::vector<Mhz>{1410, 1095, 705}),
                                           std::make_pair(std::string("rtx6000"), std::vector<Mhz>{2100, 1500, 1050})),
                         [](const auto& info) { return info.param.first; });

TEST(Analysis, RunsFromSeveralGpusMergeByHostAndUuid) {
  const auto a1 = scratch("merge-a"), a2 = scratch("merge-b");
  latest::testing::write_sim_results(a1, "a100", 1, {1410, 705});
  latest::testing::write_sim_results(a2, "a100", 2, {1410, 705});
  const Analysis a = analyse({a1, a2});
  ASSERT_EQ(a.gpus.size(), 2u);
  EXPECT_NE(a.gpus[0].results->uuid, a.gpus[1].results->uuid);
  std::filesystem::remove_all(a1);
  std::filesystem::remove_all(a2);
}

struct BadInput {
  std::string name;
  std::function<void(const std::filesystem::path&)> damage;
  std::string says;
};

TEST(Analysis, BadInputNamesTheFileAndLine) {
  const auto good = scratch("bad-source");
  latest::testing::write_sim_results(good, "h200", 4, {1980, 990}, 5);
  const std::string csv = "1980_990_" + host_name_for_files() + "_0.csv";
  // The line a damage appends (the header, then a row a measurement, those set aside too).
  const std::string text = slurp(good / csv);
  const std::string at = csv + ":" + std::to_string(std::count(text.begin(), text.end(), '\n') + 1) + ":";
  // A damage that edits the manifest's JSON.
  const auto edit_manifest = [](std::function<void(json&)> edit) {
    return [edit](const std::filesystem::path& d) {
      auto m = json::parse(slurp(d / "manifest.json"));
      edit(m);
      std::ofstream(d / "manifest.json") << m.dump();
    };
  };
  const std::vector<BadInput> cases = {
      {"corrupt", [&](const auto& d) { std::ofstream(d / csv, std::ios::app) << "6,abc,1,1,1,1,1,1,,,,,,,0,0\n"; },
       at + " 'abc' in column switching_latency_ms is not a finite number"},
      {"truncated", [&](const auto& d) { std::ofstream(d / csv, std::ios::app) << "6,5.1,0.3"; },
       at + " the last line is cut off"},
      {"fields", [&](const auto& d) { std::ofstream(d / csv, std::ios::app) << "6,5.1\n"; }, at + " 2 fields"},
      {"header", [&](const auto& d) { std::ofstream(d / csv) << "a,b\n"; }, csv + ":1: unexpected columns"},
      {"manifest", [&](const auto& d) { std::filesystem::remove(d / "manifest.json"); }, "has no manifest.json"},
      {"schema", edit_manifest([](json& m) { m["schema_version"] = 99; }), "result schema 99"},
      // Values no run can give (issue 12, item 4).
      {"nan", [&](const auto& d) { std::ofstream(d / csv, std::ios::app) << "6,nan,1,1,1,1,1,1,,,,,,,0,0\n"; },
       at + " 'nan' in column switching_latency_ms is not a finite number"},
      {"inf", [&](const auto& d) { std::ofstream(d / csv, std::ios::app) << "6,5.1,inf,1,1,1,1,1,,,,,,,0,0\n"; },
       at + " 'inf' in column transition_latency_ms is not a finite number"},
      {"huge", [&](const auto& d) { std::ofstream(d / csv, std::ios::app) << "6,1e308,1,1,1,1,1,1,,,,,,,0,0\n"; },
       at + " 1e308 ms in column switching_latency_ms cannot be a latency"},
      {"negative", [&](const auto& d) { std::ofstream(d / csv, std::ios::app) << "6,-5,1,1,1,1,1,1,,,,,,,0,0\n"; },
       at + " -5 ms in column switching_latency_ms cannot be a latency"},
      {"paper-negative", [&](const auto& d) { std::ofstream(d / csv, std::ios::app) << "6,5,1,1,1,1,1,1,,,,,-2,,0,0\n"; },
       at + " -2 ms in column paper_switching_latency_ms cannot be a latency"},
      {"index", [&](const auto& d) { std::ofstream(d / csv, std::ios::app) << "0.5,5,1,1,1,1,1,1,,,,,,,0,0\n"; },
       at + " '0.5' in column index is not a measurement number"},
      {"set-aside", [&](const auto& d) { std::ofstream(d / csv, std::ios::app) << "6,5,1,1,1,1,1,1,,,,,,,0,2\n"; },
       at + " '2' in column set_aside is not 0 or 1"},
      {"pairs-null", edit_manifest([](json& m) { m["pairs"] = nullptr; }), "manifest.json: pairs is null where array belongs"},
      {"clock-string", edit_manifest([](json& m) { m["pairs"][0]["init_mhz"] = "1980"; }), "manifest.json: pairs[0].init_mhz is string where number belongs"},
      {"pair-not-object", edit_manifest([](json& m) { m["pairs"][0] = 5; }), "manifest.json: pairs[0] is number where object belongs"},
      {"file-escapes", edit_manifest([](json& m) { m["pairs"][0]["file"] = "../elsewhere.csv"; }), "pairs[0].file '../elsewhere.csv' is not a file of this directory"},
      {"document", [&](const auto& d) { std::ofstream(d / "manifest.json") << "[1, 2]"; },
       "manifest.json: the document is array where object belongs"},
      {"cut-manifest",
       [&](const auto& d) {
         const std::string whole = slurp(d / "manifest.json");
         std::ofstream(d / "manifest.json") << whole.substr(0, whole.size() / 2);
       },
       "manifest.json: not valid JSON"},
  };
  for (const auto& c : cases) {
    const auto dir = scratch("bad-" + c.name);
    std::filesystem::copy(good, dir, std::filesystem::copy_options::recursive);
    c.damage(dir);
    try {
      analyse({dir});
      ADD_FAILURE() << c.name << ": accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::bad_argument);
      EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << c.name << ": " << e.what();
      if (c.name == "cut-manifest") {
        EXPECT_NE(e.hint().find("move it aside"), std::string::npos) << e.hint();
      }
    }
    std::filesystem::remove_all(dir);
  }
  std::filesystem::remove_all(good);
}

// A directory written before result schema 2 (twelve CSV columns, the
// paper's detector) is still read.
TEST(Analysis, ReadsResultSchemaOne) {
  const auto dir = scratch("schema1");
  latest::testing::write_sim_results(dir, "h200", 4, {1980, 990}, 5);
  auto m = json::parse(slurp(dir / "manifest.json"));
  m["schema_version"] = 1;
  std::ofstream(dir / "manifest.json") << m.dump();
  for (const auto& p : m["pairs"]) {
    const auto file = dir / p["file"].get<std::string>();
    std::istringstream in(slurp(file));
    std::string line, v1 = std::string(kCsvHeaderV1) + "\n";
    std::getline(in, line);
    while (std::getline(in, line)) {
      std::size_t cut = 0;
      for (int k = 0; k < 12; ++k) cut = line.find(',', cut) + 1;
      v1 += line.substr(0, cut - 1) + "\n";
    }
    std::ofstream(file) << v1;
  }
  const auto results = read_results({dir});
  ASSERT_EQ(results.size(), 1u);
  ASSERT_EQ(results[0].pairs.size(), 2u);
  for (const auto& [k, pm] : results[0].pairs) {
    EXPECT_GE(pm.switching_ms.size(), 5u);  // a set-aside row of schema 3 counts as any in schema 1
    for (double x : pm.paper_switching_ms) EXPECT_TRUE(std::isnan(x));
  }
  std::filesystem::remove_all(dir);
}

TEST(Analysis, PartialRunIsAnalysedWithItsGaps) {
  const auto dir = scratch("partial");
  latest::testing::write_sim_results(dir, "h200", 5, {1980, 990}, 5);
  // Forget one pair, as after a kill.
  auto m = json::parse(slurp(dir / "manifest.json"));
  m["pairs"].erase(0);
  m["settings"]["freq_mhz"] = {1980, 990};
  std::ofstream(dir / "manifest.json") << m.dump();
  const Analysis a = analyse({dir});
  ASSERT_EQ(a.gpus[0].pairs.size(), 1u);
  EXPECT_EQ(a.gpus[0].clocks, (std::vector<Mhz>{990, 1980}));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace latest::analysis
