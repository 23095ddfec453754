// Checks shared by every entry point that takes an identifier from outside (RPCs, the CLI,
// file imports). Identifiers become parts of storage keys and of log lines, so they are bounded
// and free of control characters.
#ifndef COMMON_VALIDATION_H_
#define COMMON_VALIDATION_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace common {

// Longest identifier accepted anywhere (context ids, agent names, task ids), in bytes.
inline constexpr size_t kMaxIdBytes = 256;

// OK when `value` is a usable identifier: 1 to kMaxIdBytes bytes, valid UTF-8, and without
// control characters. Otherwise INVALID_ARGUMENT naming `field`.
[[nodiscard]] absl::Status ValidateId(absl::string_view field, absl::string_view value);

// Like ValidateId, but an empty value is allowed (an optional identifier such as a filter).
[[nodiscard]] absl::Status ValidateOptionalId(absl::string_view field, absl::string_view value);

// OK when `value` is at most `max_bytes` long; otherwise RESOURCE_EXHAUSTED naming `field`, the
// limit and, when `flag` is set, the flag that configures it ("... (--max_message_bytes)").
[[nodiscard]] absl::Status ValidateSize(absl::string_view field, absl::string_view value,
                                        size_t max_bytes, absl::string_view flag = "");

}  // namespace common

#endif  // COMMON_VALIDATION_H_
