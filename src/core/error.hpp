#pragma once
// Errors a user can act on. Each carries a domain kind; the CLI alone maps
// kinds to process exit codes (cli/exit_codes.hpp), so a library user gets
// the same distinctions without any process semantics.
#include <stdexcept>
#include <string>

namespace latest {

enum class ErrorKind {
  internal,
  bad_argument,
  not_supported,
  no_permission,
  not_found,
  driver_missing,
  gpu_lost,
  in_use,  // another run or process holds the GPU
  interrupted,
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message, std::string hint = {})
      : std::runtime_error(message), kind_(kind), hint_(std::move(hint)) {}
  ErrorKind kind() const { return kind_; }
  const std::string& hint() const { return hint_; }

 private:
  ErrorKind kind_;
  std::string hint_;
};

// Thrown when SIGINT/SIGTERM/SIGHUP asked the run to stop; unwinding restores
// the card on the main path.
class Interrupted : public Error {
 public:
  explicit Interrupted(const std::string& signal_name)
      : Error(ErrorKind::interrupted, "interrupted by " + signal_name) {}
};

}  // namespace latest
