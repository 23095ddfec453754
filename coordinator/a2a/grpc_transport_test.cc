// The gRPC transport against a scripted agent served in this process: how an answer's opening
// burst is gathered (TakeOpening), and the unary SendMessage for an agent without streaming.
#include "coordinator/a2a/grpc_transport.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "a2a/v0_3/a2a.grpc.pb.h"
#include "a2a/v1/a2a.grpc.pb.h"
#include "a2a_protocol/errors.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace coordinator {
namespace {

a2apb::StreamResponse Opening() {
  a2apb::StreamResponse e;
  e.mutable_task()->set_id("agent-task");
  e.mutable_task()->mutable_status()->set_state(a2apb::TASK_STATE_SUBMITTED);
  return e;
}

a2apb::StreamResponse Status(a2apb::TaskState state) {
  a2apb::StreamResponse e;
  e.mutable_status_update()->set_task_id("agent-task");
  e.mutable_status_update()->mutable_status()->set_state(state);
  return e;
}

// Writes `before_gate`, then waits for the gate, then writes `after_gate` and ends the stream.
// Without streaming (`streams` false) it answers SendStreamingMessage with UNIMPLEMENTED and
// SendMessage with a completed task.
class ScriptedAgent final : public a2apb::A2AService::Service {
 public:
  ScriptedAgent(std::vector<a2apb::StreamResponse> before_gate,
                std::vector<a2apb::StreamResponse> after_gate, bool streams = true)
      : before_gate_(std::move(before_gate)),
        after_gate_(std::move(after_gate)),
        streams_(streams) {}

  grpc::Status SendStreamingMessage(grpc::ServerContext* context,
                                    const a2apb::SendMessageRequest* request,
                                    grpc::ServerWriter<a2apb::StreamResponse>* writer) override {
    (void)request;
    if (!streams_) return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "no streaming here");
    for (const a2apb::StreamResponse& e : before_gate_) writer->Write(e);
    {
      absl::MutexLock lock(&mu_);
      if (!wrote_before_gate_.HasBeenNotified()) wrote_before_gate_.Notify();
    }
    while (!gate_.WaitForNotificationWithTimeout(absl::Milliseconds(50))) {
      if (context->IsCancelled()) return grpc::Status::CANCELLED;
    }
    for (const a2apb::StreamResponse& e : after_gate_) writer->Write(e);
    return grpc::Status::OK;
  }

  grpc::Status SendMessage(grpc::ServerContext* context, const a2apb::SendMessageRequest* request,
                           a2apb::SendMessageResponse* response) override {
    (void)context;
    (void)request;
    unary_calls_.fetch_add(1);
    response->mutable_task()->set_id("agent-task");
    response->mutable_task()->mutable_status()->set_state(a2apb::TASK_STATE_COMPLETED);
    return grpc::Status::OK;
  }

  absl::Notification& wrote_before_gate() { return wrote_before_gate_; }
  void Open() {
    absl::MutexLock lock(&mu_);
    if (!gate_.HasBeenNotified()) gate_.Notify();
  }
  int unary_calls() const { return unary_calls_.load(); }

 private:
  const std::vector<a2apb::StreamResponse> before_gate_;
  const std::vector<a2apb::StreamResponse> after_gate_;
  const bool streams_;
  absl::Mutex mu_;  // makes each Notify once, whoever comes first
  absl::Notification wrote_before_gate_;
  absl::Notification gate_;
  std::atomic<int> unary_calls_{0};
};

bool Holds(const a2apb::StreamResponse& e) {
  return e.has_task() && e.task().status().state() == a2apb::TASK_STATE_SUBMITTED;
}

bool Ends(const a2apb::StreamResponse& e) {
  return e.has_status_update() && e.status_update().status().state() == a2apb::TASK_STATE_COMPLETED;
}

// Holds, counting in `seen` the times it was asked about an opening that holds: how a test
// knows that the opening reached the reader, which asks on its arrival.
std::function<bool(const a2apb::StreamResponse&)> WatchedHolds(std::atomic<int>* seen) {
  return [seen](const a2apb::StreamResponse& e) {
    const bool holds = Holds(e);
    if (holds) ++*seen;
    return holds;
  };
}

