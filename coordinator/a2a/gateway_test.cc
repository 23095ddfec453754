// The A2A gateway end to end, in process: a real CoordinatorServer on 127.0.0.1:0 and echo
// agents built on the agent runtime, talked to through the generated A2A client stub. No
// sleeps: every wait polls with a bound.
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "a2a/v0_3/a2a.grpc.pb.h"
#include "a2a/v1/a2a.grpc.pb.h"
#include "a2a_http/http.h"
#include "a2a_protocol/errors.h"
#include "a2a_protocol/version.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "agent_runtime/agent_runtime.h"
#include "agent_runtime/echo_agent.h"
#include "common/grpc_status.h"
#include "coordinator/a2a/test_server_options.h"
#include "coordinator/server.h"
#include "coordinator/v1/agent_registry.grpc.pb.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "storage/testing/test_store.h"
#include "tests/sync_fakes.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

using ::testing_util::kWait;
using testing_util::TempDir;
using ::testing_util::WaitFor;

// The A2A reason in a status's ErrorInfo detail, or "". (a2a_protocol/errors_test.cc pins the
// detail's bytes; here the reasons the gateway answers with are pinned.)
std::string Reason(const grpc::Status& status) {
  return a2a_protocol::Reason(common::FromGrpcStatus(status)).value_or("");
}

class GatewayTest : public ::testing::Test {
 protected:
  void SetUp() override { StartCoordinator(); }
  // A test that returned early (a failed ASSERT) may leave its syncs held or failing: let the
  // coordinator's last syncs through before it is destroyed.
  void TearDown() override {
    held_sync_.FailAll(absl::OkStatus());
    held_sync_.Release();
  }

  void StartCoordinator(int max_attempts = 1000, const std::string& default_agent = "") {
    absl::StatusOr<ServerOptions> started = GatewayTestServerOptions(dir_.Sub("data"));
    ASSERT_OK(started);
    ServerOptions& options = *started;
    options.default_agent = default_agent;
    options.http_listen = "127.0.0.1:0";
    options.worker_threads = 8;
    options.limits.max_message_bytes = 64 << 10;
    options.gateway.max_delivery_attempts = max_attempts;
    options.gateway.delivery_ttl = delivery_ttl_;
    options.gateway.delivery_threads = 4;
    options.before_wal_sync = before_wal_sync_;
    on_etcd_ = !options.store_url.empty();
    options.a2a_store.push_initial_backoff = absl::Milliseconds(20);
    absl::StatusOr<std::unique_ptr<CoordinatorServer>> server = CoordinatorServer::Start(options);
    ASSERT_OK(server);
    server_ = *std::move(server);
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    stub_ = a2apb::A2AService::NewStub(channel_);
  }

  void StopCoordinator() {
    stub_.reset();
    channel_.reset();
    server_->Shutdown(absl::Seconds(1));
    server_.reset();
  }

  std::unique_ptr<agent_runtime::AgentServer> StartAgent(
      const std::string& name = "echo", agent_runtime::AgentExecutor* executor = nullptr) {
    agent_runtime::RuntimeOptions options;
    options.name = name;
    options.coordinator = server_->address();
    absl::StatusOr<std::unique_ptr<agent_runtime::AgentServer>> agent =
        agent_runtime::AgentServer::Start(options, executor != nullptr ? executor : &echo_);
    EXPECT_OK(agent);
    return agent.ok() ? *std::move(agent) : nullptr;
  }

