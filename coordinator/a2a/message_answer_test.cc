// Agents that answer a message with a Message of their own instead of a task (A2A's direct
// answer, as simple agents on the official SDKs do). The coordinator still stores a task for the
// message, but the client that sent it gets the Message: SendMessage answers with it, and
// SendStreamingMessage streams it in place of the status change it made. In process: a real
// CoordinatorServer and a real gRPC agent on 127.0.0.1:0. No sleeps: waits poll with a bound.
#include <memory>
#include <string>
#include <vector>

#include "a2a/v1/a2a.grpc.pb.h"
#include "a2a_protocol/errors.h"
#include "a2a_protocol/version.h"
#include "absl/strings/match.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/grpc_status.h"
#include "coordinator/a2a/test_server_options.h"
#include "coordinator/server.h"
#include "coordinator/v1/agent_registry.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "storage/testing/test_store.h"
#include "tests/a2a_test_util.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

using ::testing_util::kWait;
using testing_util::TempDir;
using ::testing_util::TextOf;

constexpr char kAgentTaskId[] = "agent-task-1";

a2apb::StreamResponse Reply(const std::string& text, const std::string& task_id = "") {
  a2apb::StreamResponse response;
  a2apb::Message* m = response.mutable_message();
  m->set_message_id("reply-to-" + text);
  m->set_role(a2apb::ROLE_AGENT);
  m->set_task_id(task_id);
  m->add_parts()->set_text("reply: " + text);
  return response;
}

// Answers with a Message "reply: <text>". "hold" first waits for the test's release; "work"
// first streams WORKING; "ask" instead asks for input with a task of its own, and the follow-up
// to that task gets a Message that names it.
class MessageAgent final : public a2apb::A2AService::Service {
 public:
  grpc::Status SendStreamingMessage(grpc::ServerContext* /*context*/,
                                    const a2apb::SendMessageRequest* request,
                                    grpc::ServerWriter<a2apb::StreamResponse>* writer) override {
    const std::string text = TextOf(request->message());
    if (text == "hold" && !release_.WaitForNotificationWithTimeout(kWait)) {
      return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "never released");
    }
    if (text == "work") {
      a2apb::StreamResponse working;
      working.mutable_status_update()->mutable_status()->set_state(a2apb::TASK_STATE_WORKING);
      writer->Write(working);
    }
    if (text == "ask") {
      a2apb::StreamResponse asked;
      asked.mutable_task()->set_id(kAgentTaskId);
      asked.mutable_task()->mutable_status()->set_state(a2apb::TASK_STATE_INPUT_REQUIRED);
      writer->Write(asked);
      return grpc::Status::OK;
    }
    writer->Write(Reply(text, request->message().task_id()));
    return grpc::Status::OK;
  }

  // Called by the test's thread only (the test, then TearDown).
  void Release() {
    if (!release_.HasBeenNotified()) release_.Notify();
  }

 private:
  absl::Notification release_;
};

// An agent without streaming: SendStreamingMessage is UNIMPLEMENTED, and the unary SendMessage
// answers with a Message.
class UnaryMessageAgent final : public a2apb::A2AService::Service {
 public:
  grpc::Status SendMessage(grpc::ServerContext* /*context*/,
                           const a2apb::SendMessageRequest* request,
                           a2apb::SendMessageResponse* response) override {
    *response->mutable_message() = Reply(TextOf(request->message())).message();
    return grpc::Status::OK;
  }
};

class MessageAnswerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<ServerOptions> options = GatewayTestServerOptions(dir_.Sub("data"));
    ASSERT_OK(options);
    absl::StatusOr<std::unique_ptr<CoordinatorServer>> server = CoordinatorServer::Start(*options);
    ASSERT_OK(server);
    server_ = *std::move(server);
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    stub_ = a2apb::A2AService::NewStub(channel_);
    StartAgent("chat", &agent_, &agent_server_);
    StartAgent("unary", &unary_agent_, &unary_server_);
  }

  void TearDown() override {
    agent_.Release();  // a held call returns
    stub_.reset();
    channel_.reset();
    if (server_ != nullptr) server_->Shutdown(absl::Seconds(1));
    if (agent_server_ != nullptr) agent_server_->Shutdown();
    if (unary_server_ != nullptr) unary_server_->Shutdown();
  }

  void StartAgent(const std::string& name, grpc::Service* service,
                  std::unique_ptr<grpc::Server>* out) {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service);
    *out = builder.BuildAndStart();
    ASSERT_NE(*out, nullptr);
    ASSERT_NE(port, 0);
    auto registry = coordinator::v1::AgentRegistry::NewStub(channel_);
    coordinator::v1::RegisterAgentRequest reg;
    reg.mutable_agent()->set_name(name);
    reg.mutable_agent()->set_endpoint("127.0.0.1:" + std::to_string(port));
    coordinator::v1::Agent registered;
    ASSERT_TRUE(registry->RegisterAgent(Context().get(), reg, &registered).ok());
  }

  static std::unique_ptr<grpc::ClientContext> Context() {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(kWait));
    a2a_protocol::AddVersion(context.get());
    return context;
  }

  a2apb::SendMessageRequest Request(const std::string& text, const std::string& tenant = "chat",
                                    const std::string& task_id = "",
                                    const std::string& context_id = "") {
    a2apb::SendMessageRequest request;
    request.set_tenant(tenant);
    a2apb::Message* m = request.mutable_message();
    m->set_message_id("m-" + std::to_string(++counter_));
    m->set_role(a2apb::ROLE_USER);
    m->set_task_id(task_id);
    m->set_context_id(context_id);
    m->add_parts()->set_text(text);
    return request;
  }

  a2apb::SendMessageResponse SendOk(const a2apb::SendMessageRequest& request) {
    a2apb::SendMessageResponse response;
    grpc::Status s = stub_->SendMessage(Context().get(), request, &response);
    EXPECT_TRUE(s.ok()) << s.error_code() << " " << s.error_message();
    return response;
  }

  std::vector<a2apb::StreamResponse> Stream(const a2apb::SendMessageRequest& request) {
    auto context = Context();
    auto reader = stub_->SendStreamingMessage(context.get(), request);
    std::vector<a2apb::StreamResponse> events;
    a2apb::StreamResponse event;
    while (reader->Read(&event)) events.push_back(event);
    grpc::Status s = reader->Finish();
    EXPECT_TRUE(s.ok()) << s.error_code() << " " << s.error_message();
    return events;
  }

  a2apb::ListTasksResponse TasksIn(const std::string& context_id) {
    a2apb::ListTasksRequest request;
    request.set_context_id(context_id);
    request.set_history_length(10);
    a2apb::ListTasksResponse response;
    grpc::Status s = stub_->ListTasks(Context().get(), request, &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return response;
  }

  a2apb::Task GetTask(const std::string& id) {
    a2apb::GetTaskRequest request;
    request.set_id(id);
    a2apb::Task task;
    grpc::Status s = stub_->GetTask(Context().get(), request, &task);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return task;
  }

  template <typename Pred>
  static bool WaitFor(Pred pred) {
    const absl::Time deadline = absl::Now() + kWait;
    while (absl::Now() < deadline) {
      if (pred()) return true;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return pred();
  }

  TempDir dir_;
  MessageAgent agent_;
  UnaryMessageAgent unary_agent_;
  std::unique_ptr<grpc::Server> agent_server_;
  std::unique_ptr<grpc::Server> unary_server_;
  std::unique_ptr<CoordinatorServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<a2apb::A2AService::Stub> stub_;
  int counter_ = 0;
};

TEST_F(MessageAnswerTest, BlockingSendAnswersWithTheAgentsMessageAndTheTaskKeepsIt) {
  const a2apb::SendMessageResponse response = SendOk(Request("hi", "chat", "", "ctx-1"));
  ASSERT_TRUE(response.has_message()) << response.DebugString();
  const a2apb::Message& answer = response.message();
  EXPECT_EQ(TextOf(answer), "reply: hi");
  EXPECT_EQ(answer.message_id(), "reply-to-hi");
  EXPECT_EQ(answer.role(), a2apb::ROLE_AGENT);
  EXPECT_EQ(answer.context_id(), "ctx-1");
  EXPECT_TRUE(answer.task_id().empty());  // the agent named no task

  // Stored with its context: the task is COMPLETED with the Message as its status message and
  // last history entry.
  const a2apb::ListTasksResponse tasks = TasksIn("ctx-1");
  ASSERT_EQ(tasks.tasks_size(), 1);
  const a2apb::Task& task = tasks.tasks(0);
  EXPECT_EQ(task.status().state(), a2apb::TASK_STATE_COMPLETED);
  EXPECT_EQ(TextOf(task.status().message()), "reply: hi");
  ASSERT_EQ(task.history_size(), 2);
  EXPECT_EQ(TextOf(task.history(0)), "hi");
  EXPECT_EQ(TextOf(task.history(1)), "reply: hi");
  EXPECT_EQ(GetTask(task.id()).status().state(), a2apb::TASK_STATE_COMPLETED);

  // Without a context, the coordinator's new one comes back on the Message.
  const a2apb::SendMessageResponse fresh = SendOk(Request("again"));
  ASSERT_TRUE(fresh.has_message());
  ASSERT_FALSE(fresh.message().context_id().empty());
  EXPECT_EQ(TasksIn(fresh.message().context_id()).tasks_size(), 1);
}

TEST_F(MessageAnswerTest, AnAgentWithoutStreamingAnswersWithAMessageToo) {
  const a2apb::SendMessageResponse response = SendOk(Request("unary hi", "unary", "", "ctx-u"));
  ASSERT_TRUE(response.has_message()) << response.DebugString();
  EXPECT_EQ(TextOf(response.message()), "reply: unary hi");
  EXPECT_EQ(response.message().context_id(), "ctx-u");
  EXPECT_EQ(TasksIn("ctx-u").tasks(0).status().state(), a2apb::TASK_STATE_COMPLETED);
}

TEST_F(MessageAnswerTest, StreamingSendOpensWithTheTaskAndEndsWithTheMessage) {
  const std::vector<a2apb::StreamResponse> events = Stream(Request("streamed", "chat", "", "c-s"));
  ASSERT_EQ(events.size(), 2u);
  ASSERT_TRUE(events[0].has_task());
  EXPECT_EQ(events[0].task().context_id(), "c-s");
  ASSERT_TRUE(events[1].has_message()) << events[1].DebugString();
  EXPECT_EQ(TextOf(events[1].message()), "reply: streamed");
  EXPECT_EQ(events[1].message().context_id(), "c-s");
  EXPECT_EQ(GetTask(events[0].task().id()).status().state(), a2apb::TASK_STATE_COMPLETED);

  // Progress before the answer streams as usual (or is already in the opening task, when the
  // agent was faster than the stream's snapshot); the Message is still the last event, and no
  // COMPLETED status change comes with it.
  const std::vector<a2apb::StreamResponse> worked = Stream(Request("work"));
  ASSERT_GE(worked.size(), 2u);
  EXPECT_TRUE(worked.front().has_task());
  for (size_t i = 1; i + 1 < worked.size(); ++i) {
    ASSERT_TRUE(worked[i].has_status_update()) << worked[i].DebugString();
    EXPECT_EQ(worked[i].status_update().status().state(), a2apb::TASK_STATE_WORKING);
  }
  ASSERT_TRUE(worked.back().has_message());
  EXPECT_EQ(TextOf(worked.back().message()), "reply: work");
  const a2apb::Task task = GetTask(worked.front().task().id());
  EXPECT_EQ(task.status().state(), a2apb::TASK_STATE_COMPLETED);

  // An answer that comes after the stream opened: read back from the task's log, and turned
  // into the Message there.
  auto context = Context();
  auto reader = stub_->SendStreamingMessage(context.get(), Request("hold"));
  a2apb::StreamResponse first;
  ASSERT_TRUE(reader->Read(&first));
  ASSERT_TRUE(first.has_task());
  EXPECT_EQ(first.task().status().state(), a2apb::TASK_STATE_SUBMITTED);
  agent_.Release();
  std::vector<a2apb::StreamResponse> rest;
  a2apb::StreamResponse event;
  while (reader->Read(&event)) rest.push_back(event);
  ASSERT_TRUE(reader->Finish().ok());
  ASSERT_EQ(rest.size(), 1u);
  ASSERT_TRUE(rest[0].has_message()) << rest[0].DebugString();
  EXPECT_EQ(TextOf(rest[0].message()), "reply: hold");
}

// return_immediately: the task, as before; the answer arrives on it. A subscriber watches the
// task itself: it sees the status change (with the Message as its status message), and once the
// task has ended it is pointed to GetTask, which shows the answer.
TEST_F(MessageAnswerTest, ReturnImmediatelyGetsTheTaskAndSubscribersSeeTheStatusChange) {
  a2apb::SendMessageRequest request = Request("hold");
  request.mutable_configuration()->set_return_immediately(true);
  const a2apb::SendMessageResponse response = SendOk(request);
  ASSERT_TRUE(response.has_task()) << response.DebugString();
  const std::string id = response.task().id();

  auto context = Context();
  a2apb::SubscribeToTaskRequest subscribe;
  subscribe.set_id(id);
  auto reader = stub_->SubscribeToTask(context.get(), subscribe);
  a2apb::StreamResponse first;
  ASSERT_TRUE(reader->Read(&first));
  ASSERT_TRUE(first.has_task());
  agent_.Release();
  a2apb::StreamResponse event, last;
  while (reader->Read(&event)) last = event;
  ASSERT_TRUE(reader->Finish().ok());
  ASSERT_TRUE(last.has_status_update()) << last.DebugString();
  EXPECT_EQ(last.status_update().status().state(), a2apb::TASK_STATE_COMPLETED);
  EXPECT_EQ(TextOf(last.status_update().status().message()), "reply: hold");

  auto again = Context();
  auto refused = stub_->SubscribeToTask(again.get(), subscribe);
  while (refused->Read(&event)) {
  }
  grpc::Status s = refused->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(a2a_protocol::Reason(common::FromGrpcStatus(s)).value_or(""), "UNSUPPORTED_OPERATION");
  EXPECT_EQ(TextOf(GetTask(id).status().message()), "reply: hold");
}

// The answer goes to the sender of the message it answers: a follow-up in a task answered with a
// Message gets it (naming the task, as the agent did); the first turn got the task.
TEST_F(MessageAnswerTest, AFollowUpAnsweredWithAMessageGetsItWithTheTaskId) {
  const a2apb::SendMessageResponse asked = SendOk(Request("ask"));
  ASSERT_TRUE(asked.has_task());
  ASSERT_EQ(asked.task().status().state(), a2apb::TASK_STATE_INPUT_REQUIRED);
  const std::string id = asked.task().id();
  const a2apb::SendMessageResponse answered =
      SendOk(Request("more", "", id, asked.task().context_id()));
  ASSERT_TRUE(answered.has_message()) << answered.DebugString();
  EXPECT_EQ(TextOf(answered.message()), "reply: more");
  EXPECT_EQ(answered.message().task_id(), id);
  EXPECT_EQ(answered.message().context_id(), asked.task().context_id());
  const a2apb::Task task = GetTask(id);
  EXPECT_EQ(task.status().state(), a2apb::TASK_STATE_COMPLETED);
  EXPECT_EQ(task.history_size(), 3);  // ask, more, the reply
}

TEST_F(MessageAnswerTest, BadSendsAreRefusedAndChangeNothing) {
  ASSERT_TRUE(SendOk(Request("one")).has_message());
  const int before = TasksIn("").total_size();
  a2apb::SendMessageResponse response;
  a2apb::SendMessageRequest request = Request("x", "nobody");
  grpc::Status s = stub_->SendMessage(Context().get(), request, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  request = Request("x", "");  // two agents, no default
  s = stub_->SendMessage(Context().get(), request, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  // A negative history_length is refused before the message is stored or reaches the agent.
  request = Request("x");
  request.mutable_configuration()->set_history_length(-1);
  s = stub_->SendMessage(Context().get(), request, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  auto context = Context();
  auto reader = stub_->SendStreamingMessage(context.get(), request);
  a2apb::StreamResponse event;
  EXPECT_FALSE(reader->Read(&event));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(TasksIn("").total_size(), before);
}

}  // namespace
}  // namespace coordinator