class GrpcTransportTest : public testing::Test {
 protected:
  void Serve(std::unique_ptr<ScriptedAgent> agent) {
    agent_ = std::move(agent);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(agent_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    transport_ = std::make_unique<GrpcAgentTransport>(
        NewAgentChannel("127.0.0.1:" + std::to_string(port)), "");
  }

  // An agent that opens with its snapshot, waits for the gate, then works and completes.
  void ServeOpeningThenTurn() {
    Serve(std::make_unique<ScriptedAgent>(
        std::vector<a2apb::StreamResponse>{Opening()},
        std::vector<a2apb::StreamResponse>{Status(a2apb::TASK_STATE_WORKING),
                                           Status(a2apb::TASK_STATE_COMPLETED)}));
  }

  // WhenOpening whose callback takes what waits into `burst`, then notifies `ready`.
  static bool TakeWhenOpened(AgentCall& call, std::vector<a2apb::StreamResponse>* burst,
                             absl::Notification* ready) {
    return call.WhenOpening(Holds, Ends, [&call, burst, ready] {
      call.Take(burst, absl::InfinitePast());
      ready->Notify();
    });
  }

  void TearDown() override {
    if (agent_ != nullptr) agent_->Open();
    if (server_ != nullptr) server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
  }

  std::unique_ptr<AgentCall> Send() {
    a2apb::SendMessageRequest request;
    request.mutable_message()->set_message_id("m1");
    request.mutable_message()->set_role(a2apb::ROLE_USER);
    request.mutable_message()->add_parts()->set_text("hello");
    return transport_->SendStreaming(request, absl::Now() + absl::Seconds(60));
  }

  std::unique_ptr<ScriptedAgent> agent_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<GrpcAgentTransport> transport_;
};

// An opening that holds waits, with the taker asleep, for the events after it up to the one
// that ends the turn, and comes back with all of them in one burst.
TEST_F(GrpcTransportTest, AnOpeningWaitsForTheEventsUpToTheEndOfTheTurn) {
  ServeOpeningThenTurn();
  std::unique_ptr<AgentCall> call = Send();
  std::vector<a2apb::StreamResponse> burst;
  std::atomic<bool> returned{false};
  std::atomic<int> openings_seen{0};
  std::thread taker([&] {
    call->TakeOpening(&burst, absl::Now() + absl::Seconds(60), WatchedHolds(&openings_seen), Ends);
    returned = true;
  });
  // The taker has the opening in hand (it asked whether it holds) and the gate keeps the rest.
  ASSERT_TRUE(testing_util::WaitFor([&] { return openings_seen.load() > 0; }));
  EXPECT_FALSE(returned.load()) << "the opening came back without the events after it";
  agent_->Open();
  taker.join();
  ASSERT_EQ(burst.size(), 3u);
  EXPECT_TRUE(burst[0].has_task());
  EXPECT_TRUE(Ends(burst[2]));
  EXPECT_EQ(call->Take(&burst), 0u);
  EXPECT_TRUE(call->Finish().ok());
}

// Nothing follows the opening by the linger: the opening comes back alone, and the rest later.
TEST_F(GrpcTransportTest, AnOpeningAloneComesBackAtTheLinger) {
  Serve(std::make_unique<ScriptedAgent>(
      std::vector<a2apb::StreamResponse>{Opening()},
      std::vector<a2apb::StreamResponse>{Status(a2apb::TASK_STATE_COMPLETED)}));
  std::unique_ptr<AgentCall> call = Send();
  std::vector<a2apb::StreamResponse> burst;
  ASSERT_TRUE(agent_->wrote_before_gate().WaitForNotificationWithTimeout(absl::Seconds(30)));
  ASSERT_EQ(call->TakeOpening(&burst, absl::Now() + absl::Milliseconds(100), Holds, Ends), 1u);
  EXPECT_TRUE(burst[0].has_task());
  agent_->Open();
  burst.clear();
  ASSERT_EQ(call->Take(&burst), 1u);
  EXPECT_TRUE(Ends(burst[0]));
  EXPECT_TRUE(call->Finish().ok());
}

// A first event that does not hold is taken at once, whatever the linger.
TEST_F(GrpcTransportTest, AFirstEventThatDoesNotHoldIsTakenAtOnce) {
  Serve(std::make_unique<ScriptedAgent>(
      std::vector<a2apb::StreamResponse>{Status(a2apb::TASK_STATE_WORKING)},
      std::vector<a2apb::StreamResponse>{Status(a2apb::TASK_STATE_COMPLETED)}));
  std::unique_ptr<AgentCall> call = Send();
  std::vector<a2apb::StreamResponse> burst;
  ASSERT_EQ(call->TakeOpening(&burst, absl::Now() + absl::Seconds(60), Holds, Ends), 1u);
  EXPECT_EQ(burst[0].status_update().status().state(), a2apb::TASK_STATE_WORKING);
  agent_->Open();
  call->Cancel();
  (void)call->Finish();
}

// The stream ends after the opening: the opening comes back, then the end.
TEST_F(GrpcTransportTest, AnAnswerThatEndsAfterItsOpeningGivesTheOpening) {
  Serve(std::make_unique<ScriptedAgent>(std::vector<a2apb::StreamResponse>{Opening()},
                                        std::vector<a2apb::StreamResponse>{}));
  agent_->Open();
  std::unique_ptr<AgentCall> call = Send();
  std::vector<a2apb::StreamResponse> burst;
  ASSERT_EQ(call->TakeOpening(&burst, absl::Now() + absl::Seconds(60), Holds, Ends), 1u);
  EXPECT_TRUE(burst[0].has_task());
  EXPECT_EQ(call->Take(&burst), 0u);
  EXPECT_TRUE(call->Finish().ok());
}

// An agent without streaming gets the unary SendMessage; its answer is the one event.
TEST_F(GrpcTransportTest, AnAgentWithoutStreamingGetsTheUnaryCall) {
  Serve(std::make_unique<ScriptedAgent>(std::vector<a2apb::StreamResponse>{},
                                        std::vector<a2apb::StreamResponse>{},
                                        /*streams=*/false));
  std::unique_ptr<AgentCall> call = Send();
  std::vector<a2apb::StreamResponse> burst;
  ASSERT_EQ(call->TakeOpening(&burst, absl::Now() + absl::Seconds(60), Holds, Ends), 1u);
  EXPECT_EQ(burst[0].task().status().state(), a2apb::TASK_STATE_COMPLETED);
  EXPECT_TRUE(call->Finish().ok());
  EXPECT_EQ(agent_->unary_calls(), 1);

  // Cancelled at once: before, during or after the unary call (the context made for it is
  // cancelled too), the call ends.
  std::unique_ptr<AgentCall> cancelled = Send();
  cancelled->Cancel();
  burst.clear();
  EXPECT_LE(cancelled->Take(&burst), 1u);
  (void)cancelled->Finish();
}

// The asynchronous opening: `ready` runs once the turn is whole, on gRPC's thread, with the taker
// asleep nowhere; WhenFinished then gives how the call ended.
TEST_F(GrpcTransportTest, WhenOpeningRunsOnceTheTurnIsWholeAndWhenFinishedEndsTheCall) {
  ServeOpeningThenTurn();
  std::unique_ptr<AgentCall> call = Send();
  std::vector<a2apb::StreamResponse> burst;
  absl::Notification ready;
  std::atomic<int> openings_seen{0};
  ASSERT_TRUE(call->WhenOpening(WatchedHolds(&openings_seen), Ends, [&] {
    call->Take(&burst, absl::InfinitePast());
    ready.Notify();
  }));
  // The reader has the opening in hand (it asked whether it holds) and the gate keeps the rest.
  ASSERT_TRUE(testing_util::WaitFor([&] { return openings_seen.load() > 0; }));
  EXPECT_FALSE(ready.HasBeenNotified()) << "the opening came back without the events after it";
  agent_->Open();
  ASSERT_TRUE(ready.WaitForNotificationWithTimeout(absl::Seconds(30)));
  ASSERT_EQ(burst.size(), 3u);
  EXPECT_TRUE(burst[0].has_task());
  EXPECT_TRUE(Ends(burst[2]));
  absl::Notification finished;
  absl::Status status = absl::UnknownError("not finished");
  call->WhenFinished([&](absl::Status s) {
    status = std::move(s);
    finished.Notify();
  });
  ASSERT_TRUE(finished.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_TRUE(status.ok()) << status;
}

// The caller's timer says the linger passed: `ready` runs there and then, with what waits, and
// only once.
TEST_F(GrpcTransportTest, LingerPassedRunsTheOpeningOnce) {
  Serve(std::make_unique<ScriptedAgent>(
      std::vector<a2apb::StreamResponse>{Opening()},
      std::vector<a2apb::StreamResponse>{Status(a2apb::TASK_STATE_COMPLETED)}));
  std::unique_ptr<AgentCall> call = Send();
  std::vector<a2apb::StreamResponse> burst;
  int runs = 0;
  ASSERT_TRUE(call->WhenOpening(Holds, Ends, [&] {
    ++runs;
    call->Take(&burst, absl::InfinitePast());
  }));
  ASSERT_TRUE(agent_->wrote_before_gate().WaitForNotificationWithTimeout(absl::Seconds(30)));
  call->LingerPassed();
  EXPECT_EQ(runs, 1);
  call->LingerPassed();
  EXPECT_EQ(runs, 1);
  agent_->Open();
  while (burst.empty() || !Ends(burst.back())) ASSERT_GT(call->Take(&burst), 0u);
  EXPECT_TRUE(burst[0].has_task());
  absl::Notification finished;
  call->WhenFinished([&](absl::Status s) {
    EXPECT_TRUE(s.ok()) << s;
    finished.Notify();
  });
  EXPECT_TRUE(finished.WaitForNotificationWithTimeout(absl::Seconds(30)));
}

// An answer that ends after its opening completes the opening; WhenFinished on a call that has
// ended runs at once, on the caller's thread.
TEST_F(GrpcTransportTest, WhenFinishedOnAnEndedCallRunsAtOnce) {
  Serve(std::make_unique<ScriptedAgent>(std::vector<a2apb::StreamResponse>{Opening()},
                                        std::vector<a2apb::StreamResponse>{}));
  agent_->Open();
  std::unique_ptr<AgentCall> call = Send();
  std::vector<a2apb::StreamResponse> burst;
  absl::Notification ready;
  ASSERT_TRUE(TakeWhenOpened(*call, &burst, &ready));
  ASSERT_TRUE(ready.WaitForNotificationWithTimeout(absl::Seconds(30)));
  ASSERT_EQ(burst.size(), 1u);
  EXPECT_TRUE(burst[0].has_task());
  const std::thread::id caller = std::this_thread::get_id();
  std::thread::id ran_on;
  call->WhenFinished([&](absl::Status s) {
    EXPECT_TRUE(s.ok()) << s;
    ran_on = std::this_thread::get_id();
  });
  EXPECT_EQ(ran_on, caller);
}

// A 0.3 agent (package a2a.v1), written against its proto: it records what it is sent, answers
// the stream with its task and a final status update, SendMessage with a completed task, GetTask
// with the task it names, and CancelTask with 0.3's TaskNotCancelableError.
class V03Agent final : public ::a2a::v1::A2AService::Service {
 public:
  grpc::Status SendStreamingMessage(
      grpc::ServerContext* context, const ::a2a::v1::SendMessageRequest* request,
      grpc::ServerWriter<::a2a::v1::StreamResponse>* writer) override {
    Record("stream", *context, request->request().content(0).text(),
           request->configuration().blocking());
    ::a2a::v1::StreamResponse task;
    task.mutable_task()->set_id("t1");
    task.mutable_task()->mutable_status()->set_state(::a2a::v1::TASK_STATE_WORKING);
    writer->Write(task);
    ::a2a::v1::StreamResponse done;
    done.mutable_status_update()->set_task_id("t1");
    done.mutable_status_update()->mutable_status()->set_state(::a2a::v1::TASK_STATE_COMPLETED);
    done.mutable_status_update()->set_final(true);
    writer->Write(done);
    return grpc::Status::OK;
  }

  grpc::Status SendMessage(grpc::ServerContext* context,
                           const ::a2a::v1::SendMessageRequest* request,
                           ::a2a::v1::SendMessageResponse* response) override {
    Record("send", *context, request->request().content(0).text(),
           request->configuration().blocking());
    response->mutable_task()->set_id("t1");
    response->mutable_task()->mutable_status()->set_state(::a2a::v1::TASK_STATE_COMPLETED);
    return grpc::Status::OK;
  }

  grpc::Status GetTask(grpc::ServerContext* context, const ::a2a::v1::GetTaskRequest* request,
                       ::a2a::v1::Task* task) override {
    Record("get", *context, request->name(), request->history_length() > 0);
    if (request->name() != "tasks/t1") {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "TaskNotFoundError: Task not found");
    }
    task->set_id("t1");
    task->mutable_status()->set_state(::a2a::v1::TASK_STATE_COMPLETED);
    return grpc::Status::OK;
  }

  grpc::Status CancelTask(grpc::ServerContext* context, const ::a2a::v1::CancelTaskRequest* request,
                          ::a2a::v1::Task*) override {
    Record("cancel", *context, request->name(), false);
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                        "TaskNotCancelableError: Task cannot be canceled");
  }

