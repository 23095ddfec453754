// The one place an absl::Status becomes a grpc::Status (gRPC 1.51 has no conversion of its
// own). Only service handlers call it. The canonical codes are numerically identical.
#ifndef COMMON_GRPC_STATUS_H_
#define COMMON_GRPC_STATUS_H_

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace common {

grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace common

#endif  // COMMON_GRPC_STATUS_H_
