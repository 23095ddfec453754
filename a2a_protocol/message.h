// Checks of an A2A Message that a client sends: what the protocol requires of it (an id, a role,
// at least one part with content) and what our storage needs (bounded ids, a size limit).
#ifndef A2A_PROTOCOL_MESSAGE_H_
#define A2A_PROTOCOL_MESSAGE_H_

#include <cstddef>

#include "a2a/v1/a2a.pb.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace a2a_protocol {

// OK when `message` has a valid message_id, valid optional task_id and context_id
// (common/validation.h), role USER or AGENT, at least one part and content in every part;
// otherwise INVALID_ARGUMENT naming the field. A message over `max_bytes` serialized is
// RESOURCE_EXHAUSTED, naming `flag` (the option that sets the limit) when it is not empty.
[[nodiscard]] absl::Status ValidateMessage(const lf::a2a::v1::Message& message, size_t max_bytes,
                                           absl::string_view flag = "");

}  // namespace a2a_protocol

#endif  // A2A_PROTOCOL_MESSAGE_H_