  // "<call> <text or name> <blocking or history asked> <a2a-version header or ->".
  std::vector<std::string> calls() {
    absl::MutexLock lock(&mu_);
    return calls_;
  }

 private:
  void Record(const std::string& call, const grpc::ServerContext& context, const std::string& what,
              bool flag) {
    auto version = context.client_metadata().find("a2a-version");
    absl::MutexLock lock(&mu_);
    calls_.push_back(call + " " + what + " " + (flag ? "1" : "0") + " " +
                     (version == context.client_metadata().end()
                          ? "-"
                          : std::string(version->second.data(), version->second.size())));
  }

  absl::Mutex mu_;
  std::vector<std::string> calls_ ABSL_GUARDED_BY(mu_);
};

class GrpcTransportV03Test : public testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&agent_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    channel_ = NewAgentChannel("127.0.0.1:" + std::to_string(port));
  }

  void TearDown() override {
    server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
  }

  // Sends "hello" and returns the events read back, as 1.0.
  std::vector<a2apb::StreamResponse> SendHello(GrpcAgentTransport& transport) {
    a2apb::SendMessageRequest request;
    request.set_tenant("never-sent");
    request.mutable_message()->set_message_id("m1");
    request.mutable_message()->set_role(a2apb::ROLE_USER);
    request.mutable_message()->add_parts()->set_text("hello");
    std::unique_ptr<AgentCall> call =
        transport.SendStreaming(request, absl::Now() + absl::Seconds(60));
    std::vector<a2apb::StreamResponse> events;
    while (call->Take(&events) > 0) {
    }
    EXPECT_TRUE(call->Finish().ok());
    return events;
  }

  V03Agent agent_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

