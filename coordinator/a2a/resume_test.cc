// A delivery the agent had already answered when the coordinator stopped (restart, crash) is
// resumed over gRPC, not sent again: the coordinator reads the agent's task back (GetTask) and
// takes it as the outcome when it has ended, or subscribes to it (SubscribeToTask) while it
// runs. An agent that no longer knows the task gets the message again, as a new task. The agent
// here keeps its tasks, as agents on the A2A SDKs do, and speaks A2A 1.0 or 0.3 (each test runs
// against both); the coordinator is real, restarted on the same data dir. No sleeps: every wait
// polls with a bound.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "a2a/v0_3/a2a.grpc.pb.h"
#include "a2a/v1/a2a.grpc.pb.h"
#include "a2a_protocol/version.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
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
#include "httplib.h"
#include "storage/testing/test_store.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

using ::testing::ElementsAre;
using ::testing_util::kWait;
using testing_util::TempDir;
using ::testing_util::WaitFor;
namespace pb03 = ::a2a::v1;

// The tasks of an agent that keeps them, as agents on the A2A SDKs do: every message starts one
// that works until Finish() (or until the caller goes away), kept for GetTask and the
// subscription. Forget() drops them. It records the calls it gets ("send", "get <id>",
// "subscribe <id>"); the services below speak it in A2A 1.0 and 0.3.
class KeptTasks {
 public:
  // A new task, WORKING.
  a2apb::Task Open(const std::string& context_id) {
    absl::MutexLock lock(&mu_);
    calls_.push_back("send");
    a2apb::Task& task = tasks_[absl::StrCat("kept-", ++next_)];
    task.set_id(absl::StrCat("kept-", next_));
    task.set_context_id(context_id);
    task.mutable_status()->set_state(a2apb::TASK_STATE_WORKING);
    return task;
  }

  // Task `id` as it is now, recording `call` ("get", "subscribe"); nullopt when it is not kept.
  std::optional<a2apb::Task> Find(const std::string& call, const std::string& id) {
    absl::MutexLock lock(&mu_);
    calls_.push_back(absl::StrCat(call, " ", id));
    auto it = tasks_.find(id);
    if (it == tasks_.end()) return std::nullopt;
    return it->second;
  }

  // Waits until task `id` ends or the caller goes away: the ended task (nullopt when it was
  // forgotten), or CANCELLED.
  absl::StatusOr<std::optional<a2apb::Task>> Follow(grpc::ServerContext* context,
                                                    const std::string& id) {
    absl::MutexLock lock(&mu_);
    auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      auto it = tasks_.find(id);
      return it == tasks_.end() || it->second.status().state() != a2apb::TASK_STATE_WORKING;
    };
    while (!done()) {
      mu_.AwaitWithTimeout(absl::Condition(&done), absl::Milliseconds(50));
      if (context->IsCancelled()) return absl::CancelledError();
    }
    if (tasks_.count(id) == 0) return std::nullopt;
    return tasks_[id];
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
  absl::Mutex mu_;
  int next_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, a2apb::Task> tasks_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> calls_ ABSL_GUARDED_BY(mu_);
};

// The kept tasks over A2A 1.0's gRPC service; a task not kept is NOT_FOUND with its A2A reason as
// google.rpc.ErrorInfo, as the 1.0 binding sends it.
class KeepingAgent final : public a2apb::A2AService::Service {
 public:
  explicit KeepingAgent(KeptTasks* tasks) : tasks_(tasks) {}

  grpc::Status SendStreamingMessage(grpc::ServerContext* context,
                                    const a2apb::SendMessageRequest* request,
                                    grpc::ServerWriter<a2apb::StreamResponse>* writer) override {
    a2apb::StreamResponse opening;
    *opening.mutable_task() = tasks_->Open(request->message().context_id());
    writer->Write(opening);
    return Follow(context, opening.task().id(), writer);
  }

  grpc::Status GetTask(grpc::ServerContext*, const a2apb::GetTaskRequest* request,
                       a2apb::Task* task) override {
    std::optional<a2apb::Task> kept = tasks_->Find("get", request->id());
    if (!kept.has_value()) return NotFound(request->id());
    *task = *std::move(kept);
    return grpc::Status::OK;
  }

