#include "common/validation.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/utf8.h"

namespace common {

absl::Status ValidateOptionalId(absl::string_view field, absl::string_view value) {
  if (value.size() > kMaxIdBytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s is %d bytes; the limit is %d bytes", field, value.size(), kMaxIdBytes));
  }
  for (size_t i = 0; i < value.size();) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (c < 0x20 || c == 0x7F) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s contains a control character (0x%02x) at byte %d", field, c, i));
    }
    const size_t len = Utf8SequenceLength(value.substr(i));
    if (len == 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s is not valid UTF-8 at byte %d", field, i));
    }
    i += len;
  }
  return absl::OkStatus();
}

absl::Status ValidateId(absl::string_view field, absl::string_view value) {
  if (value.empty()) return absl::InvalidArgumentError(absl::StrCat(field, " is required"));
  return ValidateOptionalId(field, value);
}

absl::Status ValidateSize(absl::string_view field, absl::string_view value, size_t max_bytes,
                          absl::string_view flag) {
  if (value.size() <= max_bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(
      absl::StrFormat("%s is %d bytes; the limit is %d bytes%s", field, value.size(), max_bytes,
                      flag.empty() ? "" : absl::StrCat(" (--", flag, ")")));
}

}  // namespace common
