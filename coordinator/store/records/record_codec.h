// Stored records are protobuf messages behind the storage format byte. Format 1 is "the
// message's binary wire form"; a later format would be added here with its upgrade path.
#ifndef COORDINATOR_STORE_RECORDS_RECORD_CODEC_H_
#define COORDINATOR_STORE_RECORDS_RECORD_CODEC_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/message_lite.h"
#include "google/protobuf/wrappers.pb.h"
#include "storage/store.h"
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

// The value of a request-id key (keys::CommandRequest, keys::MessageRequest): the seq of the
// record the request wrote.
inline std::string EncodeRequestSeq(int64_t seq) {
  google::protobuf::Int64Value value;
  value.set_value(seq);
  return EncodeRecord(value);
}

// The seq a request-id key holds, read in `txn`; none when the request was not seen.
[[nodiscard]] inline absl::StatusOr<std::optional<int64_t>> ReadRequestSeq(
    storage::Transaction& txn, absl::string_view key) {
  absl::StatusOr<std::string> raw = txn.GetForUpdate(storage::ColumnFamily::kContexts, key);
  if (absl::IsNotFound(raw.status())) return std::nullopt;
  if (!raw.ok()) return raw.status();
  google::protobuf::Int64Value value;
  if (absl::Status s = DecodeRecord(*raw, &value); !s.ok()) return s;
  return value.value();
}

}  // namespace coordinator

#endif  // COORDINATOR_STORE_RECORDS_RECORD_CODEC_H_
