// Stored values start with a one-byte format version, so that a record written by a newer
// binary is recognised (and refused) instead of being misread, and older formats can be
// upgraded in place.
#ifndef STORAGE_VALUE_CODEC_H_
#define STORAGE_VALUE_CODEC_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace storage {

// A value as stored: its format version and the payload after the version byte.
struct DecodedValue {
  uint8_t format;
  absl::string_view payload;
};

std::string EncodeValue(uint8_t format, absl::string_view payload);

// DATA_LOSS for an empty value; FAILED_PRECONDITION when the format is newer than
// `newest_known_format` (written by a newer binary).
[[nodiscard]] absl::StatusOr<DecodedValue> DecodeValue(absl::string_view stored,
                                                       uint8_t newest_known_format);

}  // namespace storage

#endif  // STORAGE_VALUE_CODEC_H_
