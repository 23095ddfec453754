// TaskStateService and BreakerService as clients see them: the coordinator assembled by
// CoordinatorServer::Start on 127.0.0.1:0, called through the generated stubs. Every RPC gets
// bad input and must answer with a clear status and change nothing.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "coordinator/server.h"
#include "coordinator/v1/breaker.grpc.pb.h"
#include "coordinator/v1/task_state.grpc.pb.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "storage/testing/test_store.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

using ::testing::HasSubstr;
using ::testing_util::TempDir;
using v1::BreakerService;
using v1::TaskStateService;

class RetryServicesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.listen = "127.0.0.1:0";
    options.data_dir = dir_.Sub("db");
    ASSERT_OK(
        storage::testing::SetTestServerStore(options.data_dir, &options.store_url, &options.etcd));
    options.worker_threads = 4;
    auto server = CoordinatorServer::Start(options);
    ASSERT_OK(server);
    server_ = *std::move(server);
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    tasks_ = TaskStateService::NewStub(channel_);
    breaker_ = BreakerService::NewStub(channel_);
  }

  static std::unique_ptr<grpc::ClientContext> Ctx() {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    return c;
  }

  std::string Init(const std::string& description) {
    v1::InitTaskRequest r;
    r.set_description(description);
    v1::InitTaskResponse out;
    grpc::Status s = tasks_->InitTask(Ctx().get(), r, &out);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return out.task_id();
  }

  v1::TaskState StateOf(const std::string& id) {
    v1::GetTaskStateRequest r;
    r.set_task_id(id);
    v1::TaskState state;
    grpc::Status s = tasks_->GetTaskState(Ctx().get(), r, &state);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return state;
  }

  TempDir dir_;
  std::unique_ptr<CoordinatorServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<TaskStateService::Stub> tasks_;
  std::unique_ptr<BreakerService::Stub> breaker_;
};

#define EXPECT_GRPC_CODE(call, code)                                                    \
  do {                                                                                  \
    const grpc::Status expect_status_ = (call);                                         \
    EXPECT_EQ(expect_status_.error_code(), grpc::StatusCode::code)                      \
        << #call << " -> " << expect_status_.error_code() << ": "                       \
        << expect_status_.error_message();                                              \
    EXPECT_FALSE(expect_status_.error_message().empty()) << #call << " has no message"; \
  } while (false)

TEST_F(RetryServicesTest, TheScriptsWorkflowOverGrpc) {
  const std::string id = Init("Fix the login bug");
  EXPECT_EQ(id, "257cb146");
  v1::IncrementAttemptRequest attempt;
  attempt.set_task_id(id);
  v1::IncrementAttemptResponse count;
  ASSERT_TRUE(tasks_->IncrementAttempt(Ctx().get(), attempt, &count).ok());
  EXPECT_EQ(count.attempt_count(), 1);
  v1::RecordFailureRequest fail;
  fail.set_task_id(id);
  fail.set_error("Timeout after 30s");
  v1::RecordFailureResponse failed;
  ASSERT_TRUE(tasks_->RecordFailure(Ctx().get(), fail, &failed).ok());
  EXPECT_EQ(failed.failure().model(), "codex-mini");
  v1::GetFailureContextRequest context;
  context.set_task_id(id);
  v1::GetFailureContextResponse text;
  ASSERT_TRUE(tasks_->GetFailureContext(Ctx().get(), context, &text).ok());
  EXPECT_EQ(text.text(),
            "Previous failures:\n  Attempt 1 (model: codex-mini): Timeout after 30s\n");
  v1::ForceEscalateRequest force;
  force.set_task_id(id);
  v1::ForceEscalateResponse forced;
  ASSERT_TRUE(breaker_->ForceEscalate(Ctx().get(), force, &forced).ok());
  EXPECT_EQ(forced.result(), v1::FORCE_ESCALATE_RESULT_ESCALATED);
  EXPECT_EQ(forced.to_tier(), 3);
}

