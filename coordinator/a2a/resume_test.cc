// A delivery the agent had already answered when the coordinator stopped (restart, crash) is
// resumed over gRPC, not sent again: the coordinator reads the agent's task back (GetTask) and
// takes it as the outcome when it has ended, or subscribes to it (SubscribeToTask) while it
// runs. An agent that no longer knows the task gets the message again, as a new task. The agent
// here keeps its tasks, as agents on the A2A SDKs do; the coordinator is real, restarted on the
// same data dir. No sleeps: every wait polls with a bound.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "a2a/v1/a2a.grpc.pb.h"
#include "a2a_protocol/version.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "coordinator/a2a/test_server_options.h"
#include "coordinator/server.h"
#include "coordinator/v1/agent_registry.grpc.pb.h"
#include "gmock/gmock.h"
#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "storage/testing/test_store.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

using ::testing::ElementsAre;
using testing_util::TempDir;

constexpr absl::Duration kWait = absl::Seconds(30);

template <typename Pred>
bool WaitFor(Pred pred) {
  const absl::Time deadline = absl::Now() + kWait;
  while (absl::Now() < deadline) {
    if (pred()) return true;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return pred();
}

// Every message starts a task that works until Finish() (or until the caller goes away); the
// tasks are kept, for GetTask and SubscribeToTask. Forget() drops them.
class KeepingAgent final : public a2apb::A2AService::Service {
 public:
  grpc::Status SendStreamingMessage(grpc::ServerContext* context,
                                    const a2apb::SendMessageRequest* request,
                                    grpc::ServerWriter<a2apb::StreamResponse>* writer) override {
    a2apb::StreamResponse opening;
    {
      absl::MutexLock lock(&mu_);
      calls_.push_back("SendStreamingMessage");
      a2apb::Task& task = tasks_[absl::StrCat("kept-", ++next_)];
      task.set_id(absl::StrCat("kept-", next_));
      task.set_context_id(request->message().context_id());
      task.mutable_status()->set_state(a2apb::TASK_STATE_WORKING);
      *opening.mutable_task() = task;
    }
    writer->Write(opening);
    return Follow(context, opening.task().id(), writer);
  }

  grpc::Status GetTask(grpc::ServerContext*, const a2apb::GetTaskRequest* request,
                       a2apb::Task* task) override {
    absl::MutexLock lock(&mu_);
    calls_.push_back("GetTask " + request->id());
    auto it = tasks_.find(request->id());
    if (it == tasks_.end()) return NotFound(request->id());
    *task = it->second;
    return grpc::Status::OK;
  }

  grpc::Status SubscribeToTask(grpc::ServerContext* context,
                               const a2apb::SubscribeToTaskRequest* request,
                               grpc::ServerWriter<a2apb::StreamResponse>* writer) override {
    a2apb::StreamResponse snapshot;
    {
      absl::MutexLock lock(&mu_);
      calls_.push_back("SubscribeToTask " + request->id());
      auto it = tasks_.find(request->id());
      if (it == tasks_.end()) return NotFound(request->id());
      *snapshot.mutable_task() = it->second;
    }
    writer->Write(snapshot);
    return Follow(context, request->id(), writer);
  }

  // Ends task `id` COMPLETED with an artifact, whoever listens.
  void Finish(const std::string& id) {
    absl::MutexLock lock(&mu_);
    a2apb::Task& task = tasks_[id];
    a2apb::Artifact* artifact = task.add_artifacts();
    artifact->set_artifact_id("result");
    artifact->add_parts()->set_text("finished " + id);
    task.mutable_status()->set_state(a2apb::TASK_STATE_COMPLETED);
  }

  void Forget() {
    absl::MutexLock lock(&mu_);
    tasks_.clear();
  }

  std::vector<std::string> calls() {
    absl::MutexLock lock(&mu_);
    return calls_;
  }

 private:
  static grpc::Status NotFound(const std::string& id) {
    // The A2A reason as google.rpc.ErrorInfo, as the gRPC binding sends it.
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "task " + id + " not found",
                        TaskNotFoundDetails());
  }

  static std::string TaskNotFoundDetails();

  // Waits until task `id` ends (then writes its artifacts and status) or the caller goes away.
  grpc::Status Follow(grpc::ServerContext* context, const std::string& id,
                      grpc::ServerWriter<a2apb::StreamResponse>* writer) {
    a2apb::Task ended;
    {
      absl::MutexLock lock(&mu_);
      auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        auto it = tasks_.find(id);
        return it == tasks_.end() || it->second.status().state() != a2apb::TASK_STATE_WORKING;
      };
      while (!done()) {
        mu_.AwaitWithTimeout(absl::Condition(&done), absl::Milliseconds(50));
        if (context->IsCancelled()) return grpc::Status::CANCELLED;
      }
      if (tasks_.count(id) == 0) return NotFound(id);
      ended = tasks_[id];
    }
    for (const a2apb::Artifact& artifact : ended.artifacts()) {
      a2apb::StreamResponse update;
      update.mutable_artifact_update()->set_task_id(id);
      *update.mutable_artifact_update()->mutable_artifact() = artifact;
      writer->Write(update);
    }
    a2apb::StreamResponse status;
    status.mutable_status_update()->set_task_id(id);
    *status.mutable_status_update()->mutable_status() = ended.status();
    writer->Write(status);
    return grpc::Status::OK;
  }

  absl::Mutex mu_;
  int next_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, a2apb::Task> tasks_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> calls_ ABSL_GUARDED_BY(mu_);
};

class ResumeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&agent_);
    agent_server_ = builder.BuildAndStart();
    ASSERT_NE(agent_server_, nullptr);
    agent_endpoint_ = absl::StrCat("127.0.0.1:", port);
    StartCoordinator();
    auto registry = coordinator::v1::AgentRegistry::NewStub(channel_);
    coordinator::v1::RegisterAgentRequest reg;
    reg.mutable_agent()->set_name("keeper");
    reg.mutable_agent()->set_endpoint(agent_endpoint_);
    coordinator::v1::Agent registered;
    grpc::ClientContext context;
    ASSERT_TRUE(registry->RegisterAgent(&context, reg, &registered).ok());
  }

  void TearDown() override {
    StopCoordinator();
    if (agent_server_ != nullptr) agent_server_->Shutdown(std::chrono::system_clock::now());
  }

  void StartCoordinator() {
    absl::StatusOr<ServerOptions> options = GatewayTestServerOptions(dir_.Sub("data"));
    ASSERT_OK(options);
    absl::StatusOr<std::unique_ptr<CoordinatorServer>> server = CoordinatorServer::Start(*options);
    ASSERT_OK(server);
    server_ = *std::move(server);
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    stub_ = a2apb::A2AService::NewStub(channel_);
  }

  void StopCoordinator() {
    stub_.reset();
    channel_.reset();
    if (server_ != nullptr) server_->Shutdown(absl::Seconds(1));
    server_.reset();
  }

  static void Prepare(grpc::ClientContext* context) {
    context->set_deadline(absl::ToChronoTime(absl::Now() + kWait));
    a2a_protocol::AddVersion(context);
  }

  std::string SendNow(const std::string& text) {
    a2apb::SendMessageRequest request;
    request.set_tenant("keeper");
    request.mutable_message()->set_message_id("m-" + text);
    request.mutable_message()->set_role(a2apb::ROLE_USER);
    request.mutable_message()->add_parts()->set_text(text);
    request.mutable_configuration()->set_return_immediately(true);
    grpc::ClientContext context;
    Prepare(&context);
    a2apb::SendMessageResponse response;
    const grpc::Status s = stub_->SendMessage(&context, request, &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return response.task().id();
  }

  a2apb::Task GetTask(const std::string& id) {
    a2apb::GetTaskRequest request;
    request.set_id(id);
    grpc::ClientContext context;
    Prepare(&context);
    a2apb::Task task;
    const grpc::Status s = stub_->GetTask(&context, request, &task);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return task;
  }

  bool WaitForState(const std::string& id, a2apb::TaskState state) {
    return WaitFor([&] { return GetTask(id).status().state() == state; });
  }

  // A task the agent works on (it answered WORKING), then the coordinator stopped.
  std::string WorkingTaskThenStop() {
    const std::string id = SendNow("work");
    EXPECT_TRUE(WaitForState(id, a2apb::TASK_STATE_WORKING));
    StopCoordinator();
    return id;
  }

  TempDir dir_;
  KeepingAgent agent_;
  std::unique_ptr<grpc::Server> agent_server_;
  std::string agent_endpoint_;
  std::unique_ptr<CoordinatorServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<a2apb::A2AService::Stub> stub_;
};

std::string KeepingAgent::TaskNotFoundDetails() {
  google::rpc::Status status;
  status.set_code(grpc::StatusCode::NOT_FOUND);
  google::rpc::ErrorInfo info;
  info.set_reason("TASK_NOT_FOUND");
  info.set_domain("a2a-protocol.org");
  status.add_details()->PackFrom(info);
  return status.SerializeAsString();
}

TEST_F(ResumeTest, ATaskThatEndedWhileTheCoordinatorWasDownIsReadBack) {
  const std::string id = WorkingTaskThenStop();
  agent_.Finish("kept-1");
  StartCoordinator();
  ASSERT_TRUE(WaitForState(id, a2apb::TASK_STATE_COMPLETED));
  const a2apb::Task done = GetTask(id);
  ASSERT_EQ(done.artifacts_size(), 1);
  EXPECT_EQ(done.artifacts(0).parts(0).text(), "finished kept-1");
  EXPECT_THAT(agent_.calls(), ElementsAre("SendStreamingMessage", "GetTask kept-1"));
}

TEST_F(ResumeTest, ARunningTaskIsSubscribedToNotSentAgain) {
  const std::string id = WorkingTaskThenStop();
  StartCoordinator();
  ASSERT_TRUE(WaitFor([&] { return agent_.calls().size() == 3; }));
  EXPECT_THAT(agent_.calls(),
              ElementsAre("SendStreamingMessage", "GetTask kept-1", "SubscribeToTask kept-1"));
  EXPECT_EQ(GetTask(id).status().state(), a2apb::TASK_STATE_WORKING);
  agent_.Finish("kept-1");
  ASSERT_TRUE(WaitForState(id, a2apb::TASK_STATE_COMPLETED));
  const a2apb::Task done = GetTask(id);
  ASSERT_EQ(done.artifacts_size(), 1);  // once, though the snapshot and the update both carry it
  EXPECT_EQ(done.artifacts(0).parts(0).text(), "finished kept-1");
}

TEST_F(ResumeTest, AnAgentThatForgotTheTaskGetsTheMessageAgainAsANewTask) {
  const std::string id = WorkingTaskThenStop();
  agent_.Forget();
  StartCoordinator();
  ASSERT_TRUE(WaitFor([&] { return agent_.calls().size() == 3; }));
  EXPECT_THAT(agent_.calls(),
              ElementsAre("SendStreamingMessage", "GetTask kept-1", "SendStreamingMessage"));
  agent_.Finish("kept-2");
  ASSERT_TRUE(WaitForState(id, a2apb::TASK_STATE_COMPLETED));
  EXPECT_EQ(GetTask(id).artifacts(0).parts(0).text(), "finished kept-2");
}

}  // namespace
}  // namespace coordinator
