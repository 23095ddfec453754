// The gateway's two ways to a delivery thread, in process on its own store: a message handed
// straight from SendMessage (A2AGateway::Accepted, Dispatch) and the queue scan. Each message
// reaches its agent once, and the messages of one task reach it one at a time, in order.
// No sleeps in the test itself: every wait polls with a bound.
#include <memory>
#include <string>
#include <vector>

#include "a2a/v1/a2a.grpc.pb.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "agent_runtime/agent_runtime.h"
#include "coordinator/a2a/gateway.h"
#include "coordinator/store/a2a/agent_registry.h"
#include "coordinator/store/a2a/delivery_queue.h"
#include "coordinator/store/a2a/notifier.h"
#include "coordinator/store/a2a/push.h"
#include "coordinator/store/a2a/tasks.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "storage/rocks_store.h"
#include "storage/testing/test_store.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

using ::testing_util::kWait;
using testing_util::TempDir;
using ::testing_util::WaitFor;

// Records every message it gets. "done" completes the task, "hold" works until canceled,
// "gate" works until the test opens the gate; everything else asks for input, so the task
// takes more messages.
class RecordingAgent : public agent_runtime::AgentExecutor {
 public:
  void Execute(const agent_runtime::RequestContext& request,
               agent_runtime::EventPublisher& events) override {
    const std::string text = request.message.parts(0).text();
    {
      absl::MutexLock lock(&mu_);
      texts_.push_back(text);
    }
    events.UpdateStatus(a2apb::TASK_STATE_WORKING);
    if (text == "hold") {
      while (!events.WaitCancelled(absl::Milliseconds(50))) {
      }
      return;
    }
    if (text == "gate") {
      while (!gate_.WaitForNotificationWithTimeout(absl::Milliseconds(50)) && !events.cancelled()) {
      }
    }
    events.UpdateStatus(
        text == "done" ? a2apb::TASK_STATE_COMPLETED : a2apb::TASK_STATE_INPUT_REQUIRED, text);
  }

  void OpenGate() { gate_.Notify(); }

  std::vector<std::string> texts() {
    absl::MutexLock lock(&mu_);
    return texts_;
  }

 private:
  absl::Notification gate_;
  absl::Mutex mu_;
  std::vector<std::string> texts_;
};

class DeliveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<storage::Store>> store =
        storage::testing::OpenTestStore(dir_.Sub("db"));
    ASSERT_OK(store);
    store_ = *std::move(store);
    tasks_ = std::make_unique<A2ATasks>(store_.get(), &notifier_, Limits());
    deliveries_ = std::make_unique<A2ADeliveryQueue>(store_.get(), &notifier_);
    push_ = std::make_unique<A2APush>(store_.get(), Limits());
    agents_ = std::make_unique<AgentRegistryStore>(store_.get());
    GatewayOptions options;
    options.initial_backoff = absl::Milliseconds(20);
    options.max_backoff = absl::Milliseconds(100);
    options.delivery_threads = 4;
    gateway_ = std::make_unique<A2AGateway>(tasks_.get(), deliveries_.get(), push_.get(),
                                            agents_.get(), &notifier_, options);
    gateway_->Start();
    agent_runtime::RuntimeOptions agent_options;
    agent_options.name = "rec";
    absl::StatusOr<std::unique_ptr<agent_runtime::AgentServer>> agent =
        agent_runtime::AgentServer::Start(agent_options, &recorder_);
    ASSERT_OK(agent);
    agent_ = *std::move(agent);
    v1::Agent registration;
    registration.set_name("rec");
    registration.set_endpoint(agent_->endpoint());
    ASSERT_OK(agents_->Register(registration));
  }

  void TearDown() override {
    if (gateway_ != nullptr) gateway_->Stop();
    if (agent_ != nullptr) agent_->Shutdown();
  }

  // Stores a client's message as SendMessage does and hands it to the gateway.
  A2ATasks::Change Send(const std::string& text, const std::string& task_id = "") {
    static int counter = 0;
    a2apb::Message m;
    m.set_message_id("m" + std::to_string(++counter));
    m.set_role(a2apb::ROLE_USER);
    m.set_task_id(task_id);
    m.add_parts()->set_text(text);
    absl::StatusOr<A2ATasks::Change> change = tasks_->AcceptMessage("rec", m);
    EXPECT_OK(change);
    if (!change.ok()) return {};
    gateway_->Accepted(*change);
    return *std::move(change);
  }

  a2apb::TaskState State(const std::string& id) {
    absl::StatusOr<v1::StoredTask> header = tasks_->GetHeader(id);
    return header.ok() ? header->task().status().state() : a2apb::TASK_STATE_UNSPECIFIED;
  }

  bool Queued(const std::string& id, int64_t seq) { return deliveries_->GetDelivery(id, seq).ok(); }

  TempDir dir_;
  TaskNotifier notifier_;
  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<A2ATasks> tasks_;
  std::unique_ptr<A2ADeliveryQueue> deliveries_;
  std::unique_ptr<A2APush> push_;
  std::unique_ptr<AgentRegistryStore> agents_;
  std::unique_ptr<A2AGateway> gateway_;
  RecordingAgent recorder_;
  std::unique_ptr<agent_runtime::AgentServer> agent_;
};

