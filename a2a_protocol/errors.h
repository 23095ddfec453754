// A2A protocol errors as absl::Status values. The A2A error name travels as a status payload, so
// domain code stays free of gRPC; ToGrpcStatus turns it into the google.rpc.ErrorInfo detail
// (domain "a2a-protocol.org") that the specification's gRPC binding requires.
#ifndef A2A_PROTOCOL_ERRORS_H_
#define A2A_PROTOCOL_ERRORS_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"

namespace coordinator::a2a {

// Payload key of the A2A reason (never sent as such: ToGrpcStatus reads it).
inline constexpr char kReasonPayload[] = "a2a-protocol.org/reason";
inline constexpr char kErrorDomain[] = "a2a-protocol.org";

// Reasons, as the gRPC binding spells them (the error name in UPPER_SNAKE_CASE, no "Error").
inline constexpr char kTaskNotFound[] = "TASK_NOT_FOUND";
inline constexpr char kTaskNotCancelable[] = "TASK_NOT_CANCELABLE";
inline constexpr char kPushNotificationNotSupported[] = "PUSH_NOTIFICATION_NOT_SUPPORTED";
inline constexpr char kUnsupportedOperation[] = "UNSUPPORTED_OPERATION";
inline constexpr char kContentTypeNotSupported[] = "CONTENT_TYPE_NOT_SUPPORTED";
inline constexpr char kInvalidAgentResponse[] = "INVALID_AGENT_RESPONSE";
inline constexpr char kExtendedAgentCardNotConfigured[] = "EXTENDED_AGENT_CARD_NOT_CONFIGURED";
inline constexpr char kExtensionSupportRequired[] = "EXTENSION_SUPPORT_REQUIRED";
inline constexpr char kVersionNotSupported[] = "VERSION_NOT_SUPPORTED";

inline absl::Status Error(absl::StatusCode code, absl::string_view reason,
                          absl::string_view message) {
  absl::Status status(code, message);
  status.SetPayload(kReasonPayload, absl::Cord(reason));
  return status;
}

// The A2A reason carried by `status`, if any.
inline std::optional<std::string> Reason(const absl::Status& status) {
  absl::optional<absl::Cord> payload = status.GetPayload(kReasonPayload);
  if (!payload.has_value()) return std::nullopt;
  return std::string(*payload);
}

inline absl::Status TaskNotFound(absl::string_view task_id) {
  return Error(absl::StatusCode::kNotFound, kTaskNotFound,
               absl::StrCat("task ", task_id, " not found"));
}
inline absl::Status TaskNotCancelable(absl::string_view message) {
  return Error(absl::StatusCode::kFailedPrecondition, kTaskNotCancelable, message);
}
inline absl::Status UnsupportedOperation(absl::string_view message) {
  return Error(absl::StatusCode::kFailedPrecondition, kUnsupportedOperation, message);
}
inline absl::Status ContentTypeNotSupported(absl::string_view message) {
  return Error(absl::StatusCode::kInvalidArgument, kContentTypeNotSupported, message);
}
inline absl::Status InvalidAgentResponse(absl::string_view message) {
  return Error(absl::StatusCode::kInternal, kInvalidAgentResponse, message);
}
inline absl::Status ExtendedAgentCardNotConfigured(absl::string_view message) {
  return Error(absl::StatusCode::kFailedPrecondition, kExtendedAgentCardNotConfigured, message);
}
inline absl::Status VersionNotSupported(absl::string_view version) {
  return Error(
      absl::StatusCode::kFailedPrecondition, kVersionNotSupported,
      absl::StrCat("A2A version \"", version, "\" is not supported; this server speaks 1.0"));
}

}  // namespace coordinator::a2a

#endif  // A2A_PROTOCOL_ERRORS_H_
