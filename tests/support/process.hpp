#pragma once
// Running the latest binary as a user would, for the CLI and NVML tests.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace latest::testing {
namespace fs = std::filesystem;

struct Result {
  int code = -1;
  std::string out, err;
};

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), {}};
}

// A fresh path under the temp directory, unique to this test process.
inline fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("latest-test-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  return dir;
}

// Starts `latest args...` with extra environment variables; output to files.
inline pid_t spawn(const std::vector<std::string>& args, const fs::path& out, const fs::path& err,
                   const std::map<std::string, std::string>& env = {}) {
  const pid_t pid = fork();
  if (pid == 0) {
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(o, 1);
    dup2(e, 2);
    std::string bin = LATEST_BINARY;
    std::vector<std::string> copy = args;
    std::vector<char*> argv{bin.data()};
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

inline Result finish(pid_t pid, const fs::path& out, const fs::path& err) {
  int status = 0;
  waitpid(pid, &status, 0);
  Result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

inline Result run(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {}) {
  const fs::path out = scratch("stdout"), err = scratch("stderr");
  return finish(spawn(args, out, err, env), out, err);
}

inline int csv_count(const fs::path& dir) {
  int n = 0;
  if (!fs::exists(dir)) return 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.path().extension() == ".csv";
  return n;
}

}  // namespace latest::testing
