#include "common/grpc_status.h"

#include <string>

#include "a2a_protocol/errors.h"
#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"

namespace common {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  // An A2A error carries its reason as a google.rpc.ErrorInfo in the status details, which
  // gRPC sends as the grpc-status-details-bin trailer.
  if (std::optional<std::string> reason = coordinator::a2a::Reason(status); reason.has_value()) {
    google::rpc::Status details;
    details.set_code(static_cast<int>(status.code()));
    details.set_message(std::string(status.message()));
    google::rpc::ErrorInfo info;
    info.set_reason(*reason);
    info.set_domain(coordinator::a2a::kErrorDomain);
    details.add_details()->PackFrom(info);
    return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()),
                        details.SerializeAsString());
  }
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

}  // namespace common
