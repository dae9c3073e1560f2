#pragma once
// The process exit codes, mirroring nvidia-smi's; the one place where an
// error's kind becomes a number.
#include "core/error.hpp"

namespace latest::cli {

enum class ExitCode : int {
  ok = 0,
  internal = 1,
  usage = 2,
  not_supported = 3,
  no_permission = 4,
  not_found = 6,
  driver_missing = 9,
  gpu_lost = 15,
  in_use = 19,
  interrupted = 130,
};

constexpr ExitCode exit_code_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::internal: return ExitCode::internal;
    case ErrorKind::bad_argument: return ExitCode::usage;
    case ErrorKind::not_supported: return ExitCode::not_supported;
    case ErrorKind::no_permission: return ExitCode::no_permission;
    case ErrorKind::not_found: return ExitCode::not_found;
    case ErrorKind::driver_missing: return ExitCode::driver_missing;
    case ErrorKind::gpu_lost: return ExitCode::gpu_lost;
    case ErrorKind::in_use: return ExitCode::in_use;
    case ErrorKind::interrupted: return ExitCode::interrupted;
  }
  return ExitCode::internal;
}

}  // namespace latest::cli
