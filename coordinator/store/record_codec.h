// Stored records are protobuf messages behind the storage format byte. Format 1 is "the
// message's binary wire form"; a later format would be added here with its upgrade path.
#ifndef COORDINATOR_STORE_RECORD_CODEC_H_
#define COORDINATOR_STORE_RECORD_CODEC_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/message_lite.h"
#include "storage/value_codec.h"

namespace coordinator {

inline constexpr uint8_t kRecordFormat = 1;

inline std::string EncodeRecord(const google::protobuf::MessageLite& message) {
  return storage::EncodeValue(kRecordFormat, message.SerializeAsString());
}

[[nodiscard]] inline absl::Status DecodeRecord(absl::string_view stored,
                                               google::protobuf::MessageLite* message) {
  absl::StatusOr<storage::DecodedValue> value = storage::DecodeValue(stored, kRecordFormat);
  if (!value.ok()) return value.status();
  if (!message->ParseFromArray(value->payload.data(), static_cast<int>(value->payload.size()))) {
    return absl::DataLossError(absl::StrCat("stored ", message->GetTypeName(), " is corrupt"));
  }
  return absl::OkStatus();
}

}  // namespace coordinator

#endif  // COORDINATOR_STORE_RECORD_CODEC_H_
