#include "cli/measure_command.hpp"

#include "cli/arguments.hpp"

#include <gtest/gtest.h>

namespace latest::cli {
namespace {

// The default detector is the pooled one on a real GPU as on the simulator;
// the paper's stays a choice.
TEST(MeasureCommand, AutoDetectorIsPooledOnRealAndSimulatedGpus) {
  MeasureOptions o;
  for (bool simulated : {true, false}) {
    EXPECT_EQ(engine_settings(o, {1980, 990}, {{1980, 990}}, simulated).detector, Detector::pooled) << simulated;
  }
  o.detector = parse_detector("paper");
  for (bool simulated : {true, false}) {
    EXPECT_EQ(engine_settings(o, {1980, 990}, {{1980, 990}}, simulated).detector, Detector::paper) << simulated;
  }
}

}  // namespace
}  // namespace latest::cli
