// A2A errors from a peer's gRPC status (see grpc_errors.h).
#include "a2a_protocol/grpc_errors.h"

#include <optional>
#include <string>

#include "a2a_protocol/errors.h"
#include "absl/strings/string_view.h"
#include "common/grpc_status.h"

namespace a2a_protocol {

absl::Status FromGrpcStatus(const grpc::Status& status) {
  const absl::Status received = common::FromGrpcStatus(status);
  if (received.ok()) return received;
  std::optional<std::string> reason = Reason(received);
  if (reason.has_value()) return Error(received.code(), *reason, received.message());
  return absl::Status(received.code(), received.message());
}

namespace v03 {

absl::Status FromGrpcStatus(const grpc::Status& status) {
  absl::Status received = a2a_protocol::FromGrpcStatus(status);
  if (received.ok() || Reason(received).has_value()) return received;
  // 0.3's error names and the reasons 1.0 gave them.
  static constexpr struct {
    absl::string_view name;
    const char* reason;
  } kNames[] = {
      {"TaskNotFoundError", kTaskNotFound},
      {"TaskNotCancelableError", kTaskNotCancelable},
      {"PushNotificationNotSupportedError", kPushNotificationNotSupported},
      {"UnsupportedOperationError", kUnsupportedOperation},
      {"ContentTypeNotSupportedError", kContentTypeNotSupported},
      {"InvalidAgentResponseError", kInvalidAgentResponse},
      {"AuthenticatedExtendedCardNotConfiguredError", kExtendedAgentCardNotConfigured},
  };
  const absl::string_view name =
      absl::string_view(received.message()).substr(0, received.message().find(':'));
  for (const auto& known : kNames) {
    if (name == known.name) return Error(received.code(), known.reason, received.message());
  }
  return received;
}

}  // namespace v03

}  // namespace a2a_protocol
