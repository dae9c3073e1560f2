// The real NVML clock controller through the fake NVML library
// (tests/fake_nvml), paired with the simulated workload: setting and
// restoring clocks on every way out, error codes, read-only mode and the lock.
#include <signal.h>

#include <chrono>
#include <map>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/process.hpp"

namespace {
using namespace latest::testing;

std::map<std::string, std::string> read_state(const fs::path& file) {
  std::map<std::string, std::string> s;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line))
    if (auto eq = line.find('='); eq != std::string::npos) s[line.substr(0, eq)] = line.substr(eq + 1);
  return s;
}

class FakeNvml : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    dir_ = scratch("nvml-" + name);
    fs::create_directories(dir_);
    state_ = dir_ / "fake.state";
    // The card before latest: application clocks at 1755 MHz, no lock.
    set({{"app_graphics_mhz", "1755"}, {"locked_mhz", "0"}, {"set_calls", "0"}, {"set_log", ""}});
  }
  void TearDown() override { fs::remove_all(dir_); }

  void set(const std::map<std::string, std::string>& values) {
    auto s = read_state(state_);
    for (const auto& [k, v] : values) s[k] = v;
    std::ofstream out(state_);
    for (const auto& [k, v] : s) out << k << '=' << v << '\n';
  }
  std::map<std::string, std::string> state() const { return read_state(state_); }
  std::map<std::string, std::string> env() const {
    return {{"LATEST_NVML_LIBRARY", FAKE_NVML}, {"FAKE_NVML_STATE", state_.string()},
            {"LATEST_STATE_DIR", (dir_ / "latest-state").string()}};
  }
  std::vector<std::string> measure(int measurements = 25) const {
    return {"--backend", "sim", "--clock-control", "nvml", "--freq", "1980,990", "--min-measurements",
            std::to_string(measurements), "--max-measurements", std::to_string(measurements), "--output",
            (dir_ / "results").string()};
  }
  bool saved_state_exists() const {
    const fs::path d = dir_ / "latest-state";
    if (!fs::exists(d)) return false;
    for (const auto& e : fs::directory_iterator(d))
      if (e.path().string().find(".state.json") != std::string::npos) return true;
    return false;
  }
  void expect_prior_state_back() const {
    const auto s = state();
    EXPECT_EQ(s.at("locked_mhz"), "0");
    EXPECT_EQ(s.at("app_graphics_mhz"), "1755");
    EXPECT_FALSE(saved_state_exists());
  }

  fs::path dir_, state_;
};

TEST_F(FakeNvml, SetsClocksAndRestoresThePriorState) {
  const Result r = run(measure(), env());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto s = state();
  EXPECT_NE(s.at("set_log").find("SetGpuLockedClocks(1980,1980)"), std::string::npos) << s.at("set_log");
  EXPECT_NE(s.at("set_log").find("SetGpuLockedClocks(990,990)"), std::string::npos);
  EXPECT_NE(s.at("set_log").find("ResetGpuLockedClocks();SetApplicationsClocks(3201,1755);"), std::string::npos)
      << s.at("set_log");
  expect_prior_state_back();
  EXPECT_EQ(csv_count(dir_ / "results"), 2);
  // The manifest names the device NVML reported, and its driver, which the
  // latency table then records among its conditions.
  EXPECT_NE(slurp(dir_ / "results" / "manifest.json").find("GPU-fa4e0000"), std::string::npos);
  EXPECT_NE(slurp(dir_ / "results" / "manifest.json").find("999.99-fake"), std::string::npos);
  // Through NVML's path each pair reached its target, as the SMs count it.
  const auto manifest = nlohmann::json::parse(slurp(dir_ / "results" / "manifest.json"));
  for (const auto& p : manifest["pairs"]) {
    EXPECT_FALSE(p["target_not_reached"].get<bool>());
    EXPECT_NEAR(p["clock_reached_mhz"].get<double>(), p["target_mhz"].get<double>(), 1.0);
  }
  ASSERT_EQ(run({"table", (dir_ / "results").string(), "-o", (dir_ / "t.json").string()}).code, 0);
  EXPECT_NE(slurp(dir_ / "t.json").find("\"driver\": \"999.99-fake\""), std::string::npos) << slurp(dir_ / "t.json");
  EXPECT_NE(slurp(dir_ / "t.json").find("\"power_limit_w\": 700.0"), std::string::npos) << slurp(dir_ / "t.json");
}