TEST_F(RetryServicesTest, BothServicesReportHealth) {
  auto health = grpc::health::v1::Health::NewStub(channel_);
  for (const char* service : {"coordinator.v1.TaskStateService", "coordinator.v1.BreakerService"}) {
    grpc::health::v1::HealthCheckRequest r;
    r.set_service(service);
    grpc::health::v1::HealthCheckResponse out;
    ASSERT_TRUE(health->Check(Ctx().get(), r, &out).ok()) << service;
    EXPECT_EQ(out.status(), grpc::health::v1::HealthCheckResponse::SERVING) << service;
  }
}

TEST_F(RetryServicesTest, BadTaskStateRequestsGetAClearStatusAndChangeNothing) {
  const std::string id = Init("Fix the login bug");
  v1::SetTaskFieldRequest note;
  note.set_task_id(id);
  note.set_field("note");
  note.set_value("kept");
  v1::SetTaskFieldResponse set_out;
  ASSERT_TRUE(tasks_->SetTaskField(Ctx().get(), note, &set_out).ok());
  const v1::TaskState before = StateOf(id);
  const std::string long_id(300, 'a');

  {
    v1::InitTaskRequest r;
    v1::InitTaskResponse out;
    EXPECT_GRPC_CODE(tasks_->InitTask(Ctx().get(), r, &out), INVALID_ARGUMENT);
    r.set_description(std::string((64 << 10) + 1, 'd'));
    EXPECT_GRPC_CODE(tasks_->InitTask(Ctx().get(), r, &out), RESOURCE_EXHAUSTED);
  }
  {
    v1::GetTaskStateRequest r;
    v1::TaskState out;
    EXPECT_GRPC_CODE(tasks_->GetTaskState(Ctx().get(), r, &out), INVALID_ARGUMENT);
    r.set_task_id(long_id);
    EXPECT_GRPC_CODE(tasks_->GetTaskState(Ctx().get(), r, &out), INVALID_ARGUMENT);
    r.set_task_id("deadbeef");
    EXPECT_GRPC_CODE(tasks_->GetTaskState(Ctx().get(), r, &out), NOT_FOUND);
  }
  {
    v1::GetTaskFieldRequest r;
    v1::GetTaskFieldResponse out;
    r.set_task_id(id);
    r.set_field("no such-field");
    EXPECT_GRPC_CODE(tasks_->GetTaskField(Ctx().get(), r, &out), INVALID_ARGUMENT);
    r.set_field("");
    EXPECT_GRPC_CODE(tasks_->GetTaskField(Ctx().get(), r, &out), INVALID_ARGUMENT);
    r.set_field("never_set");
    EXPECT_GRPC_CODE(tasks_->GetTaskField(Ctx().get(), r, &out), NOT_FOUND);
    r.set_task_id("deadbeef");
    r.set_field("attempt_count");
    EXPECT_GRPC_CODE(tasks_->GetTaskField(Ctx().get(), r, &out), NOT_FOUND);
  }
  {
    v1::SetTaskFieldRequest r;
    v1::SetTaskFieldResponse out;
    r.set_task_id(id);
    r.set_field("failures");
    r.set_value("[]");
    EXPECT_GRPC_CODE(tasks_->SetTaskField(Ctx().get(), r, &out), INVALID_ARGUMENT);
    r.set_field("bad field");
    EXPECT_GRPC_CODE(tasks_->SetTaskField(Ctx().get(), r, &out), INVALID_ARGUMENT);
    r.set_field("attempt_count");
    r.set_value("many");
    EXPECT_GRPC_CODE(tasks_->SetTaskField(Ctx().get(), r, &out), INVALID_ARGUMENT);
    r.set_field("note");
    r.set_value(std::string((64 << 10) + 1, 'v'));
    EXPECT_GRPC_CODE(tasks_->SetTaskField(Ctx().get(), r, &out), RESOURCE_EXHAUSTED);
    r.set_task_id("deadbeef");
    r.set_value("x");
    EXPECT_GRPC_CODE(tasks_->SetTaskField(Ctx().get(), r, &out), NOT_FOUND);
  }
  {
    v1::IncrementAttemptRequest r;
    v1::IncrementAttemptResponse out;
    EXPECT_GRPC_CODE(tasks_->IncrementAttempt(Ctx().get(), r, &out), INVALID_ARGUMENT);
    r.set_task_id(long_id);
    EXPECT_GRPC_CODE(tasks_->IncrementAttempt(Ctx().get(), r, &out), INVALID_ARGUMENT);
    r.set_task_id("deadbeef");
    EXPECT_GRPC_CODE(tasks_->IncrementAttempt(Ctx().get(), r, &out), NOT_FOUND);
  }
  {
    v1::GetTierRequest r;
    v1::GetTierResponse out;
    EXPECT_GRPC_CODE(tasks_->GetTier(Ctx().get(), r, &out), INVALID_ARGUMENT);
    r.set_task_id("deadbeef");
    EXPECT_GRPC_CODE(tasks_->GetTier(Ctx().get(), r, &out), NOT_FOUND);
  }
  {
    v1::EscalateRequest r;
    v1::EscalateResponse out;
    r.set_task_id(id);
    r.set_steps(0);
    EXPECT_GRPC_CODE(tasks_->Escalate(Ctx().get(), r, &out), INVALID_ARGUMENT);
    r.set_steps(-2);
    EXPECT_GRPC_CODE(tasks_->Escalate(Ctx().get(), r, &out), INVALID_ARGUMENT);
    r.clear_steps();
    r.set_reason(std::string((4 << 10) + 1, 'r'));
    EXPECT_GRPC_CODE(tasks_->Escalate(Ctx().get(), r, &out), RESOURCE_EXHAUSTED);
    r.clear_reason();
    r.set_task_id("deadbeef");
    EXPECT_GRPC_CODE(tasks_->Escalate(Ctx().get(), r, &out), NOT_FOUND);
  }
  {
    v1::RecordFailureRequest r;
    v1::RecordFailureResponse out;
    r.set_task_id(id);
    EXPECT_GRPC_CODE(tasks_->RecordFailure(Ctx().get(), r, &out), INVALID_ARGUMENT);
    r.set_error(std::string((16 << 10) + 1, 'e'));
    EXPECT_GRPC_CODE(tasks_->RecordFailure(Ctx().get(), r, &out), RESOURCE_EXHAUSTED);
    r.set_error("x");
    r.set_task_id("");
    EXPECT_GRPC_CODE(tasks_->RecordFailure(Ctx().get(), r, &out), INVALID_ARGUMENT);
    r.set_task_id("deadbeef");
    EXPECT_GRPC_CODE(tasks_->RecordFailure(Ctx().get(), r, &out), NOT_FOUND);
  }
  {
    v1::RecordQualityGateRequest r;
    v1::RecordQualityGateResponse out;
    r.set_task_id(id);
    EXPECT_GRPC_CODE(tasks_->RecordQualityGate(Ctx().get(), r, &out), INVALID_ARGUMENT);
    r.set_check("lint");
    r.set_detail(std::string((16 << 10) + 1, 'd'));
    EXPECT_GRPC_CODE(tasks_->RecordQualityGate(Ctx().get(), r, &out), RESOURCE_EXHAUSTED);
    r.clear_detail();
    r.set_task_id("deadbeef");
    EXPECT_GRPC_CODE(tasks_->RecordQualityGate(Ctx().get(), r, &out), NOT_FOUND);
  }
  {
    v1::GetFailureContextRequest r;
    v1::GetFailureContextResponse out;
    r.set_task_id(id);
    r.set_tail(-1);
    EXPECT_GRPC_CODE(tasks_->GetFailureContext(Ctx().get(), r, &out), INVALID_ARGUMENT);
    r.set_tail(0);
    r.set_task_id("deadbeef");
    EXPECT_GRPC_CODE(tasks_->GetFailureContext(Ctx().get(), r, &out), NOT_FOUND);
  }
  {
    v1::CleanupTaskRequest r;
    v1::CleanupTaskResponse out;
    EXPECT_GRPC_CODE(tasks_->CleanupTask(Ctx().get(), r, &out), INVALID_ARGUMENT);
    r.set_task_id("deadbeef");
    EXPECT_GRPC_CODE(tasks_->CleanupTask(Ctx().get(), r, &out), NOT_FOUND);
  }
  {
    v1::ListTasksRequest r;
    v1::ListTasksResponse out;
    r.set_page_size(-1);
    EXPECT_GRPC_CODE(tasks_->ListTasks(Ctx().get(), r, &out), INVALID_ARGUMENT);
    r.set_page_size(0);
    r.set_page_token("garbage");
    EXPECT_GRPC_CODE(tasks_->ListTasks(Ctx().get(), r, &out), INVALID_ARGUMENT);
  }
  {
    v1::ImportTaskRequest r;
    v1::ImportTaskResponse out;
    r.mutable_state()->set_task_id(id);
    r.mutable_state()->set_description("Fix the login bug");
    r.mutable_state()->set_model_tier(1);
    EXPECT_GRPC_CODE(tasks_->ImportTask(Ctx().get(), r, &out), ALREADY_EXISTS);
    r.set_replace(true);
    r.mutable_state()->set_model_tier(99);
    EXPECT_GRPC_CODE(tasks_->ImportTask(Ctx().get(), r, &out), INVALID_ARGUMENT);
  }
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(StateOf(id), before));
}

