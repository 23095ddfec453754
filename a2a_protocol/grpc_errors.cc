// A2A errors from a peer's gRPC status (see grpc_errors.h).
#include "a2a_protocol/grpc_errors.h"

#include <optional>
#include <string>

#include "a2a_protocol/errors.h"
#include "common/grpc_status.h"

namespace a2a_protocol {

absl::Status FromGrpcStatus(const grpc::Status& status) {
  const absl::Status received = common::FromGrpcStatus(status);
  if (received.ok()) return received;
  std::optional<std::string> reason = Reason(received);
  if (reason.has_value()) return Error(received.code(), *reason, received.message());
  return absl::Status(received.code(), received.message());
}

}  // namespace a2a_protocol