  grpc::Status SubscribeToTask(grpc::ServerContext* context,
                               const a2apb::SubscribeToTaskRequest* request,
                               grpc::ServerWriter<a2apb::StreamResponse>* writer) override {
    std::optional<a2apb::Task> kept = tasks_->Find("subscribe", request->id());
    if (!kept.has_value()) return NotFound(request->id());
    a2apb::StreamResponse snapshot;
    *snapshot.mutable_task() = *std::move(kept);
    writer->Write(snapshot);
    return Follow(context, request->id(), writer);
  }

 private:
  static grpc::Status NotFound(const std::string& id) {
    google::rpc::Status status;
    status.set_code(grpc::StatusCode::NOT_FOUND);
    google::rpc::ErrorInfo info;
    info.set_reason("TASK_NOT_FOUND");
    info.set_domain("a2a-protocol.org");
    status.add_details()->PackFrom(info);
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "task " + id + " not found",
                        status.SerializeAsString());
  }

  // Writes the ended task's artifacts and status.
  grpc::Status Follow(grpc::ServerContext* context, const std::string& id,
                      grpc::ServerWriter<a2apb::StreamResponse>* writer) {
    absl::StatusOr<std::optional<a2apb::Task>> ended = tasks_->Follow(context, id);
    if (!ended.ok()) return grpc::Status::CANCELLED;
    if (!ended->has_value()) return NotFound(id);
    for (const a2apb::Artifact& artifact : (*ended)->artifacts()) {
      a2apb::StreamResponse update;
      update.mutable_artifact_update()->set_task_id(id);
      *update.mutable_artifact_update()->mutable_artifact() = artifact;
      writer->Write(update);
    }
    a2apb::StreamResponse status;
    status.mutable_status_update()->set_task_id(id);
    *status.mutable_status_update()->mutable_status() = (*ended)->status();
    writer->Write(status);
    return grpc::Status::OK;
  }

  KeptTasks* const tasks_;
};

// The kept tasks over A2A 0.3's gRPC service (package a2a.v1), written against its proto alone:
// tasks named "tasks/{id}", parts in `content`, `final` on the last status update, and errors as
// the 0.3 SDKs send them (the error's name leading the message, no ErrorInfo).
class KeepingAgentV03 final : public pb03::A2AService::Service {
 public:
  explicit KeepingAgentV03(KeptTasks* tasks) : tasks_(tasks) {}