  static std::unique_ptr<grpc::ClientContext> Context(absl::Duration timeout = kWait) {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(timeout));
    a2a_protocol::AddVersion(context.get());
    return context;
  }

  // A blocking SendMessage made without blocking the test, which waits on `done`.
  struct PendingSend {
    a2apb::SendMessageRequest request;
    a2apb::SendMessageResponse response;
    std::unique_ptr<grpc::ClientContext> context;
    absl::Notification done;
    grpc::Status status;
  };
  std::unique_ptr<PendingSend> SendAsync(a2apb::SendMessageRequest request) {
    auto call = std::make_unique<PendingSend>();
    call->request = std::move(request);
    call->context = Context();
    PendingSend* c = call.get();
    stub_->async()->SendMessage(c->context.get(), &c->request, &c->response, [c](grpc::Status s) {
      c->status = std::move(s);
      c->done.Notify();
    });
    return call;
  }

  static a2apb::SendMessageRequest Send(const std::string& text, const std::string& tenant = "echo",
                                        const std::string& task_id = "") {
    static int counter = 0;
    a2apb::SendMessageRequest request;
    request.set_tenant(tenant);
    a2apb::Message* m = request.mutable_message();
    m->set_message_id("msg-" + std::to_string(++counter));
    m->set_role(a2apb::ROLE_USER);
    m->set_task_id(task_id);
    m->add_parts()->set_text(text);
    return request;
  }

  a2apb::Task GetTask(const std::string& id) {
    a2apb::GetTaskRequest request;
    request.set_id(id);
    a2apb::Task task;
    grpc::Status s = stub_->GetTask(Context().get(), request, &task);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return task;
  }

  bool WaitForState(const std::string& id, a2apb::TaskState state) {
    return WaitFor([&] { return GetTask(id).status().state() == state; });
  }

  std::string SendNow(const std::string& text, const std::string& tenant = "echo") {
    a2apb::SendMessageRequest request = Send(text, tenant);
    request.mutable_configuration()->set_return_immediately(true);
    a2apb::SendMessageResponse response;
    grpc::Status s = stub_->SendMessage(Context().get(), request, &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return response.task().id();
  }

  // Registers an agent that is down (nothing listens at its address): its messages stay queued.
  void RegisterAway(const std::string& name) {
    auto registry = coordinator::v1::AgentRegistry::NewStub(channel_);
    coordinator::v1::RegisterAgentRequest reg;
    reg.mutable_agent()->set_name(name);
    reg.mutable_agent()->set_endpoint("127.0.0.1:1");
    coordinator::v1::Agent agent;
    grpc::Status s = registry->RegisterAgent(Context().get(), reg, &agent);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  int TotalTasks(const std::string& tenant = "") {
    a2apb::ListTasksRequest request;
    request.set_tenant(tenant);
    a2apb::ListTasksResponse response;
    grpc::Status s = stub_->ListTasks(Context().get(), request, &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return response.total_size();
  }

  TempDir dir_;
  // Given to the coordinator started next (GatewayOptions::delivery_ttl).
  absl::Duration delivery_ttl_ = absl::Hours(24);
  agent_runtime::EchoAgent echo_;
  // Given to the coordinator started next (ServerOptions::before_wal_sync).
  std::function<absl::Status()> before_wal_sync_;
  // A WAL sync the test holds and fails (before_wal_sync_ = held_sync_.Hook()). A member declared
  // before server_, so that it outlives the coordinator: the store's sync threads may call the
  // hook until the server is gone, after the test's body has returned.
  testing_util::HeldSync held_sync_;
  bool on_etcd_ = false;  // the coordinator runs on the test's etcd cluster
  std::unique_ptr<CoordinatorServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<a2apb::A2AService::Stub> stub_;
};

TEST_F(GatewayTest, BlockingSendReturnsTheFinishedTaskAndItIsStored) {
  auto agent = StartAgent();
  a2apb::SendMessageResponse response;
  grpc::Status s = stub_->SendMessage(Context().get(), Send("hello"), &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const a2apb::Task& task = response.task();
  EXPECT_EQ(task.status().state(), a2apb::TASK_STATE_COMPLETED);
  ASSERT_EQ(task.artifacts_size(), 1);
  EXPECT_EQ(task.artifacts(0).parts(0).text(), "hello");
  ASSERT_GE(task.history_size(), 2);
  EXPECT_EQ(task.history(0).parts(0).text(), "hello");
  EXPECT_EQ(task.status().message().parts(0).text(), "echo: hello");

  a2apb::GetTaskRequest get;
  get.set_id(task.id());
  get.set_history_length(1);
  a2apb::Task read;
  ASSERT_TRUE(stub_->GetTask(Context().get(), get, &read).ok());
  ASSERT_EQ(read.history_size(), 1);
  EXPECT_EQ(read.history(0).parts(0).text(), "echo: hello");

  a2apb::ListTasksRequest list;
  list.set_tenant("echo");
  a2apb::ListTasksResponse tasks;
  ASSERT_TRUE(stub_->ListTasks(Context().get(), list, &tasks).ok());
  EXPECT_EQ(tasks.total_size(), 1);
  EXPECT_EQ(tasks.tasks(0).id(), task.id());
  EXPECT_EQ(tasks.tasks(0).artifacts_size(), 0);  // include_artifacts unset
}

// A client that lost its answer sends the same message again: blocking, streaming or returning
// at once, it gets the task its first send made, and the agent ran the message once. Other
// content under the same message_id is refused.
TEST_F(GatewayTest, TheSameMessageSentAgainGetsTheTaskItMadeAndRunsOnce) {
  auto agent = StartAgent();
  const a2apb::SendMessageRequest hello = Send("hello");
  a2apb::SendMessageResponse first;
  ASSERT_TRUE(stub_->SendMessage(Context().get(), hello, &first).ok());
  const std::string id = first.task().id();
  ASSERT_EQ(first.task().status().state(), a2apb::TASK_STATE_COMPLETED);

  a2apb::SendMessageResponse again;
  grpc::Status s = stub_->SendMessage(Context().get(), hello, &again);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(again.task().id(), id);
  EXPECT_EQ(again.task().status().state(), a2apb::TASK_STATE_COMPLETED);
  ASSERT_EQ(again.task().artifacts_size(), 1);
  EXPECT_EQ(again.task().artifacts(0).parts(0).text(), "hello");

  a2apb::SendMessageRequest at_once = hello;
  at_once.mutable_configuration()->set_return_immediately(true);
  a2apb::SendMessageResponse immediate;
  ASSERT_TRUE(stub_->SendMessage(Context().get(), at_once, &immediate).ok());
  EXPECT_EQ(immediate.task().id(), id);

  auto context = Context();
  auto reader = stub_->SendStreamingMessage(context.get(), hello);
  std::vector<a2apb::StreamResponse> events;
  a2apb::StreamResponse event;
  while (reader->Read(&event)) events.push_back(event);
  ASSERT_TRUE(reader->Finish().ok());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].task().id(), id);
  EXPECT_EQ(events[0].task().status().state(), a2apb::TASK_STATE_COMPLETED);

  a2apb::SendMessageRequest changed = hello;
  changed.mutable_message()->mutable_parts(0)->set_text("goodbye");
  a2apb::SendMessageResponse refused;
  s = stub_->SendMessage(Context().get(), changed, &refused);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::ALREADY_EXISTS) << s.error_message();

  // Once: one task, whose history holds the message and the agent's one answer.
  a2apb::ListTasksRequest list;
  list.set_tenant("echo");
  a2apb::ListTasksResponse tasks;
  ASSERT_TRUE(stub_->ListTasks(Context().get(), list, &tasks).ok());
  EXPECT_EQ(tasks.total_size(), 1);
  EXPECT_EQ(GetTask(id).history_size(), 2);
}

