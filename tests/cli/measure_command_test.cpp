#include "cli/measure_command.hpp"

#include <gtest/gtest.h>

namespace latest::cli {
namespace {

// The default detector is the pooled one on a real GPU as on the simulator
// (docs/hardware/h200.md, rounds 13-14); the paper's stays a choice.
TEST(MeasureCommand, AutoDetectorIsPooledOnRealAndSimulatedGpus) {
  MeasureOptions o;
  for (bool simulated : {true, false}) {
    EXPECT_EQ(engine_settings(o, {1980, 990}, {{1980, 990}}, simulated).detector, Detector::pooled) << simulated;
  }
  o.detector = "paper";
  for (bool simulated : {true, false}) {
    EXPECT_EQ(engine_settings(o, {1980, 990}, {{1980, 990}}, simulated).detector, Detector::paper) << simulated;
  }
}

}  // namespace
}  // namespace latest::cli
