// A2A errors across gRPC. Going out needs nothing of its own: an error built by errors.h carries
// its reason as a generic google.rpc.ErrorInfo detail, which common::ToGrpcStatus sends. Coming
// in from another A2A party (the gateway reading an agent's answer) is narrower than
// common::FromGrpcStatus: only the A2A reason is kept, so that an agent's other details (debug
// info, other domains' ErrorInfo) never reach the gateway's own clients.
#ifndef A2A_PROTOCOL_GRPC_ERRORS_H_
#define A2A_PROTOCOL_GRPC_ERRORS_H_

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace a2a_protocol {

// A peer's `status` with the same code and message, and its A2A reason (errors.h Reason) when
// it sent one; every other detail is dropped.
absl::Status FromGrpcStatus(const grpc::Status& status);

namespace v03 {

// A 0.3 agent's `status`, as FromGrpcStatus reads a 1.0 one. 0.3 sends no ErrorInfo: its SDKs
// start the message with the error's name ("TaskNotFoundError: ..."), which gives the reason
// (TaskNotFoundError is TASK_NOT_FOUND). An ErrorInfo, when one comes, wins.
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace v03
}  // namespace a2a_protocol

#endif  // A2A_PROTOCOL_GRPC_ERRORS_H_
