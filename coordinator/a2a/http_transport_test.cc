// What the JSON-RPC and HTTP+JSON transports make of an agent's answers and errors.
#include "coordinator/a2a/http_transport.h"

#include <string>

#include "a2a_protocol/errors.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

std::string ReasonOf(const absl::Status& status) {
  return a2a_protocol::Reason(status).value_or("");
}

TEST(HttpTransportDecodeTest, JsonRpcResultsAreStreamResponses) {
  absl::StatusOr<a2apb::StreamResponse> event = DecodeJsonRpcAnswer(
      R"({"jsonrpc":"2.0","id":3,"result":{"statusUpdate":{"taskId":"t","status":)"
      R"({"state":"TASK_STATE_COMPLETED"},"kind":"status-update"}}})");
  ASSERT_OK(event);
  EXPECT_EQ(event->status_update().task_id(), "t");  // the unknown "kind" is ignored
  EXPECT_EQ(event->status_update().status().state(), a2apb::TASK_STATE_COMPLETED);
  // A SendMessageResponse (a plain answer) reads the same.
  event = DecodeJsonRpcAnswer(R"({"jsonrpc":"2.0","id":"x","result":{"message":{"messageId":"m",)"
                              R"("role":"ROLE_AGENT","parts":[{"text":"hi"}]}}})");
  ASSERT_OK(event);
  EXPECT_EQ(event->message().parts(0).text(), "hi");
}

TEST(HttpTransportDecodeTest, JsonRpcErrorsKeepTheirA2AReason) {
  absl::Status s =
      DecodeJsonRpcAnswer(R"({"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"gone"}})")
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ReasonOf(s), "TASK_NOT_FOUND");
  EXPECT_NE(s.message().find("gone"), absl::string_view::npos);
  s = DecodeJsonRpcAnswer(
          R"({"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"custom","data":[)"
          R"({"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_CANCELABLE",)"
          R"("domain":"a2a-protocol.org"}]}})")
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);  // the reason's code
  EXPECT_EQ(ReasonOf(s), "TASK_NOT_CANCELABLE");
  s = DecodeJsonRpcAnswer(R"({"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"?"}})")
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnknown);  // retried, as gRPC's UNKNOWN is
  s = DecodeJsonRpcAnswer(R"({"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}})")
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  s = DecodeJsonRpcAnswer(R"({"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"bug"}})")
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
}

TEST(HttpTransportDecodeTest, WhatDoesNotParseIsAnInvalidAgentResponse) {
  for (const char* json :
       {"not json", "[1]", R"({"jsonrpc":"2.0","id":1})", R"({"jsonrpc":"2.0","id":1,"result":7})",
        R"({"jsonrpc":"2.0","id":1,"result":{"task":"x"}})",
        R"({"jsonrpc":"2.0","id":1,"error":"oops"})"}) {
    absl::Status s = DecodeJsonRpcAnswer(json).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << json;
    EXPECT_EQ(ReasonOf(s), "INVALID_AGENT_RESPONSE") << json;
  }
  for (const char* json : {"", "data", R"({"task":{"id":5}})"}) {
    absl::Status s = DecodeRestAnswer(json).status();
    EXPECT_EQ(ReasonOf(s), "INVALID_AGENT_RESPONSE") << json;
  }
}

TEST(HttpTransportDecodeTest, RestAnswersAndErrors) {
  absl::StatusOr<a2apb::StreamResponse> event =
      DecodeRestAnswer(R"({"artifactUpdate":{"taskId":"t","artifact":{"artifactId":"a"}}})");
  ASSERT_OK(event);
  EXPECT_EQ(event->artifact_update().artifact().artifact_id(), "a");
  absl::Status s =
      DecodeRestAnswer(R"({"error":{"code":400,"status":"FAILED_PRECONDITION","message":"no"}})")
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);

  s = DecodeHttpError(400, R"({"error":{"code":400,"status":"FAILED_PRECONDITION",)"
                           R"("message":"ended","details":[{"@type":)"
                           R"("type.googleapis.com/google.rpc.ErrorInfo",)"
                           R"("reason":"UNSUPPORTED_OPERATION","domain":"a2a-protocol.org"}]}})");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ReasonOf(s), "UNSUPPORTED_OPERATION");
  EXPECT_NE(s.message().find("ended"), absl::string_view::npos);
  // Without a body that says, the HTTP status decides.
  EXPECT_EQ(DecodeHttpError(503, "busy").code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(DecodeHttpError(404, "").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(DecodeHttpError(500, "<html>").code(), absl::StatusCode::kInternal);
  EXPECT_EQ(DecodeHttpError(400, R"({"error":{"message":"x"}})").code(),
            absl::StatusCode::kInvalidArgument);
  // A JSON-RPC error sent with an HTTP error status.
  s = DecodeHttpError(500, R"({"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"no"}})");
  EXPECT_EQ(ReasonOf(s), "TASK_NOT_CANCELABLE");
}

}  // namespace
}  // namespace coordinator