TEST_F(DeliveryTest, AHandedOffDeliveryIsNotSentAgainByAStaleViewOfTheQueue) {
  const A2ATasks::Change first = Send("ask");
  const std::string id = first.header.task().id();
  ASSERT_EQ(first.queued_delivery_seq, 1);
  ASSERT_TRUE(WaitFor([&] { return State(id) == a2apb::TASK_STATE_INPUT_REQUIRED; }));
  ASSERT_TRUE(WaitFor([&] { return !Queued(id, 1); }));
  // What a queue scan that read the queue before the delivery was done still holds: the task
  // waits for input (not ended), so a delivery thread taking this view at its word would send
  // the message to the agent again.
  v1::PendingDelivery stale;
  stale.set_task_id(id);
  stale.set_tenant("rec");
  stale.set_history_seq(1);
  ASSERT_TRUE(WaitFor([&] { return gateway_->Dispatch(stale); }));
  // The follow-up goes to the agent only after that stale delivery's thread is done with the
  // task (one delivery per task at a time), so once it is answered the agent has had its say.
  const A2ATasks::Change second = Send("done", id);
  ASSERT_EQ(second.queued_delivery_seq, 3);  // after the agent's question
  ASSERT_TRUE(WaitFor([&] { return State(id) == a2apb::TASK_STATE_COMPLETED; }));
  EXPECT_EQ(recorder_.texts(), (std::vector<std::string>{"ask", "done"}));
  ASSERT_TRUE(WaitFor([&] { return !Queued(id, 3); }));
  absl::StatusOr<v1::StoredTask> header = tasks_->GetHeader(id);
  ASSERT_OK(header);
  EXPECT_EQ(header->pending_deliveries(), 0);
}

// A delivery the queue scan finds reads its message back from the store; one handed off from the
// acceptance sends the message as the acceptance holds it (its Change), without reading it back.
// The held copy is altered here in memory only, so what reaches the agent shows which was sent.
TEST_F(DeliveryTest, AHandedOffDeliverySendsTheMessageTheAcceptanceHolds) {
  int sent = 0;
  auto message = [&sent](const std::string& text) {
    a2apb::Message m;
    m.set_message_id(absl::StrCat("id-", text, "-", ++sent));
    m.set_role(a2apb::ROLE_USER);
    m.add_parts()->set_text(text);
    return m;
  };
  absl::StatusOr<A2ATasks::Change> scanned = tasks_->AcceptMessage("rec", message("stored"));
  ASSERT_OK(scanned);
  gateway_->Kick();  // not handed off: the scan takes it
  ASSERT_TRUE(WaitFor([&] { return recorder_.texts().size() == 1; }));
  // The scan is idle now (it wakes each second or when kicked): the hand-off below is first.
  absl::StatusOr<A2ATasks::Change> change = tasks_->AcceptMessage("rec", message("stored"));
  ASSERT_OK(change);
  const std::string id = change->header.task().id();
  // The change carries the message as stored: with the task's ids.
  EXPECT_EQ(change->queued_message.message_id(), "id-stored-2");
  EXPECT_EQ(change->queued_message.task_id(), id);
  EXPECT_EQ(change->queued_message.context_id(), change->header.task().context_id());
  A2ATasks::Change held = *std::move(change);
  held.queued_message.mutable_parts(0)->set_text("held");
  gateway_->Accepted(held);
  ASSERT_TRUE(WaitFor([&] { return State(id) == a2apb::TASK_STATE_INPUT_REQUIRED; }));
  EXPECT_EQ(recorder_.texts(), (std::vector<std::string>{"stored", "held"}));
  EXPECT_EQ(State(scanned->header.task().id()), a2apb::TASK_STATE_INPUT_REQUIRED);
}