// A client that cancels while the coordinator is still storing its message: gRPC frees the
// request and the server context once the call finishes, so the handler must not finish it
// (and must not read them) until it is done with them. Under ASan a use after free here fails.
TEST_F(GatewayTest, CallsCancelledWhileTheMessageIsStoredEndCleanly) {
  auto agent = StartAgent();
  for (int i = 0; i < 100; ++i) {
    std::unique_ptr<PendingSend> call = SendAsync(Send(absl::StrCat("cancelled ", i)));
    call->context->TryCancel();
    call->done.WaitForNotification();
    EXPECT_TRUE(call->status.ok() || call->status.error_code() == grpc::StatusCode::CANCELLED)
        << call->status.error_code() << " " << call->status.error_message();

    auto stream_context = Context();
    auto reader = stub_->SendStreamingMessage(stream_context.get(), Send("cancelled stream"));
    stream_context->TryCancel();
    a2apb::StreamResponse event;
    while (reader->Read(&event)) {
    }
    const grpc::Status stream_status = reader->Finish();
    EXPECT_TRUE(stream_status.ok() || stream_status.error_code() == grpc::StatusCode::CANCELLED)
        << stream_status.error_code() << " " << stream_status.error_message();
  }
  // The coordinator is still up and serving.
  a2apb::SendMessageResponse response;
  grpc::Status s = stub_->SendMessage(Context().get(), Send("after"), &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(response.task().status().state(), a2apb::TASK_STATE_COMPLETED);
}

// Answers as the echo agent does, counting the messages it was given.
class CountingEcho : public agent_runtime::AgentExecutor {
 public:
  void Execute(const agent_runtime::RequestContext& request,
               agent_runtime::EventPublisher& events) override {
    received_.fetch_add(1);
    echo_.Execute(request, events);
  }
  int received() const { return received_.load(); }

 private:
  agent_runtime::EchoAgent echo_;
  std::atomic<int> received_{0};
};

// SendMessage accepts a message without a thread waiting for the disk (on RocksDB, on the gRPC
// thread, and goes on from the sync's completion): still, nothing is answered and nothing is
// sent to the agent before the WAL sync that makes the acceptance durable has returned, and a
// failed sync fails the call. The test holds and fails the embedded store's syncs; etcd, which
// answers a write once a quorum has synced it, has no such hook.
TEST_F(GatewayTest, AMessageGoesToTheAgentOnlyOnceItsAcceptanceIsDurable) {
  StopCoordinator();
  testing_util::HeldSync& sync = held_sync_;
  before_wal_sync_ = sync.Hook();
  StartCoordinator();
  if (on_etcd_) GTEST_SKIP() << "the embedded store's WAL hook";
  CountingEcho counting;
  auto agent = StartAgent("echo", &counting);
  ASSERT_NE(agent, nullptr);

  sync.Hold();
  const int syncs_before = sync.started();
  std::unique_ptr<PendingSend> call = SendAsync(Send("held"));
  sync.WaitForStarted(syncs_before + 1);  // the acceptance is committed; its sync is held
  EXPECT_FALSE(WaitFor([&] { return counting.received() > 0; }, absl::Milliseconds(300)))
      << "the agent got a message whose acceptance was not durable yet";
  EXPECT_FALSE(call->done.HasBeenNotified());
  sync.Release();
  ASSERT_TRUE(call->done.WaitForNotificationWithTimeout(kWait));
  ASSERT_TRUE(call->status.ok()) << call->status.error_message();
  EXPECT_EQ(call->response.task().status().state(), a2apb::TASK_STATE_COMPLETED);
  EXPECT_EQ(counting.received(), 1);

  // The next sync fails: the call whose acceptance it covered fails with its status.
  sync.FailNext(absl::DataLossError("injected WAL sync failure"));
  a2apb::SendMessageResponse lost;
  const grpc::Status failed = stub_->SendMessage(Context().get(), Send("lost"), &lost);
  EXPECT_FALSE(failed.ok());
  EXPECT_TRUE(absl::StrContains(failed.error_message(), "injected WAL sync failure"))
      << failed.error_code() << " " << failed.error_message();
}

// Holds its answer until the test opens the gate, then completes the task in one event.
class GatedAgent : public agent_runtime::AgentExecutor {
 public:
  void Execute(const agent_runtime::RequestContext& request,
               agent_runtime::EventPublisher& events) override {
    (void)request;
    received_.Notify();
    gate_.WaitForNotification();
    events.UpdateStatus(a2apb::TASK_STATE_COMPLETED, "answered");
  }
  absl::Notification& received() { return received_; }
  void Open() { gate_.Notify(); }

 private:
  absl::Notification received_;
  absl::Notification gate_;
};

// The agent's answer is stored without the delivery thread waiting for its sync, and a blocking
// SendMessage reads it back without a thread waiting either (it answers from the sync's
// completion): still the client gets the answer only once a sync that covers it has returned,
// and a failed sync fails the call.
TEST_F(GatewayTest, TheAnswerReachesTheClientOnlyOnceTheAgentsAnswerIsDurable) {
  StopCoordinator();
  testing_util::HeldSync& sync = held_sync_;
  before_wal_sync_ = sync.Hook();
  StartCoordinator();
  if (on_etcd_) GTEST_SKIP() << "the embedded store's WAL hook";
  for (const bool fail : {false, true}) {
    SCOPED_TRACE(fail ? "the syncs fail" : "the syncs are held");
    const std::string name = fail ? "gated-fail" : "gated";
    GatedAgent gated;
    auto agent = StartAgent(name, &gated);
    ASSERT_NE(agent, nullptr);
    std::unique_ptr<PendingSend> call = SendAsync(Send("answer me", name));
    // The acceptance is durable: the agent has the message. From here every sync is held (and,
    // in the second round, fails), whichever of the gateway's writes it is for.
    ASSERT_TRUE(gated.received().WaitForNotificationWithTimeout(kWait));
    const int syncs_before = sync.started();
    sync.Hold();
    if (fail) sync.FailAll(absl::DataLossError("injected WAL sync failure"));
    gated.Open();
    sync.WaitForStarted(syncs_before + 1);
    EXPECT_FALSE(call->done.WaitForNotificationWithTimeout(absl::Milliseconds(300)))
        << "the client got an answer that was not durable yet";
    sync.Release();
    ASSERT_TRUE(call->done.WaitForNotificationWithTimeout(kWait));
    sync.FailAll(absl::OkStatus());
    if (fail) {
      EXPECT_FALSE(call->status.ok());
      EXPECT_TRUE(absl::StrContains(call->status.error_message(), "injected WAL sync failure"))
          << call->status.error_code() << " " << call->status.error_message();
    } else {
      ASSERT_TRUE(call->status.ok()) << call->status.error_message();
      EXPECT_EQ(call->response.task().status().state(), a2apb::TASK_STATE_COMPLETED);
    }
  }
}

TEST_F(GatewayTest, StreamingSendStreamsTheTaskThenItsEvents) {
  auto agent = StartAgent();
  auto context = Context();
  auto reader = stub_->SendStreamingMessage(context.get(), Send("streamed"));
  std::vector<a2apb::StreamResponse> events;
  a2apb::StreamResponse event;
  while (reader->Read(&event)) events.push_back(event);
  grpc::Status s = reader->Finish();
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_GE(events.size(), 3u);
  ASSERT_TRUE(events.front().has_task());
  EXPECT_EQ(events.front().task().status().state(), a2apb::TASK_STATE_SUBMITTED);
  const std::string id = events.front().task().id();
  bool saw_artifact = false;
  for (const auto& e : events) {
    if (e.has_artifact_update()) {
      saw_artifact = true;
      EXPECT_EQ(e.artifact_update().task_id(), id);
    }
  }
  EXPECT_TRUE(saw_artifact);
  ASSERT_TRUE(events.back().has_status_update());
  EXPECT_EQ(events.back().status_update().task_id(), id);
  EXPECT_EQ(events.back().status_update().status().state(), a2apb::TASK_STATE_COMPLETED);
}

// Streams many artifact chunks as fast as it can, then completes: far more events arrive while
// one burst is being stored than one burst takes.
class FloodAgent : public agent_runtime::AgentExecutor {
 public:
  static constexpr int kChunks = 300;
  void Execute(const agent_runtime::RequestContext& request,
               agent_runtime::EventPublisher& events) override {
    (void)request;
    events.UpdateStatus(a2apb::TASK_STATE_WORKING);
    for (int i = 0; i < kChunks; ++i) {
      a2apb::Artifact chunk;
      chunk.set_artifact_id("flood");
      chunk.add_parts()->set_text(std::to_string(i));
      events.AddArtifact(chunk, /*append=*/i > 0, /*last_chunk=*/i + 1 == kChunks);
    }
    events.UpdateStatus(a2apb::TASK_STATE_COMPLETED, "flooded");
  }
};

TEST_F(GatewayTest, AFloodOfAgentEventsIsStoredCompletelyAndInOrder) {
  FloodAgent flood;
  auto agent = StartAgent("flood", &flood);
  auto context = Context();
  auto reader = stub_->SendStreamingMessage(context.get(), Send("go", "flood"));
  std::vector<a2apb::StreamResponse> events;
  a2apb::StreamResponse event;
  while (reader->Read(&event)) events.push_back(event);
  grpc::Status s = reader->Finish();
  ASSERT_TRUE(s.ok()) << s.error_message();
  std::vector<std::string> chunks;
  for (const auto& e : events) {
    if (e.has_artifact_update()) chunks.push_back(e.artifact_update().artifact().parts(0).text());
  }
  ASSERT_EQ(chunks.size(), static_cast<size_t>(FloodAgent::kChunks));
  for (int i = 0; i < FloodAgent::kChunks; ++i) EXPECT_EQ(chunks[i], std::to_string(i));
  ASSERT_TRUE(events.back().has_status_update());
  EXPECT_EQ(events.back().status_update().status().state(), a2apb::TASK_STATE_COMPLETED);
  // The stored task holds every chunk, in order, in one artifact.
  a2apb::Task task = GetTask(events.front().task().id());
  ASSERT_EQ(task.artifacts_size(), 1);
  ASSERT_EQ(task.artifacts(0).parts_size(), FloodAgent::kChunks);
  for (int i = 0; i < FloodAgent::kChunks; ++i) {
    EXPECT_EQ(task.artifacts(0).parts(i).text(), std::to_string(i));
  }
}

TEST_F(GatewayTest, MultiTurnTaskContinuesAfterInputRequired) {
  auto agent = StartAgent();
  a2apb::SendMessageResponse first;
  ASSERT_TRUE(stub_->SendMessage(Context().get(), Send("ask"), &first).ok());
  ASSERT_EQ(first.task().status().state(), a2apb::TASK_STATE_INPUT_REQUIRED);
  a2apb::SendMessageRequest reply = Send("the answer", "echo", first.task().id());
  reply.mutable_message()->set_context_id(first.task().context_id());
  a2apb::SendMessageResponse second;
  grpc::Status s = stub_->SendMessage(Context().get(), reply, &second);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(second.task().id(), first.task().id());
  EXPECT_EQ(second.task().status().state(), a2apb::TASK_STATE_COMPLETED);
  EXPECT_EQ(second.task().status().message().parts(0).text(), "echo: the answer");
}

TEST_F(GatewayTest, CancelForwardsToTheAgentAndEndedTasksAreNotCancelable) {
  auto agent = StartAgent();
  const std::string id = SendNow("hold");
  ASSERT_TRUE(WaitFor([&] {
    return GetTask(id).status().message().parts_size() > 0 &&
           absl::StrContains(GetTask(id).status().message().parts(0).text(), "holding");
  }));
  a2apb::CancelTaskRequest cancel;
  cancel.set_id(id);
  a2apb::Task canceled;
  grpc::Status s = stub_->CancelTask(Context().get(), cancel, &canceled);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(canceled.status().state(), a2apb::TASK_STATE_CANCELED);
  EXPECT_EQ(GetTask(id).status().state(), a2apb::TASK_STATE_CANCELED);

  s = stub_->CancelTask(Context().get(), cancel, &canceled);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(Reason(s), "TASK_NOT_CANCELABLE");
}

TEST_F(GatewayTest, SubscriberGetsSnapshotThenLiveEventsAndEndedTasksRefuseSubscription) {
  auto agent = StartAgent();
  const std::string id = SendNow("hold");
  ASSERT_TRUE(WaitForState(id, a2apb::TASK_STATE_WORKING));
  auto context = Context();
  a2apb::SubscribeToTaskRequest subscribe;
  subscribe.set_id(id);
  auto reader = stub_->SubscribeToTask(context.get(), subscribe);
  a2apb::StreamResponse first;
  ASSERT_TRUE(reader->Read(&first));
  ASSERT_TRUE(first.has_task());
  EXPECT_EQ(first.task().id(), id);
  EXPECT_EQ(first.task().status().state(), a2apb::TASK_STATE_WORKING);

  a2apb::CancelTaskRequest cancel;
  cancel.set_id(id);
  a2apb::Task canceled;
  ASSERT_TRUE(stub_->CancelTask(Context().get(), cancel, &canceled).ok());
  a2apb::StreamResponse event, last;
  while (reader->Read(&event)) last = event;
  ASSERT_TRUE(reader->Finish().ok());
  ASSERT_TRUE(last.has_status_update());
  EXPECT_EQ(last.status_update().status().state(), a2apb::TASK_STATE_CANCELED);

  auto again = Context();
  auto refused = stub_->SubscribeToTask(again.get(), subscribe);
  while (refused->Read(&event)) {
  }
  grpc::Status s = refused->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(Reason(s), "UNSUPPORTED_OPERATION");
}

TEST_F(GatewayTest, AgentDownMidTaskThenMessagesQueueAndAreDeliveredWhenItReturns) {
  auto agent = StartAgent();
  const std::string held = SendNow("hold");
  ASSERT_TRUE(WaitForState(held, a2apb::TASK_STATE_WORKING));
  agent->Shutdown(absl::ZeroDuration());
  agent.reset();

  // Still readable, from the store.
  EXPECT_EQ(GetTask(held).status().state(), a2apb::TASK_STATE_WORKING);
  // A new message is accepted and kept SUBMITTED while the agent is away.
  const std::string queued = SendNow("while you were out");
  EXPECT_EQ(GetTask(queued).status().state(), a2apb::TASK_STATE_SUBMITTED);

  // The agent comes back on another port and registers again; the queue drains.
  agent = StartAgent();
  ASSERT_TRUE(WaitForState(queued, a2apb::TASK_STATE_COMPLETED));
  EXPECT_EQ(GetTask(queued).artifacts(0).parts(0).text(), "while you were out");
  // The interrupted message was delivered again: the task is being held once more.
  ASSERT_TRUE(WaitFor([&] {
    a2apb::Task t = GetTask(held);
    return t.status().message().parts_size() > 0 &&
           absl::StrContains(t.status().message().parts(0).text(), "holding") &&
           t.history_size() >= 3;
  }));
  a2apb::CancelTaskRequest cancel;
  cancel.set_id(held);
  a2apb::Task canceled;
  ASSERT_TRUE(stub_->CancelTask(Context().get(), cancel, &canceled).ok());
  EXPECT_EQ(canceled.status().state(), a2apb::TASK_STATE_CANCELED);
}

TEST_F(GatewayTest, CancelWhileTheAgentIsDownEndsTheQueuedTask) {
  auto registry = coordinator::v1::AgentRegistry::NewStub(channel_);
  coordinator::v1::RegisterAgentRequest reg;
  reg.mutable_agent()->set_name("away");
  reg.mutable_agent()->set_endpoint("127.0.0.1:1");
  coordinator::v1::Agent agent;
  ASSERT_TRUE(registry->RegisterAgent(Context().get(), reg, &agent).ok());
  const std::string id = SendNow("anyone?", "away");
  EXPECT_EQ(GetTask(id).status().state(), a2apb::TASK_STATE_SUBMITTED);
  a2apb::CancelTaskRequest cancel;
  cancel.set_id(id);
  a2apb::Task canceled;
  ASSERT_TRUE(stub_->CancelTask(Context().get(), cancel, &canceled).ok());
  EXPECT_EQ(canceled.status().state(), a2apb::TASK_STATE_CANCELED);
}

// An agent that takes every call and fails it with a code worth retrying.
class BusyAgentService : public a2apb::A2AService::Service {
 public:
  grpc::Status SendStreamingMessage(grpc::ServerContext*, const a2apb::SendMessageRequest*,
                                    grpc::ServerWriter<a2apb::StreamResponse>*) override {
    calls_.fetch_add(1);
    return grpc::Status(grpc::StatusCode::ABORTED, "too busy, try later");
  }
  int calls() const { return calls_.load(); }

 private:
  std::atomic<int> calls_{0};
};

// Holds each execution until the test lets it go, counting how many run at once.
class OneAtATimeAgent : public agent_runtime::AgentExecutor {
 public:
  void Execute(const agent_runtime::RequestContext& request,
               agent_runtime::EventPublisher& events) override {
    (void)request;
    absl::MutexLock lock(&mu_);
    ++running_;
    ++received_;
    most_ = std::max(most_, running_);
    const int mine = received_;
    while (released_ < mine) released_cv_.Wait(&mu_);
    --running_;
    events.UpdateStatus(a2apb::TASK_STATE_COMPLETED, "done");
  }
  int received() {
    absl::MutexLock lock(&mu_);
    return received_;
  }
  int most() {
    absl::MutexLock lock(&mu_);
    return most_;
  }
  void ReleaseOne() {
    absl::MutexLock lock(&mu_);
    ++released_;
    released_cv_.SignalAll();
  }

 private:
  absl::Mutex mu_;
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  int received_ ABSL_GUARDED_BY(mu_) = 0;
  int released_ ABSL_GUARDED_BY(mu_) = 0;
  int most_ ABSL_GUARDED_BY(mu_) = 0;
  absl::CondVar released_cv_;
};

// An agent registered with max_in_flight 1 gets one message at a time, however many tasks are
// sent to it: the others wait in the queue (counted as held back) and each goes when the one in
// flight ends.
TEST_F(GatewayTest, AnAgentWithMaxInFlightGetsThatManyMessagesAtOnce) {
  OneAtATimeAgent agent_executor;
  auto agent = StartAgent("slow", &agent_executor);
  ASSERT_NE(agent, nullptr);
  auto registry = coordinator::v1::AgentRegistry::NewStub(channel_);
  coordinator::v1::RegisterAgentRequest reg;
  reg.mutable_agent()->set_name("slow");
  reg.mutable_agent()->set_endpoint(agent->endpoint());
  reg.mutable_agent()->set_max_in_flight(1);
  coordinator::v1::Agent registered;
  ASSERT_TRUE(registry->RegisterAgent(Context().get(), reg, &registered).ok());
  EXPECT_EQ(registered.max_in_flight(), 1);
  for (const int bad : {-1, 10001}) {
    reg.mutable_agent()->set_max_in_flight(bad);
    grpc::Status s = registry->RegisterAgent(Context().get(), reg, &registered);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << bad;
    EXPECT_TRUE(absl::StrContains(s.error_message(), "max_in_flight")) << s.error_message();
  }

  const uint64_t held_before = DeliveryCounter("coordinator_a2a_deliveries_held_back_total");
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(SendNow(absl::StrCat("job ", i), "slow"));
  for (int n = 1; n <= 3; ++n) {
    ASSERT_TRUE(WaitFor([&] { return agent_executor.received() == n; })) << n;
    if (n < 3) {
      // The next one was looked at and held back while this one runs.
      ASSERT_TRUE(WaitFor([&] {
        return DeliveryCounter("coordinator_a2a_deliveries_held_back_total") > held_before;
      }));
      EXPECT_EQ(agent_executor.received(), n);
    }
    agent_executor.ReleaseOne();
  }
  for (const std::string& id : ids) EXPECT_TRUE(WaitForState(id, a2apb::TASK_STATE_COMPLETED));
  EXPECT_EQ(agent_executor.most(), 1);

  // The agent registering itself again (no max_in_flight) keeps the limit; 0 lifts it.
  coordinator::v1::RegisterAgentRequest again;
  again.mutable_agent()->set_name("slow");
  again.mutable_agent()->set_endpoint(agent->endpoint());
  ASSERT_TRUE(registry->RegisterAgent(Context().get(), again, &registered).ok());
  EXPECT_EQ(registered.max_in_flight(), 1);
  again.mutable_agent()->set_max_in_flight(0);
  ASSERT_TRUE(registry->RegisterAgent(Context().get(), again, &registered).ok());
  EXPECT_FALSE(registered.max_in_flight() > 0);
}

TEST_F(GatewayTest, DeliveryToAnAgentThatFailsGivesUpAfterTheLimitAndFailsTheTask) {
  StopCoordinator();
  StartCoordinator(/*max_attempts=*/3);
  BusyAgentService busy;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&busy);
  std::unique_ptr<grpc::Server> agent = builder.BuildAndStart();
  ASSERT_NE(agent, nullptr);
  auto registry = coordinator::v1::AgentRegistry::NewStub(channel_);
  coordinator::v1::RegisterAgentRequest reg;
  reg.mutable_agent()->set_name("busy");
  reg.mutable_agent()->set_endpoint(absl::StrCat("127.0.0.1:", port));
  coordinator::v1::Agent registered;
  ASSERT_TRUE(registry->RegisterAgent(Context().get(), reg, &registered).ok());
  const std::string id = SendNow("hello?", "busy");
  ASSERT_TRUE(WaitForState(id, a2apb::TASK_STATE_FAILED));
  const a2apb::Task task = GetTask(id);
  EXPECT_TRUE(absl::StrContains(task.status().message().parts(0).text(), "after 3 attempts"))
      << task.status().message().parts(0).text();
  EXPECT_EQ(busy.calls(), 3);
  agent->Shutdown();
}

