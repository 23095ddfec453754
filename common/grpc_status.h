// The one conversion between absl::Status and grpc::Status, both directions, for every binary
// (gRPC 1.51 has none of its own). Service handlers convert their results with ToGrpcStatus;
// clients read a call's result with FromGrpcStatus. The canonical codes are numerically identical.
//
// Status details travel too. An absl::Status payload is keyed by a type URL, which is exactly a
// google.protobuf.Any: each payload becomes one entry of the google.rpc.Status that gRPC sends as
// the grpc-status-details-bin trailer, and each entry received becomes a payload again. So a
// detail such as google.rpc.ErrorInfo survives a server that reads a status from one call and
// answers another with it. Garbled details are dropped; the code and message still count.
#ifndef COMMON_GRPC_STATUS_H_
#define COMMON_GRPC_STATUS_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "grpcpp/support/status.h"

namespace common {

// Same code and message; every payload of `status` becomes an Any of its details.
grpc::Status ToGrpcStatus(const absl::Status& status);

// Same code and message; every Any of the details becomes a payload (keyed by its type URL).
absl::Status FromGrpcStatus(const grpc::Status& status);

// Payload key of a google.rpc.ErrorInfo detail (the type URL Any::PackFrom gives it).
inline constexpr char kErrorInfoTypeUrl[] = "type.googleapis.com/google.rpc.ErrorInfo";

// `status` with a google.rpc.ErrorInfo detail {reason, domain}, replacing any earlier one (a
// status carries at most one). An OK status stays OK: it has no details.
absl::Status WithErrorInfo(absl::Status status, absl::string_view reason, absl::string_view domain);

// The reason of the ErrorInfo detail of `status` when its domain is `domain`; nullopt when there
// is none, it is of another domain, or its bytes do not parse.
std::optional<std::string> ErrorInfoReason(const absl::Status& status, absl::string_view domain);

}  // namespace common

#endif  // COMMON_GRPC_STATUS_H_
