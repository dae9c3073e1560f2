// A chained request's state machine (core/schedules/stream_request.hpp):
// its table, and every transition taken on the simulator.
#include "core/schedules/stream_request.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

#include "backends/sim/sim_backend.hpp"
#include "core/engine.hpp"

namespace latest {
namespace {

using S = RequestState;
using E = RequestEvent;

TEST(StreamRequest, TransitionsAreTheTable) {
  const std::map<std::pair<S, E>, S> table = {
      {{S::collecting, E::refused}, S::collecting},       {{S::collecting, E::accepted}, S::settling},
      {{S::collecting, E::accepted_settled}, S::done},    {{S::collecting, E::not_held}, S::done},
      {{S::collecting, E::ran_out}, S::done},             {{S::settling, E::refused}, S::settling},
      {{S::settling, E::accepted}, S::done},              {{S::settling, E::accepted_settled}, S::done},
      {{S::settling, E::not_held}, S::done},              {{S::settling, E::ran_out}, S::done},
  };
  for (const auto& [from_event, to] : table)
    EXPECT_EQ(next_state(from_event.first, from_event.second), to)
        << to_string(from_event.first) << " + " << to_string(from_event.second);
  for (E e : {E::refused, E::accepted, E::accepted_settled, E::not_held, E::ran_out})
    EXPECT_EQ(next_state(S::done, e), S::done);
}

TEST(StreamRequest, EventsFollowTheOutcome) {
  using O = MeasurementOutcome;
  EXPECT_EQ(request_event(O::initial_not_held, true, true), E::not_held);
  EXPECT_EQ(request_event(O::accepted, true, false), E::accepted) << "an accepted request is no capture run out";
  EXPECT_EQ(request_event(O::accepted, false, true), E::accepted_settled);
  EXPECT_EQ(request_event(O::not_confirmed, true, true), E::ran_out);
  EXPECT_EQ(request_event(O::not_captured, false, true), E::refused);
  EXPECT_EQ(request_event(O::not_confirmed, false, false), E::refused);
}

struct Transitions : RunObserver {
  std::map<std::tuple<S, E, S>, int> seen;
  void request_transition(const RequestTransition& t) override { ++seen[{t.from, t.event, t.to}]; }
};

// Runs the chained schedule on the simulator and returns the transitions
// its requests took.
std::map<std::tuple<S, E, S>, int> transitions_of(const EngineSettings& s, std::uint64_t seed,
                                                  sim::Injection injection = {}) {
  auto gpu = std::make_shared<sim::SimGpu>(sim::profile_named("h200"), seed, injection);
  sim::SimWorkload workload(gpu);
  sim::SimClockControl clocks(gpu, 0);
  Transitions seen;
  Engine engine(workload, clocks, s, seen);
  engine.run();
  return seen.seen;
}

EngineSettings pairs_of(std::vector<Mhz> clocks, int measurements) {
  EngineSettings s;
  s.clocks = std::move(clocks);
  s.pairs = ordered_pairs(s.clocks);
  s.min_measurements = s.max_measurements = measurements;
  s.plan.calibration_iterations = 8192;
  return s;
}

// The transitions out of `collecting`, and the usual one out of `settling`,
// are taken on the simulator: plain switches (collecting -> settling ->
// done, or done at once where the records already last), a common timer
// wander that the detector refuses at times (refused, and initial clock not
// held), and a capture far shorter than the switch (ran out, then a longer
// capture). The rarer ones out of `settling` (a refusal or a later arrival
// on the second look) are held by the table above.
TEST(StreamRequest, TransitionsAreTakenOnTheSimulator) {
  std::map<std::tuple<S, E, S>, int> all;
  const auto add = [&](const std::map<std::tuple<S, E, S>, int>& more) {
    for (const auto& [t, n] : more) all[t] += n;
  };
  add(transitions_of(pairs_of({1980, 990}, 5), 3));
  sim::Injection wander;
  wander.boundary_wander_ns = 100;  // a common wander of every SM's timer that the detector refuses at times
  add(transitions_of(pairs_of({1980, 1890}, 5), 5, wander));
  EngineSettings short_capture = pairs_of({1980, 990}, 5);
  short_capture.plan.capture_ms = 1;  // switches take about 5 ms
  short_capture.plan.max_capture_ms = 100;
  add(transitions_of(short_capture, 5));
  for (const auto& [t, n] : all)
    std::printf("%-10s + %-16s -> %-10s %d\n", to_string(std::get<0>(t)), to_string(std::get<1>(t)),
                to_string(std::get<2>(t)), n);
  for (const auto& expected : {std::tuple{S::collecting, E::accepted, S::settling},
                               std::tuple{S::settling, E::accepted_settled, S::done},
                               std::tuple{S::collecting, E::accepted_settled, S::done},
                               std::tuple{S::collecting, E::refused, S::collecting},
                               std::tuple{S::collecting, E::not_held, S::done},
                               std::tuple{S::collecting, E::ran_out, S::done}})
    EXPECT_GT(all[expected], 0) << to_string(std::get<0>(expected)) << " + " << to_string(std::get<1>(expected));
}

}  // namespace
}  // namespace latest
