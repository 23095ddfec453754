// absl::Status <-> grpc::Status with the details carried both ways (see grpc_status.h).
#include "common/grpc_status.h"

#include "absl/strings/cord.h"
#include "absl/types/optional.h"
#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"

namespace common {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  const auto code = static_cast<grpc::StatusCode>(status.code());
  std::string message(status.message());
  google::rpc::Status details;
  status.ForEachPayload([&details](absl::string_view type_url, const absl::Cord& value) {
    google::protobuf::Any* any = details.add_details();
    any->set_type_url(std::string(type_url));
    any->set_value(std::string(value));
  });
  // No payload, no trailer: a plain error looks exactly as it did before details were carried.
  if (details.details().empty()) return grpc::Status(code, std::move(message));
  details.set_code(static_cast<int>(status.code()));
  details.set_message(message);
  return grpc::Status(code, std::move(message), details.SerializeAsString());
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  absl::Status result(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
  google::rpc::Status details;
  if (!status.error_details().empty() && details.ParseFromString(status.error_details())) {
    for (const google::protobuf::Any& any : details.details()) {
      result.SetPayload(any.type_url(), absl::Cord(any.value()));
    }
  }
  return result;
}

absl::Status WithErrorInfo(absl::Status status, absl::string_view reason,
                           absl::string_view domain) {
  google::rpc::ErrorInfo info;
  info.set_reason(std::string(reason));
  info.set_domain(std::string(domain));
  status.SetPayload(kErrorInfoTypeUrl, absl::Cord(info.SerializeAsString()));
  return status;
}

std::optional<std::string> ErrorInfoReason(const absl::Status& status, absl::string_view domain) {
  absl::optional<absl::Cord> payload = status.GetPayload(kErrorInfoTypeUrl);
  if (!payload.has_value()) return std::nullopt;
  google::rpc::ErrorInfo info;
  if (!info.ParseFromString(std::string(*payload)) || info.domain() != domain) return std::nullopt;
  return info.reason();
}

}  // namespace common
