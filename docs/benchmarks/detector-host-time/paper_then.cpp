// The paper's detector as the issue found it: compiled from 9088a1a^'s
// sources with its namespace renamed (-Dlatest=latest_then), so it links
// beside the tree's. Its types are laid out as the tree's (types.hpp and
// calibration.hpp are the same files), so the tree's window is passed through.
#include "core/detection.hpp"

extern "C" double paper_then(const void* window, long request_gpu_ns, const void* initial, const void* target,
                             double initial_tol_ns, double target_tol_ns) {
  latest::DetectionSettings d;
  d.target_tol_ns = target_tol_ns;
  d.initial_tol_ns = initial_tol_ns;
  return latest::detect_switch(*static_cast<const latest::WindowRecords*>(window), request_gpu_ns,
                               *static_cast<const latest::ClockCalibration*>(initial),
                               *static_cast<const latest::ClockCalibration*>(target), d)
      .switching_ms;
}