TEST_F(RetryServicesTest, BadBreakerRequestsGetAClearStatusAndChangeNothing) {
  const std::string id = Init("Fix the login bug");
  const v1::TaskState before = StateOf(id);
  {
    v1::CheckLoopRequest r;
    v1::CheckLoopResponse out;
    EXPECT_GRPC_CODE(breaker_->CheckLoop(Ctx().get(), r, &out), INVALID_ARGUMENT);
    r.set_task_id("deadbeef");
    EXPECT_GRPC_CODE(breaker_->CheckLoop(Ctx().get(), r, &out), NOT_FOUND);
    r.set_task_id(id);
    r.mutable_thresholds()->set_repeated_error(0);
    EXPECT_GRPC_CODE(breaker_->CheckLoop(Ctx().get(), r, &out), INVALID_ARGUMENT);
  }
  {
    v1::AnalyzeLoopRequest r;
    v1::LoopAnalysis out;
    r.set_task_id(std::string(300, 'a'));
    EXPECT_GRPC_CODE(breaker_->AnalyzeLoop(Ctx().get(), r, &out), INVALID_ARGUMENT);
    r.set_task_id(id);
    r.mutable_thresholds()->set_quality_gate(-1);
    EXPECT_GRPC_CODE(breaker_->AnalyzeLoop(Ctx().get(), r, &out), INVALID_ARGUMENT);
  }
  {
    v1::ForceEscalateRequest r;
    v1::ForceEscalateResponse out;
    EXPECT_GRPC_CODE(breaker_->ForceEscalate(Ctx().get(), r, &out), INVALID_ARGUMENT);
    r.set_task_id("deadbeef");
    EXPECT_GRPC_CODE(breaker_->ForceEscalate(Ctx().get(), r, &out), NOT_FOUND);
    r.set_task_id(id);
    r.set_reason(std::string((4 << 10) + 1, 'r'));
    EXPECT_GRPC_CODE(breaker_->ForceEscalate(Ctx().get(), r, &out), RESOURCE_EXHAUSTED);
  }
  {
    v1::BreakRequest r;
    v1::BreakResponse out;
    EXPECT_GRPC_CODE(breaker_->Break(Ctx().get(), r, &out), INVALID_ARGUMENT);
    r.set_task_id("deadbeef");
    EXPECT_GRPC_CODE(breaker_->Break(Ctx().get(), r, &out), NOT_FOUND);
    r.set_task_id(id);
    r.mutable_thresholds()->set_stuck_tier(0);
    EXPECT_GRPC_CODE(breaker_->Break(Ctx().get(), r, &out), INVALID_ARGUMENT);
  }
  {
    v1::GetBreakSummaryRequest r;
    v1::GetBreakSummaryResponse out;
    EXPECT_GRPC_CODE(breaker_->GetBreakSummary(Ctx().get(), r, &out), INVALID_ARGUMENT);
    r.set_task_id(id);
    EXPECT_GRPC_CODE(breaker_->GetBreakSummary(Ctx().get(), r, &out), NOT_FOUND);
  }
  {
    v1::CleanupBreakerRequest r;
    v1::CleanupBreakerResponse out;
    EXPECT_GRPC_CODE(breaker_->Cleanup(Ctx().get(), r, &out), INVALID_ARGUMENT);
    r.set_task_id("deadbeef");
    EXPECT_GRPC_CODE(breaker_->Cleanup(Ctx().get(), r, &out), NOT_FOUND);
  }
  {
    v1::ReadBreakerLogRequest r;
    v1::ReadBreakerLogResponse out;
    r.set_tail(-5);
    EXPECT_GRPC_CODE(breaker_->ReadBreakerLog(Ctx().get(), r, &out), INVALID_ARGUMENT);
    r.set_tail(0);
    r.set_page_token("garbage");
    EXPECT_GRPC_CODE(breaker_->ReadBreakerLog(Ctx().get(), r, &out), INVALID_ARGUMENT);
    // Nothing above was logged.
    r.clear_page_token();
    ASSERT_TRUE(breaker_->ReadBreakerLog(Ctx().get(), r, &out).ok());
    EXPECT_EQ(out.entries_size(), 0);
  }
  {
    v1::GetBreakerStatusRequest r;
    v1::GetBreakerStatusResponse out;
    ASSERT_TRUE(breaker_->GetBreakerStatus(Ctx().get(), r, &out).ok());
    EXPECT_EQ(out.blocked_tasks_size(), 0);
  }
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(StateOf(id), before));
}