TEST_F(GrpcTransportV03Test, AStreamingAgentIsSentIts03MessageAndAnsweredIn10) {
  GrpcAgentTransport transport(channel_, "", GrpcAgentTransport::Version::k03, /*streams=*/true);
  const std::vector<a2apb::StreamResponse> events = SendHello(transport);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].task().id(), "t1");
  EXPECT_EQ(events[0].task().status().state(), a2apb::TASK_STATE_WORKING);
  EXPECT_EQ(events[1].status_update().status().state(), a2apb::TASK_STATE_COMPLETED);
  // Blocking, no A2A-Version header (0.3 has none).
  EXPECT_EQ(agent_.calls(), std::vector<std::string>{"stream hello 1 -"});
}

TEST_F(GrpcTransportV03Test, AnAgentWhoseCardSaysNoStreamingGetsOnlyTheUnaryCall) {
  GrpcAgentTransport transport(channel_, "", GrpcAgentTransport::Version::k03, /*streams=*/false);
  const std::vector<a2apb::StreamResponse> events = SendHello(transport);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].task().status().state(), a2apb::TASK_STATE_COMPLETED);
  EXPECT_EQ(agent_.calls(), std::vector<std::string>{"send hello 1 -"});
}

TEST_F(GrpcTransportV03Test, TasksAreNamedAndErrorsReadByTheirNames) {
  GrpcAgentTransport transport(channel_, "", GrpcAgentTransport::Version::k03);
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  a2apb::GetTaskRequest get;
  get.set_id("t1");
  get.set_history_length(0);  // "none" in 1.0, "all" in 0.3: asked as 1
  absl::StatusOr<a2apb::Task> task = transport.GetTask(get, deadline);
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_EQ(task->status().state(), a2apb::TASK_STATE_COMPLETED);
  get.set_id("gone");
  task = transport.GetTask(get, deadline);
  EXPECT_EQ(task.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(a2a_protocol::Reason(task.status()), a2a_protocol::kTaskNotFound);
  a2apb::CancelTaskRequest cancel;
  cancel.set_id("t1");
  task = transport.CancelTask(cancel, deadline);
  EXPECT_EQ(a2a_protocol::Reason(task.status()), a2a_protocol::kTaskNotCancelable);
  EXPECT_EQ(agent_.calls(), (std::vector<std::string>{"get tasks/t1 1 -", "get tasks/gone 1 -",
                                                      "cancel tasks/t1 0 -"}));
}

}  // namespace
}  // namespace coordinator
