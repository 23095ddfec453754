// Bounds on streams, through the real coordinator: --max_streams refuses the stream after the
// last slot (A2A and WatchRun alike) and frees the slot when a stream ends; --stream_queue_limit
// closes a subscriber that does not read while its task keeps changing, with RESOURCE_EXHAUSTED
// telling it to resubscribe, and the resubscription starts from the task as stored.
#include <memory>
#include <string>
#include <vector>

#include "a2a/v1/a2a.grpc.pb.h"
#include "a2a_protocol/version.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "coordinator/v1/agent_registry.grpc.pb.h"
#include "coordinator/v1/work.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/a2a_test_util.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace {

namespace a2apb = ::lf::a2a::v1;
using ::testing::HasSubstr;
using ::testing_util::A2ACallContext;
using ::testing_util::CoordinatorProcess;
using ::testing_util::kProcessWait;
using ::testing_util::TempDir;

class StreamLimitsTest : public ::testing::Test {
 protected:
  void Start(const std::vector<std::string>& flags) {
    absl::StatusOr<std::unique_ptr<CoordinatorProcess>> coordinator =
        CoordinatorProcess::Start(dir_.Sub("data"), flags);
    ASSERT_OK(coordinator);
    coordinator_ = *std::move(coordinator);
    grpc::ChannelArguments args;
    // A client that does not read must not have megabytes of window to hide that: no
    // bandwidth probing, the default 64 KiB per stream.
    args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 65536);
    args.SetMaxReceiveMessageSize(64 << 20);
    channel_ =
        grpc::CreateCustomChannel(coordinator_->target(), grpc::InsecureChannelCredentials(), args);
    a2a_ = a2apb::A2AService::NewStub(channel_);
    auto registry = coordinator::v1::AgentRegistry::NewStub(channel_);
    coordinator::v1::RegisterAgentRequest reg;
    reg.mutable_agent()->set_name("away");
    reg.mutable_agent()->set_endpoint("127.0.0.1:1");  // down: tasks wait, SUBMITTED
    coordinator::v1::Agent agent;
    const grpc::Status status =
        registry->RegisterAgent(A2ACallContext(kProcessWait).get(), reg, &agent);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }

  // Sends `text` to agent "away", as a new task or a follow-up of `task_id`; returns the task id.
  std::string Send(const std::string& text, const std::string& task_id = "") {
    a2apb::SendMessageRequest request;
    request.set_tenant("away");
    request.mutable_message()->set_message_id(absl::StrCat("m-", ++sent_));
    request.mutable_message()->set_role(a2apb::ROLE_USER);
    request.mutable_message()->set_task_id(task_id);
    request.mutable_message()->add_parts()->set_text(text);
    request.mutable_configuration()->set_return_immediately(true);  // the agent is down
    a2apb::SendMessageResponse response;
    const grpc::Status status =
        a2a_->SendMessage(A2ACallContext(kProcessWait).get(), request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response.task().id();
  }

  struct Stream {
    std::unique_ptr<grpc::ClientContext> context;
    std::unique_ptr<grpc::ClientReader<a2apb::StreamResponse>> reader;
  };

  Stream Subscribe(const std::string& task_id) {
    Stream stream;
    stream.context = A2ACallContext(kProcessWait);
    a2apb::SubscribeToTaskRequest request;
    request.set_id(task_id);
    stream.reader = a2a_->SubscribeToTask(stream.context.get(), request);
    return stream;
  }

  TempDir dir_;
  std::unique_ptr<CoordinatorProcess> coordinator_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<a2apb::A2AService::Stub> a2a_;
  int sent_ = 0;
};

TEST_F(StreamLimitsTest, StreamBeyondMaxStreamsIsRefusedUntilOneEnds) {
  ASSERT_NO_FATAL_FAILURE(Start({"--max_streams=2"}));
  const std::string task_id = Send("hello");
  std::vector<Stream> open;
  for (int i = 0; i < 2; ++i) {
    open.push_back(Subscribe(task_id));
    a2apb::StreamResponse first;
    ASSERT_TRUE(open.back().reader->Read(&first)) << "stream " << i;
    EXPECT_EQ(first.task().id(), task_id);
  }

  Stream third = Subscribe(task_id);
  a2apb::StreamResponse ignored;
  EXPECT_FALSE(third.reader->Read(&ignored));
  const grpc::Status refused = third.reader->Finish();
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << refused.error_message();
  EXPECT_THAT(refused.error_message(), HasSubstr("--max_streams"));

  // WatchRun counts against the same bound (refused before the run is even looked up).
  auto work = coordinator::v1::WorkService::NewStub(channel_);
  auto watch_context = A2ACallContext(kProcessWait);
  coordinator::v1::WatchRunRequest watch;
  watch.set_run_id("no-such-run");
  auto watcher = work->WatchRun(watch_context.get(), watch);
  coordinator::v1::RunEvent event;
  EXPECT_FALSE(watcher->Read(&event));
  EXPECT_EQ(watcher->Finish().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);

  // Ending one stream frees its slot (once the server is done with it).
  open.front().context->TryCancel();
  while (open.front().reader->Read(&ignored)) {
  }
  (void)open.front().reader->Finish();
  const absl::Time deadline = absl::Now() + kProcessWait;
  bool accepted = false;
  while (!accepted && absl::Now() < deadline) {
    Stream again = Subscribe(task_id);
    accepted = again.reader->Read(&ignored);
    if (!accepted) {
      const grpc::Status status = again.reader->Finish();
      ASSERT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
          << status.error_message();
      absl::SleepFor(absl::Milliseconds(20));
    } else {
      again.context->TryCancel();
    }
  }
  EXPECT_TRUE(accepted);
}

TEST_F(StreamLimitsTest, SubscriberThatDoesNotReadIsClosedAndResubscribeReplays) {
  constexpr int kQueueLimit = 4;
  ASSERT_NO_FATAL_FAILURE(
      Start({absl::StrCat("--stream_queue_limit=", kQueueLimit), "--max_message_bytes=2000000"}));
  // A task whose stored snapshot is megabytes: the first write of a subscription cannot finish
  // while its client reads nothing, so every later event has to wait in the stream's queue.
  const std::string task_id = Send(std::string(1500000, 'a'));
  Send(std::string(1500000, 'b'), task_id);
  Stream slow = Subscribe(task_id);

  // Each follow-up adds an event to the task's log. Keep adding until the coordinator closes the
  // stream that does not read (at most a few past the limit once the stream has started).
  int follow_ups = 0;
  bool closed = false;
  for (; follow_ups < 500 && !closed; ++follow_ups) {
    Send(absl::StrCat("follow-up ", follow_ups), task_id);
    closed = coordinator_->process().stderr_text().find("closing a stream") != std::string::npos;
  }
  ASSERT_TRUE(closed) << coordinator_->process().stderr_text();

  // Now it reads: what was already on its way, then the status.
  a2apb::StreamResponse response;
  int received = 0;
  while (slow.reader->Read(&response)) ++received;
  const grpc::Status status = slow.reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr("resubscribe"));
  EXPECT_THAT(status.error_message(), HasSubstr("--stream_queue_limit"));
  EXPECT_LE(received, 1 + kQueueLimit);

  // Resubscribing starts from the stored task: every message is there.
  Stream again = Subscribe(task_id);
  ASSERT_TRUE(again.reader->Read(&response));
  ASSERT_TRUE(response.has_task());
  EXPECT_EQ(response.task().history_size(), 2 + follow_ups);
  again.context->TryCancel();
}

}  // namespace