  grpc::Status SendStreamingMessage(grpc::ServerContext* context,
                                    const pb03::SendMessageRequest* request,
                                    grpc::ServerWriter<pb03::StreamResponse>* writer) override {
    if (request->request().content_size() != 1 || !request->request().content(0).has_text() ||
        !request->configuration().blocking()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "InvalidParamsError: not the message sent");
    }
    pb03::StreamResponse opening;
    *opening.mutable_task() = Task03(tasks_->Open(request->request().context_id()));
    writer->Write(opening);
    return Follow(context, opening.task().id(), writer);
  }

  grpc::Status GetTask(grpc::ServerContext*, const pb03::GetTaskRequest* request,
                       pb03::Task* task) override {
    absl::string_view id = request->name();
    if (!absl::ConsumePrefix(&id, "tasks/") || request->history_length() < 0) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "InvalidParamsError: No task for " + request->name());
    }
    std::optional<a2apb::Task> kept = tasks_->Find("get", std::string(id));
    if (!kept.has_value()) return NotFound();
    *task = Task03(*kept);
    return grpc::Status::OK;
  }

  grpc::Status TaskSubscription(grpc::ServerContext* context,
                                const pb03::TaskSubscriptionRequest* request,
                                grpc::ServerWriter<pb03::StreamResponse>* writer) override {
    absl::string_view id = request->name();
    if (!absl::ConsumePrefix(&id, "tasks/")) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "InvalidParamsError: No task for " + request->name());
    }
    std::optional<a2apb::Task> kept = tasks_->Find("subscribe", std::string(id));
    if (!kept.has_value()) return NotFound();
    pb03::StreamResponse snapshot;
    *snapshot.mutable_task() = Task03(*kept);
    writer->Write(snapshot);
    return Follow(context, std::string(id), writer);
  }

 private:
  static grpc::Status NotFound() {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "TaskNotFoundError: Task not found");
  }

  static pb03::TaskState State03(a2apb::TaskState state) {
    return state == a2apb::TASK_STATE_WORKING ? pb03::TASK_STATE_WORKING
                                              : pb03::TASK_STATE_COMPLETED;
  }

  static pb03::Artifact Artifact03(const a2apb::Artifact& artifact) {
    pb03::Artifact out;
    out.set_artifact_id(artifact.artifact_id());
    for (const a2apb::Part& part : artifact.parts()) out.add_parts()->set_text(part.text());
    return out;
  }

  static pb03::Task Task03(const a2apb::Task& task) {
    pb03::Task out;
    out.set_id(task.id());
    out.set_context_id(task.context_id());
    out.mutable_status()->set_state(State03(task.status().state()));
    for (const a2apb::Artifact& artifact : task.artifacts()) {
      *out.add_artifacts() = Artifact03(artifact);
    }
    return out;
  }

  grpc::Status Follow(grpc::ServerContext* context, const std::string& id,
                      grpc::ServerWriter<pb03::StreamResponse>* writer) {
    absl::StatusOr<std::optional<a2apb::Task>> ended = tasks_->Follow(context, id);
    if (!ended.ok()) return grpc::Status::CANCELLED;
    if (!ended->has_value()) return NotFound();
    for (const a2apb::Artifact& artifact : (*ended)->artifacts()) {
      pb03::StreamResponse update;
      update.mutable_artifact_update()->set_task_id(id);
      update.mutable_artifact_update()->set_context_id((*ended)->context_id());
      *update.mutable_artifact_update()->mutable_artifact() = Artifact03(artifact);
      writer->Write(update);
    }
    pb03::StreamResponse status;
    status.mutable_status_update()->set_task_id(id);
    status.mutable_status_update()->set_context_id((*ended)->context_id());
    status.mutable_status_update()->mutable_status()->set_state(
        State03((*ended)->status().state()));
    status.mutable_status_update()->set_final(true);
    writer->Write(status);
    return grpc::Status::OK;
  }

  KeptTasks* const tasks_;
};

// The A2A version the agent speaks over gRPC: 1.0 (registered by its endpoint) or 0.3 (registered
// by its 0.3 card, as the only way to say so).
enum class AgentVersion { k10, k03 };

