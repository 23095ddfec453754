// A2A errors: codes and reasons of the constructors, their wire form (the google.rpc.ErrorInfo
// detail of the gRPC binding, domain "a2a-protocol.org"), and reading a peer's status back.
#include "a2a_protocol/errors.h"

#include <string>

#include "a2a_protocol/grpc_errors.h"
#include "absl/status/status.h"
#include "common/grpc_status.h"
#include "google/protobuf/wrappers.pb.h"
#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace a2a_protocol {
namespace {

// The trailer bytes as the binding spells them, built with the protos alone.
std::string WireDetails(grpc::StatusCode code, const std::string& reason,
                        const std::string& message, const std::string& domain = kErrorDomain) {
  google::rpc::Status details;
  details.set_code(static_cast<int>(code));
  details.set_message(message);
  google::rpc::ErrorInfo info;
  info.set_reason(reason);
  info.set_domain(domain);
  details.add_details()->PackFrom(info);
  return details.SerializeAsString();
}

TEST(ErrorsTest, ConstructorsCarryTheirCodeAndReason) {
  struct Case {
    absl::Status status;
    absl::StatusCode code;
    const char* reason;
  };
  const Case cases[] = {
      {TaskNotFound("t1"), absl::StatusCode::kNotFound, kTaskNotFound},
      {TaskNotCancelable("m"), absl::StatusCode::kFailedPrecondition, kTaskNotCancelable},
      {PushNotificationNotSupported("m"), absl::StatusCode::kFailedPrecondition,
       kPushNotificationNotSupported},
      {UnsupportedOperation("m"), absl::StatusCode::kFailedPrecondition, kUnsupportedOperation},
      {ContentTypeNotSupported("m"), absl::StatusCode::kInvalidArgument, kContentTypeNotSupported},
      {InvalidAgentResponse("m"), absl::StatusCode::kInternal, kInvalidAgentResponse},
      {ExtendedAgentCardNotConfigured("m"), absl::StatusCode::kFailedPrecondition,
       kExtendedAgentCardNotConfigured},
      {VersionNotSupported("0.3", "server"), absl::StatusCode::kFailedPrecondition,
       kVersionNotSupported},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.status.code(), c.code) << c.reason;
    EXPECT_EQ(Reason(c.status), c.reason);
  }
  EXPECT_EQ(TaskNotFound("t1").message(), "task t1 not found");
  EXPECT_EQ(VersionNotSupported("0.3", "agent").message(),
            "A2A version \"0.3\" is not supported; this agent speaks 1.0");
}

TEST(ErrorsTest, APlainStatusHasNoReason) {
  EXPECT_EQ(Reason(absl::NotFoundError("x")), std::nullopt);
  EXPECT_EQ(Reason(absl::OkStatus()), std::nullopt);
  // Another domain's ErrorInfo is not an A2A reason.
  EXPECT_EQ(Reason(common::WithErrorInfo(absl::NotFoundError("x"), "GONE", "example.org")),
            std::nullopt);
}

TEST(ErrorsTest, OnTheWireTheReasonIsAnErrorInfoOfTheA2ADomain) {
  const grpc::Status sent = common::ToGrpcStatus(
      Error(absl::StatusCode::kNotFound, kTaskNotFound, "task t1 is not running here"));
  EXPECT_EQ(sent.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(sent.error_message(), "task t1 is not running here");
  // Byte for byte what the coordinator and the agent runtime sent before they shared this code.
  EXPECT_EQ(sent.error_details(), WireDetails(grpc::StatusCode::NOT_FOUND, "TASK_NOT_FOUND",
                                              "task t1 is not running here", "a2a-protocol.org"));
}

TEST(ErrorsTest, APeersReasonIsReadBackAndRelayedUnchanged) {
  const grpc::Status from_agent(
      grpc::StatusCode::FAILED_PRECONDITION, "cannot cancel now",
      WireDetails(grpc::StatusCode::FAILED_PRECONDITION, kTaskNotCancelable, "cannot cancel now"));
  const absl::Status received = FromGrpcStatus(from_agent);
  EXPECT_EQ(received.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(received.message(), "cannot cancel now");
  EXPECT_EQ(Reason(received), kTaskNotCancelable);
  EXPECT_EQ(common::ToGrpcStatus(received).error_details(), from_agent.error_details());
}

TEST(ErrorsTest, APeersOtherDetailsAreDropped) {
  google::rpc::Status details;
  details.set_code(static_cast<int>(grpc::StatusCode::INTERNAL));
  details.set_message("boom");
  google::protobuf::StringValue debug;
  debug.set_value("stack trace of the agent");
  details.add_details()->PackFrom(debug);
  google::rpc::ErrorInfo foreign;
  foreign.set_reason("OOPS");
  foreign.set_domain("example.org");
  details.add_details()->PackFrom(foreign);
  const absl::Status received =
      FromGrpcStatus(grpc::Status(grpc::StatusCode::INTERNAL, "boom", details.SerializeAsString()));
  EXPECT_EQ(received, absl::InternalError("boom"));
  EXPECT_TRUE(common::ToGrpcStatus(received).error_details().empty());
}

TEST(ErrorsTest, APeersGarbledDetailsLeaveCodeAndMessage) {
  const absl::Status received =
      FromGrpcStatus(grpc::Status(grpc::StatusCode::NOT_FOUND, "gone", "\x0a\xff\xff garbage"));
  EXPECT_EQ(received, absl::NotFoundError("gone"));
  EXPECT_EQ(Reason(received), std::nullopt);
  EXPECT_OK(FromGrpcStatus(grpc::Status::OK));
}

TEST(ErrorsTest, A03PeersErrorNameGivesTheReason) {
  absl::Status received =
      v03::FromGrpcStatus(grpc::Status(grpc::StatusCode::NOT_FOUND, "TaskNotFoundError: gone"));
  EXPECT_EQ(received.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(received.message(), "TaskNotFoundError: gone");
  EXPECT_EQ(Reason(received), kTaskNotFound);
  EXPECT_EQ(Reason(v03::FromGrpcStatus(
                grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "UnsupportedOperationError: no"))),
            kUnsupportedOperation);
  EXPECT_EQ(Reason(v03::FromGrpcStatus(
                grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                             "AuthenticatedExtendedCardNotConfiguredError: none"))),
            kExtendedAgentCardNotConfigured);
  // A name that is not one of 0.3's errors, a name not at the start, no name: no reason.
  for (const char* message : {"InvalidParamsError: bad", "TaskNotFoundErrorish: x",
                              "the TaskNotFoundError: x", "TaskNotFound: x", ""}) {
    received = v03::FromGrpcStatus(grpc::Status(grpc::StatusCode::NOT_FOUND, message));
    EXPECT_EQ(received, absl::NotFoundError(message)) << message;
  }
  // An ErrorInfo wins over the name.
  google::rpc::Status details;
  google::rpc::ErrorInfo info;
  info.set_reason(kTaskNotCancelable);
  info.set_domain(kErrorDomain);
  details.add_details()->PackFrom(info);
  EXPECT_EQ(Reason(v03::FromGrpcStatus(grpc::Status(
                grpc::StatusCode::NOT_FOUND, "TaskNotFoundError: x", details.SerializeAsString()))),
            kTaskNotCancelable);
  EXPECT_OK(v03::FromGrpcStatus(grpc::Status::OK));
}

}  // namespace
}  // namespace a2a_protocol
