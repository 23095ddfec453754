#include "common/grpc_retry.h"

#include <chrono>
#include <vector>

#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace common {
namespace {

// A call that answers `answers` in turn (the last one for ever after), counting its calls and
// checking that each gets a fresh deadline within the call timeout.
struct ScriptedCall {
  std::vector<grpc::StatusCode> answers;
  absl::Duration call_timeout = absl::Seconds(10);
  int calls = 0;

  grpc::Status operator()(grpc::ClientContext* context) {
    const auto left = context->deadline() - std::chrono::system_clock::now();
    EXPECT_GT(left, std::chrono::seconds(0));
    EXPECT_LE(left, absl::ToChronoNanoseconds(call_timeout));
    const grpc::StatusCode code = answers[std::min<size_t>(calls, answers.size() - 1)];
    ++calls;
    return code == grpc::StatusCode::OK ? grpc::Status::OK : grpc::Status(code, "scripted");
  }
};

TEST(CallWithRetryTest, TransientFailuresAreRetriedUntilAnAnswer) {
  ScriptedCall call{
      {grpc::StatusCode::UNAVAILABLE, grpc::StatusCode::DEADLINE_EXCEEDED, grpc::StatusCode::OK}};
  EXPECT_OK(CallWithRetry(std::ref(call), RetryOptions()));
  EXPECT_EQ(call.calls, 3);
}

TEST(CallWithRetryTest, OtherFailuresAreAnsweredAtOnce) {
  for (grpc::StatusCode code : {grpc::StatusCode::NOT_FOUND, grpc::StatusCode::INVALID_ARGUMENT,
                                grpc::StatusCode::ABORTED}) {
    ScriptedCall call{{code, grpc::StatusCode::OK}};
    const absl::Status s = CallWithRetry(std::ref(call), RetryOptions());
    EXPECT_EQ(static_cast<int>(s.code()), static_cast<int>(code));
    EXPECT_EQ(s.message(), "scripted");
    EXPECT_EQ(call.calls, 1);
  }
}

TEST(CallWithRetryTest, AbortedIsRetriedWhenAsked) {
  ScriptedCall call{{grpc::StatusCode::ABORTED, grpc::StatusCode::OK}};
  RetryOptions options;
  options.retry_aborted = true;
  EXPECT_OK(CallWithRetry(std::ref(call), options));
  EXPECT_EQ(call.calls, 2);
}

TEST(CallWithRetryTest, ASpentBudgetGivesTheLastFailureAndStopGivesCancelled) {
  ScriptedCall call{{grpc::StatusCode::UNAVAILABLE}};
  RetryOptions options;
  options.retry_for = absl::Milliseconds(200);
  const absl::Status spent = CallWithRetry(std::ref(call), options);
  EXPECT_EQ(spent.code(), absl::StatusCode::kUnavailable);
  EXPECT_GE(call.calls, 2);

  ScriptedCall stopped{{grpc::StatusCode::UNAVAILABLE}};
  EXPECT_EQ(CallWithRetry(std::ref(stopped), RetryOptions(), [] { return true; }).code(),
            absl::StatusCode::kCancelled);
  EXPECT_EQ(stopped.calls, 1);
}

}  // namespace
}  // namespace common
