// The CLI as a user meets it: exit codes, messages, files, signals, resume.
#include <dlfcn.h>
#include <signal.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <tuple>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/process.hpp"

namespace {
using namespace latest::testing;

TEST(Cli, VersionAndHelp) {
  const Result v = run({"--version"});
  EXPECT_EQ(v.code, 0);
  EXPECT_NE(v.out.find("latest 0."), std::string::npos);
  const Result h = run({"--help"});
  EXPECT_EQ(h.code, 0);
  for (const char* word : {"--freq", "--rse", "--backend", "--plan", "--pairs", "Exit codes"})
    EXPECT_NE(h.out.find(word), std::string::npos) << word;
}

int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

struct Refusal {
  std::vector<std::string> args;
  int code;
  std::string says;
};

// Each case, run with --output dir, fails with its code and message and
// leaves no files.
void expect_refusals(const std::vector<Refusal>& cases, const fs::path& dir) {
  for (const auto& c : cases) {
    std::vector<std::string> args = c.args;
    args.insert(args.end(), {"--output", dir.string()});
    const Result r = run(args);
    EXPECT_EQ(r.code, c.code) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << "expected '" << c.says << "' in: " << r.err;
    EXPECT_FALSE(fs::exists(dir)) << "a refused run leaves no files";
  }
}

TEST(Cli, RefusalsHaveDistinctCodesClearMessagesAndLeaveNoFiles) {
  const fs::path dir = scratch("refused");
  const std::vector<Refusal> cases = {
      {{"--backend", "sim"}, 2, "--freq is required"},
      {{"--backend", "sim", "--freq", "600,abc"}, 2, "'abc'"},
      {{"--backend", "sim", "--freq", "600"}, 2, "at least two"},
      {{"--backend", "sim", "--freq", "600,900,600"}, 2, "twice"},
      {{"--backend", "sim", "--freq", "600,900", "--rse", "1.5"}, 2, "outside (0, 1)"},
      {{"--backend", "sim", "--freq", "600,900", "--rse", "0"}, 2, "outside (0, 1)"},
      {{"--backend", "sim", "--freq", "600,900", "--json"}, 2, "goes with --plan"},
      {{"--backend", "sim", "--freq", "600,900", "--detector", "median"}, 2, "unknown --detector 'median'"},
      {{"--backend", "sim", "--freq", "600,900", "--min-measurements", "50", "--max-measurements", "10"}, 2,
       "more than"},
      {{"--backend", "sim", "--freq", "1000,1980"}, 2, "nearest supported clocks are 990 and 1005 MHz"},
      {{"--backend", "sim", "--freq", "1980,2500"}, 2, "nearest supported clock is the highest, 1980 MHz"},
      {{"--backend", "sim", "--freq", "100,1980"}, 2, "nearest supported clock is the lowest, 345 MHz"},
      {{"--backend", "sim", "--freq", "990,1980", "--sim-profile", "h100"}, 2, "unknown simulator profile"},
      {{"--backend", "warp", "--freq", "990,1980"}, 2, "unknown backend"},
      {{"--backend", "sim", "--freq", "990,1980", "--pairs", "990:1500"}, 2, "not in --freq"},
      {{"--backend", "sim", "--freq", "990,1980", "--bogus"}, 2, "bogus"},
      {{"--backend", "sim", "--freq", "990,1980", "--device", "3"}, 6, "device 3 not found"},
      {{"--backend", "sim", "--freq", "990,1980", "--device", "GPU-nope"}, 6, "not found"},
      {{"--backend", "sim", "--freq", "990,1980", "--device", "first"}, 2, "neither an index, a UUID nor a PCI bus id"},
  };
  expect_refusals(cases, dir);
  const Result unwritable = run({"--backend", "sim", "--freq", "990,1980", "--output", "/dev/null/results"});
  EXPECT_EQ(unwritable.code, 2);
  EXPECT_NE(unwritable.err.find("cannot write"), std::string::npos);
}

TEST(Cli, CudaBackendWithoutDriverIsExitNine) {
  if (void* lib = dlopen("libcuda.so.1", RTLD_NOW)) {
    dlclose(lib);
    GTEST_SKIP() << "an NVIDIA driver is installed here";
  }
  const fs::path dir = scratch("nocuda");
  const Result r = run({"--backend", "cuda", "--freq", "990,1980", "--output", dir.string()});
  EXPECT_EQ(r.code, 9);
  EXPECT_NE(r.err.find("driver"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir));
}

TEST(Cli, SelftestRefusesBadSettingsBeforeTouchingAGpu) {
  const fs::path dir = scratch("selftest-refused");
  const std::vector<Refusal> cases = {
      {{"selftest", "--latency-ms", "5"}, 2, "not MIN:MAX"},
      {{"selftest", "--latency-ms", "5:1"}, 2, "not MIN:MAX"},
      {{"selftest", "--latency-ms", "0:5"}, 2, "not MIN:MAX"},
      {{"selftest", "-n", "0"}, 2, "at least 1"},
      {{"selftest", "--iteration-fmas", "4"}, 2, "at least 8"},
      {{"selftest", "--warps", "32"}, 2, "use 1..31"},
      {{"selftest", "--warps", "0"}, 2, "use 1..31"},
  };
  expect_refusals(cases, dir);
  if (void* lib = dlopen("libcuda.so.1", RTLD_NOW)) {
    dlclose(lib);
    return;  // a driver is installed: the selftest would run
  }
  const Result r = run({"selftest", "--output", dir.string()});
  EXPECT_EQ(r.code, 9) << r.err;
  EXPECT_FALSE(fs::exists(dir));
  // The way out it names must be one the selftest does not refuse.
  EXPECT_EQ(r.err.find("use --backend sim"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("`latest --backend sim`"), std::string::npos) << r.err;
}

// --read-only on the simulator refuses every clock change (exit 4, no
// files), as the README promises for a real card; info still works.
TEST(Cli, ReadOnlyOnTheSimulatorRefusesClockChanges) {
  const fs::path dir = scratch("sim-read-only");
  for (const auto& [args, env] : std::vector<std::pair<std::vector<std::string>, std::map<std::string, std::string>>>{
           {{"--read-only"}, {}}, {{}, {{"LATEST_READ_ONLY", "1"}}}}) {
    std::vector<std::string> all = {"--backend", "sim", "--freq", "1980,990", "--output", dir.string()};
    all.insert(all.end(), args.begin(), args.end());
    const Result r = run(all, env);
    EXPECT_EQ(r.code, 4) << r.err;
    EXPECT_NE(r.err.find("read-only: setting the SM clock"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir));
  }
  EXPECT_EQ(run({"info", "--backend", "sim"}, {{"LATEST_READ_ONLY", "1"}}).code, 0);
}

// info --json gives the clock it calibrated at (it said 0).
TEST(Cli, InfoJsonNamesTheCalibratedClock) {
  const fs::path file = scratch("info") / "info.json";
  fs::create_directories(file.parent_path());
  ASSERT_EQ(run({"info", "--backend", "sim", "--json", file.string()}).code, 0);
  const auto doc = nlohmann::json::parse(slurp(file));
  EXPECT_EQ(doc["calibration_current_clock"]["mhz"].get<int>(), 1980);
}

// The unsupported-clock hint names a command that lists every clock, and it does.
TEST(Cli, UnsupportedClockHintListsEveryClock) {
  const Result r = run({"--backend", "sim", "--freq", "1000,1980", "--output", scratch("unsupported").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("`latest info --clocks` lists them all"), std::string::npos) << r.err;
  const Result info = run({"info", "--backend", "sim", "--clocks"});
  EXPECT_EQ(info.code, 0) << info.err;
  EXPECT_NE(info.out.find("345,360,375"), std::string::npos);
  EXPECT_NE(info.out.find("1950,1965,1980"), std::string::npos);
}

// A simulator run, `latest table`, and a C program linking the table
// library: its answers are analyze's pairs.csv (outliers left out).
TEST(Cli, TableFromASimulatorRunAnswersAsAnalyzeDoes) {
  const fs::path dir = scratch("table-run");
  ASSERT_EQ(run({"--backend", "sim", "--freq", "1980,1500,990", "--max-measurements", "25", "--output", dir.string()}).code, 0);
  const fs::path table = dir / "table.json";
  const Result t = run({"table", dir.string(), "-o", table.string()});
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_TRUE(fs::exists(dir / "analysis" / "latency_table.json")) << "the run's own analysis writes it too";
  std::map<std::pair<int, int>, std::pair<double, double>> expected;  // median, p95
  std::istringstream pairs(slurp(dir / "analysis" / "pairs.csv"));
  std::string line;
  std::getline(pairs, line);
  while (std::getline(pairs, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    if (f.at(4) == "filtered") expected[{std::stoi(f[2]), std::stoi(f[3])}] = {std::stod(f[11]), std::stod(f[13])};
  }
  ASSERT_EQ(expected.size(), 6u);
  FILE* p = popen((std::string(TABLE_C_CONSUMER) + " " + table.string()).c_str(), "r");
  ASSERT_NE(p, nullptr);
  int seen = 0, a = 0, b = 0;
  double median = 0, p95 = 0;
  while (std::fscanf(p, "%d %d %lf %lf", &a, &b, &median, &p95) == 4) {
    ++seen;
    const auto it = expected.find({a, b});
    ASSERT_NE(it, expected.end()) << a << "->" << b;
    EXPECT_NEAR(median, it->second.first, 1e-6) << a << "->" << b;
    EXPECT_NEAR(p95, it->second.second, 1e-6) << a << "->" << b;
  }
  EXPECT_EQ(pclose(p), 0);
  EXPECT_EQ(seen, 6);
  // Two GPU models: -o must be a directory, one table each.
  const fs::path other = scratch("table-a100");
  ASSERT_EQ(run({"--backend", "sim", "--sim-profile", "a100", "--freq", "1410,705", "--max-measurements", "25",
                 "--output", other.string()}).code, 0);
  const Result both = run({"table", dir.string(), other.string(), "-o", (dir / "two.json").string()});
  EXPECT_EQ(both.code, 2);
  EXPECT_NE(both.err.find("2 GPU models"), std::string::npos) << both.err;
  EXPECT_NE(both.err.find("give -o " + (dir / "two").string() + "/ (created if missing"), std::string::npos) << both.err;
  // A directory that exists, or one not yet made whose name ends in '/' (docs/table.md).
  const fs::path tables = scratch("tables");
  fs::create_directories(tables);
  ASSERT_EQ(run({"table", dir.string(), other.string(), "-o", tables.string()}).code, 0);
  EXPECT_TRUE(fs::exists(tables / "simulated-nvidia-h200.json"));
  EXPECT_TRUE(fs::exists(tables / "simulated-nvidia-a100-sxm4.json"));
  fs::remove_all(tables);
  ASSERT_EQ(run({"table", dir.string(), "-o", tables.string() + "/"}).code, 0);
  EXPECT_TRUE(fs::exists(tables / "simulated-nvidia-h200.json"));
  // A result manifest given as a table is named as what it is.
  const Result manifest = run({"route", "--table", (dir / "manifest.json").string(), "--from", "1980", "--to", "990"});
  EXPECT_EQ(manifest.code, 2);
  EXPECT_NE(manifest.err.find("this is a result manifest (a run's record), not a latency table"), std::string::npos)
      << manifest.err;
  fs::remove_all(dir);
  fs::remove_all(other);
  fs::remove_all(tables);
}

// Values no run can give, end to end: analyze and table exit 2 naming the
// file and line (issue 12, item 4; every case in tests/analysis).
TEST(Cli, HostileResultsAreRefusedWithExitTwo) {
  const fs::path dir = scratch("hostile");
  ASSERT_EQ(run({"--backend", "sim", "--freq", "1980,990", "--max-measurements", "25", "--output", dir.string()}).code, 0);
  fs::path csv;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".csv") csv = e.path();
  ASSERT_FALSE(csv.empty());
  std::ofstream(csv, std::ios::app) << "99,nan,1,1,1,1,1,1,,,,,,,0,0\n";
  for (const std::string command : {"analyze", "table"}) {
    std::vector<std::string> args = {command, dir.string()};
    if (command == "table") args.insert(args.end(), {"-o", (dir / "t.json").string()});
    const Result r = run(args);
    EXPECT_EQ(r.code, 2) << command << ": " << r.err;
    EXPECT_NE(r.err.find(csv.filename().string() + ":27: 'nan' in column switching_latency_ms"), std::string::npos)
        << r.err;
  }
  fs::remove_all(dir);
}

// The rough edges a new user hit (issue 11, item 4): parser errors in the
// house style with a hint, paths that are files or missing named as such,
// a lone --max-measurements below the default minimum lowers it.
TEST(Cli, ParserAndPathErrorsSayWhatIsWrongAndTheWayOut) {
  const fs::path run_dir = scratch("edges");
  ASSERT_EQ(run({"--backend", "sim", "--freq", "1980,990", "--max-measurements", "5", "--output", run_dir.string()}).code, 0);
  const fs::path manifest = run_dir / "manifest.json";
  const std::vector<std::tuple<std::vector<std::string>, int, std::string, std::string>> cases = {
      {{"--freq", "1980,990", "--rse", "abc"}, 2, "latest: error: --rse: 'abc' is not a value it takes",
       "latest: hint: `latest --help`"},
      {{"analyze"}, 2, "latest: error: latest analyze needs one or more result directories", "latest: hint: e.g."},
      {{"--freq", "1980,990", "--bogus"}, 2, "--bogus: not an option or argument of latest", "latest: hint:"},
      {{"--frq", "1980,990"}, 2, "--frq: not an option or argument of latest; did you mean --freq?", "latest: hint:"},
      {{"selftest", "--latncy-ms", "1:5"}, 2,
       "--latncy-ms: not an option or argument of latest selftest; did you mean --latency-ms?", "latest: hint:"},
      {{"--save-traces-limit", "0"}, 2, "--save-traces-limit: '0' is not a number above 0", "latest: hint:"},
      {{"advise", "--table", "t.json", "--from", "1980", "--to", "990", "--phase-ms", "-5"}, 2,
       "--phase-ms: '-5' is not a number of 0 or more", "latest: hint:"},
      {{"--sim-gpus", "65"}, 2, "--sim-gpus: '65' is not a number from 1 to 64", "latest: hint:"},
      {{"analyze", manifest.string()}, 2, manifest.string() + " is a file, not a result directory",
       "give the directory that holds it: " + run_dir.string()},
      {{"report", manifest.string()}, 2, "is a file, not a result directory", "latest: hint:"},
      {{"analyze", (run_dir / "nonexistent").string()}, 6, "nonexistent does not exist", "latest: hint:"},
      {{"--backend", "sim", "--freq", "1980,990", "--output", manifest.string()}, 2,
       manifest.string() + " is a file, not a directory", "latest: hint:"},
      {{"analyze", run_dir.string(), "-o", manifest.string()}, 2, manifest.string() + " is a file, not a directory",
       "latest: hint:"},
  };
  for (const auto& [args, code, says, hint] : cases) {
    const Result r = run(args);
    EXPECT_EQ(r.code, code) << args.front() << ": " << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << "expected '" << says << "' in: " << r.err;
    EXPECT_NE(r.err.find(hint), std::string::npos) << "expected '" << hint << "' in: " << r.err;
    EXPECT_EQ(r.err.find("Could not convert"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("is required"), std::string::npos) << r.err;
  }
  // A directory with someone's report.html and no manifest is not written over.
  const fs::path foreign = scratch("foreign");
  fs::create_directories(foreign);
  std::ofstream(foreign / "report.html") << "not ours\n";
  const Result over = run({"--backend", "sim", "--freq", "1980,990", "--output", foreign.string()});
  EXPECT_EQ(over.code, 2) << over.err;
  EXPECT_NE(over.err.find("holds report.html but no manifest.json"), std::string::npos) << over.err;
  EXPECT_EQ(slurp(foreign / "report.html"), "not ours\n");
  fs::remove_all(foreign);
  const fs::path lowered = scratch("lowered");
  const Result few = run({"--backend", "sim", "--freq", "1980,990", "--max-measurements", "5", "--output", lowered.string()});
  EXPECT_EQ(few.code, 0) << few.err;
  EXPECT_NE(few.err.find("below the default minimum of 25: the minimum is 5 too"), std::string::npos) << few.err;
  // Each subcommand's help is its own: the measurement's results paragraph is not in it.
  for (const std::string sub : {"analyze", "report", "table", "info", "selftest", "reset"}) {
    const Result help = run({sub, "--help"});
    EXPECT_EQ(help.code, 0);
    EXPECT_EQ(help.out.find("one CSV per pair"), std::string::npos) << sub;
  }
  EXPECT_NE(run({"--help"}).out.find("one CSV per pair"), std::string::npos);
  fs::remove_all(run_dir);
  fs::remove_all(lowered);
}

// Events in view (issue 11, item 5): a thermal discard shows in the summary's
// note column; a power-cap skip gives the driver's reasons in words.
TEST(Cli, EventsShowInTheSummary) {
  const fs::path thermal = scratch("events-thermal");
  const Result t = run({"--backend", "sim", "--freq", "1980,990", "--sim-thermal-at", "4", "--max-measurements", "30",
                        "--output", thermal.string()});
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("5 discarded (thermal)"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("outliers included"), std::string::npos) << "the table says what it includes";
  const fs::path capped = scratch("events-power");
  const Result p = run({"--backend", "sim", "--freq", "1980,1200", "--sim-power-cap", "1500", "--output", capped.string()});
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.out.find("(software power cap)"), std::string::npos) << p.out;
  EXPECT_EQ(p.out.find("0x0"), std::string::npos) << p.out;
  fs::remove_all(thermal);
  fs::remove_all(capped);
}

// A rerun of a finished run lists every pair as kept, with the counts, and
// the manifest keeps the earlier runs' timer syncs (issue 11, item 3).
TEST(Cli, RerunListsKeptPairsAndKeepsTheSyncRecord) {
  const fs::path dir = scratch("rerun");
  const std::vector<std::string> args = {"--backend", "sim", "--freq", "1980,990", "--max-measurements", "5",
                                         "--output", dir.string()};
  ASSERT_EQ(run(args).code, 0);
  const int first = nlohmann::json::parse(slurp(dir / "manifest.json"))["timer_sync"]["count"].get<int>();
  const Result again = run(args);
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.err.find("2 pairs already done"), std::string::npos) << again.err;
  EXPECT_NE(again.out.find("2 pairs: 2 kept from an earlier run, 0 measured, 0 skipped"), std::string::npos) << again.out;
  EXPECT_EQ(count_of(again.out, "kept: measured by an earlier run"), 2) << again.out;
  const auto m = nlohmann::json::parse(slurp(dir / "manifest.json"));
  ASSERT_EQ(m["timer_sync_earlier_runs"].size(), 1u);
  EXPECT_EQ(m["timer_sync_earlier_runs"][0]["count"].get<int>(), first);
  EXPECT_EQ(m["timer_sync"]["count_all_runs"].get<int>(), first + m["timer_sync"]["count"].get<int>());
  fs::remove_all(dir);
}

// A pair the analysis flags (noise > 10 %, or a target a run did not reach)
// is named where people look: the terminal's summary, summary.txt and the
// latency table runtime systems read.
TEST(Cli, AFlaggedPairIsNamedInTheTerminalTheSummaryAndTheTable) {
  const fs::path dir = scratch("flagged");
  const std::vector<std::string> args = {"--backend", "sim", "--freq", "1980,990", "--min-measurements", "30",
                                         "--max-measurements", "30", "--output", dir.string()};
  ASSERT_EQ(run(args).code, 0);
  // 22 tight measurements and 8 scattered far above: no DBSCAN setting gets the noise to 10 %.
  const fs::path csv = dir / "1980_990_vm_0.csv";
  std::istringstream in(slurp(csv));
  std::string line, text;
  std::getline(in, line);
  text = line + "\n";
  for (int k = 0; std::getline(in, line); ++k) {
    const std::size_t a = line.find(','), b = line.find(',', a + 1);
    const double v = k < 22 ? 5.0 + 0.001 * k : 10.0 * std::pow(k - 21, 1.5);
    text += line.substr(0, a + 1) + std::to_string(v) + line.substr(b) + "\n";
  }
  std::ofstream(csv) << text;
  // A run that found the card nearer another clock than 1980 MHz says so in its manifest.
  auto manifest = nlohmann::json::parse(slurp(dir / "manifest.json"));
  for (auto& p : manifest["pairs"])
    if (p["target_mhz"] == 1980) p["target_not_reached"] = true;
  std::ofstream(dir / "manifest.json") << manifest.dump(1);
  ASSERT_EQ(run({"analyze", dir.string()}).code, 0);
  const std::string summary = slurp(dir / "analysis" / "summary.txt");
  EXPECT_NE(summary.find("flagged 1980 -> 990: noise > 10 %"), std::string::npos) << summary;
  EXPECT_NE(summary.find("flagged 990 -> 1980: target not reached"), std::string::npos) << summary;
  const fs::path table = dir / "t.json";
  ASSERT_EQ(run({"table", dir.string(), "-o", table.string()}).code, 0);
  for (const auto& p : nlohmann::json::parse(slurp(table))["pairs"])
    EXPECT_EQ(p["flags"], p["init_mhz"] == 1980 ? nlohmann::json::array({"noisy"})
                                                : nlohmann::json::array({"target_not_reached"}))
        << p.dump();
  const Result again = run(args);
  EXPECT_NE(again.out.find("kept: measured by an earlier run; flagged: noise > 10 %"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("kept: measured by an earlier run; flagged: target not reached"), std::string::npos)
      << again.out;
  EXPECT_EQ(count_of(again.out, "flagged: "), 2) << again.out;
  fs::remove_all(dir);
}

// Volume (issue 11, item 7): --plan estimates the traces; a run whose
// traces could pass 1 GB stops before starting unless capped; a cap holds
// and the run says what it left out.
TEST(Cli, TraceVolumeIsEstimatedAndCapped) {
  const fs::path dir = scratch("trace-volume");
  const std::vector<std::string> six = {"--backend", "sim", "--freq", "1980,1500,990", "--save-traces", "--output", dir.string()};
  std::vector<std::string> plan = six;
  plan.push_back("--plan");
  const Result p = run(plan);
  EXPECT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.out.find("traces (--save-traces): up to"), std::string::npos) << p.out;
  const Result big = run(six);
  EXPECT_EQ(big.code, 2);
  EXPECT_NE(big.err.find("could write up to 3.8 GB of traces"), std::string::npos) << big.err;
  EXPECT_NE(big.err.find("--save-traces-limit"), std::string::npos) << big.err;
  EXPECT_FALSE(fs::exists(dir));
  const Result capped = run({"--backend", "sim", "--freq", "1980,990", "--save-traces", "--save-traces-limit", "20",
                             "--max-measurements", "25", "--output", dir.string()});
  EXPECT_EQ(capped.code, 0) << capped.err;
  EXPECT_NE(capped.err.find("were not kept: the run's trace budget (20 MB) was spent"), std::string::npos) << capped.err;
  std::uintmax_t bytes = 0;
  for (const auto& e : fs::directory_iterator(dir / "traces")) bytes += fs::file_size(e.path());
  EXPECT_LE(bytes, 25u << 20) << "20 MB counted at 40 bytes a row";
  EXPECT_GT(bytes, 10u << 20);
  fs::remove_all(dir);
}

TEST(Cli, PlanPrintsAndWritesNothing) {
  const fs::path dir = scratch("plan");
  const Result r = run({"--freq", "600,900,1200,1500", "--plan", "--output", dir.string()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("pairs: 12, of which 12 measured"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GPU time:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("schedule: chained"), std::string::npos) << r.out;
  // Its progress, and the truth that it changes clocks.
  EXPECT_NE(r.err.find("clocks change as in a run and are restored"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("latest: plan: sample pair 1 ("), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_NE(run({"--help"}).out.find("measure phase 1, the pilot and a sample of pairs (clocks change"), std::string::npos);
}

// The plan, as JSON, is what the run plans: the run records the same
// planned GPU seconds (how close a plan comes to the run where most pairs
// are extrapolated: Sim/PlanOfUnmeasuredPairs in engine_test.cpp); ranges of
// supported clocks in --freq, in the plan too.
TEST(Cli, PlanJsonIsWhatTheRunPlans) {
  const fs::path dir = scratch("plan-json");
  const std::vector<std::string> common = {"--backend", "sim", "--freq", "1980,1500,990", "--seed", "3"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> args = common;
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  const Result p = run(with({"--plan", "--json"}));
  ASSERT_EQ(p.code, 0) << p.err;
  const auto plan = nlohmann::json::parse(p.out);
  EXPECT_EQ(plan["schedule"], "chained");
  EXPECT_EQ(plan["pairs"], 6);
  EXPECT_GT(plan["gpu_seconds"].get<double>(), 0);
  const Result r = run(with({"--output", dir.string(), "--progress", "none"}));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto manifest = nlohmann::json::parse(slurp(dir / "manifest.json"));
  EXPECT_DOUBLE_EQ(manifest["planned_gpu_seconds"].get<double>(), plan["gpu_seconds"].get<double>())
      << "the run plans as --plan does";
  // The close pair at defaults no longer costs seconds a measurement.
  const fs::path close = scratch("close-pair");
  ASSERT_EQ(run({"--backend", "sim", "--freq", "1980,1890", "--seed", "29", "--output", close.string(), "--progress",
                 "none"})
                .code,
            0);
  const auto m = nlohmann::json::parse(slurp(close / "manifest.json"));
  double n = 0;
  for (const auto& pair : m["pairs"]) n += pair["measurements"].get<double>();
  ASSERT_GT(n, 0);
  EXPECT_LT(m["gpu_seconds"].get<double>() / n, 0.1) << "GPU seconds per measurement";
  const Result range = run({"--backend", "sim", "--freq", "1950:1980", "--plan", "--json", "--max-measurements", "5"});
  ASSERT_EQ(range.code, 0) << range.err;
  EXPECT_EQ(nlohmann::json::parse(range.out)["clocks_mhz"], nlohmann::json({1950, 1965, 1980}));
  fs::remove_all(dir);
  fs::remove_all(close);
}

TEST(Cli, SeedCommandLineWorksAsWritten) {
  // The paper's example; on a machine without a GPU, auto falls back with a notice.
  const fs::path dir = scratch("seed");
  const Result r = run({"--freq", "600,900,1200,1500", "--device", "0", "--rse", "0.03", "--pairs", "600:1500,1500:600",
                        "--max-measurements", "25", "--output", dir.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  if (!dlopen("libcuda.so.1", RTLD_NOW)) {
    EXPECT_NE(r.err.find("using the simulated GPU"), std::string::npos) << r.err;
  }
  EXPECT_EQ(csv_count(dir), 2);
  EXPECT_NE(r.out.find("2 pairs: 2 measured, 0 skipped"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

// A run asked for more warps per SM than were shown to measure as one says
// so on stderr when it starts; at the default, nothing is said.
TEST(Cli, ACrowdedSmIsSaidWhenTheRunStarts) {
  const fs::path dir = scratch("crowded");
  for (const char* warps : {"8", "1"}) {
    const Result r = run({"--backend", "sim", "--freq", "1980,990", "--pairs", "1980:990", "--min-measurements", "2",
                          "--max-measurements", "2", "--warps", warps, "--output", dir.string()});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.err.find("latest: --warps 8: the recording warp shares its SM") != std::string::npos,
              std::string(warps) == "8")
        << r.err;
    fs::remove_all(dir);
  }
}

TEST(Cli, DoneCriterionRunWritesSixPairsAndAManifest) {
  const fs::path dir = scratch("done");
  const auto start = std::chrono::steady_clock::now();
  const Result r = run({"--backend", "sim", "--freq", "1980,1500,990", "--seed", "1", "--output", dir.string()});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(csv_count(dir), 6);
  const auto manifest = nlohmann::json::parse(slurp(dir / "manifest.json"));
  EXPECT_EQ(manifest["status"], "complete");
  EXPECT_EQ(manifest["pairs"].size(), 6u);
  EXPECT_EQ(manifest["calibration"].size(), 3u);
  EXPECT_EQ(manifest["device"]["sm_count"], 132);
  for (const auto& p : manifest["pairs"]) {
    EXPECT_EQ(p["status"], "measured");
    EXPECT_TRUE(fs::exists(dir / p["file"].get<std::string>()));
  }
  EXPECT_NE(r.out.find("6 pairs: 6 measured, 0 skipped"), std::string::npos) << r.out;
  RecordProperty("seconds", std::to_string(seconds));
  fs::remove_all(dir);
}

class Interrupt : public ::testing::TestWithParam<int> {};

TEST_P(Interrupt, SignalStopsCleanlyAndARerunResumes) {
  const fs::path dir = scratch("signal" + std::to_string(GetParam()));
  const std::vector<std::string> args = {"--backend", "sim", "--freq", "1980,1500,990", "--seed", "2",
                                         "--max-measurements", "25", "--output", dir.string()};
  const fs::path out = scratch("sig-out"), err = scratch("sig-err");
  const pid_t pid = spawn(args, out, err);
  // Wait for the first finished pair, then signal mid-run.
  for (int i = 0; i < 600 && (!fs::exists(dir) || csv_count(dir) < 1); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_GE(csv_count(dir), 1);
  kill(pid, GetParam());
  const Result r = finish(pid, out, err);
  ASSERT_EQ(r.code, 130) << r.err;
  EXPECT_NE(r.err.find("run the same command again to resume"), std::string::npos) << r.err;
  const int kept = csv_count(dir);
  ASSERT_LT(kept, 6) << "the run should have been interrupted before the end";
  const auto manifest = nlohmann::json::parse(slurp(dir / "manifest.json"));
  EXPECT_EQ(manifest["status"], "interrupted");
  std::string first_csv;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".csv") first_csv = e.path().filename();
  const std::string before = slurp(dir / first_csv);

  const Result resumed = run(args);
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("already done"), std::string::npos) << resumed.err;
  EXPECT_EQ(csv_count(dir), 6);
  EXPECT_EQ(slurp(dir / first_csv), before) << "finished pairs are kept, not measured again";
  EXPECT_EQ(nlohmann::json::parse(slurp(dir / "manifest.json"))["status"], "complete");
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Signals, Interrupt, ::testing::Values(SIGINT, SIGTERM, SIGHUP),
                         [](const auto& info) { return std::string(strsignal(info.param)).substr(0, 4) + std::to_string(info.param); });

TEST(Cli, TheSameSeedGivesTheSameRun) {
  const fs::path a = scratch("seed-a"), b = scratch("seed-b"), c = scratch("seed-c");
  const auto args = [](const fs::path& dir, const char* seed) {
    return std::vector<std::string>{"--backend", "sim", "--freq", "1980,990", "--pairs", "1980:990", "--min-measurements",
                                    "5", "--max-measurements", "5", "--seed", seed, "--output", dir.string()};
  };
  ASSERT_EQ(run(args(a, "7")).code, 0);
  ASSERT_EQ(run(args(b, "7")).code, 0);
  ASSERT_EQ(run(args(c, "8")).code, 0);
  std::string name;
  for (const auto& e : fs::directory_iterator(a))
    if (e.path().extension() == ".csv") name = e.path().filename();
  EXPECT_EQ(slurp(a / name), slurp(b / name));
  EXPECT_NE(slurp(a / name), slurp(c / name));
  for (const auto& d : {a, b, c}) fs::remove_all(d);
}

TEST(Cli, SaveTracesKeepsEverySmAroundEachSwitch) {
  const fs::path dir = scratch("traces");
  const Result r = run({"--backend", "sim", "--freq", "1980,990", "--pairs", "1980:990", "--min-measurements", "3",
                        "--max-measurements", "3", "--save-traces", "--output", dir.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  fs::path trace;
  for (const auto& e : fs::directory_iterator(dir / "traces")) trace = e.path();
  const std::string text = slurp(trace);
  EXPECT_EQ(text.substr(0, text.find('\n')), "measurement,sm,iteration,start_from_request_ns,duration_ns,cycles,effective_mhz");
  for (const char* m : {"\n1,0,", "\n2,131,", "\n3,77,"}) EXPECT_NE(text.find(m), std::string::npos) << m;
  EXPECT_NE(text.find(",-"), std::string::npos) << "iterations before the request are kept too";
  fs::remove_all(dir);
}

TEST(Cli, AnalyzeAndReportOnTheRunsOwnOutput) {
  const fs::path dir = scratch("analyze");
  ASSERT_EQ(run({"--backend", "sim", "--freq", "1980,990", "--max-measurements", "25", "--output", dir.string()}).code, 0);
  EXPECT_TRUE(fs::exists(dir / "analysis" / "summary.txt")) << "a run ends by analysing its output";
  EXPECT_TRUE(fs::exists(dir / "report.html"));
  const Result a = run({"analyze", dir.string(), "--output", (dir / "again").string()});
  EXPECT_EQ(a.code, 0) << a.err;
  EXPECT_NE(a.out.find("worst case"), std::string::npos) << a.out;
  EXPECT_TRUE(fs::exists(dir / "again" / "pairs.csv"));
  const Result rep = run({"report", dir.string(), "--output", (dir / "r.html").string()});
  EXPECT_EQ(rep.code, 0) << rep.err;
  const Result missing = run({"analyze", (dir / "nope").string()});
  EXPECT_EQ(missing.code, 6) << "not found";
  EXPECT_NE(missing.err.find("nope does not exist"), std::string::npos) << missing.err;
  fs::create_directories(dir / "empty");
  const Result empty = run({"analyze", (dir / "empty").string()});
  EXPECT_EQ(empty.code, 6);
  EXPECT_NE(empty.err.find("holds no result directory (no manifest.json in or below it)"), std::string::npos) << empty.err;
  const Result paper = run({"analyze", dir.string(), "--outlier-filter", "paper", "--output", (dir / "paper").string()});
  EXPECT_EQ(paper.code, 0) << paper.err;
  EXPECT_TRUE(fs::exists(dir / "paper" / "pairs.csv"));
  const Result bad = run({"report", dir.string(), "--outlier-filter", "kmeans", "--output", (dir / "bad.html").string()});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("unknown --outlier-filter 'kmeans'"), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(dir / "bad.html"));
  fs::remove_all(dir);
}

TEST(Cli, ADifferentRunIntoTheSameDirectoryIsRefused) {
  const fs::path dir = scratch("other");
  ASSERT_EQ(run({"--backend", "sim", "--freq", "1980,990", "--max-measurements", "25", "--output", dir.string()}).code, 0);
  const Result r = run({"--backend", "sim", "--freq", "1980,1500", "--output", dir.string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("different run: freq_mhz [1500,1980] (the directory has [990,1980])"), std::string::npos)
      << "names what differs: " << r.err;
  const Result rse = run({"--backend", "sim", "--freq", "1980,990", "--max-measurements", "25", "--rse", "0.02",
                          "--output", dir.string()});
  EXPECT_EQ(rse.code, 2);
  EXPECT_NE(rse.err.find("rse 0.02 (the directory has 0.05)"), std::string::npos) << rse.err;
  // Not a difference: the clocks in another order, auto that resolved to the
  // simulator, the same card by another selector.
  const Result same = run({"--freq", "990,1980", "--max-measurements", "25", "--device", "0", "--output", dir.string()});
  EXPECT_EQ(same.code, 0) << same.err;
  EXPECT_NE(same.err.find("resuming"), std::string::npos) << same.err;
  fs::remove_all(dir);
}

}  // namespace