class ResumeTest : public ::testing::TestWithParam<AgentVersion> {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    if (GetParam() == AgentVersion::k03) {
      builder.RegisterService(&agent_v03_);
    } else {
      builder.RegisterService(&agent_);
    }
    agent_server_ = builder.BuildAndStart();
    ASSERT_NE(agent_server_, nullptr);
    agent_endpoint_ = absl::StrCat("127.0.0.1:", port);
    StartCoordinator();
    auto registry = coordinator::v1::AgentRegistry::NewStub(channel_);
    coordinator::v1::RegisterAgentRequest reg;
    reg.mutable_agent()->set_name("keeper");
    if (GetParam() == AgentVersion::k03) {
      reg.mutable_agent()->set_card_url(ServeCard03());
    } else {
      reg.mutable_agent()->set_endpoint(agent_endpoint_);
    }
    coordinator::v1::Agent registered;
    grpc::ClientContext context;
    const grpc::Status s = registry->RegisterAgent(&context, reg, &registered);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_EQ(registered.protocol_binding(), "GRPC");
    ASSERT_EQ(registered.protocol_version(), GetParam() == AgentVersion::k03 ? "0.3" : "1.0");
  }

  void TearDown() override {
    StopCoordinator();
    if (agent_server_ != nullptr) agent_server_->Shutdown(std::chrono::system_clock::now());
    if (cards_thread_.joinable()) {
      while (!cards_.is_running()) absl::SleepFor(absl::Milliseconds(1));
      cards_.stop();
      cards_thread_.join();
    }
  }

  // Serves the agent's 0.3 card (gRPC its only transport, streaming on) and returns its URL.
  std::string ServeCard03() {
    const std::string card = absl::StrCat(
        R"({"name":"keeper","description":"keeps tasks","version":"1","protocolVersion":"0.3.0",)",
        R"("url":")", agent_endpoint_, R"(","preferredTransport":"GRPC",)",
        R"("capabilities":{"streaming":true},"defaultInputModes":["text/plain"],)",
        R"("defaultOutputModes":["text/plain"],"skills":[]})");
    cards_.Get("/.well-known/agent-card.json",
               [card](const httplib::Request&, httplib::Response& res) {
                 res.set_content(card, "application/json");
               });
    const int port = cards_.bind_to_any_port("127.0.0.1");
    EXPECT_GT(port, 0);
    cards_thread_ = std::thread([this] { cards_.listen_after_bind(); });
    return absl::StrCat("http://127.0.0.1:", port, "/.well-known/agent-card.json");
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
  KeptTasks tasks_;
  KeepingAgent agent_{&tasks_};
  KeepingAgentV03 agent_v03_{&tasks_};
  httplib::Server cards_;
  std::thread cards_thread_;
  std::unique_ptr<grpc::Server> agent_server_;
  std::string agent_endpoint_;
  std::unique_ptr<CoordinatorServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<a2apb::A2AService::Stub> stub_;
};

TEST_P(ResumeTest, ATaskThatEndedWhileTheCoordinatorWasDownIsReadBack) {
  const std::string id = WorkingTaskThenStop();
  tasks_.Finish("kept-1");
  StartCoordinator();
  ASSERT_TRUE(WaitForState(id, a2apb::TASK_STATE_COMPLETED));
  const a2apb::Task done = GetTask(id);
  ASSERT_EQ(done.artifacts_size(), 1);
  EXPECT_EQ(done.artifacts(0).parts(0).text(), "finished kept-1");
  EXPECT_THAT(tasks_.calls(), ElementsAre("send", "get kept-1"));
}

TEST_P(ResumeTest, ARunningTaskIsSubscribedToNotSentAgain) {
  const std::string id = WorkingTaskThenStop();
  StartCoordinator();
  ASSERT_TRUE(WaitFor([&] { return tasks_.calls().size() == 3; }));
  EXPECT_THAT(tasks_.calls(), ElementsAre("send", "get kept-1", "subscribe kept-1"));
  EXPECT_EQ(GetTask(id).status().state(), a2apb::TASK_STATE_WORKING);
  tasks_.Finish("kept-1");
  ASSERT_TRUE(WaitForState(id, a2apb::TASK_STATE_COMPLETED));
  const a2apb::Task done = GetTask(id);
  ASSERT_EQ(done.artifacts_size(), 1);  // once, though the snapshot and the update both carry it
  EXPECT_EQ(done.artifacts(0).parts(0).text(), "finished kept-1");
}

TEST_P(ResumeTest, AnAgentThatForgotTheTaskGetsTheMessageAgainAsANewTask) {
  const std::string id = WorkingTaskThenStop();
  tasks_.Forget();
  StartCoordinator();
  ASSERT_TRUE(WaitFor([&] { return tasks_.calls().size() == 3; }));
  EXPECT_THAT(tasks_.calls(), ElementsAre("send", "get kept-1", "send"));
  tasks_.Finish("kept-2");
  ASSERT_TRUE(WaitForState(id, a2apb::TASK_STATE_COMPLETED));
  EXPECT_EQ(GetTask(id).artifacts(0).parts(0).text(), "finished kept-2");
}

INSTANTIATE_TEST_SUITE_P(Versions, ResumeTest,
                         ::testing::Values(AgentVersion::k10, AgentVersion::k03),
                         [](const ::testing::TestParamInfo<AgentVersion>& info) {
                           return info.param == AgentVersion::k03 ? "V03" : "V10";
                         });

}  // namespace
}  // namespace coordinator
