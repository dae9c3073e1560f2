// One run per result directory: the lock file refuses a live holder, takes
// over a dead one on this host, refuses another host's unless broken, and
// is gone after the run.
#include "results/output_lock.hpp"

#include <unistd.h>

#include <fstream>
#include <optional>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "results/result_store.hpp"

namespace latest {
namespace {
namespace fs = std::filesystem;

fs::path fresh(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("latest-lock-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  return dir;
}

void write_holder(const fs::path& dir, const std::string& host, long pid) {
  fs::create_directories(dir);
  std::ofstream(dir / OutputLock::kFileName)
      << nlohmann::json{{"host", host}, {"pid", pid}, {"started_utc", "2026-11-30T12:00:00Z"}}.dump();
}

ErrorKind refusal(const fs::path& dir, bool break_lock, std::string* message = nullptr) {
  try {
    OutputLock lock(dir, break_lock);
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.kind();
  }
  return ErrorKind::internal;  // not refused
}

TEST(OutputLock, IsHeldForTheRunAndGoneAfter) {
  const fs::path dir = fresh("held");
  {
    OutputLock lock(dir, false);
    ASSERT_TRUE(fs::exists(dir / OutputLock::kFileName));
    const auto holder = nlohmann::json::parse(std::ifstream(dir / OutputLock::kFileName));
    EXPECT_EQ(holder["pid"], getpid());
    EXPECT_EQ(holder["host"], host_name_for_files());
  }
  EXPECT_FALSE(fs::exists(dir)) << "a directory the lock made and nothing filled is gone (a refused run leaves no files)";
  fs::create_directories(dir / "kept");
  { OutputLock lock(dir, false); }
  EXPECT_TRUE(fs::exists(dir / "kept")) << "one that holds anything stays";
  fs::remove_all(dir);
}

TEST(OutputLock, ALiveHolderOnThisHostIsRefusedByName) {
  const fs::path dir = fresh("live");
  write_holder(dir, host_name_for_files(), getppid());  // the test runner's parent: alive
  std::string message;
  EXPECT_EQ(refusal(dir, false, &message), ErrorKind::in_use);
  EXPECT_NE(message.find("in use by latest (pid " + std::to_string(getppid())), std::string::npos) << message;
  EXPECT_EQ(refusal(dir, true), ErrorKind::in_use) << "--break-lock does not take a live run's lock on this host";
  fs::remove_all(dir);
}

TEST(OutputLock, AStaleHolderOnThisHostIsTakenOverAndSaid) {
  const fs::path dir = fresh("stale");
  // A pid above the kernel's limit never runs.
  write_holder(dir, host_name_for_files(), 4194304 + 17);
  std::string notice;
  {
    OutputLock lock(dir, false, &notice);
    EXPECT_NE(notice.find("took over the stale lock"), std::string::npos) << notice;
    EXPECT_EQ(nlohmann::json::parse(std::ifstream(dir / OutputLock::kFileName))["pid"], getpid());
  }
  fs::remove_all(dir);
}

TEST(OutputLock, AnotherHostsLockNeedsBreaking) {
  const fs::path dir = fresh("remote");
  write_holder(dir, "elsewhere-node-7", 1234);
  std::string message;
  EXPECT_EQ(refusal(dir, false, &message), ErrorKind::in_use);
  EXPECT_NE(message.find("pid 1234 on elsewhere-node-7"), std::string::npos) << message;
  EXPECT_NE(message.find("another host"), std::string::npos) << message;
  std::string notice;
  {
    OutputLock lock(dir, true, &notice);
    EXPECT_NE(notice.find("broke the lock"), std::string::npos) << notice;
  }
  EXPECT_FALSE(fs::exists(dir / OutputLock::kFileName));
  fs::remove_all(dir);
}

TEST(OutputLock, ALockRetakenByAnotherRunStaysTheirs) {
  const fs::path dir = fresh("retaken");
  {
    OutputLock lock(dir, false);
    write_holder(dir, "elsewhere-node-7", 99);  // broken and retaken while we ran
  }
  EXPECT_TRUE(fs::exists(dir / OutputLock::kFileName)) << "release removes only our own lock";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace latest
