#pragma once
// One request in a chained stream as a state machine (docs/architecture.md,
// "A request in a stream"). After the request the schedule polls the
// stream; once the records look settled at the target (or the capture or
// the records budget runs out) both detectors read them, and the
// detection's outcome is the event:
//
//   from        event              to          what the schedule does
//   collecting  refused            collecting  waits for another confirmation length of records
//   collecting  accepted           settling    waits until the records after the arrival last as long as the switch
//   collecting  accepted_settled   done        keeps the measurement
//   settling    refused            settling    waits for another confirmation length of records
//   settling    accepted           done        keeps the measurement
//   settling    accepted_settled   done        keeps the measurement
//   (any)       not_held           done        the initial clock was not held: a failed try
//   (any)       ran_out            done        not captured (or refused as the detector said): a failed try
#include "core/detection.hpp"
#include "core/types.hpp"

namespace latest {

enum class RequestState { collecting, settling, done };
enum class RequestEvent { refused, accepted, accepted_settled, not_held, ran_out };
const char* to_string(RequestState state);
const char* to_string(RequestEvent event);

// The event a detection makes: its outcome, whether the capture or the
// records budget ran out, and whether the records after the arrival already
// last `settle_factor` times the switch.
RequestEvent request_event(MeasurementOutcome outcome, bool ran_out, bool settle_passed);
// The state after `event`.
RequestState next_state(RequestState from, RequestEvent event);

struct RequestTransition {
  ClockPair pair;
  RequestState from = RequestState::collecting;
  RequestEvent event = RequestEvent::refused;
  RequestState to = RequestState::collecting;
};

}  // namespace latest
