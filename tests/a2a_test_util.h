// Helpers for tests that call the coordinator over gRPC, and speak A2A to it.
#ifndef TESTS_A2A_TEST_UTIL_H_
#define TESTS_A2A_TEST_UTIL_H_

#include <chrono>
#include <memory>
#include <string>

#include "a2a/v1/a2a.pb.h"
#include "a2a_protocol/version.h"
#include "absl/time/time.h"
#include "grpcpp/client_context.h"
#include "tests/test_util.h"

namespace testing_util {

// A client context whose deadline is `timeout` from now.
inline std::unique_ptr<grpc::ClientContext> CallContext(absl::Duration timeout = kWait) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(timeout));
  return context;
}

// The same for an A2A call: it asks for A2A 1.0 (the A2A-Version header).
inline std::unique_ptr<grpc::ClientContext> A2ACallContext(absl::Duration timeout = kWait) {
  std::unique_ptr<grpc::ClientContext> context = CallContext(timeout);
  a2a_protocol::AddVersion(context.get());
  return context;
}

// The text of a message's first text part ("" when it has none).
inline std::string TextOf(const ::lf::a2a::v1::Message& message) {
  for (const ::lf::a2a::v1::Part& part : message.parts()) {
    if (part.has_text()) return part.text();
  }
  return "";
}

// Reads a SendStreamingMessage or SubscribeToTask stream until the server ends it and returns
// the task state it last announced (a status update or a task snapshot; UNSPECIFIED when none).
// The caller reads the stream's status with Finish.
template <typename Reader>
::lf::a2a::v1::TaskState ReadToEndForLastState(Reader& reader) {
  ::lf::a2a::v1::TaskState last = ::lf::a2a::v1::TASK_STATE_UNSPECIFIED;
  ::lf::a2a::v1::StreamResponse response;
  while (reader.Read(&response)) {
    if (response.has_status_update()) last = response.status_update().status().state();
    if (response.has_task()) last = response.task().status().state();
  }
  return last;
}

}  // namespace testing_util

#endif  // TESTS_A2A_TEST_UTIL_H_
