#pragma once
// One run per result directory: a lock file created exclusively (O_EXCL,
// which NFS and Lustre honour where flock may not), holding the holder's
// host, pid and start time. On the same host a lock whose process is gone
// is stale and taken over; one from another host cannot be checked, so it
// is refused unless the caller breaks it.
#include <filesystem>
#include <string>

namespace latest {

struct LockHolder {
  std::string host;
  long pid = 0;
  std::string started_utc;
};

class OutputLock {
 public:
  static constexpr const char* kFileName = ".latest.lock";
  // Creates `dir` if needed (and removes it again on release if it stays
  // empty) and takes its lock. Throws Error(in_use) naming
  // the holder when another live run has it (or one on another host, unless
  // `break_lock`). `notice` receives a line when a stale or broken lock was
  // taken over.
  OutputLock(const std::filesystem::path& dir, bool break_lock, std::string* notice = nullptr);
  ~OutputLock();
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;

 private:
  std::filesystem::path file_;
  std::string token_;  // what we wrote: removed on release only if still ours
  // The outermost directory the lock created, removed on release if the run
  // left it empty (a refused run leaves no files).
  std::filesystem::path created_;
};

}  // namespace latest
