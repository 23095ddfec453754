// The A2A gateway with real processes: the coordinator and the echo_agent binary, killed with
// kill -9 mid-task. Plus the coordctl agent commands. Every wait is bounded; no sleeps.
#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include "a2a/v1/a2a.grpc.pb.h"
#include "a2a_protocol/version.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/a2a_test_util.h"
#include "tests/fake_http_agent.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace {

namespace a2apb = ::lf::a2a::v1;
using ::testing_util::A2ACallContext;
using testing_util::BinaryPath;
using testing_util::CoordinatorProcess;
using ::testing_util::kWait;
using testing_util::Process;
using testing_util::TempDir;
using ::testing_util::WaitFor;

const std::vector<std::string> kCoordinatorArgs = {"--http_listen=127.0.0.1:0",
                                                   "--a2a_retry_initial_backoff=20ms",
                                                   "--a2a_retry_max_backoff=200ms"};

std::unique_ptr<Process> StartAgent(const std::string& coordinator) {
  absl::StatusOr<std::unique_ptr<Process>> agent =
      Process::Start(BinaryPath("echo_agent"), {"--coordinator=" + coordinator, "--name=echo"});
  EXPECT_OK(agent);
  if (!agent.ok()) return nullptr;
  absl::StatusOr<std::string> line = (*agent)->WaitForStderrLine("registered", kWait);
  EXPECT_OK(line);
  return *std::move(agent);
}

a2apb::SendMessageRequest Send(const std::string& text) {
  static int counter = 0;
  a2apb::SendMessageRequest request;
  request.set_tenant("echo");
  request.mutable_message()->set_message_id("p-" + std::to_string(++counter));
  request.mutable_message()->set_role(a2apb::ROLE_USER);
  request.mutable_message()->add_parts()->set_text(text);
  return request;
}

bool Holding(const a2apb::Task& task) {
  return task.status().state() == a2apb::TASK_STATE_WORKING &&
         task.status().message().parts_size() > 0 &&
         absl::StrContains(task.status().message().parts(0).text(), "holding");
}

TEST(A2AProcessTest, CoordinatorKilledMidStreamThenRestartedAndResubscribed) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> coordinator =
      CoordinatorProcess::Start(dir.Sub("data"), kCoordinatorArgs);
  ASSERT_OK(coordinator);
  std::unique_ptr<Process> agent = StartAgent((*coordinator)->target());
  ASSERT_NE(agent, nullptr);

  auto stub = a2apb::A2AService::NewStub(
      grpc::CreateChannel((*coordinator)->target(), grpc::InsecureChannelCredentials()));
  auto context = A2ACallContext();
  auto reader = stub->SendStreamingMessage(context.get(), Send("hold"));
  a2apb::StreamResponse event;
  ASSERT_TRUE(reader->Read(&event));
  ASSERT_TRUE(event.has_task());
  const std::string id = event.task().id();
  bool holding = false;
  while (!holding && reader->Read(&event)) {
    holding =
        event.has_status_update() && event.status_update().status().message().parts_size() > 0 &&
        absl::StrContains(event.status_update().status().message().parts(0).text(), "holding");
  }
  ASSERT_TRUE(holding);

  ASSERT_OK((*coordinator)->Kill());
  while (reader->Read(&event)) {
  }
  EXPECT_FALSE(reader->Finish().ok());

  // Restart on the same data: the task is there, and the interrupted delivery resumes.
  coordinator = CoordinatorProcess::Start(dir.Sub("data"), kCoordinatorArgs);
  ASSERT_OK(coordinator);
  stub = a2apb::A2AService::NewStub(
      grpc::CreateChannel((*coordinator)->target(), grpc::InsecureChannelCredentials()));
  a2apb::GetTaskRequest get;
  get.set_id(id);
  a2apb::Task task;
  ASSERT_TRUE(stub->GetTask(A2ACallContext().get(), get, &task).ok());
  EXPECT_EQ(task.history(0).parts(0).text(), "hold");
  ASSERT_TRUE(WaitFor([&] {
    a2apb::Task t;
    return stub->GetTask(A2ACallContext().get(), get, &t).ok() && Holding(t) &&
           t.history_size() >= 3;
  }));

  // Resubscribe: the stored task first, then the live events until the end.
  auto resubscribe = A2ACallContext();
  a2apb::SubscribeToTaskRequest subscribe;
  subscribe.set_id(id);
  auto stream = stub->SubscribeToTask(resubscribe.get(), subscribe);
  ASSERT_TRUE(stream->Read(&event));
  ASSERT_TRUE(event.has_task());
  EXPECT_EQ(event.task().id(), id);
  a2apb::CancelTaskRequest cancel;
  cancel.set_id(id);
  a2apb::Task canceled;
  grpc::Status s = stub->CancelTask(A2ACallContext().get(), cancel, &canceled);
  ASSERT_TRUE(s.ok()) << s.error_message();
  a2apb::StreamResponse last;
  while (stream->Read(&event)) last = event;
  ASSERT_TRUE(stream->Finish().ok());
  EXPECT_EQ(last.status_update().status().state(), a2apb::TASK_STATE_CANCELED);
}

