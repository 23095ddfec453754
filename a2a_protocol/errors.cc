// A2A errors on the generic ErrorInfo detail of common/grpc_status.h.
#include "a2a_protocol/errors.h"

#include "a2a_protocol/version.h"
#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"

namespace a2a_protocol {

absl::Status Error(absl::StatusCode code, absl::string_view reason, absl::string_view message) {
  return common::WithErrorInfo(absl::Status(code, message), reason, kErrorDomain);
}

std::optional<std::string> Reason(const absl::Status& status) {
  return common::ErrorInfoReason(status, kErrorDomain);
}

absl::Status TaskNotFound(absl::string_view task_id) {
  return Error(absl::StatusCode::kNotFound, kTaskNotFound,
               absl::StrCat("task ", task_id, " not found"));
}

absl::Status TaskNotCancelable(absl::string_view message) {
  return Error(absl::StatusCode::kFailedPrecondition, kTaskNotCancelable, message);
}

absl::Status PushNotificationNotSupported(absl::string_view message) {
  return Error(absl::StatusCode::kFailedPrecondition, kPushNotificationNotSupported, message);
}

absl::Status UnsupportedOperation(absl::string_view message) {
  return Error(absl::StatusCode::kFailedPrecondition, kUnsupportedOperation, message);
}

absl::Status ContentTypeNotSupported(absl::string_view message) {
  return Error(absl::StatusCode::kInvalidArgument, kContentTypeNotSupported, message);
}

absl::Status InvalidAgentResponse(absl::string_view message) {
  return Error(absl::StatusCode::kInternal, kInvalidAgentResponse, message);
}

absl::Status ExtendedAgentCardNotConfigured(absl::string_view message) {
  return Error(absl::StatusCode::kFailedPrecondition, kExtendedAgentCardNotConfigured, message);
}

absl::Status VersionNotSupported(absl::string_view version, absl::string_view speaker) {
  return Error(absl::StatusCode::kFailedPrecondition, kVersionNotSupported,
               absl::StrCat("A2A version \"", version, "\" is not supported; this ", speaker,
                            " speaks ", kVersion));
}

}  // namespace a2a_protocol
