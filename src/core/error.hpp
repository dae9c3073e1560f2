#pragma once
// Errors a user can act on. Each carries the process exit code that mirrors
// nvidia-smi's, so the CLI maps any failure to the right code in one place.
#include <stdexcept>
#include <string>

namespace latest {

enum class ExitCode : int {
  ok = 0,
  internal = 1,
  usage = 2,
  not_supported = 3,
  no_permission = 4,
  not_found = 6,
  driver_missing = 9,
  gpu_lost = 15,
  in_use = 19,  // another run or process holds the GPU (NVML_ERROR_IN_USE)
  interrupted = 130,
};

class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& message, std::string hint = {})
      : std::runtime_error(message), code_(code), hint_(std::move(hint)) {}
  ExitCode code() const { return code_; }
  const std::string& hint() const { return hint_; }

 private:
  ExitCode code_;
  std::string hint_;
};

// Thrown when SIGINT/SIGTERM/SIGHUP asked the run to stop; unwinding restores
// the card on the main path.
class Interrupted : public Error {
 public:
  explicit Interrupted(const std::string& signal_name)
      : Error(ExitCode::interrupted, "interrupted by " + signal_name) {}
};

}  // namespace latest