TEST_F(RetryServicesTest, BlockedTaskRefusesAttemptsWithFailedPrecondition) {
  const std::string id = Init("t");
  v1::BreakRequest r;
  r.set_task_id(id);
  r.set_reason("looping");
  v1::BreakResponse out;
  ASSERT_TRUE(breaker_->Break(Ctx().get(), r, &out).ok());
  EXPECT_THAT(out.summary(), HasSubstr("looping"));
  EXPECT_GRPC_CODE(breaker_->Break(Ctx().get(), r, &out), ALREADY_EXISTS);
  v1::IncrementAttemptRequest attempt;
  attempt.set_task_id(id);
  v1::IncrementAttemptResponse count;
  EXPECT_GRPC_CODE(tasks_->IncrementAttempt(Ctx().get(), attempt, &count), FAILED_PRECONDITION);
  v1::CleanupBreakerRequest cleanup;
  cleanup.set_task_id(id);
  v1::CleanupBreakerResponse cleaned;
  ASSERT_TRUE(breaker_->Cleanup(Ctx().get(), cleanup, &cleaned).ok());
  EXPECT_TRUE(cleaned.was_blocked());
  Init("t");
  ASSERT_TRUE(tasks_->IncrementAttempt(Ctx().get(), attempt, &count).ok());
  EXPECT_EQ(count.attempt_count(), 1);
}

TEST(RetryServerOptionsTest, BadLadderOrThresholdsRefuseToStart) {
  TempDir dir;
  ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.data_dir = dir.Sub("db");
  ASSERT_OK(
      storage::testing::SetTestServerStore(options.data_dir, &options.store_url, &options.etcd));
  options.task_state.tier_ladder = {"a", "a"};
  EXPECT_EQ(CoordinatorServer::Start(options).status().code(), absl::StatusCode::kInvalidArgument);
  options.task_state.tier_ladder = {"a", "b"};
  options.breaker.repeated_error_threshold = 0;
  EXPECT_EQ(CoordinatorServer::Start(options).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coordinator
