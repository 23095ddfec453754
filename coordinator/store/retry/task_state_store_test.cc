#include "coordinator/store/retry/task_state_store.h"

#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "coordinator/store/records/keys.h"
#include "coordinator/store/records/record_codec.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "storage/rocks_store.h"
#include "storage/testing/test_store.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

using ::testing_util::TempDir;

class TaskStateStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(TaskStateOptions()); }

  void Open(TaskStateOptions options) {
    tasks_.reset();
    store_.reset();
    absl::StatusOr<std::unique_ptr<storage::Store>> store =
        storage::testing::OpenTestStore(dir_.Sub("db"), /*sync_writes=*/false);
    ASSERT_OK(store);
    store_ = *std::move(store);
    tasks_ = std::make_unique<TaskStateStore>(store_.get(), std::move(options));
  }

  std::string Init(const std::string& description) {
    auto r = tasks_->Init(description);
    EXPECT_OK(r);
    return r.ok() ? r->task_id() : "";
  }

  v1::TaskState State(const std::string& id) {
    auto s = tasks_->GetState(id);
    EXPECT_OK(s);
    return s.ok() ? *s : v1::TaskState();
  }

  std::string Field(const std::string& id, const std::string& field) {
    auto v = tasks_->GetField(id, field);
    EXPECT_OK(v);
    return v.ok() ? *v : "<error>";
  }

  v1::EscalateResponse Escalate(const std::string& id, int steps = 0) {
    v1::EscalateRequest request;
    request.set_task_id(id);
    request.set_reason("because");
    if (steps != 0) request.set_steps(steps);
    auto r = tasks_->Escalate(request);
    EXPECT_OK(r);
    return r.ok() ? *r : v1::EscalateResponse();
  }

  TempDir dir_;
  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<TaskStateStore> tasks_;
};

TEST(TaskIdTest, FirstEightHexOfSha256) {
  // printf '%s' "<description>" | sha256sum
  EXPECT_EQ(TaskIdForDescription("Fix the login bug"), "257cb146");
  EXPECT_EQ(TaskIdForDescription("Refactor the payment module to use the new API"), "827ebbe6");
  EXPECT_EQ(TaskIdForDescription("a"), "ca978112");
  EXPECT_EQ(TaskIdForDescription("h\xc3\xa9llo w\xc3\xb6rld"), "a1003f7d");
  EXPECT_EQ(TaskIdForDescription(""), "e3b0c442");
}

TEST_F(TaskStateStoreTest, InitCreatesTheScriptsInitialState) {
  const absl::Time before = absl::Now() - absl::Seconds(1);
  auto init = tasks_->Init("Fix the login bug");
  ASSERT_OK(init);
  EXPECT_EQ(init->task_id(), "257cb146");
  EXPECT_TRUE(init->created());
  v1::TaskState state = State("257cb146");
  EXPECT_EQ(state.description(), "Fix the login bug");
  EXPECT_EQ(state.attempt_count(), 0);
  EXPECT_EQ(state.model_tier(), 1);
  EXPECT_EQ(state.model(), "codex-mini");
  EXPECT_GE(state.create_time().seconds(), absl::ToUnixSeconds(before));
  EXPECT_EQ(state.failures_size(), 0);
  EXPECT_EQ(state.escalation_log_size(), 0);
  EXPECT_EQ(state.quality_gate_results_size(), 0);
  EXPECT_EQ(state.custom_fields_size(), 0);
  EXPECT_FALSE(state.blocked());
}

TEST_F(TaskStateStoreTest, SecondInitKeepsTheState) {
  const std::string id = Init("Fix the login bug");
  ASSERT_OK(tasks_->IncrementAttempt(id));
  ASSERT_OK(tasks_->RecordFailure(id, "Timeout after 30s"));
  auto again = tasks_->Init("Fix the login bug");
  ASSERT_OK(again);
  EXPECT_EQ(again->task_id(), id);
  EXPECT_FALSE(again->created());
  v1::TaskState state = State(id);
  EXPECT_EQ(state.attempt_count(), 1);
  EXPECT_EQ(state.failures_size(), 1);
}

