#include "storage/value_codec.h"

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace storage {

std::string EncodeValue(uint8_t format, absl::string_view payload) {
  std::string out;
  out.reserve(payload.size() + 1);
  out.push_back(static_cast<char>(format));
  out.append(payload.data(), payload.size());
  return out;
}

absl::StatusOr<DecodedValue> DecodeValue(absl::string_view stored, uint8_t newest_known_format) {
  if (stored.empty()) return absl::DataLossError("stored value is empty (no format byte)");
  const auto format = static_cast<uint8_t>(stored[0]);
  if (format == 0 || format > newest_known_format) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "stored value has format %d; this binary reads formats 1 to %d (written by a newer "
        "coordinator?)",
        format, newest_known_format));
  }
  stored.remove_prefix(1);
  return DecodedValue{format, stored};
}

}  // namespace storage
