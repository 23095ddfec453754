// Conversions between absl::Time and the protobuf well-known time types.
#ifndef COORDINATOR_STORE_RECORDS_TIME_UTIL_H_
#define COORDINATOR_STORE_RECORDS_TIME_UTIL_H_

#include "absl/time/time.h"
#include "google/protobuf/duration.pb.h"
#include "google/protobuf/timestamp.pb.h"

namespace coordinator {

inline google::protobuf::Timestamp ToProtoTime(absl::Time t) {
  google::protobuf::Timestamp ts;
  const int64_t nanos = absl::ToUnixNanos(t);
  ts.set_seconds(nanos / 1000000000);
  ts.set_nanos(static_cast<int32_t>(nanos % 1000000000));
  if (ts.nanos() < 0) {
    ts.set_seconds(ts.seconds() - 1);
    ts.set_nanos(ts.nanos() + 1000000000);
  }
  return ts;
}

inline absl::Time FromProtoTime(const google::protobuf::Timestamp& ts) {
  return absl::FromUnixSeconds(ts.seconds()) + absl::Nanoseconds(ts.nanos());
}

inline absl::Duration FromProtoDuration(const google::protobuf::Duration& d) {
  return absl::Seconds(d.seconds()) + absl::Nanoseconds(d.nanos());
}

inline google::protobuf::Duration ToProtoDuration(absl::Duration d) {
  google::protobuf::Duration out;
  const int64_t nanos = absl::ToInt64Nanoseconds(d);
  out.set_seconds(nanos / 1000000000);
  out.set_nanos(static_cast<int32_t>(nanos % 1000000000));
  return out;
}

}  // namespace coordinator

#endif  // COORDINATOR_STORE_RECORDS_TIME_UTIL_H_
