#include "core/schedules/stream_request.hpp"

namespace latest {

const char* to_string(RequestState state) {
  switch (state) {
    case RequestState::collecting: return "collecting";
    case RequestState::settling: return "settling";
    case RequestState::done: return "done";
  }
  return "?";
}

const char* to_string(RequestEvent event) {
  switch (event) {
    case RequestEvent::refused: return "refused";
    case RequestEvent::accepted: return "accepted";
    case RequestEvent::accepted_settled: return "accepted_settled";
    case RequestEvent::not_held: return "not_held";
    case RequestEvent::ran_out: return "ran_out";
  }
  return "?";
}

RequestEvent request_event(MeasurementOutcome outcome, bool ran_out, bool settle_passed) {
  if (outcome == MeasurementOutcome::initial_not_held) return RequestEvent::not_held;
  if (outcome == MeasurementOutcome::accepted) return settle_passed ? RequestEvent::accepted_settled : RequestEvent::accepted;
  return ran_out ? RequestEvent::ran_out : RequestEvent::refused;
}

RequestState next_state(RequestState from, RequestEvent event) {
  if (from == RequestState::done) return RequestState::done;
  switch (event) {
    case RequestEvent::not_held:
    case RequestEvent::ran_out:
    case RequestEvent::accepted_settled: return RequestState::done;
    case RequestEvent::accepted: return from == RequestState::settling ? RequestState::done : RequestState::settling;
    case RequestEvent::refused: return from;
  }
  return from;
}

}  // namespace latest