// The agent is down (nothing listens at its address) for far longer than the attempt budget
// would last: the message waits, and is delivered when the agent comes back and registers.
TEST_F(GatewayTest, AMessageWaitsForAnAgentThatIsDownLongerThanItsAttempts) {
  StopCoordinator();
  StartCoordinator(/*max_attempts=*/2);
  RegisterAway("late");
  const uint64_t waits_before = DeliveryCounter("coordinator_a2a_delivery_waits_total");
  const std::string id = SendNow("better late than never", "late");
  // Three times the budget of tries found nobody; the task waits.
  ASSERT_TRUE(WaitFor(
      [&] { return DeliveryCounter("coordinator_a2a_delivery_waits_total") >= waits_before + 6; }));
  EXPECT_EQ(GetTask(id).status().state(), a2apb::TASK_STATE_SUBMITTED);
  auto agent = StartAgent("late");
  ASSERT_TRUE(WaitForState(id, a2apb::TASK_STATE_COMPLETED));
  EXPECT_EQ(GetTask(id).artifacts(0).parts(0).text(), "better late than never");
}

// Past its time to live a message is given up, and its task says why.
TEST_F(GatewayTest, AMessageNotDeliveredWithinItsTtlFailsItsTaskSayingSo) {
  StopCoordinator();
  delivery_ttl_ = absl::Seconds(1);
  StartCoordinator();
  RegisterAway("gone");
  const std::string id = SendNow("hello?", "gone");
  ASSERT_TRUE(WaitForState(id, a2apb::TASK_STATE_FAILED));
  const std::string reason = GetTask(id).status().message().parts(0).text();
  EXPECT_TRUE(absl::StrContains(reason, "not delivered within 1s of being sent")) << reason;
  EXPECT_TRUE(absl::StrContains(reason, "nothing listened")) << reason;
}

