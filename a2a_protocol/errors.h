// A2A protocol errors as absl::Status values, so that domain code (the stores) builds them
// without gRPC. The A2A error name travels as a google.rpc.ErrorInfo detail with domain
// "a2a-protocol.org", as the specification's gRPC binding requires; common::ToGrpcStatus puts it
// on the wire unchanged and common::FromGrpcStatus reads it back.
#ifndef A2A_PROTOCOL_ERRORS_H_
#define A2A_PROTOCOL_ERRORS_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace a2a_protocol {

// The ErrorInfo domain of every A2A error.
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

// An A2A error: `code` and `message` with `reason` as its ErrorInfo detail.
absl::Status Error(absl::StatusCode code, absl::string_view reason, absl::string_view message);

// The A2A reason carried by `status`; nullopt when it carries none (or another domain's).
std::optional<std::string> Reason(const absl::Status& status);

// NOT_FOUND "task <id> not found".
absl::Status TaskNotFound(absl::string_view task_id);
// FAILED_PRECONDITION.
absl::Status TaskNotCancelable(absl::string_view message);
// FAILED_PRECONDITION.
absl::Status PushNotificationNotSupported(absl::string_view message);
// FAILED_PRECONDITION.
absl::Status UnsupportedOperation(absl::string_view message);
// INVALID_ARGUMENT.
absl::Status ContentTypeNotSupported(absl::string_view message);
// INTERNAL.
absl::Status InvalidAgentResponse(absl::string_view message);
// FAILED_PRECONDITION.
absl::Status ExtendedAgentCardNotConfigured(absl::string_view message);
// FAILED_PRECONDITION "A2A version "<version>" is not supported; this <speaker> speaks 1.0".
// `speaker` names the end that refuses ("server" for the coordinator, "agent" for an agent).
absl::Status VersionNotSupported(absl::string_view version, absl::string_view speaker);

}  // namespace a2a_protocol

#endif  // A2A_PROTOCOL_ERRORS_H_
