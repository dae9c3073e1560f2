// Host time per default window (BM_DetectSwitch's: 132 SMs x 32,768
// iterations, 1980 -> 990 MHz), alternated in one process, minimum over
// rounds of three calls each: the pooled detector of the tree, the pooled
// detector of a base commit (linked as detect_switch_pooled_base by run.sh),
// the paper's detector of the tree, and the paper's as it was on the day
// issue 9 was filed (9088a1a^, before its own speedups; linked through
// paper_then.cpp as paper_then). Argument: the rounds (150).
#include <cstdio>
#include <cstdlib>

#include "detection_case.hpp"
#include "detector_timing.hpp"

using namespace host_time;

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 150;
  const DetectionCase c = detection_case();
  const WindowTimes t = time_detectors(c.window, c.request_gpu, c.init, c.target, 10, 20, rounds, 3);
  std::printf("pooled %.3f ms (base %.3f)  paper %.3f ms (then %.3f) | pooled / paper then %.2f (base %.2f)  "
              "pooled / paper %.2f | same answer as base: %s\n",
              t.ms[kPooled], t.ms[kBase], t.ms[kPaper], t.ms[kPaperThen], t.ms[kPooled] / t.ms[kPaperThen],
              t.ms[kBase] / t.ms[kPaperThen], t.ms[kPooled] / t.ms[kPaper], t.same() ? "yes" : "NO");
}
