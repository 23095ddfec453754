// The one retry policy of the coordinator's clients (the agents, coordctl): a call that failed
// because the coordinator could not answer (UNAVAILABLE, DEADLINE_EXCEEDED: a restart, a
// replica taking over) is made again with a fresh deadline, backing off from 50 ms to 1 s, until
// its budget is spent. Only for calls that are safe to repeat: the coordinator makes its writes
// idempotent by their request_id (RecordCommand, AppendMessage), their lease (Complete, Fail) or
// their content (InitTask, RegisterAgent).
#ifndef COMMON_GRPC_RETRY_H_
#define COMMON_GRPC_RETRY_H_

#include <functional>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/status.h"

namespace common {

struct RetryOptions {
  // Deadline of one call (default 10s).
  absl::Duration call_timeout = absl::Seconds(10);
  // How long to keep retrying (default 3 minutes: long enough for a coordinator restart).
  absl::Duration retry_for = absl::Minutes(3);
  // ABORTED is retried too: for calls whose ABORTED can only be a transaction that lost a race
  // (a lease's Complete or Fail), never a stale version the caller must read again.
  bool retry_aborted = false;
};

// True for the codes of a coordinator that could not answer: UNAVAILABLE, DEADLINE_EXCEEDED.
bool IsTransient(grpc::StatusCode code);

// Runs `call` with a fresh ClientContext (deadline set) until it returns something that is not
// transient (see RetryOptions), the budget is spent (the last failure) or `stop` returns true
// (CANCELLED).
[[nodiscard]] absl::Status CallWithRetry(
    const std::function<grpc::Status(grpc::ClientContext*)>& call, const RetryOptions& options,
    const std::function<bool()>& stop = nullptr);

}  // namespace common

#endif  // COMMON_GRPC_RETRY_H_