TEST_F(GatewayTest, BadInputGetsTheSpecErrorAndChangesNothing) {
  auto agent = StartAgent();
  a2apb::SendMessageResponse response;
  ASSERT_TRUE(stub_->SendMessage(Context().get(), Send("one"), &response).ok());
  const int before = TotalTasks();

  grpc::Status s = stub_->SendMessage(Context().get(), Send("x", "nobody"), &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();

  a2apb::SendMessageRequest no_parts = Send("x");
  no_parts.mutable_message()->clear_parts();
  s = stub_->SendMessage(Context().get(), no_parts, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();

  s = stub_->SendMessage(Context().get(), Send(std::string(100 << 10, 'x')), &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();

  s = stub_->SendMessage(Context().get(), Send("x", "echo", "no-such-task"), &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Reason(s), "TASK_NOT_FOUND");

  a2apb::SendMessageResponse asked;
  ASSERT_TRUE(stub_->SendMessage(Context().get(), Send("ask"), &asked).ok());
  const int with_asked = TotalTasks();
  const a2apb::Task asked_before = GetTask(asked.task().id());
  a2apb::SendMessageRequest mismatched = Send("x", "echo", asked.task().id());
  mismatched.mutable_message()->set_context_id("another-context");
  s = stub_->SendMessage(Context().get(), mismatched, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_EQ(GetTask(asked.task().id()).history_size(), asked_before.history_size());

  a2apb::ListTasksRequest list;
  list.set_page_token("bm90LWEtdG9rZW4");
  a2apb::ListTasksResponse tasks;
  s = stub_->ListTasks(Context().get(), list, &tasks);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // A real token, but from another listing (push configs of a task).
  auto registry = coordinator::v1::AgentRegistry::NewStub(channel_);
  coordinator::v1::ListAgentsRequest agents_request;
  agents_request.set_page_size(1);
  coordinator::v1::RegisterAgentRequest reg;
  reg.mutable_agent()->set_name("zeta");
  reg.mutable_agent()->set_endpoint("127.0.0.1:1");
  coordinator::v1::Agent registered;
  ASSERT_TRUE(registry->RegisterAgent(Context().get(), reg, &registered).ok());
  coordinator::v1::ListAgentsResponse agents_page;
  ASSERT_TRUE(registry->ListAgents(Context().get(), agents_request, &agents_page).ok());
  ASSERT_FALSE(agents_page.next_page_token().empty());
  list.set_page_token(agents_page.next_page_token());
  s = stub_->ListTasks(Context().get(), list, &tasks);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  auto old_version = std::make_unique<grpc::ClientContext>();
  old_version->AddMetadata(a2a_protocol::kVersionHeader, "0.3");
  s = stub_->SendMessage(old_version.get(), Send("x"), &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(Reason(s), "VERSION_NOT_SUPPORTED");

  a2apb::GetTaskRequest missing;
  missing.set_id("no-such-task");
  a2apb::Task task;
  s = stub_->GetTask(Context().get(), missing, &task);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Reason(s), "TASK_NOT_FOUND");

  EXPECT_EQ(TotalTasks(), with_asked);
  EXPECT_EQ(with_asked, before + 1);
}

TEST_F(GatewayTest, TasksSurviveACoordinatorRestart) {
  auto agent = StartAgent();
  a2apb::SendMessageResponse response;
  ASSERT_TRUE(stub_->SendMessage(Context().get(), Send("durable"), &response).ok());
  agent->Shutdown(absl::ZeroDuration());
  StopCoordinator();
  StartCoordinator();
  const a2apb::Task task = GetTask(response.task().id());
  EXPECT_EQ(task.status().state(), a2apb::TASK_STATE_COMPLETED);
  EXPECT_EQ(task.artifacts(0).parts(0).text(), "durable");
}

TEST_F(GatewayTest, AgentCardListsOneInterfacePerAgent) {
  auto agent = StartAgent();
  absl::StatusOr<std::string> json = a2a_http::HttpGet(
      "http://127.0.0.1:" + std::to_string(server_->http_port()) + "/.well-known/agent-card.json",
      absl::Seconds(10));
  ASSERT_OK(json);
  EXPECT_TRUE(absl::StrContains(*json, "\"supportedInterfaces\"")) << *json;
  EXPECT_TRUE(absl::StrContains(*json, "\"tenant\":\"echo\"")) << *json;
  EXPECT_TRUE(absl::StrContains(*json, "\"protocolBinding\":\"GRPC\"")) << *json;
  EXPECT_TRUE(absl::StrContains(*json, server_->address())) << *json;
}

TEST_F(GatewayTest, StatusChangesArePostedToWebhooksWithTheToken) {
  httplib::Server hook;
  absl::Mutex mu;
  std::vector<std::string> bodies;
  std::vector<std::string> tokens;
  int failures_left = 1;  // the first call fails: it must be retried
  hook.Post("/hook", [&](const httplib::Request& req, httplib::Response& res) {
    absl::MutexLock lock(&mu);
    if (failures_left > 0) {
      --failures_left;
      res.status = 503;
      return;
    }
    bodies.push_back(req.body);
    tokens.push_back(req.get_header_value("X-A2A-Notification-Token"));
    res.status = 200;
  });
  const int port = hook.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread hook_thread([&] { hook.listen_after_bind(); });

  auto agent = StartAgent();
  a2apb::SendMessageRequest request = Send("notify me");
  a2apb::TaskPushNotificationConfig* config =
      request.mutable_configuration()->mutable_task_push_notification_config();
  config->set_url("http://127.0.0.1:" + std::to_string(port) + "/hook");
  config->set_token("tok-123");
  a2apb::SendMessageResponse response;
  ASSERT_TRUE(stub_->SendMessage(Context().get(), request, &response).ok());
  ASSERT_EQ(response.task().status().state(), a2apb::TASK_STATE_COMPLETED);

  const bool got_completed = WaitFor([&] {
    absl::MutexLock lock(&mu);
    for (const std::string& b : bodies) {
      if (absl::StrContains(b, "TASK_STATE_COMPLETED")) return true;
    }
    return false;
  });
  hook.stop();
  hook_thread.join();
  ASSERT_TRUE(got_completed);
  absl::MutexLock lock(&mu);
  for (const std::string& t : tokens) EXPECT_EQ(t, "tok-123");
  EXPECT_TRUE(absl::StrContains(bodies.back(), "statusUpdate")) << bodies.back();

  a2apb::ListTaskPushNotificationConfigsRequest list;
  list.set_task_id(response.task().id());
  a2apb::ListTaskPushNotificationConfigsResponse configs;
  ASSERT_TRUE(stub_->ListTaskPushNotificationConfigs(Context().get(), list, &configs).ok());
  ASSERT_EQ(configs.configs_size(), 1);
  EXPECT_EQ(configs.configs(0).token(), "tok-123");
}

// A push config created by a 0.3 call (here 0.3's gRPC service) is posted in 0.3: the Task in
// 0.3's JSON, as application/json, with the token.
TEST_F(GatewayTest, AConfigCreatedOver03IsPostedTheTaskIn03Json) {
  httplib::Server hook;
  absl::Mutex mu;
  std::vector<std::string> bodies;
  std::vector<std::string> types;
  std::vector<std::string> tokens;
  hook.Post("/hook03", [&](const httplib::Request& req, httplib::Response& res) {
    absl::MutexLock lock(&mu);
    bodies.push_back(req.body);
    types.push_back(req.get_header_value("Content-Type"));
    tokens.push_back(req.get_header_value("X-A2A-Notification-Token"));
    res.status = 200;
  });
  const int port = hook.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread hook_thread([&] { hook.listen_after_bind(); });

  auto agent = StartAgent();
  auto v03 = ::a2a::v1::A2AService::NewStub(channel_);
  ::a2a::v1::SendMessageRequest request;
  request.mutable_request()->set_message_id("m-03-push");
  request.mutable_request()->set_role(::a2a::v1::ROLE_USER);
  request.mutable_request()->add_content()->set_text("notify me in 0.3");
  request.mutable_configuration()->set_blocking(true);
  ::a2a::v1::PushNotificationConfig* config =
      request.mutable_configuration()->mutable_push_notification();
  config->set_url("http://127.0.0.1:" + std::to_string(port) + "/hook03");
  config->set_token("tok-03");
  ::a2a::v1::SendMessageResponse response;
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  context.AddMetadata("coordinator-tenant", "echo");
  const grpc::Status s = v03->SendMessage(&context, request, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(response.task().status().state(), ::a2a::v1::TASK_STATE_COMPLETED);

  const bool got_completed = WaitFor([&] {
    absl::MutexLock lock(&mu);
    for (const std::string& b : bodies) {
      if (absl::StrContains(b, R"("state":"completed")")) return true;
    }
    return false;
  });
  hook.stop();
  hook_thread.join();
  ASSERT_TRUE(got_completed);
  absl::MutexLock lock(&mu);
  for (size_t i = 0; i < bodies.size(); ++i) {
    EXPECT_TRUE(absl::StrContains(bodies[i], R"("kind":"task")")) << bodies[i];
    EXPECT_TRUE(absl::StrContains(bodies[i], response.task().id())) << bodies[i];
    EXPECT_FALSE(absl::StrContains(bodies[i], "statusUpdate")) << bodies[i];
    EXPECT_EQ(types[i], "application/json");
    EXPECT_EQ(tokens[i], "tok-03");
  }
}

// A2A makes `tenant` optional: a generic client sends none. With one agent registered it gets
// that agent; with several, a clear refusal naming them; a task it already has is reachable
// without a tenant whatever the number of agents.
TEST_F(GatewayTest, ASendWithoutTenantGoesToTheOnlyAgent) {
  a2apb::SendMessageResponse response;
  grpc::Status s = stub_->SendMessage(Context().get(), Send("anyone?", ""), &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << s.error_message();
  EXPECT_TRUE(absl::StrContains(s.error_message(), "no agent is registered")) << s.error_message();
  EXPECT_EQ(TotalTasks(), 0);

  auto agent = StartAgent();
  s = stub_->SendMessage(Context().get(), Send("no tenant", ""), &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(response.task().status().state(), a2apb::TASK_STATE_COMPLETED);
  EXPECT_EQ(response.task().artifacts(0).parts(0).text(), "no tenant");
  EXPECT_EQ(TotalTasks("echo"), 1);

  auto context = Context();
  auto reader = stub_->SendStreamingMessage(context.get(), Send("streamed, no tenant", ""));
  a2apb::StreamResponse event;
  ASSERT_TRUE(reader->Read(&event));
  ASSERT_TRUE(event.has_task());
  // The opening task may already be the whole answer when the echo was quicker than the
  // stream's start; otherwise the last status update carries the end.
  a2apb::TaskState state = event.task().status().state();
  while (reader->Read(&event)) {
    if (event.has_status_update()) state = event.status_update().status().state();
  }
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_EQ(state, a2apb::TASK_STATE_COMPLETED);
  EXPECT_EQ(TotalTasks("echo"), 2);

  // A second agent: a new task needs a choice, and the refusal says how to make it.
  a2apb::SendMessageResponse asked;
  ASSERT_TRUE(stub_->SendMessage(Context().get(), Send("ask"), &asked).ok());
  ASSERT_EQ(asked.task().status().state(), a2apb::TASK_STATE_INPUT_REQUIRED);
  RegisterAway("zeta");
  const int before = TotalTasks();
  s = stub_->SendMessage(Context().get(), Send("which one?", ""), &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_TRUE(absl::StrContains(s.error_message(), "2 agents are registered: echo, zeta"))
      << s.error_message();
  EXPECT_TRUE(absl::StrContains(s.error_message(), "--default_agent")) << s.error_message();
  auto refused_context = Context();
  auto refused = stub_->SendStreamingMessage(refused_context.get(), Send("which one?", ""));
  while (refused->Read(&event)) {
  }
  EXPECT_EQ(refused->Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(TotalTasks(), before);

  // The task it has goes on without a tenant (it belongs to its agent), and reads need none.
  a2apb::SendMessageRequest reply = Send("the answer", "", asked.task().id());
  s = stub_->SendMessage(Context().get(), reply, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(response.task().status().state(), a2apb::TASK_STATE_COMPLETED);
  EXPECT_EQ(response.task().status().message().parts(0).text(), "echo: the answer");
  EXPECT_EQ(GetTask(asked.task().id()).status().state(), a2apb::TASK_STATE_COMPLETED);
  EXPECT_EQ(TotalTasks(), before);
}

TEST_F(GatewayTest, ADefaultAgentTakesSendsWithoutTenant) {
  StopCoordinator();
  StartCoordinator(/*max_attempts=*/1000, /*default_agent=*/"echo");
  RegisterAway("zeta");
  // Named but not registered (yet): NOT_FOUND naming it, nothing stored.
  a2apb::SendMessageResponse response;
  grpc::Status s = stub_->SendMessage(Context().get(), Send("early", ""), &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
  EXPECT_TRUE(absl::StrContains(s.error_message(), "default agent echo (--default_agent)"))
      << s.error_message();
  EXPECT_EQ(TotalTasks(), 0);

  auto agent = StartAgent();
  s = stub_->SendMessage(Context().get(), Send("to the default", ""), &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(response.task().artifacts(0).parts(0).text(), "to the default");
  EXPECT_EQ(TotalTasks("echo"), 1);
  // A tenant still names its agent.
  SendNow("to zeta", "zeta");
  EXPECT_EQ(TotalTasks("zeta"), 1);
  EXPECT_EQ(TotalTasks(), 2);
}

TEST_F(GatewayTest, HostileTenantsAreRefusedClearlyAndChangeNothing) {
  auto agent = StartAgent();
  a2apb::SendMessageResponse response;
  ASSERT_TRUE(stub_->SendMessage(Context().get(), Send("one"), &response).ok());
  const int before = TotalTasks();
  struct Case {
    std::string tenant;
    grpc::StatusCode code;
  };
  const std::vector<Case> cases = {
      {std::string(257, 'e'), grpc::StatusCode::INVALID_ARGUMENT},
      {std::string(1 << 20, 'e'), grpc::StatusCode::INVALID_ARGUMENT},
      {std::string("ec\0ho", 5), grpc::StatusCode::INVALID_ARGUMENT},
      {"echo\n", grpc::StatusCode::INVALID_ARGUMENT},
      {"echo\x7f", grpc::StatusCode::INVALID_ARGUMENT},
      {" echo", grpc::StatusCode::NOT_FOUND},
      {"ECHO", grpc::StatusCode::NOT_FOUND},
      {"../echo", grpc::StatusCode::NOT_FOUND},
  };
  for (const Case& c : cases) {
    grpc::Status s = stub_->SendMessage(Context().get(), Send("x", c.tenant), &response);
    EXPECT_EQ(s.error_code(), c.code) << c.tenant.size() << ": " << s.error_message();
    EXPECT_LT(s.error_message().size(), 400u) << s.error_message().substr(0, 400);
    auto context = Context();
    auto reader = stub_->SendStreamingMessage(context.get(), Send("x", c.tenant));
    a2apb::StreamResponse event;
    EXPECT_FALSE(reader->Read(&event));
    EXPECT_EQ(reader->Finish().error_code(), c.code) << c.tenant.size();
  }
  // A tenant that is not UTF-8 does not even parse as a request.
  grpc::Status s = stub_->SendMessage(Context().get(), Send("x", "\xff\xfe"), &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_EQ(TotalTasks(), before);
}

// A2A 3.1.10: deleting a push config is idempotent; the task must exist.
TEST_F(GatewayTest, DeletingAPushConfigTwiceIsOkButTheTaskMustExist) {
  RegisterAway("away");
  const std::string id = SendNow("held", "away");
  a2apb::TaskPushNotificationConfig config;
  config.set_task_id(id);
  config.set_url("http://127.0.0.1:9/hook");
  a2apb::TaskPushNotificationConfig created;
  grpc::Status s = stub_->CreateTaskPushNotificationConfig(Context().get(), config, &created);
  ASSERT_TRUE(s.ok()) << s.error_message();

  a2apb::DeleteTaskPushNotificationConfigRequest del;
  del.set_task_id(id);
  del.set_id(created.id());
  google::protobuf::Empty empty;
  for (int i = 0; i < 2; ++i) {
    s = stub_->DeleteTaskPushNotificationConfig(Context().get(), del, &empty);
    EXPECT_TRUE(s.ok()) << i << ": " << s.error_message();
  }
  del.set_id("never-created");
  s = stub_->DeleteTaskPushNotificationConfig(Context().get(), del, &empty);
  EXPECT_TRUE(s.ok()) << s.error_message();
  a2apb::GetTaskPushNotificationConfigRequest get;
  get.set_task_id(id);
  get.set_id(created.id());
  a2apb::TaskPushNotificationConfig read;
  EXPECT_EQ(stub_->GetTaskPushNotificationConfig(Context().get(), get, &read).error_code(),
            grpc::StatusCode::NOT_FOUND);

  del.set_task_id("no-such-task");
  s = stub_->DeleteTaskPushNotificationConfig(Context().get(), del, &empty);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Reason(s), "TASK_NOT_FOUND");
  del.set_task_id(id);
  del.set_tenant("someone-else");
  s = stub_->DeleteTaskPushNotificationConfig(Context().get(), del, &empty);
  EXPECT_EQ(Reason(s), "TASK_NOT_FOUND");
  del.set_tenant("");
  del.set_id(std::string(300, 'x'));
  s = stub_->DeleteTaskPushNotificationConfig(Context().get(), del, &empty);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

}  // namespace
}  // namespace coordinator
