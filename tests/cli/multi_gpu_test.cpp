// Several GPUs at once on simulated cards (--sim-gpus, --device all or a
// list): a directory of each, one summary, the exit code of the first
// failing GPU, SIGINT stopping all, --output's placeholders, and the lock
// that keeps two runs out of one directory.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "results/result_store.hpp"
#include "support/process.hpp"

namespace {
using namespace latest::testing;
using nlohmann::json;

// Result directories (those with a manifest) below `dir`.
std::vector<fs::path> result_dirs(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename() == "manifest.json") out.push_back(e.path().parent_path());
  std::sort(out.begin(), out.end());
  return out;
}

const std::vector<std::string> kQuick = {"--backend", "sim", "--freq", "1980,990", "--max-measurements", "25",
                                          "--progress", "lines"};

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST(MultiGpu, FourSimulatedCardsAtOnceThenOneAnalysisOfAll) {
  const fs::path dir = scratch("four");
  const std::string host = latest::host_name_for_files();
  const Result r = run(with(kQuick, {"--sim-gpus", "4", "--device", "all", "--output", (dir / "%h").string()}));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto dirs = result_dirs(dir / host);
  ASSERT_EQ(dirs.size(), 4u) << "a directory of each GPU, named by host and UUID, below the one named";
  std::set<std::string> uuids;
  for (const auto& d : dirs) {
    const json m = json::parse(slurp(d / "manifest.json"));
    EXPECT_EQ(m["status"], "complete");
    const std::string uuid = m["device"]["uuid"];
    uuids.insert(uuid);
    EXPECT_EQ(d.filename().string(), host + "_" + uuid);
    EXPECT_TRUE(fs::exists(d / "report.html"));
  }
  EXPECT_EQ(uuids.size(), 4u) << "four cards";
  EXPECT_NE(r.out.find("4 GPUs:"), std::string::npos) << r.out;
  for (int i = 0; i < 4; ++i) {
    EXPECT_NE(r.out.find("--device " + std::to_string(i) + ": ok"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("GPU " + std::to_string(i) + ": pair"), std::string::npos) << "progress names its GPU";
  }
  // Each GPU's table at the end, in device order, whichever finished first.
  for (int i = 1; i < 4; ++i)
    EXPECT_LT(r.out.find("GPU " + std::to_string(i - 1) + " (Simulated"), r.out.find("GPU " + std::to_string(i) + " (Simulated"))
        << r.out;
  // The cards differ (card-to-card variation), and analyze and report find
  // every result directory below the one given.
  const Result a = run({"analyze", (dir / host).string()});
  ASSERT_EQ(a.code, 0) << a.err;
  int gpus = 0;
  for (auto at = a.out.find("Simulated NVIDIA H200 on"); at != std::string::npos; at = a.out.find("Simulated NVIDIA H200 on", at + 1)) ++gpus;
  EXPECT_EQ(gpus, 4) << a.out;
  // A directory given twice, or with the one that holds it, counts once.
  const Result twice = run({"analyze", (dir / host).string(), dirs.front().string(), "--output", (dir / "twice").string()});
  ASSERT_EQ(twice.code, 0) << twice.err;
  EXPECT_EQ(slurp(dir / "twice" / "pairs.csv"), slurp(dir / host / "analysis" / "pairs.csv"));
  const Result rep = run({"report", (dir / host).string(), "--output", (dir / "all.html").string()});
  ASSERT_EQ(rep.code, 0) << rep.err;
  const std::string page = slurp(dir / "all.html");
  for (const char* figure : {"\"range-max-0\"", "\"boxes-0\"", "\"ranking\""})
    EXPECT_NE(page.find(figure), std::string::npos) << figure;
  // Legends tell the cards apart in a few characters: host and index.
  for (int i = 0; i < 4; ++i)
    EXPECT_NE(page.find("\"" + host + " GPU " + std::to_string(i) + "\""), std::string::npos) << "GPU " << i;
  std::set<double> medians;
  for (const auto& d : dirs) {
    const json table = json::parse(slurp(d / "analysis" / "latency_table.json"));
    for (const auto& p : table["pairs"])
      if (p["init_mhz"] == 1980) medians.insert(p["switching_ms"]["median"].get<double>());
  }
  EXPECT_EQ(medians.size(), 4u) << "each card its own latencies: " << json(medians).dump();
  fs::remove_all(dir);
}

TEST(MultiGpu, AFailingGpuStopsNoneOfTheOthersAndSetsTheExitCode) {
  const fs::path dir = scratch("failing");
  fs::create_directories(dir);
  std::ofstream(dir / "1") << "a file where GPU 1's directory would go\n";
  const Result r = run(with(kQuick, {"--sim-gpus", "3", "--device", "0,1,2", "--output", (dir / "%i").string()}));
  EXPECT_EQ(r.code, 2) << "the first failing GPU in device order: 1, its output unwritable";
  EXPECT_NE(r.out.find("--device 0: ok"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--device 1: failed (exit 2)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--device 2: ok"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(dir / "0" / "manifest.json")) << "%i: a directory of each GPU";
  EXPECT_TRUE(fs::exists(dir / "2" / "manifest.json"));
  EXPECT_NE(r.err.find("1 of 3 GPUs failed"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

// --device all puts each card's results in HOST_UUID below --output even
// where there is one card, so a script finds them the same way everywhere.
TEST(MultiGpu, AllWithOneCardStillWritesBelowTheOutput) {
  const fs::path dir = scratch("all-of-one");
  const Result r = run(with(kQuick, {"--sim-gpus", "1", "--device", "all", "--output", dir.string()}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(result_dirs(dir).size(), 1u);
  EXPECT_FALSE(fs::exists(dir / "manifest.json"));
  fs::remove_all(dir);
}

// A GPU of the list that does not exist fails the command before any GPU is
// measured.
TEST(MultiGpu, AMissingGpuIsFoundBeforeAnyIsMeasured) {
  const fs::path dir = scratch("missing");
  const Result r = run(with(kQuick, {"--sim-gpus", "2", "--device", "0,7,1", "--output", (dir / "%i").string()}));
  EXPECT_EQ(r.code, 6);
  EXPECT_NE(r.err.find("device 7 not found: the simulator has 2 GPUs"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "0")) << "nothing measured";
  fs::remove_all(dir);
}

TEST(MultiGpu, SigintStopsEveryGpu) {
  const fs::path dir = scratch("sigint");
  const fs::path out = scratch("multi-sig-out"), err = scratch("multi-sig-err");
  const pid_t pid = spawn({"--backend", "sim", "--freq", "1980,1500,990", "--sim-gpus", "2", "--device", "all",
                           "--output", (dir / "%i").string(), "--progress", "lines"},
                          out, err);
  for (int i = 0; i < 600 && (csv_count(dir / "0") < 1 || csv_count(dir / "1") < 1); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  kill(pid, SIGINT);
  const Result r = finish(pid, out, err);
  EXPECT_EQ(r.code, 130) << r.out << r.err;
  for (const char* gpu : {"0", "1"}) {
    const json m = json::parse(slurp(dir / gpu / "manifest.json"));
    EXPECT_EQ(m["status"], "interrupted") << gpu;
    EXPECT_FALSE(fs::exists(dir / gpu / ".latest.lock")) << "each run let go of its directory";
  }
  EXPECT_NE(r.out.find("--device 0: failed (exit 130): interrupted by SIGINT"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--device 1: failed (exit 130): interrupted by SIGINT"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

TEST(MultiGpu, OutputPlaceholders) {
  const fs::path dir = scratch("placeholders");
  const Result r = run(with(kQuick, {"--output", (dir / "%j-%i-%u%%").string()}), {{"SLURM_JOB_ID", "4711"}});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto dirs = result_dirs(dir);
  ASSERT_EQ(dirs.size(), 1u);
  const std::string uuid = json::parse(slurp(dirs[0] / "manifest.json"))["device"]["uuid"];
  EXPECT_EQ(dirs[0].filename().string(), "4711-0-" + uuid + "%");
  const Result bad = run(with(kQuick, {"--output", (dir / "%q").string()}));
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("'%q' is no placeholder"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("%h (host), %u (GPU UUID), %i (GPU index), %j (Slurm job id)"), std::string::npos) << bad.err;
  fs::remove_all(dir);
}

TEST(MultiGpu, ADirectoryInUseIsRefusedWithExit19) {
  const fs::path dir = scratch("locked");
  fs::create_directories(dir);
  // This test process, alive on this host, holds the directory.
  std::ofstream(dir / ".latest.lock") << json{{"host", latest::host_name_for_files()}, {"pid", getpid()},
                                               {"started_utc", "2026-11-30T12:00:00Z"}}.dump();
  const Result r = run(with(kQuick, {"--output", dir.string()}));
  EXPECT_EQ(r.code, 19);
  EXPECT_NE(r.err.find("is in use by latest (pid " + std::to_string(getpid())), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "manifest.json")) << "nothing measured";
  // Another host's lock: refused unless broken.
  std::ofstream(dir / ".latest.lock") << json{{"host", "node-b"}, {"pid", 1}, {"started_utc", "x"}}.dump();
  const Result remote = run(with(kQuick, {"--output", dir.string()}));
  EXPECT_EQ(remote.code, 19);
  EXPECT_NE(remote.err.find("--break-lock"), std::string::npos) << remote.err;
  const Result broken = run(with(kQuick, {"--output", dir.string(), "--break-lock"}));
  EXPECT_EQ(broken.code, 0) << broken.err;
  EXPECT_NE(broken.err.find("broke the lock of latest (pid 1 on node-b"), std::string::npos) << broken.err;
  EXPECT_FALSE(fs::exists(dir / ".latest.lock"));
  fs::remove_all(dir);
}

}  // namespace
