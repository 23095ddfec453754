// The absl <-> gRPC status conversion: codes and messages both ways, details carried both ways
// (so an ErrorInfo survives a server that relays a status), garbled details ignored.
#include "common/grpc_status.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "google/protobuf/duration.pb.h"
#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace common {
namespace {

TEST(GrpcStatusTest, OkIsOkBothWays) {
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  EXPECT_OK(FromGrpcStatus(grpc::Status::OK));
}

TEST(GrpcStatusTest, EveryCodeAndTheMessageRoundTripWithoutDetails) {
  for (int code = 1; code <= 16; ++code) {
    const absl::Status status(static_cast<absl::StatusCode>(code), "what went wrong");
    const grpc::Status sent = ToGrpcStatus(status);
    EXPECT_EQ(static_cast<int>(sent.error_code()), code);
    EXPECT_EQ(sent.error_message(), "what went wrong");
    // A plain error sends no details trailer, as before details were carried.
    EXPECT_TRUE(sent.error_details().empty()) << code;
    EXPECT_EQ(FromGrpcStatus(sent), status) << code;
  }
}

TEST(GrpcStatusTest, AnErrorInfoGoesOutAsTheGoogleRpcStatusDetail) {
  const absl::Status status =
      WithErrorInfo(absl::NotFoundError("task t not found"), "TASK_NOT_FOUND", "example.org");
  const grpc::Status sent = ToGrpcStatus(status);
  EXPECT_EQ(sent.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(sent.error_message(), "task t not found");
  // The wire form, read with the protos only.
  google::rpc::Status details;
  ASSERT_TRUE(details.ParseFromString(sent.error_details()));
  EXPECT_EQ(details.code(), static_cast<int>(grpc::StatusCode::NOT_FOUND));
  EXPECT_EQ(details.message(), "task t not found");
  ASSERT_EQ(details.details_size(), 1);
  google::rpc::ErrorInfo info;
  ASSERT_TRUE(details.details(0).UnpackTo(&info));
  EXPECT_EQ(info.reason(), "TASK_NOT_FOUND");
  EXPECT_EQ(info.domain(), "example.org");
  EXPECT_TRUE(info.metadata().empty());
}

TEST(GrpcStatusTest, DetailsRoundTripAndSurviveARelay) {
  const absl::Status original =
      WithErrorInfo(absl::FailedPreconditionError("not now"), "TASK_NOT_CANCELABLE", "example.org");
  const absl::Status received = FromGrpcStatus(ToGrpcStatus(original));
  EXPECT_EQ(received, original);
  EXPECT_EQ(ErrorInfoReason(received, "example.org"), "TASK_NOT_CANCELABLE");
  // A server that reads the status from one call and answers another with it sends the same
  // bytes on.
  EXPECT_EQ(ToGrpcStatus(received).error_details(), ToGrpcStatus(original).error_details());
}

TEST(GrpcStatusTest, EveryDetailIsCarriedNotOnlyErrorInfo) {
  google::rpc::Status details;
  details.set_code(static_cast<int>(grpc::StatusCode::UNAVAILABLE));
  details.set_message("later");
  google::protobuf::Duration retry_delay;  // any message: only ErrorInfo is compiled in here
  retry_delay.set_seconds(3);
  details.add_details()->PackFrom(retry_delay);
  google::rpc::ErrorInfo info;
  info.set_reason("BUSY");
  info.set_domain("example.org");
  details.add_details()->PackFrom(info);
  const grpc::Status sent(grpc::StatusCode::UNAVAILABLE, "later", details.SerializeAsString());

  const absl::Status received = FromGrpcStatus(sent);
  EXPECT_EQ(received.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(ErrorInfoReason(received, "example.org"), "BUSY");
  absl::optional<absl::Cord> payload =
      received.GetPayload("type.googleapis.com/google.protobuf.Duration");
  ASSERT_TRUE(payload.has_value());
  google::protobuf::Duration got;
  ASSERT_TRUE(got.ParseFromString(std::string(*payload)));
  EXPECT_EQ(got.seconds(), 3);

  google::rpc::Status again;
  ASSERT_TRUE(again.ParseFromString(ToGrpcStatus(received).error_details()));
  EXPECT_EQ(again.details_size(), 2);
}

TEST(GrpcStatusTest, GarbledDetailsAreDroppedButCodeAndMessageCount) {
  const grpc::Status sent(grpc::StatusCode::NOT_FOUND, "gone", "\xff\xff not a proto \x01");
  const absl::Status received = FromGrpcStatus(sent);
  EXPECT_EQ(received, absl::NotFoundError("gone"));
  EXPECT_EQ(ErrorInfoReason(received, "example.org"), std::nullopt);
}

TEST(GrpcStatusTest, ErrorInfoReasonNeedsItsDomainAndParsableBytes) {
  const absl::Status status = WithErrorInfo(absl::InternalError("x"), "REASON", "example.org");
  EXPECT_EQ(ErrorInfoReason(status, "example.org"), "REASON");
  EXPECT_EQ(ErrorInfoReason(status, "other.org"), std::nullopt);
  EXPECT_EQ(ErrorInfoReason(absl::InternalError("x"), "example.org"), std::nullopt);

  absl::Status garbled = absl::InternalError("x");
  garbled.SetPayload(kErrorInfoTypeUrl, absl::Cord("\xff\xff"));
  EXPECT_EQ(ErrorInfoReason(garbled, "example.org"), std::nullopt);
}

TEST(GrpcStatusTest, ALaterErrorInfoReplacesTheEarlierOne) {
  const absl::Status status = WithErrorInfo(
      WithErrorInfo(absl::InternalError("x"), "FIRST", "example.org"), "SECOND", "example.org");
  EXPECT_EQ(ErrorInfoReason(status, "example.org"), "SECOND");
  google::rpc::Status details;
  ASSERT_TRUE(details.ParseFromString(ToGrpcStatus(status).error_details()));
  EXPECT_EQ(details.details_size(), 1);
}

TEST(GrpcStatusTest, AnOkStatusTakesNoErrorInfo) {
  EXPECT_OK(WithErrorInfo(absl::OkStatus(), "REASON", "example.org"));
  EXPECT_TRUE(ToGrpcStatus(WithErrorInfo(absl::OkStatus(), "R", "example.org")).ok());
}

}  // namespace
}  // namespace common