TEST(A2AProcessTest, AgentKilledMidTaskThenMessagesAreDeliveredWhenItReturns) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> coordinator =
      CoordinatorProcess::Start(dir.Sub("data"), kCoordinatorArgs);
  ASSERT_OK(coordinator);
  std::unique_ptr<Process> agent = StartAgent((*coordinator)->target());
  ASSERT_NE(agent, nullptr);
  auto stub = a2apb::A2AService::NewStub(
      grpc::CreateChannel((*coordinator)->target(), grpc::InsecureChannelCredentials()));

  a2apb::SendMessageRequest hold = Send("hold");
  hold.mutable_configuration()->set_return_immediately(true);
  a2apb::SendMessageResponse held;
  ASSERT_TRUE(stub->SendMessage(A2ACallContext().get(), hold, &held).ok());
  a2apb::GetTaskRequest get_held;
  get_held.set_id(held.task().id());
  ASSERT_TRUE(WaitFor([&] {
    a2apb::Task t;
    return stub->GetTask(A2ACallContext().get(), get_held, &t).ok() && Holding(t);
  }));

  ASSERT_OK(agent->Kill());
  a2apb::Task read;
  ASSERT_TRUE(stub->GetTask(A2ACallContext().get(), get_held, &read).ok());
  EXPECT_EQ(read.status().state(), a2apb::TASK_STATE_WORKING);

  a2apb::SendMessageRequest later = Send("later");
  later.mutable_configuration()->set_return_immediately(true);
  a2apb::SendMessageResponse queued;
  ASSERT_TRUE(stub->SendMessage(A2ACallContext().get(), later, &queued).ok());
  EXPECT_EQ(queued.task().status().state(), a2apb::TASK_STATE_SUBMITTED);

  agent = StartAgent((*coordinator)->target());
  ASSERT_NE(agent, nullptr);
  a2apb::GetTaskRequest get_queued;
  get_queued.set_id(queued.task().id());
  ASSERT_TRUE(WaitFor([&] {
    a2apb::Task t;
    return stub->GetTask(A2ACallContext().get(), get_queued, &t).ok() &&
           t.status().state() == a2apb::TASK_STATE_COMPLETED;
  }));
}

TEST(A2AProcessTest, CoordctlAgentRegisterListRemove) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> coordinator =
      CoordinatorProcess::Start(dir.Sub("data"), kCoordinatorArgs);
  ASSERT_OK(coordinator);
  const std::string target = (*coordinator)->target();
  absl::StatusOr<testing_util::ProcessResult> r =
      testing_util::RunCoordctl(target, {"agent", "register", "green", "127.0.0.1:7001"});
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 0) << r->Describe();
  r = testing_util::RunCoordctl(target, {"agent", "list"});
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 0) << r->Describe();
  EXPECT_TRUE(absl::StrContains(r->out, "green\t127.0.0.1:7001\tGRPC\t-\n")) << r->Describe();
  r = testing_util::RunCoordctl(target, {"agent", "register", "bad", "no-port"});
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 3) << r->Describe();
  r = testing_util::RunCoordctl(target, {"agent", "rm", "green"});
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 0) << r->Describe();
  r = testing_util::RunCoordctl(target, {"agent", "rm", "green"});
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 1) << r->Describe();
}

// An agent that speaks JSON-RPC (tests/fake_http_agent.h, in this process), registered with
// the real coordinator by `coordctl agent register --card` and reached through it.
TEST(A2AProcessTest, CoordctlRegistersAJsonRpcAgentByCardAndSendsToIt) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> coordinator =
      CoordinatorProcess::Start(dir.Sub("data"), kCoordinatorArgs);
  ASSERT_OK(coordinator);
  const std::string target = (*coordinator)->target();
  testing_util::FakeHttpAgent agent(testing_util::FakeHttpAgent::Binding::kJsonRpc);
  ASSERT_GT(agent.port(), 0);

  absl::StatusOr<testing_util::ProcessResult> r =
      testing_util::RunCoordctl(target, {"agent", "register", "rpc", "--card", agent.card_url()});
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 0) << r->Describe();
  EXPECT_EQ(r->out, absl::StrCat("registered rpc at ", agent.interface_url(), " (JSONRPC, card ",
                                 agent.card_url(), ")\n"));
  r = testing_util::RunCoordctl(target, {"agent", "list"});
  ASSERT_OK(r);
  EXPECT_TRUE(absl::StrContains(
      r->out, absl::StrCat("rpc\t", agent.interface_url(), "\tJSONRPC\t", agent.card_url(), "\n")))
      << r->Describe();

  r = testing_util::RunCoordctl(target, {"send", "rpc", "hello", "over", "json-rpc", "--wait"});
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 0) << r->Describe();
  EXPECT_TRUE(absl::StrContains(r->out, "hello over json-rpc")) << r->Describe();

  // Bad input: a clear message, exit code 3 (2 for a wrong command line), nothing stored.
  struct Bad {
    std::vector<std::string> args;
    int exit_code;
    std::string says;
  };
  const std::vector<Bad> bad = {
      {{"agent", "register", "x", "--card", "http//nowhere"}, 3, "http//nowhere"},
      {{"agent", "register", "x", "--card", "http://127.0.0.1:1/card"}, 3, "cannot fetch"},
      {{"agent", "register", "x", "--card", agent.base() + "/jsonrpc"}, 3, "HTTP 404"},
      {{"agent", "register", "x"}, 2, "not both"},
      {{"agent", "register", "x", "127.0.0.1:1", "--card", agent.card_url()}, 2, "not both"},
  };
  for (const Bad& b : bad) {
    r = testing_util::RunCoordctl(target, b.args);
    ASSERT_OK(r);
    EXPECT_EQ(r->exit_code, b.exit_code) << r->Describe();
    EXPECT_TRUE(absl::StrContains(r->err, b.says)) << r->Describe();
  }
  r = testing_util::RunCoordctl(target, {"agent", "list"});
  ASSERT_OK(r);
  EXPECT_FALSE(absl::StrContains(r->out, "x\t")) << r->Describe();
}

}  // namespace