// The worker moves to the CPUs NVML names as nearest the card, and says so;
// where NVML does not say, it stays where it is.
TEST_F(FakeNvml, TheWorkerRunsOnTheCpusNearestTheGpu) {
  set({{"cpu_affinity", "0"}});
  const Result near = run(measure(5), env());
  ASSERT_EQ(near.code, 0) << near.err;
  EXPECT_NE(near.err.find("runs on CPUs 0, the ones nearest the GPU"), std::string::npos) << near.err;
  set({{"cpu_affinity", ""}});
  fs::remove_all(dir_ / "results");
  const Result unsaid = run(measure(5), env());
  ASSERT_EQ(unsaid.code, 0) << unsaid.err;
  EXPECT_EQ(unsaid.err.find("nearest the GPU"), std::string::npos) << unsaid.err;
}

TEST_F(FakeNvml, PermissionDeniedIsExitFourWithAHint) {
  set({{"fail_setters", "4"}});
  const Result r = run(measure(), env());
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_NE(r.err.find("Insufficient Permissions"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("needs root"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "results")) << "a refused run leaves no files";
  EXPECT_FALSE(saved_state_exists()) << "nothing changed, nothing to restore";
}

TEST_F(FakeNvml, NotSupportedIsExitThree) {
  set({{"fail_setters", "3"}});
  const Result r = run(measure(), env());
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("Not Supported"), std::string::npos) << r.err;
  EXPECT_FALSE(saved_state_exists());
}

