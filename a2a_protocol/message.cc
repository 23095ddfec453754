// A2A Message checks (see message.h).
#include "a2a_protocol/message.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "common/validation.h"

namespace a2a_protocol {
namespace {

namespace a2apb = ::lf::a2a::v1;

absl::Status ValidatePart(const a2apb::Part& part, int index) {
  if (part.content_case() == a2apb::Part::CONTENT_NOT_SET) {
    return absl::InvalidArgumentError(
        absl::StrCat("message.parts[", index, "] has no content (text, raw, url or data)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateMessage(const a2apb::Message& message, size_t max_bytes,
                             absl::string_view flag) {
  RETURN_IF_ERROR(common::ValidateId("message.message_id", message.message_id()));
  RETURN_IF_ERROR(common::ValidateOptionalId("message.task_id", message.task_id()));
  RETURN_IF_ERROR(common::ValidateOptionalId("message.context_id", message.context_id()));
  if (message.role() != a2apb::ROLE_USER && message.role() != a2apb::ROLE_AGENT) {
    return absl::InvalidArgumentError("message.role must be ROLE_USER or ROLE_AGENT");
  }
  if (message.parts().empty()) {
    return absl::InvalidArgumentError("message.parts is empty: a message needs at least one part");
  }
  for (int i = 0; i < message.parts_size(); ++i) RETURN_IF_ERROR(ValidatePart(message.parts(i), i));
  if (message.ByteSizeLong() > max_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("message is %d bytes; the limit is %d bytes%s", message.ByteSizeLong(),
                        max_bytes, flag.empty() ? "" : absl::StrCat(" (--", flag, ")")));
  }
  return absl::OkStatus();
}

}  // namespace a2a_protocol