TEST_F(TaskStateStoreTest, InitRejectsBadDescriptions) {
  EXPECT_EQ(tasks_->Init("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tasks_->Init(std::string((64 << 10) + 1, 'x')).status().code(),
            absl::StatusCode::kResourceExhausted);
  auto listed = tasks_->List(v1::ListTasksRequest());
  ASSERT_OK(listed);
  EXPECT_EQ(listed->tasks_size(), 0);
}

// An id text names the task instead of the description: ARIA's scripts hashed what
// `echo -n "-n"` printed (nothing), so "-n" and "-e" are one task there, and here.
TEST_F(TaskStateStoreTest, AnIdTextNamesTheTaskAndTasksOfOneIdTextShareTheirState) {
  auto first = tasks_->Init("-n", {}, "");
  ASSERT_OK(first);
  EXPECT_EQ(first->task_id(), "e3b0c442");  // the SHA-256 of nothing
  EXPECT_TRUE(first->created());
  auto second = tasks_->Init("-e", {}, "");
  ASSERT_OK(second);
  EXPECT_EQ(second->task_id(), "e3b0c442");
  EXPECT_FALSE(second->created());
  EXPECT_EQ(State("e3b0c442").description(), "-n");  // the first description stays
  // Without one, the description names the task as before.
  auto plain = tasks_->Init("-n");
  ASSERT_OK(plain);
  EXPECT_EQ(plain->task_id(), TaskIdForDescription("-n"));
  // Bounded like a description; nothing stored.
  EXPECT_EQ(tasks_->Init("x", {}, std::string((64 << 10) + 1, 'x')).status().code(),
            absl::StatusCode::kResourceExhausted);
  auto listed = tasks_->List(v1::ListTasksRequest());
  ASSERT_OK(listed);
  EXPECT_EQ(listed->tasks_size(), 2);
}

TEST_F(TaskStateStoreTest, InitReportsAnIdCollisionInsteadOfSharingState) {
  // A state whose id is that of "Fix the login bug" but that holds another description, as a
  // colliding description would.
  v1::ImportTaskRequest request;
  request.mutable_state()->set_task_id(TaskIdForDescription("Fix the login bug"));
  request.mutable_state()->set_description("Some other task");
  request.mutable_state()->set_model_tier(1);
  ASSERT_OK(tasks_->Import(request));
  EXPECT_EQ(tasks_->Init("Fix the login bug").status().code(), absl::StatusCode::kAlreadyExists);
}

TEST_F(TaskStateStoreTest, InitAfterTheDescriptionWasChangedStillFindsTheTask) {
  const std::string id = Init("Fix the login bug");
  ASSERT_OK(tasks_->SetField(id, "task_desc", "Fix the login bug (reworded)"));
  auto again = tasks_->Init("Fix the login bug");
  ASSERT_OK(again);
  EXPECT_EQ(again->task_id(), id);
  EXPECT_FALSE(again->created());
}

TEST_F(TaskStateStoreTest, IncrementAttemptCountsAndRejectsBadIds) {
  const std::string id = Init("t");
  for (int i = 1; i <= 5; ++i) {
    auto n = tasks_->IncrementAttempt(id);
    ASSERT_OK(n);
    EXPECT_EQ(*n, i);
  }
  EXPECT_EQ(tasks_->IncrementAttempt("deadbeef").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(tasks_->IncrementAttempt("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tasks_->IncrementAttempt(std::string(257, 'a')).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tasks_->IncrementAttempt("bad\nid").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(State(id).attempt_count(), 5);
}

TEST_F(TaskStateStoreTest, ConcurrentIncrementsLoseNothing) {
  const std::string id = Init("contended");
  constexpr int kThreads = 16;
  constexpr int kEach = 25;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) EXPECT_OK(tasks_->IncrementAttempt(id));
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(State(id).attempt_count(), kThreads * kEach);
}

TEST_F(TaskStateStoreTest, EscalateClimbsAndLogs) {
  const std::string id = Init("t");
  v1::EscalateResponse r = Escalate(id);
  EXPECT_EQ(r.model_tier(), 2);
  EXPECT_EQ(r.model(), "gpt-5.1");
  EXPECT_EQ(r.escalation().from_tier(), 1);
  EXPECT_EQ(r.escalation().to_tier(), 2);
  EXPECT_EQ(r.escalation().reason(), "because");
  EXPECT_FALSE(r.escalation().forced());
  r = Escalate(id, 3);
  EXPECT_EQ(r.model_tier(), 5);
  auto tier = tasks_->GetTier(id);
  ASSERT_OK(tier);
  EXPECT_EQ(tier->model_tier(), 5);
  EXPECT_EQ(tier->model(), "claude-haiku");
  v1::TaskState state = State(id);
  ASSERT_EQ(state.escalation_log_size(), 2);
  EXPECT_EQ(state.escalation_log(1).from_tier(), 2);
  EXPECT_EQ(state.escalation_log(1).to_tier(), 5);
  EXPECT_GT(state.escalation_log(1).time().seconds(), 0);
}

TEST_F(TaskStateStoreTest, EscalateIsCappedAtTheTopAndStillLogged) {
  const std::string id = Init("t");
  EXPECT_EQ(Escalate(id, 100).model_tier(), 7);
  v1::EscalateResponse r = Escalate(id);
  EXPECT_EQ(r.model_tier(), 7);
  EXPECT_EQ(r.model(), "aria-thinking");
  EXPECT_EQ(r.escalation().from_tier(), 7);
  EXPECT_EQ(r.escalation().to_tier(), 7);
  EXPECT_EQ(State(id).escalation_log_size(), 2);
  // INT32_MAX steps cannot overflow.
  EXPECT_EQ(Escalate(id, 2147483647).model_tier(), 7);
}

TEST_F(TaskStateStoreTest, EscalateRejectsStepsBelowOneAndChangesNothing) {
  const std::string id = Init("t");
  for (int steps : {0, -1, -100}) {
    v1::EscalateRequest request;
    request.set_task_id(id);
    request.set_steps(steps);
    EXPECT_EQ(tasks_->Escalate(request).status().code(), absl::StatusCode::kInvalidArgument)
        << steps;
  }
  v1::EscalateRequest request;
  request.set_task_id(id);
  request.set_reason(std::string((4 << 10) + 1, 'r'));
  EXPECT_EQ(tasks_->Escalate(request).status().code(), absl::StatusCode::kResourceExhausted);
  request.set_task_id("deadbeef");
  request.clear_reason();
  EXPECT_EQ(tasks_->Escalate(request).status().code(), absl::StatusCode::kNotFound);
  v1::TaskState state = State(id);
  EXPECT_EQ(state.model_tier(), 1);
  EXPECT_EQ(state.escalation_log_size(), 0);
}

TEST_F(TaskStateStoreTest, TheLadderIsConfiguration) {
  TaskStateOptions options;
  options.tier_ladder = {"small", "medium", "large"};
  Open(options);
  const std::string id = Init("t");
  EXPECT_EQ(Field(id, "model"), "small");
  EXPECT_EQ(Escalate(id, 10).model(), "large");
  EXPECT_EQ(State(id).model_tier(), 3);
  EXPECT_EQ(tasks_->SetField(id, "model_tier", "4").status().code(),
            absl::StatusCode::kInvalidArgument);
  auto failure = tasks_->RecordFailure(id, "boom");
  ASSERT_OK(failure);
  EXPECT_EQ(failure->model(), "large");
}

TEST(TierLadderTest, Validation) {
  EXPECT_OK(ValidateTierLadder(DefaultTierLadder()));
  EXPECT_EQ(DefaultTierLadder().size(), 7u);
  EXPECT_EQ(DefaultTierLadder()[0], "codex-mini");
  EXPECT_EQ(DefaultTierLadder()[6], "aria-thinking");
  EXPECT_FALSE(ValidateTierLadder({}).ok());
  EXPECT_FALSE(ValidateTierLadder({"a", ""}).ok());
  EXPECT_FALSE(ValidateTierLadder({"a", "b", "a"}).ok());
  EXPECT_FALSE(ValidateTierLadder(std::vector<std::string>(65, "x")).ok());
}

TEST_F(TaskStateStoreTest, RecordFailureUsesTheCurrentAttemptAndModel) {
  const std::string id = Init("t");
  ASSERT_OK(tasks_->IncrementAttempt(id));
  auto first = tasks_->RecordFailure(id, "Timeout after 30s");
  ASSERT_OK(first);
  EXPECT_EQ(first->seq(), 1);
  EXPECT_EQ(first->attempt(), 1);
  EXPECT_EQ(first->model(), "codex-mini");
  EXPECT_EQ(first->tier(), 1);
  ASSERT_OK(tasks_->IncrementAttempt(id));
  Escalate(id);
  auto second = tasks_->RecordFailure(id, "Rate limit exceeded");
  ASSERT_OK(second);
  EXPECT_EQ(second->seq(), 2);
  EXPECT_EQ(second->attempt(), 2);
  EXPECT_EQ(second->model(), "gpt-5.1");
  // Each failure is a record of its own, keyed by the task and its big-endian seq.
  for (uint64_t seq : {1, 2}) {
    EXPECT_OK(store_->Get(storage::ColumnFamily::kTasks,
                          keys::TaskHistoryRecord(id, keys::kTaskFailure, seq)));
  }
}

TEST_F(TaskStateStoreTest, RecordFailureRejectsBadInputAndChangesNothing) {
  const std::string id = Init("t");
  EXPECT_EQ(tasks_->RecordFailure(id, "").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tasks_->RecordFailure(id, std::string((16 << 10) + 1, 'e')).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(tasks_->RecordFailure("deadbeef", "x").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(tasks_->RecordFailure("", "x").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(State(id).failures_size(), 0);
  // The largest accepted error is exactly the limit.
  EXPECT_OK(tasks_->RecordFailure(id, std::string(16 << 10, 'e')));
}

TEST_F(TaskStateStoreTest, FailureContextIsExactlyTheScriptsText) {
  const std::string id = Init("t");
  auto empty = tasks_->GetFailureContext(id, 0);
  ASSERT_OK(empty);
  EXPECT_EQ(empty->text(), "");
  EXPECT_EQ(empty->failure_count(), 0);

  ASSERT_OK(tasks_->IncrementAttempt(id));
  ASSERT_OK(tasks_->RecordFailure(id, "Timeout after 30s"));
  ASSERT_OK(tasks_->IncrementAttempt(id));
  Escalate(id);
  ASSERT_OK(tasks_->RecordFailure(id, "Rate limit exceeded"));
  auto context = tasks_->GetFailureContext(id, 0);
  ASSERT_OK(context);
  EXPECT_EQ(context->text(),
            "Previous failures:\n"
            "  Attempt 1 (model: codex-mini): Timeout after 30s\n"
            "  Attempt 2 (model: gpt-5.1): Rate limit exceeded\n");
  EXPECT_EQ(context->failure_count(), 2);

  auto tail = tasks_->GetFailureContext(id, 1);
  ASSERT_OK(tail);
  EXPECT_EQ(tail->text(),
            "Previous failures:\n"
            "  Attempt 2 (model: gpt-5.1): Rate limit exceeded\n");
  EXPECT_EQ(tasks_->GetFailureContext(id, -1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tasks_->GetFailureContext("deadbeef", 0).status().code(), absl::StatusCode::kNotFound);
}

TEST(FailureContextTest, LinesInsideAnErrorAreIndentedToo) {
  v1::TaskFailure f;
  f.set_attempt(3);
  f.set_model("codex");
  f.set_error("Traceback:\n  File x.py\nKeyError: 'id'");
  EXPECT_EQ(FormatFailureContext({f}),
            "Previous failures:\n"
            "  Attempt 3 (model: codex): Traceback:\n"
            "    File x.py\n"
            "  KeyError: 'id'\n");
  EXPECT_EQ(FormatFailureContext({}), "");
}

TEST_F(TaskStateStoreTest, GetKnownFields) {
  const std::string id = Init("Fix the login bug");
  ASSERT_OK(tasks_->IncrementAttempt(id));
  ASSERT_OK(tasks_->RecordFailure(id, "boom \"quoted\""));
  Escalate(id);
  v1::RecordQualityGateRequest qg;
  qg.set_task_id(id);
  qg.set_check("lint");
  qg.set_detail("2 warnings");
  ASSERT_OK(tasks_->RecordQualityGate(qg));
  EXPECT_EQ(Field(id, "task_id"), id);
  EXPECT_EQ(Field(id, "task_desc"), "Fix the login bug");
  EXPECT_EQ(Field(id, "attempt_count"), "1");
  EXPECT_EQ(Field(id, "model_tier"), "2");
  EXPECT_EQ(Field(id, "model"), "gpt-5.1");
  EXPECT_EQ(Field(id, "created_at"), absl::StrCat(State(id).create_time().seconds()));
  EXPECT_EQ(Field(id, "blocked"), "false");
  EXPECT_EQ(Field(id, "blocked_at"), "");
  EXPECT_EQ(Field(id, "block_reason"), "");
  const v1::TaskState state = State(id);
  EXPECT_EQ(Field(id, "failures"),
            absl::StrCat("[{\"attempt\":1,\"error\":\"boom \\\"quoted\\\"\",\"model\":"
                         "\"codex-mini\",\"timestamp\":\"",
                         state.failures(0).time().seconds(), "\"}]"));
  EXPECT_EQ(Field(id, "escalation_log"),
            absl::StrCat("[{\"timestamp\":\"", state.escalation_log(0).time().seconds(),
                         "\",\"reason\":\"because\",\"from_tier\":1,\"to_tier\":2}]"));
  EXPECT_EQ(Field(id, "quality_gate_results"),
            absl::StrCat("[{\"check\":\"lint\",\"passed\":false,\"detail\":\"2 warnings\","
                         "\"timestamp\":\"",
                         state.quality_gate_results(0).time().seconds(), "\"}]"));
}

TEST_F(TaskStateStoreTest, SetKnownFields) {
  const std::string id = Init("t");
  EXPECT_EQ(*tasks_->SetField(id, "attempt_count", "5"), "5");
  EXPECT_EQ(Field(id, "attempt_count"), "5");
  EXPECT_EQ(*tasks_->SetField(id, "model_tier", "3"), "3");
  EXPECT_EQ(Field(id, "model"), "codex");
  EXPECT_EQ(*tasks_->SetField(id, "created_at", "1700000000"), "1700000000");
  EXPECT_EQ(Field(id, "created_at"), "1700000000");
  EXPECT_OK(tasks_->SetField(id, "task_desc", "new words"));
  EXPECT_EQ(Field(id, "task_desc"), "new words");
  auto n = tasks_->IncrementAttempt(id);
  ASSERT_OK(n);
  EXPECT_EQ(*n, 6);
}

TEST_F(TaskStateStoreTest, CustomFieldsAreKeptAsStrings) {
  const std::string id = Init("t");
  EXPECT_EQ(tasks_->GetField(id, "priority").status().code(), absl::StatusCode::kNotFound);
  ASSERT_OK(tasks_->SetField(id, "priority", "high"));
  ASSERT_OK(tasks_->SetField(id, "_budget2", "42"));
  ASSERT_OK(tasks_->SetField(id, "empty", ""));
  EXPECT_EQ(Field(id, "priority"), "high");
  EXPECT_EQ(Field(id, "_budget2"), "42");
  EXPECT_EQ(Field(id, "empty"), "");
  ASSERT_OK(tasks_->SetField(id, "priority", "low"));
  EXPECT_EQ(Field(id, "priority"), "low");
  EXPECT_EQ(State(id).custom_fields_size(), 3);
}

TEST_F(TaskStateStoreTest, BadFieldNamesAndValuesChangeNothing) {
  const std::string id = Init("t");
  ASSERT_OK(tasks_->SetField(id, "note", "kept"));
  const v1::TaskState before = State(id);
  for (const std::string& bad :
       {std::string(""), std::string("1abc"), std::string("a-b"), std::string("a b"),
        std::string("a.b"), std::string(".x"), std::string(65, 'f'), std::string("caf\xc3\xa9")}) {
    EXPECT_EQ(tasks_->GetField(id, bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(tasks_->SetField(id, bad, "x").status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
  // Derived, breaker-owned and history fields cannot be set.
  for (const char* field : {"task_id", "model", "blocked", "blocked_at", "block_reason", "failures",
                            "escalation_log", "quality_gate_results"}) {
    EXPECT_EQ(tasks_->SetField(id, field, "1").status().code(), absl::StatusCode::kInvalidArgument)
        << field;
  }
  // Values that do not fit the field.
  EXPECT_EQ(tasks_->SetField(id, "attempt_count", "abc").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tasks_->SetField(id, "attempt_count", "-1").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tasks_->SetField(id, "attempt_count", "99999999999").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tasks_->SetField(id, "model_tier", "0").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tasks_->SetField(id, "model_tier", "8").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tasks_->SetField(id, "created_at", "yesterday").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tasks_->SetField(id, "task_desc", "").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tasks_->SetField(id, "note", std::string((64 << 10) + 1, 'v')).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(tasks_->SetField("deadbeef", "note", "x").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(tasks_->GetField("deadbeef", "note").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(State(id), before));
}

TEST_F(TaskStateStoreTest, CustomFieldsAreBounded) {
  TaskStateOptions options;
  options.max_custom_fields = 2;
  Open(options);
  const std::string id = Init("t");
  ASSERT_OK(tasks_->SetField(id, "a", "1"));
  ASSERT_OK(tasks_->SetField(id, "b", "2"));
  EXPECT_EQ(tasks_->SetField(id, "c", "3").status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_OK(tasks_->SetField(id, "a", "changed"));  // an existing one can change
}

TEST_F(TaskStateStoreTest, QualityGateResults) {
  const std::string id = Init("t");
  v1::RecordQualityGateRequest request;
  request.set_task_id(id);
  request.set_check("tests");
  request.set_passed(true);
  request.set_detail("42 passed");
  auto r = tasks_->RecordQualityGate(request);
  ASSERT_OK(r);
  EXPECT_EQ(r->seq(), 1);
  v1::TaskState state = State(id);
  ASSERT_EQ(state.quality_gate_results_size(), 1);
  EXPECT_EQ(state.quality_gate_results(0).check(), "tests");
  EXPECT_TRUE(state.quality_gate_results(0).passed());
  EXPECT_EQ(state.quality_gate_results(0).detail(), "42 passed");

  request.set_check("");
  EXPECT_EQ(tasks_->RecordQualityGate(request).status().code(), absl::StatusCode::kInvalidArgument);
  request.set_check("tests");
  request.set_detail(std::string((16 << 10) + 1, 'd'));
  EXPECT_EQ(tasks_->RecordQualityGate(request).status().code(),
            absl::StatusCode::kResourceExhausted);
  request.set_task_id("deadbeef");
  request.clear_detail();
  EXPECT_EQ(tasks_->RecordQualityGate(request).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(State(id).quality_gate_results_size(), 1);
}

TEST_F(TaskStateStoreTest, CleanupRemovesEverythingAndInitStartsOver) {
  const std::string id = Init("t");
  ASSERT_OK(tasks_->IncrementAttempt(id));
  ASSERT_OK(tasks_->RecordFailure(id, "x"));
  Escalate(id);
  auto was_blocked = tasks_->Cleanup(id);
  ASSERT_OK(was_blocked);
  EXPECT_FALSE(*was_blocked);
  EXPECT_EQ(tasks_->GetState(id).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(tasks_->Cleanup(id).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(tasks_->Cleanup("").status().code(), absl::StatusCode::kInvalidArgument);
  // No record of the task is left behind.
  const std::string prefix = keys::TaskPrefix(id);
  auto it =
      store_->NewIterator(storage::ColumnFamily::kTasks, prefix, storage::PrefixUpperBound(prefix));
  EXPECT_FALSE(it->Valid());
  auto again = tasks_->Init("t");
  ASSERT_OK(again);
  EXPECT_TRUE(again->created());
  v1::TaskState state = State(id);
  EXPECT_EQ(state.attempt_count(), 0);
  EXPECT_EQ(state.failures_size(), 0);
  EXPECT_EQ(state.escalation_log_size(), 0);
}

TEST_F(TaskStateStoreTest, ListPagesThroughEveryTask) {
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(Init(absl::StrCat("task number ", i)));
  ASSERT_OK(tasks_->RecordFailure(ids[0], "history records are skipped by the listing"));
  std::sort(ids.begin(), ids.end());
  v1::ListTasksRequest request;
  request.set_page_size(2);
  std::vector<std::string> seen;
  do {
    auto page = tasks_->List(request);
    ASSERT_OK(page);
    EXPECT_LE(page->tasks_size(), 2);
    for (const auto& t : page->tasks()) seen.push_back(t.task_id());
    request.set_page_token(page->next_page_token());
  } while (!request.page_token().empty());
  EXPECT_EQ(seen, ids);
  request.set_page_size(-1);
  EXPECT_EQ(tasks_->List(request).status().code(), absl::StatusCode::kInvalidArgument);
  request.set_page_size(0);
  request.set_page_token("not a token");
  EXPECT_EQ(tasks_->List(request).status().code(), absl::StatusCode::kInvalidArgument);
}

v1::ImportTaskRequest SampleImport() {
  v1::ImportTaskRequest request;
  v1::TaskState* s = request.mutable_state();
  s->set_task_id("257cb146");
  s->set_description("Fix the login bug");
  s->set_attempt_count(4);
  s->set_model_tier(2);
  s->mutable_create_time()->set_seconds(1700000000);
  auto add_failure = [&](int attempt, const char* error, const char* model, int64_t t) {
    auto* f = s->add_failures();
    f->set_attempt(attempt);
    f->set_error(error);
    f->set_model(model);
    f->mutable_time()->set_seconds(t);
  };
  add_failure(1, "Timeout after 30s", "codex-mini", 1700000100);
  auto* e = s->add_escalation_log();
  e->set_reason("timeouts");
  e->set_from_tier(1);
  e->set_to_tier(2);
  e->mutable_time()->set_seconds(1700000200);
  add_failure(2, "Rate limit exceeded", "gpt-5.1", 1700000300);
  add_failure(3, "Rate limit exceeded again", "gpt-5.1", 1700000400);
  auto* q = s->add_quality_gate_results();
  q->set_check("lint");
  q->set_passed(false);
  q->mutable_time()->set_seconds(1700000500);
  (*s->mutable_custom_fields())["priority"] = "high";
  return request;
}

TEST_F(TaskStateStoreTest, ImportLoadsTheWholeHistory) {
  auto r = tasks_->Import(SampleImport());
  ASSERT_OK(r);
  EXPECT_EQ(r->task_id(), "257cb146");
  EXPECT_FALSE(r->replaced());
  v1::TaskState state = State("257cb146");
  EXPECT_EQ(state.attempt_count(), 4);
  EXPECT_EQ(state.model_tier(), 2);
  EXPECT_EQ(state.create_time().seconds(), 1700000000);
  ASSERT_EQ(state.failures_size(), 3);
  EXPECT_EQ(state.failures(2).seq(), 3);
  EXPECT_EQ(state.failures(1).tier(), 2);  // from the model's place on the ladder
  EXPECT_EQ(state.escalation_log_size(), 1);
  EXPECT_EQ(state.quality_gate_results_size(), 1);
  EXPECT_EQ(state.custom_fields().at("priority"), "high");
  // Appends continue the imported sequences.
  auto next = tasks_->RecordFailure("257cb146", "new");
  ASSERT_OK(next);
  EXPECT_EQ(next->seq(), 4);
  auto context = tasks_->GetFailureContext("257cb146", 0);
  ASSERT_OK(context);
  EXPECT_EQ(context->text(),
            "Previous failures:\n"
            "  Attempt 1 (model: codex-mini): Timeout after 30s\n"
            "  Attempt 2 (model: gpt-5.1): Rate limit exceeded\n"
            "  Attempt 3 (model: gpt-5.1): Rate limit exceeded again\n"
            "  Attempt 4 (model: gpt-5.1): new\n");
  // A second Init of the description keeps the imported state.
  auto init = tasks_->Init("Fix the login bug");
  ASSERT_OK(init);
  EXPECT_FALSE(init->created());
}

TEST_F(TaskStateStoreTest, ImportRefusesToOverwriteUnlessAskedTo) {
  ASSERT_OK(tasks_->Import(SampleImport()));
  EXPECT_EQ(tasks_->Import(SampleImport()).status().code(), absl::StatusCode::kAlreadyExists);
  v1::ImportTaskRequest replace = SampleImport();
  replace.mutable_state()->set_attempt_count(9);
  replace.mutable_state()->clear_failures();
  replace.set_replace(true);
  auto r = tasks_->Import(replace);
  ASSERT_OK(r);
  EXPECT_TRUE(r->replaced());
  v1::TaskState state = State("257cb146");
  EXPECT_EQ(state.attempt_count(), 9);
  EXPECT_EQ(state.failures_size(), 0);
}

TEST_F(TaskStateStoreTest, ImportRejectsBadStatesAndStoresNothing) {
  std::vector<std::pair<std::string, v1::ImportTaskRequest>> cases;
  auto bad = [&](const std::string& name, auto mutate) {
    v1::ImportTaskRequest r = SampleImport();
    mutate(r.mutable_state());
    cases.emplace_back(name, r);
  };
  bad("empty id", [](v1::TaskState* s) { s->clear_task_id(); });
  bad("long id", [](v1::TaskState* s) { s->set_task_id(std::string(300, 'a')); });
  bad("no description", [](v1::TaskState* s) { s->clear_description(); });
  bad("tier 0", [](v1::TaskState* s) { s->set_model_tier(0); });
  bad("tier 8", [](v1::TaskState* s) { s->set_model_tier(8); });
  bad("negative attempts", [](v1::TaskState* s) { s->set_attempt_count(-1); });
  bad("empty error", [](v1::TaskState* s) { s->mutable_failures(0)->clear_error(); });
  bad("huge error",
      [](v1::TaskState* s) { s->mutable_failures(0)->set_error(std::string(20000, 'e')); });
  bad("negative time", [](v1::TaskState* s) { s->mutable_create_time()->set_seconds(-5); });
  bad("bad custom name",
      [](v1::TaskState* s) { (*s->mutable_custom_fields())["not a name"] = "x"; });
  bad("custom named like a known field",
      [](v1::TaskState* s) { (*s->mutable_custom_fields())["attempt_count"] = "x"; });
  bad("empty check", [](v1::TaskState* s) { s->mutable_quality_gate_results(0)->clear_check(); });
  for (const auto& [name, request] : cases) {
    const absl::Status s = tasks_->Import(request).status();
    EXPECT_TRUE(absl::IsInvalidArgument(s) || absl::IsResourceExhausted(s)) << name << ": " << s;
  }
  EXPECT_EQ(tasks_->GetState("257cb146").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(TaskStateStoreTest, ImportDerivesTheLoopCounters) {
  v1::ImportTaskRequest request = SampleImport();
  auto* q = request.mutable_state()->add_quality_gate_results();
  q->set_check("lint");
  q->set_passed(false);
  ASSERT_OK(tasks_->Import(request));
  auto raw = store_->Get(storage::ColumnFamily::kTasks, keys::TaskHeader("257cb146"));
  ASSERT_OK(raw);
  v1::StoredTaskHeader header;
  ASSERT_OK(DecodeRecord(*raw, &header));
  EXPECT_EQ(header.failure_count(), 3);
  EXPECT_EQ(header.escalation_count(), 1);
  EXPECT_EQ(header.quality_gate_count(), 2);
  // Two failures on gpt-5.1 after the escalation to tier 2.
  EXPECT_EQ(header.failures_at_tier(), 2);
  EXPECT_EQ(header.quality_gate_fail_streaks().at("lint"), 2);
}

TEST_F(TaskStateStoreTest, ImportedBlockedTaskTakesNoAttempts) {
  v1::ImportTaskRequest request = SampleImport();
  request.mutable_state()->set_blocked(true);
  request.mutable_state()->set_block_reason("looping");
  request.mutable_state()->mutable_blocked_time()->set_seconds(1700000600);
  ASSERT_OK(tasks_->Import(request));
  EXPECT_EQ(tasks_->IncrementAttempt("257cb146").status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Field("257cb146", "blocked"), "true");
  EXPECT_EQ(Field("257cb146", "blocked_at"), "1700000600");
  EXPECT_EQ(Field("257cb146", "block_reason"), "looping");
  EXPECT_OK(store_->Get(storage::ColumnFamily::kTasks, keys::BlockedRegistry("257cb146")));
  auto was_blocked = tasks_->Cleanup("257cb146");
  ASSERT_OK(was_blocked);
  EXPECT_TRUE(*was_blocked);
  EXPECT_EQ(
      store_->Get(storage::ColumnFamily::kTasks, keys::BlockedRegistry("257cb146")).status().code(),
      absl::StatusCode::kNotFound);
}

// ---- Ownership (docs/security.md, "Ownership") ----

class TaskOwnershipTest : public TaskStateStoreTest {
 protected:
  const Access green_ = Access::Agent("green");
  const Access purple_ = Access::Agent("purple");
  const Access admin_ = Access::Admin("ops");
};

TEST_F(TaskOwnershipTest, TheInitializerOwnsTheTask) {
  absl::StatusOr<v1::InitTaskResponse> created = tasks_->Init("green's task", green_);
  ASSERT_OK(created);
  EXPECT_TRUE(created->created());
  absl::StatusOr<v1::TaskState> state = tasks_->GetState(created->task_id(), green_);
  ASSERT_OK(state);
  EXPECT_EQ(state->owner(), "green");
  // A second Init by the owner is the same task; by another agent it is a write on another's.
  absl::StatusOr<v1::InitTaskResponse> again = tasks_->Init("green's task", green_);
  ASSERT_OK(again);
  EXPECT_FALSE(again->created());
  EXPECT_EQ(tasks_->Init("green's task", purple_).status().code(),
            absl::StatusCode::kPermissionDenied);
  // An admin reaches it and does not take it over.
  ASSERT_OK(tasks_->Init("green's task", admin_));
  EXPECT_EQ(State(created->task_id()).owner(), "green");
}

TEST_F(TaskOwnershipTest, ReadsOfAnothersTaskAreExactlyNotFound) {
  const std::string id = tasks_->Init("green's task", green_)->task_id();
  const std::string unknown = "0000beef";
  for (const std::string& task : {id, unknown}) {
    SCOPED_TRACE(task);
    absl::Status get = tasks_->GetState(task, purple_).status();
    EXPECT_EQ(get.code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(get.message(), absl::StrCat("task ", task, " not found"));
    EXPECT_EQ(tasks_->GetField(task, "attempt_count", purple_).status(),
              absl::NotFoundError(absl::StrCat("task ", task, " not found")));
    EXPECT_EQ(tasks_->GetTier(task, purple_).status(), get);
    EXPECT_EQ(tasks_->GetFailureContext(task, 0, purple_).status(), get);
  }
  // The owner, an admin and unscoped readers read it.
  EXPECT_OK(tasks_->GetState(id, green_));
  EXPECT_OK(tasks_->GetState(id, admin_));
  EXPECT_OK(tasks_->GetState(id, Access::Unscoped()));
}

TEST_F(TaskOwnershipTest, WritesOnAnothersTaskAreDeniedAndChangeNothing) {
  const std::string id = tasks_->Init("green's task", green_)->task_id();
  ASSERT_OK(tasks_->RecordFailure(id, "boom", green_));
  const v1::TaskState before = State(id);
  v1::EscalateRequest escalate;
  escalate.set_task_id(id);
  v1::RecordQualityGateRequest gate;
  gate.set_task_id(id);
  gate.set_check("lint");
  v1::ImportTaskRequest import;
  *import.mutable_state() = before;
  import.mutable_state()->clear_owner();  // for purple itself: the task is green's
  import.set_replace(true);
  const absl::Status statuses[] = {
      tasks_->SetField(id, "note", "x", purple_).status(),
      tasks_->IncrementAttempt(id, purple_).status(),
      tasks_->Escalate(escalate, purple_).status(),
      tasks_->RecordFailure(id, "forged", purple_).status(),
      tasks_->RecordQualityGate(gate, purple_).status(),
      tasks_->Cleanup(id, purple_).status(),
      tasks_->Import(import, purple_).status(),
  };
  for (const absl::Status& s : statuses) {
    EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
    EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("purple may not"));
    EXPECT_THAT(std::string(s.message()), ::testing::Not(::testing::HasSubstr("green")));
  }
  const v1::TaskState after = State(id);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(before, after))
      << before.DebugString() << "\nvs\n"
      << after.DebugString();
  // The owner writes, and cleans up its own task.
  EXPECT_OK(tasks_->IncrementAttempt(id, green_));
  EXPECT_OK(tasks_->Cleanup(id, green_));
  EXPECT_EQ(tasks_->GetState(id).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(TaskOwnershipTest, ListingShowsAnAgentItsOwnTasks) {
  const std::string g1 = tasks_->Init("green one", green_)->task_id();
  const std::string g2 = tasks_->Init("green two", green_)->task_id();
  const std::string p1 = tasks_->Init("purple one", purple_)->task_id();
  const std::string nobody = Init("stored before ownership");
  auto ids = [&](const Access& access, int page_size) {
    std::vector<std::string> out;
    v1::ListTasksRequest request;
    request.set_page_size(page_size);
    do {
      absl::StatusOr<v1::ListTasksResponse> page = tasks_->List(request, access);
      EXPECT_OK(page);
      if (!page.ok()) break;
      for (const v1::TaskSummary& t : page->tasks()) out.push_back(t.task_id());
      request.set_page_token(page->next_page_token());
    } while (!request.page_token().empty());
    std::sort(out.begin(), out.end());
    return out;
  };
  std::vector<std::string> greens = {g1, g2};
  std::sort(greens.begin(), greens.end());
  EXPECT_EQ(ids(green_, 1), greens);
  EXPECT_EQ(ids(purple_, 100), std::vector<std::string>{p1});
  std::vector<std::string> all = {g1, g2, p1, nobody};
  std::sort(all.begin(), all.end());
  EXPECT_EQ(ids(admin_, 1), all);
  EXPECT_EQ(ids(Access::Agent("mallory"), 100), std::vector<std::string>());
}

TEST_F(TaskOwnershipTest, ATaskWithoutAnOwnerBelongsToNobody) {
  // Stored without a principal: as before ownership, or without authentication.
  const std::string id = Init("legacy");
  EXPECT_EQ(State(id).owner(), "");
  EXPECT_EQ(tasks_->GetState(id, green_).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(tasks_->IncrementAttempt(id, green_).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(tasks_->Init("legacy", green_).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(tasks_->Cleanup(id, green_).status().code(), absl::StatusCode::kPermissionDenied);
  absl::StatusOr<int64_t> unowned = tasks_->CountUnowned();
  ASSERT_OK(unowned);
  EXPECT_EQ(*unowned, 1);
  // An admin can hand it to an agent by importing it again with an owner.
  v1::ImportTaskRequest import;
  *import.mutable_state() = State(id);
  import.mutable_state()->set_owner("green");
  import.set_replace(true);
  ASSERT_OK(tasks_->Import(import, admin_));
  EXPECT_OK(tasks_->IncrementAttempt(id, green_));
  EXPECT_EQ(*tasks_->CountUnowned(), 0);
}

TEST_F(TaskOwnershipTest, AnAgentImportsOnlyForItself) {
  v1::ImportTaskRequest import;
  import.mutable_state()->set_task_id("abcd1234");
  import.mutable_state()->set_description("imported");
  import.mutable_state()->set_model_tier(1);
  import.mutable_state()->set_owner("purple");
  EXPECT_EQ(tasks_->Import(import, green_).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(tasks_->GetState("abcd1234").status().code(), absl::StatusCode::kNotFound);
  import.mutable_state()->set_owner("not a valid\nprincipal");
  EXPECT_EQ(tasks_->Import(import, admin_).status().code(), absl::StatusCode::kInvalidArgument);
  import.mutable_state()->clear_owner();
  ASSERT_OK(tasks_->Import(import, green_));
  EXPECT_EQ(State("abcd1234").owner(), "green");
  // Without replace the owner learns it exists; another agent is refused either way.
  EXPECT_EQ(tasks_->Import(import, green_).status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(tasks_->Import(import, purple_).status().code(), absl::StatusCode::kPermissionDenied);
  import.set_replace(true);
  EXPECT_EQ(tasks_->Import(import, purple_).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_OK(tasks_->Import(import, green_));
}

}  // namespace
}  // namespace coordinator