TEST_F(DeliveryTest, ATaskInFlightIsNotDispatchedTwice) {
  const A2ATasks::Change change = Send("hold");
  const std::string id = change.header.task().id();
  ASSERT_TRUE(WaitFor([&] { return State(id) == a2apb::TASK_STATE_WORKING; }));
  v1::PendingDelivery again;
  again.set_task_id(id);
  again.set_tenant("rec");
  again.set_history_seq(1);
  EXPECT_FALSE(gateway_->Dispatch(again));
  a2apb::CancelTaskRequest cancel;
  cancel.set_id(id);
  ASSERT_OK(gateway_->CancelTask(cancel));
  ASSERT_TRUE(WaitFor([&] { return State(id) == a2apb::TASK_STATE_CANCELED; }));
  ASSERT_TRUE(WaitFor([&] { return !Queued(id, 1); }));
  EXPECT_EQ(recorder_.texts(), (std::vector<std::string>{"hold"}));
}

TEST_F(DeliveryTest, MessagesQueuedBehindOneAtTheAgentFollowItInOrder) {
  const A2ATasks::Change first = Send("gate");
  const std::string id = first.header.task().id();
  ASSERT_TRUE(WaitFor([&] { return recorder_.texts().size() == 1; }));
  // Sent while "gate" is at the agent: not handed off (the task is in flight or has a message
  // queued before them), so they wait for the queue scan, which keeps them in order.
  const A2ATasks::Change a = Send("a", id);
  const A2ATasks::Change b = Send("b", id);
  EXPECT_EQ(a.header.pending_deliveries(), 2);
  EXPECT_EQ(b.header.pending_deliveries(), 3);
  recorder_.OpenGate();
  ASSERT_TRUE(WaitFor([&] { return recorder_.texts().size() == 3 && !Queued(id, 3); }));
  EXPECT_EQ(recorder_.texts(), (std::vector<std::string>{"gate", "a", "b"}));
  EXPECT_EQ(State(id), a2apb::TASK_STATE_INPUT_REQUIRED);
}

// The active part can be switched any number of times (a replica that loses and wins the
// election again, docs/storage.md). Passive, a message stays queued whatever asks for it; once
// active, the queue scan sends it.
TEST_F(DeliveryTest, APassiveGatewaySendsNothingAndTheQueuedMessageGoesOnceActive) {
  gateway_->SetActive(false);
  gateway_->SetActive(false);  // already passive: nothing to do
  EXPECT_FALSE(gateway_->active());
  const A2ATasks::Change change = Send("done");  // Accepted: refused a delivery thread
  const std::string id = change.header.task().id();
  v1::PendingDelivery delivery;
  delivery.set_task_id(id);
  delivery.set_tenant("rec");
  delivery.set_history_seq(1);
  EXPECT_FALSE(gateway_->Dispatch(delivery));
  gateway_->Kick();
  gateway_->AgentRegistered("rec");  // store work only; sends nothing either
  EXPECT_TRUE(Queued(id, 1));
  EXPECT_TRUE(recorder_.texts().empty());

  gateway_->SetActive(true);
  gateway_->SetActive(true);  // already active
  EXPECT_TRUE(gateway_->active());
  ASSERT_TRUE(WaitFor([&] { return State(id) == a2apb::TASK_STATE_COMPLETED && !Queued(id, 1); }));
  EXPECT_EQ(recorder_.texts(), (std::vector<std::string>{"done"}));

  // And once more, passive then active: still one gateway, working.
  gateway_->SetActive(false);
  gateway_->SetActive(true);
  const A2ATasks::Change next = Send("done");
  ASSERT_TRUE(
      WaitFor([&] { return State(next.header.task().id()) == a2apb::TASK_STATE_COMPLETED; }));
  EXPECT_EQ(recorder_.texts(), (std::vector<std::string>{"done", "done"}));

  // After Stop nothing turns it on again.
  gateway_->Stop();
  gateway_->SetActive(true);
  EXPECT_FALSE(gateway_->active());
}

