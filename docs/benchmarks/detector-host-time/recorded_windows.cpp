// Host time per window on windows recorded on real H200s (emulated
// switching; tests/core/data/README.md gives the layout): the four
// detectors of detector_timing.hpp, alternated window by window, each the
// minimum over rounds, with the tolerances the engine gives them. run.sh
// builds it where WINDOWS names folders of windows. Arguments: the rounds,
// then the folders.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/recorded_window.hpp"
#include "detector_timing.hpp"

using namespace host_time;

namespace {
// Chained slices and paper windows, by the names the dumps gave them.
bool chained(const std::string& path) {
  return path.find("-c-") != std::string::npos || path.find("/dc/") != std::string::npos ||
         path.find("dumps-c/") != std::string::npos;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s ROUNDS DIR...\n", argv[0]);
    return 2;
  }
  const int rounds = std::atoi(argv[1]);
  Tally tallies[2];  // chained, paper
  for (int a = 2; a < argc; ++a)
    for (const auto& path : recorded_windows_in(argv[a])) {
      const RecordedWindow w = load_recorded_window(path);
      if (!w.complete) {
        std::fprintf(stderr, "%s: incomplete, skipped\n", path.c_str());
        continue;
      }
      const WindowTimes t = time_detectors(w.records, w.request_gpu_ns, w.initial, w.target,
                                           recorded_tolerance_ns(w.initial), recorded_tolerance_ns(w.target), rounds);
      const bool is_chained = chained(path.string());
      tallies[is_chained ? 0 : 1].add(t);
      std::size_t iterations = 0;
      for (const auto& sm : w.records.sms) iterations += sm.duration_ns.size();
      std::printf("%s (%s, %zu SMs x %zu iterations, pooled %s): pooled %.3f ms (base %.3f), paper %.3f, paper "
                  "then %.3f; pooled / paper then %.2f%s\n",
                  path.c_str(), is_chained ? "chained" : "paper", w.records.sms.size(),
                  iterations / std::max<std::size_t>(1, w.records.sms.size()), to_string(t.pooled.outcome),
                  t.ms[kPooled], t.ms[kBase], t.ms[kPaper], t.ms[kPaperThen], t.ms[kPooled] / t.ms[kPaperThen],
                  t.same() ? "" : "; the base's answer differs");
    }
  tallies[0].print("chained");
  tallies[1].print("paper");
}
