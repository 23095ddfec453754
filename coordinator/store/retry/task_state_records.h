// The retry store's record rules shared by its files (task_state_store.cc, the operations;
// task_state_import.cc, imports): the names of the known fields, a description's digest, the
// bounds of a timestamp taken from outside, and decoding a record. Internal to
// coordinator/store/retry/.
#ifndef COORDINATOR_STORE_RETRY_TASK_STATE_RECORDS_H_
#define COORDINATOR_STORE_RETRY_TASK_STATE_RECORDS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/sha256.h"
#include "common/status_macros.h"
#include "coordinator/store/records/record_codec.h"
#include "google/protobuf/timestamp.pb.h"

namespace coordinator {
namespace task_state_records {

// Latest time accepted from outside (created_at, imported timestamps): 9999-12-31T23:59:59Z.
inline constexpr int64_t kMaxUnixSeconds = 253402300799;

// Known fields, by the names the scripts' state files use.
enum class Field {
  kTaskId,
  kTaskDesc,
  kAttemptCount,
  kModelTier,
  kModel,
  kCreatedAt,
  kBlocked,
  kBlockedAt,
  kBlockReason,
  kFailures,
  kEscalationLog,
  kQualityGateResults,
  kCustom,
};

// The field of a state-file name (kCustom for any other name).
Field ParseField(absl::string_view name);

using common::Sha256Hex;

// INVALID_ARGUMENT naming `field` unless `ts` lies between 1970 and 9999.
absl::Status ValidateTimestamp(absl::string_view field, const google::protobuf::Timestamp& ts);

template <typename Record>
absl::StatusOr<Record> DecodeAs(absl::string_view value) {
  Record record;
  RETURN_IF_ERROR(DecodeRecord(value, &record));
  return record;
}

}  // namespace task_state_records
}  // namespace coordinator

#endif  // COORDINATOR_STORE_RETRY_TASK_STATE_RECORDS_H_