// Turning passive while the agent works on a message: SetActive(false) returns only once the
// call is cancelled ("hold" holds until then, so a call left running would hang this test), and
// the message stays queued with no attempt counted against it. Active again, the gateway takes
// it up again: this agent runtime keeps no tasks to read back, so the message goes again.
TEST_F(DeliveryTest, TurningPassiveMidDeliveryCancelsTheCallAndTheMessageStaysQueued) {
  const A2ATasks::Change change = Send("hold");
  const std::string id = change.header.task().id();
  ASSERT_TRUE(WaitFor([&] { return State(id) == a2apb::TASK_STATE_WORKING; }));
  ASSERT_EQ(recorder_.texts(), (std::vector<std::string>{"hold"}));

  gateway_->SetActive(false);
  absl::StatusOr<v1::PendingDelivery> queued = deliveries_->GetDelivery(id, 1);
  ASSERT_OK(queued);
  EXPECT_EQ(queued->attempts(), 0);
  EXPECT_EQ(State(id), a2apb::TASK_STATE_WORKING);
  EXPECT_EQ(recorder_.texts(), (std::vector<std::string>{"hold"}));

  gateway_->SetActive(true);
  ASSERT_TRUE(WaitFor([&] { return recorder_.texts().size() == 2; }));
  EXPECT_EQ(recorder_.texts(), (std::vector<std::string>{"hold", "hold"}));
  EXPECT_TRUE(Queued(id, 1));
}

// An agent that answers in one go: INPUT_REQUIRED, then (against the protocol) 300 artifact
// chunks after it, all written at once, so many wait in the gateway while it stores the first.
class RudeAgent : public a2apb::A2AService::Service {
 public:
  grpc::Status SendStreamingMessage(grpc::ServerContext* context,
                                    const a2apb::SendMessageRequest* request,
                                    grpc::ServerWriter<a2apb::StreamResponse>* writer) override {
    (void)request;
    a2apb::StreamResponse asked;
    asked.mutable_status_update()->mutable_status()->set_state(a2apb::TASK_STATE_INPUT_REQUIRED);
    if (!writer->Write(asked)) return grpc::Status::OK;
    for (int i = 0; i < 300 && !context->IsCancelled(); ++i) {
      a2apb::StreamResponse chunk;
      chunk.mutable_artifact_update()->mutable_artifact()->set_artifact_id("late");
      chunk.mutable_artifact_update()->mutable_artifact()->add_parts()->set_text("x");
      chunk.mutable_artifact_update()->set_append(i > 0);
      if (!writer->Write(chunk)) break;
    }
    return grpc::Status::OK;
  }
};

TEST_F(DeliveryTest, NothingAfterTheEventThatEndsTheTurnIsStored) {
  RudeAgent rude;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&rude);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  v1::Agent registration;
  registration.set_name("rude");
  registration.set_endpoint("127.0.0.1:" + std::to_string(port));
  ASSERT_OK(agents_->Register(registration));
  a2apb::Message m;
  m.set_message_id("rude-1");
  m.set_role(a2apb::ROLE_USER);
  m.add_parts()->set_text("hello");
  absl::StatusOr<A2ATasks::Change> change = tasks_->AcceptMessage("rude", m);
  ASSERT_OK(change);
  gateway_->Accepted(*change);
  const std::string id = change->header.task().id();
  // The delivery ends (it does not wait for the rest of the stream) and leaves the queue.
  ASSERT_TRUE(WaitFor([&] { return !Queued(id, 1); }));
  absl::StatusOr<a2apb::Task> task = tasks_->GetTask("", id, std::nullopt);
  ASSERT_OK(task);
  EXPECT_EQ(task->status().state(), a2apb::TASK_STATE_INPUT_REQUIRED);
  EXPECT_EQ(task->artifacts_size(), 0);
  absl::StatusOr<std::vector<v1::StoredEvent>> events = tasks_->ReadEvents(id, 0, 1000);
  ASSERT_OK(events);
  EXPECT_EQ(events->size(), 2u);  // SUBMITTED, INPUT_REQUIRED
  gateway_->Stop();               // ends with the rest of the stream unread: must not hang
  server->Shutdown();
}

}  // namespace
}  // namespace coordinator
