#include "common/grpc_retry.h"

#include <algorithm>
#include <chrono>

#include "absl/time/clock.h"
#include "common/grpc_status.h"

namespace common {

bool IsTransient(grpc::StatusCode code) {
  return code == grpc::StatusCode::UNAVAILABLE || code == grpc::StatusCode::DEADLINE_EXCEEDED;
}

absl::Status CallWithRetry(const std::function<grpc::Status(grpc::ClientContext*)>& call,
                           const RetryOptions& options, const std::function<bool()>& stop) {
  const absl::Time give_up = absl::Now() + options.retry_for;
  absl::Duration backoff = absl::Milliseconds(50);
  while (true) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         absl::ToChronoNanoseconds(options.call_timeout));
    const grpc::Status status = call(&context);
    const bool again = IsTransient(status.error_code()) ||
                       (options.retry_aborted && status.error_code() == grpc::StatusCode::ABORTED);
    if (!again || absl::Now() + backoff > give_up) return FromGrpcStatus(status);
    if (stop != nullptr && stop()) return absl::CancelledError("stopped while retrying");
    absl::SleepFor(backoff);
    backoff = std::min(backoff * 2, absl::Seconds(1));
  }
}

}  // namespace common