TEST_F(FakeNvml, GpuLostIsExitFifteenAndClean) {
  set({{"lost_after_sets", "3"}});  // falls off the bus during calibration
  const Result r = run(measure(), env());
  EXPECT_EQ(r.code, 15) << r.err;
  EXPECT_NE(r.err.find("GPU is lost"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("latest reset"), std::string::npos) << "the failed restore points to the way back: " << r.err;
  // The saved state stays for `latest reset` once the GPU is back.
  EXPECT_TRUE(saved_state_exists());
  set({{"lost_after_sets", "-1"}});
  const Result reset = run({"reset"}, env());
  EXPECT_EQ(reset.code, 0) << reset.err;
  expect_prior_state_back();
}

class FakeNvmlSignal : public FakeNvml, public ::testing::WithParamInterface<int> {};

TEST_P(FakeNvmlSignal, SignalMidRunRestoresThePriorState) {
  const fs::path out = dir_ / "out", err = dir_ / "err";
  const pid_t pid = spawn(measure(400), out, err, env());
  // Wait until the run is measuring (a clock is locked), then signal.
  for (int i = 0; i < 400 && state()["locked_mhz"] == "0"; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  ASSERT_NE(state()["locked_mhz"], "0") << slurp(err);
  kill(pid, GetParam());
  const Result r = finish(pid, out, err);
  EXPECT_EQ(r.code, 130) << r.err;
  expect_prior_state_back();
}

INSTANTIATE_TEST_SUITE_P(Signals, FakeNvmlSignal, ::testing::Values(SIGINT, SIGTERM, SIGHUP));

TEST_F(FakeNvml, AfterSigkillResetBringsThePriorStateBack) {
  const fs::path out = dir_ / "out", err = dir_ / "err";
  const pid_t pid = spawn(measure(400), out, err, env());
  for (int i = 0; i < 400 && state()["locked_mhz"] == "0"; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  kill(pid, SIGKILL);
  finish(pid, out, err);
  EXPECT_NE(state().at("locked_mhz"), "0") << "SIGKILL leaves the clock locked";
  EXPECT_TRUE(saved_state_exists());
  const Result r = run({"reset"}, env());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("from the state file"), std::string::npos) << r.out;
  expect_prior_state_back();
}

// The locked clocks NVML was asked for, in order.
std::vector<int> locked_requests(const std::string& log) {
  std::vector<int> mhz;
  const std::string call = "SetGpuLockedClocks(";
  for (auto p = log.find(call); p != std::string::npos; p = log.find(call, p + 1))
    mhz.push_back(std::stoi(log.substr(p + call.size())));
  return mhz;
}

// The chained schedule through the real NVML clock side: after phase 1 and
// the pilot, each request is one measurement, alternating between the two
// clocks (one set call each, no wake-up set in between); a SIGINT in the
// middle of that sequence puts the card back.
TEST_F(FakeNvml, ChainedSequenceAlternatesAndAnInterruptMidSequenceRestores) {
  const Result r = run(measure(5), env());
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<int> sets = locked_requests(state().at("set_log"));
  ASSERT_GE(sets.size(), 12u);
  // The last ten: five measurements each way, alternating.
  for (std::size_t i = sets.size() - 10; i + 1 < sets.size(); ++i) EXPECT_NE(sets[i], sets[i + 1]) << i;
  expect_prior_state_back();

  set({{"set_log", ""}});
  fs::remove_all(dir_ / "results");
  const fs::path out = dir_ / "out", err = dir_ / "err";
  const pid_t pid = spawn(measure(400), out, err, env());
  // The manifest appears once the plan is made; then the sequence runs.
  const fs::path manifest = dir_ / "results" / "manifest.json";
  for (int i = 0; i < 800 && !fs::exists(manifest); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  ASSERT_TRUE(fs::exists(manifest)) << slurp(err);
  const std::size_t before = locked_requests(state().at("set_log")).size();
  for (int i = 0; i < 400 && locked_requests(state().at("set_log")).size() < before + 6; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  kill(pid, SIGINT);
  const Result stopped = finish(pid, out, err);
  EXPECT_EQ(stopped.code, 130) << stopped.err;
  EXPECT_GE(locked_requests(state().at("set_log")).size(), before + 6) << "interrupted mid-sequence";
  expect_prior_state_back();
}

TEST_F(FakeNvml, ReadOnlyModeMakesNoSetterCall) {
  for (const auto& [args, extra_env] :
       std::vector<std::pair<std::vector<std::string>, std::map<std::string, std::string>>>{
           {{"--read-only"}, {}}, {{}, {{"LATEST_READ_ONLY", "1"}}}}) {
    std::vector<std::string> a = measure();
    a.insert(a.end(), args.begin(), args.end());
    auto e = env();
    e.insert(extra_env.begin(), extra_env.end());
    const Result r = run(a, e);
    EXPECT_EQ(r.code, 4) << r.err;
    EXPECT_NE(r.err.find("read-only"), std::string::npos) << r.err;
    EXPECT_EQ(state().at("set_calls"), "0");
    EXPECT_FALSE(saved_state_exists());
  }
  const Result info = run({"info", "--backend", "sim", "--clock-control", "nvml"}, env());  // read-only by nature
  EXPECT_EQ(info.code, 0) << info.err;
  EXPECT_EQ(state().at("set_calls"), "0");
}

TEST_F(FakeNvml, TheLockKeepsASecondRunOut) {
  const fs::path out = dir_ / "out", err = dir_ / "err";
  const pid_t first = spawn(measure(400), out, err, env());
  for (int i = 0; i < 400 && state()["locked_mhz"] == "0"; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  std::vector<std::string> second = measure();
  second.back() = (dir_ / "second").string();
  const Result r = run(second, env());
  EXPECT_EQ(r.code, 19) << r.err;
  EXPECT_NE(r.err.find("another latest run holds"), std::string::npos) << r.err;
  kill(first, SIGTERM);
  EXPECT_EQ(finish(first, out, err).code, 130);
  expect_prior_state_back();
}

TEST_F(FakeNvml, OtherProcessesOnTheGpuAreRefusedUnlessAllowed) {
  set({{"processes", "4242,4343"}});
  const Result r = run(measure(), env());
  EXPECT_EQ(r.code, 19) << r.err;
  EXPECT_NE(r.err.find("pid 4242, 4343"), std::string::npos) << r.err;
  EXPECT_EQ(state().at("set_calls"), "0");
  std::vector<std::string> allowed = measure(5);
  allowed.push_back("--allow-busy-gpu");
  EXPECT_EQ(run(allowed, env()).code, 0);
  expect_prior_state_back();
}

TEST_F(FakeNvml, ApplicationClockApi) {
  std::vector<std::string> a = measure(5);
  a.insert(a.end(), {"--clock-api", "application"});
  const Result r = run(a, env());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(state().at("set_log").find("SetApplicationsClocks(3201,990)"), std::string::npos);
  expect_prior_state_back();
}

TEST_F(FakeNvml, DeviceByUuidBusIdAndMissing) {
  for (const std::string d : {"GPU-fa4e0000-0000-4000-8000-000000000001", "00000000:18:00.0"}) {
    const Result r = run({"info", "--backend", "sim", "--clock-control", "nvml", "--device", d}, env());
    EXPECT_EQ(r.code, 0) << d << ": " << r.err;
  }
  std::vector<std::string> a = measure(5);
  a.insert(a.end(), {"--device", "3"});
  const Result missing = run(a, env());
  EXPECT_EQ(missing.code, 6) << missing.err;
}

TEST_F(FakeNvml, MissingLibraryIsExitNine) {
  auto e = env();
  e["LATEST_NVML_LIBRARY"] = (dir_ / "no-such-libnvidia-ml.so.1").string();
  const Result r = run(measure(), e);
  EXPECT_EQ(r.code, 9) << r.err;
  EXPECT_NE(r.err.find("NVML could not be loaded"), std::string::npos) << r.err;
}

}  // namespace
