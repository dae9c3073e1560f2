// The run guard in-process, through a mock device: lock, busy check, saved
// state, restore on every path, and reset after a crash. The fake-NVML tests
// (tests/backends/nvml) drive the same guard through the real NVML code.
#include "guard/run_guard.hpp"

#include <unistd.h>

#include <fstream>
#include <optional>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace latest {
namespace {
namespace fs = std::filesystem;

class MockDevice final : public ClockControl, public ClockState {
 public:
  DeviceIdentity identity() override { return {"Mock GPU", "GPU-mock-0001", "00000000:01:00.0", 0, 4}; }
  std::vector<Mhz> supported_clocks() override { return {900, 1500}; }
  void set_clock(Mhz mhz) override {
    if (refuse_sets) throw Error(ErrorKind::no_permission, "refused");
    clock = mhz;
  }
  Telemetry telemetry() override { return {}; }
  std::vector<unsigned> other_processes() override { return others; }
  SavedClocks save() override { return current; }
  void put_back(const SavedClocks& saved) override { put_backs.push_back(saved); }

  SavedClocks current{1410, 3201};
  std::vector<unsigned> others;
  bool refuse_sets = false;
  std::optional<Mhz> clock;
  std::vector<SavedClocks> put_backs;
};

class Guard : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("latest-guard-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "-" +
            std::to_string(getpid()));
    fs::remove_all(dir_);
    device_ = std::make_shared<MockDevice>();
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::shared_ptr<RunGuard> guard(bool allow_busy = false) {
    return std::make_shared<RunGuard>(device_, GuardSettings{dir_, allow_busy, "locked"});
  }
  nlohmann::json state(const RunGuard& g) const {
    std::ifstream in(g.state_file());
    return nlohmann::json::parse(in);
  }

  fs::path dir_;
  std::shared_ptr<MockDevice> device_;
};

TEST_F(Guard, SavesThePriorStateBeforeTheFirstChangeAndPutsItBack) {
  auto g = guard();
  GuardedClockControl clocks(device_, g);
  clocks.set_clock(900);
  ASSERT_TRUE(fs::exists(g->state_file()));
  const auto saved = state(*g);
  EXPECT_EQ(saved["uuid"], "GPU-mock-0001");
  EXPECT_EQ(saved["applications_clocks"]["graphics_mhz"], 1410);
  EXPECT_EQ(saved["applications_clocks"]["memory_mhz"], 3201);
  EXPECT_EQ(saved["pid"], getpid());
  clocks.set_clock(1500);
  device_->current = {900, 3201};  // what the run left: not what is put back
  g->restore();
  ASSERT_EQ(device_->put_backs.size(), 1u);
  EXPECT_EQ(device_->put_backs[0].application_graphics_mhz, 1410);
  EXPECT_EQ(device_->put_backs[0].application_memory_mhz, 3201);
  EXPECT_FALSE(fs::exists(g->state_file()));
  g->restore();  // idempotent
  EXPECT_EQ(device_->put_backs.size(), 1u);
}

TEST_F(Guard, ASecondRunOnTheSameGpuIsRefused) {
  auto first = guard();
  first->take_over();
  auto second = guard();
  try {
    second->take_over();
    FAIL() << "the lock must refuse a second run";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::in_use);
    EXPECT_NE(std::string(e.what()).find("another latest run holds GPU 0"), std::string::npos) << e.what();
  }
  first->give_up();
  EXPECT_NO_THROW(second->take_over());
}

TEST_F(Guard, ABusyGpuIsRefusedUnlessAllowed) {
  device_->others = {4242, 4343};
  auto g = guard();
  try {
    g->take_over();
    FAIL() << "a busy GPU must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::in_use);
    EXPECT_NE(std::string(e.what()).find("pid 4242, 4343"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(g->state_file()));
  EXPECT_NO_THROW(guard(true)->take_over()) << "allowed, and the refused run released the lock";
}

TEST_F(Guard, AFirstChangeThatFailsLeavesNothingBehind) {
  device_->refuse_sets = true;
  auto g = guard();
  GuardedClockControl clocks(device_, g);
  EXPECT_THROW(clocks.set_clock(900), Error);
  EXPECT_FALSE(fs::exists(g->state_file()));
  g->restore();
  EXPECT_TRUE(device_->put_backs.empty()) << "nothing changed, nothing to put back";
  EXPECT_NO_THROW(guard()->take_over()) << "the lock was released";
}

TEST_F(Guard, AStateFileLeftByACrashIsTheTruePriorState) {
  {
    auto crashed = guard();
    crashed->take_over();
    crashed->note_change();
    // The process dies here: simulated by keeping the file and dropping the lock.
    fs::copy_file(crashed->state_file(), dir_ / "kept.json");
  }
  fs::rename(dir_ / "kept.json", guard()->state_file());
  device_->current = {900, 3201};  // the crashed run's clocks
  device_->put_backs.clear();
  auto g = guard();
  GuardedClockControl clocks(device_, g);
  clocks.set_clock(1500);
  EXPECT_EQ(state(*g)["applications_clocks"]["graphics_mhz"], 1410) << "the older file is kept";
  g->restore();
  ASSERT_EQ(device_->put_backs.size(), 1u);
  EXPECT_EQ(device_->put_backs[0].application_graphics_mhz, 1410);
}

TEST_F(Guard, ResetUsesTheStateFileOrTheDefaults) {
  auto g = guard();
  EXPECT_EQ(g->reset_from_state_file(), "locked clocks reset to the defaults; application clocks reset to the defaults");
  ASSERT_EQ(device_->put_backs.size(), 1u);
  EXPECT_FALSE(device_->put_backs[0].application_graphics_mhz);

  g->take_over();
  g->note_change();
  g->give_up();  // keeps nothing: the file goes too
  auto crashed = guard();
  crashed->take_over();
  crashed->note_change();
  const fs::path file = crashed->state_file();
  fs::copy_file(file, dir_ / "kept.json");
  crashed.reset();  // its last-resort restore removes the file
  fs::rename(dir_ / "kept.json", file);
  EXPECT_EQ(guard()->reset_from_state_file(),
            "locked clocks reset to the defaults; application clocks restored to 1410 MHz (memory 3201 MHz)");
  EXPECT_FALSE(fs::exists(file));
}

TEST_F(Guard, DestroyingAGuardWithChangesPutsThemBack) {
  {
    auto g = guard();
    GuardedClockControl clocks(device_, g);
    clocks.set_clock(900);
  }
  EXPECT_EQ(device_->put_backs.size(), 1u);
}

}  // namespace
}  // namespace latest
