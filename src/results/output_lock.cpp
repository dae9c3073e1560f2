#include "results/output_lock.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "results/result_store.hpp"

namespace latest {
namespace fs = std::filesystem;

namespace {

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// The holder as the file says, or nothing where it cannot be read (a lock
// being written this instant, or not ours).
bool read_holder(const fs::path& file, LockHolder& out) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  const auto doc = nlohmann::json::parse(text.str(), nullptr, false);
  if (!doc.is_object()) return false;
  out.host = doc.value("host", "");
  out.pid = doc.value("pid", 0L);
  out.started_utc = doc.value("started_utc", "");
  return !out.host.empty() && out.pid > 0;
}

bool process_alive(long pid) { return kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM; }

}  // namespace

OutputLock::OutputLock(const fs::path& dir, bool break_lock, std::string* notice) : file_(dir / kFileName) {
  std::error_code ec;
  for (fs::path p = fs::absolute(dir, ec); !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    created_ = p;
    if (p == p.parent_path()) break;
  }
  fs::create_directories(dir, ec);
  if (ec)
    throw Error(ErrorKind::bad_argument, fmt::format("cannot create {}: {}", dir.string(), ec.message()),
                "choose a writable --output directory");
  const std::string host = host_name_for_files();
  token_ = nlohmann::json{{"host", host}, {"pid", static_cast<long>(getpid())}, {"started_utc", now_utc()}}.dump() + "\n";
  for (int attempt = 0; attempt < 3; ++attempt) {
    const int fd = open(file_.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd >= 0) {
      const bool written = write(fd, token_.data(), token_.size()) == static_cast<ssize_t>(token_.size());
      const bool synced = fsync(fd) == 0;
      close(fd);
      if (!written || !synced) {
        unlink(file_.c_str());
        throw Error(ErrorKind::bad_argument, fmt::format("cannot write the lock file {}", file_.string()),
                    "choose a writable --output directory");
      }
      return;
    }
    if (errno != EEXIST)
      throw Error(ErrorKind::bad_argument, fmt::format("cannot create the lock file {}: {}", file_.string(), std::strerror(errno)),
                  "choose a writable --output directory");
    LockHolder h;
    if (!read_holder(file_, h)) {
      // Being written by its holder this instant: look again shortly.
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (!read_holder(file_, h)) {
        if (!break_lock)
          throw Error(ErrorKind::in_use, fmt::format("{} is locked by {}, which does not say who holds it", dir.string(), file_.string()),
                      "if no run uses the directory, rerun with --break-lock");
        h.host = "?";
      }
    }
    const std::string who = fmt::format("latest (pid {} on {}, since {})", h.pid, h.host, h.started_utc);
    if (h.host == host && h.pid != getpid() && process_alive(h.pid))
      throw Error(ErrorKind::in_use, fmt::format("{} is in use by {}", dir.string(), who),
                  "wait for that run to end, or choose another --output directory");
    if (h.host != host && !break_lock)
      throw Error(ErrorKind::in_use,
                  fmt::format("{} is locked by {}, on another host, where this run cannot tell whether it still runs",
                              dir.string(), who),
                  "if that run is gone, rerun with --break-lock");
    if (notice)
      *notice = h.host == host ? fmt::format("took over the stale lock of {}: that process is gone", who)
                               : fmt::format("broke the lock of {} (--break-lock)", who);
    unlink(file_.c_str());
  }
  throw Error(ErrorKind::in_use, fmt::format("{} keeps being locked by another run", dir.string()),
              "choose another --output directory");
}

OutputLock::~OutputLock() {
  // Only our own lock: one broken and retaken by another run stays theirs.
  std::ifstream in(file_);
  std::stringstream text;
  text << in.rdbuf();
  if (text.str() == token_) unlink(file_.c_str());
  if (created_.empty()) return;
  std::error_code ec;
  for (fs::path p = fs::absolute(file_.parent_path(), ec); !p.empty(); p = p.parent_path()) {
    if (!fs::is_empty(p, ec) || ec || !fs::remove(p, ec)) break;
    if (p == created_) break;
  }
}

}  // namespace latest
