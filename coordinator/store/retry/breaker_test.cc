#include "coordinator/store/retry/breaker.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "coordinator/store/records/keys.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/rocks_store.h"
#include "storage/testing/test_store.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::testing_util::TempDir;

v1::LoopThresholds Defaults() {
  auto t = ResolveThresholds(BreakerOptions(), v1::LoopThresholds());
  EXPECT_OK(t);
  return *t;
}

std::vector<v1::TaskFailure> Failures(const std::vector<std::string>& errors) {
  std::vector<v1::TaskFailure> out;
  for (const std::string& e : errors) {
    v1::TaskFailure f;
    f.set_error(e);
    out.push_back(f);
  }
  return out;
}

v1::LoopAnalysis Analyze(const v1::StoredTaskHeader& header, const std::vector<std::string>& errors,
                         const v1::LoopThresholds& thresholds = Defaults(), int32_t tier = 2) {
  return AnalyzeLoop(header, Failures(errors), thresholds, tier, "model", 6);
}

// ---- Pure rules ----

TEST(LoopRulesTest, NoFailuresNoLoop) {
  v1::LoopAnalysis a = Analyze(v1::StoredTaskHeader(), {});
  EXPECT_EQ(a.pattern(), v1::LOOP_PATTERN_NONE);
  EXPECT_EQ(a.pattern_type(), "none");
  EXPECT_EQ(a.repeated_error_count(), 0);
  EXPECT_EQ(a.latest_error(), "");
}

TEST(LoopRulesTest, RepeatedErrorAtTheThreshold) {
  v1::StoredTaskHeader header;
  header.set_failures_at_tier(2);
  v1::LoopAnalysis a = Analyze(header, {"Timeout after 30s", "Timeout after 30s"});
  EXPECT_EQ(a.pattern(), v1::LOOP_PATTERN_REPEATED_ERROR);
  EXPECT_EQ(a.pattern_type(), "repeated_error");
  EXPECT_EQ(a.repeated_error_count(), 2);
  EXPECT_EQ(a.latest_error(), "Timeout after 30s");
  // One occurrence is not a loop.
  EXPECT_EQ(Analyze(header, {"Timeout after 30s"}).pattern(), v1::LOOP_PATTERN_NONE);
}

TEST(LoopRulesTest, RepeatedErrorThresholdCanBeOverridden) {
  v1::LoopThresholds t = Defaults();
  t.set_repeated_error(3);
  const std::vector<std::string> two = {"same", "same"};
  EXPECT_EQ(Analyze(v1::StoredTaskHeader(), two, t).pattern(), v1::LOOP_PATTERN_NONE);
  EXPECT_EQ(Analyze(v1::StoredTaskHeader(), {"same", "same", "same"}, t).pattern(),
            v1::LOOP_PATTERN_REPEATED_ERROR);
}

TEST(LoopRulesTest, RepeatedErrorUsesTheFuzzyMatch) {
  v1::LoopAnalysis a =
      Analyze(v1::StoredTaskHeader(),
              {"TypeError: Cannot read property 'map' of undefined", "Rate limit exceeded",
               "TypeError: Cannot read property 'length' of null"});
  EXPECT_EQ(a.pattern(), v1::LOOP_PATTERN_REPEATED_ERROR);
  EXPECT_EQ(a.repeated_error_count(), 2);
  // The latest error is compared; earlier repeats of another error do not count.
  a = Analyze(v1::StoredTaskHeader(), {"Timeout after 30s", "Timeout after 30s", "Disk full"});
  EXPECT_EQ(a.pattern(), v1::LOOP_PATTERN_NONE);
  EXPECT_EQ(a.repeated_error_count(), 1);
}

TEST(LoopRulesTest, StuckTierCountsFailuresSinceTheTierChanged) {
  v1::StoredTaskHeader header;
  header.set_failures_at_tier(3);
  v1::LoopAnalysis a = Analyze(header, {"a1 one", "b2 two", "c3 three"});
  EXPECT_EQ(a.pattern(), v1::LOOP_PATTERN_STUCK_TIER);
  EXPECT_EQ(a.pattern_type(), "stuck_tier");
  EXPECT_EQ(a.failures_at_tier(), 3);
  header.set_failures_at_tier(2);
  EXPECT_EQ(Analyze(header, {"a1 one", "b2 two"}).pattern(), v1::LOOP_PATTERN_NONE);
  v1::LoopThresholds t = Defaults();
  t.set_stuck_tier(2);
  EXPECT_EQ(Analyze(header, {"a1 one", "b2 two"}, t).pattern(), v1::LOOP_PATTERN_STUCK_TIER);
}

// issue 18: each pattern also holds on the ARIA script's definition, and the analysis says
// which definition held.
TEST(LoopRulesTest, StuckTierAlsoOnAttemptsNeverEscalated) {
  v1::StoredTaskHeader header;
  header.set_failures_at_tier(3);
  EXPECT_EQ(Analyze(header, {"a1 one", "b2 two", "c3 three"}).pattern_condition(),
            "failures_since_tier_change");
  // The script's rule: three attempts, never escalated, whatever was recorded.
  header.set_failures_at_tier(0);
  header.set_attempt_count(3);
  v1::LoopAnalysis a = Analyze(header, {});
  EXPECT_EQ(a.pattern(), v1::LOOP_PATTERN_STUCK_TIER);
  EXPECT_EQ(a.pattern_condition(), "attempts_never_escalated");
  header.set_escalation_count(1);
  EXPECT_EQ(Analyze(header, {}).pattern(), v1::LOOP_PATTERN_NONE);
  EXPECT_EQ(Analyze(header, {}).pattern_condition(), "");
}

TEST(LoopRulesTest, QualityGateLoopAlsoOnFailureTexts) {
  const std::vector<std::string> texts = {"Quality gate failed: eslint found 4 problems",
                                          "Quality gate failed: eslint found 4 problems",
                                          "build timed out"};
  v1::LoopAnalysis a = Analyze(v1::StoredTaskHeader(), texts);
  EXPECT_EQ(a.pattern(), v1::LOOP_PATTERN_QUALITY_GATE_LOOP);
  EXPECT_EQ(a.pattern_condition(), "quality_gate_failure_texts");
  // One such failure, or two unlike ones, is no loop; the text is case-sensitive, as it was.
  EXPECT_EQ(
      Analyze(v1::StoredTaskHeader(), {"Quality gate failed: lint", "build timed out"}).pattern(),
      v1::LOOP_PATTERN_NONE);
  EXPECT_EQ(Analyze(v1::StoredTaskHeader(), {"Quality gate: lint 1 problem",
                                             "Quality gate: coverage at 41 percent, "
                                             "below the 80 percent needed",
                                             "build timed out"})
                .pattern(),
            v1::LOOP_PATTERN_NONE);
  EXPECT_EQ(
      Analyze(v1::StoredTaskHeader(), {"quality gate x", "quality gate x", "other"}).pattern(),
      v1::LOOP_PATTERN_NONE);
  v1::StoredTaskHeader header;
  (*header.mutable_quality_gate_fail_streaks())["lint"] = 2;
  EXPECT_EQ(Analyze(header, {}).pattern_condition(), "quality_gate_results");
  EXPECT_EQ(Analyze(v1::StoredTaskHeader(), {"same", "same"}).pattern_condition(),
            "similar_errors");
}

TEST(LoopRulesTest, QualityGateLoopPerCheck) {
  v1::StoredTaskHeader header;
  (*header.mutable_quality_gate_fail_streaks())["lint"] = 2;
  (*header.mutable_quality_gate_fail_streaks())["tests"] = 1;
  v1::LoopAnalysis a = Analyze(header, {});
  EXPECT_EQ(a.pattern(), v1::LOOP_PATTERN_QUALITY_GATE_LOOP);
  EXPECT_EQ(a.pattern_type(), "quality_gate_loop");
  EXPECT_EQ(a.quality_gate_check(), "lint");
  EXPECT_EQ(a.quality_gate_failures(), 2);
  EXPECT_THAT(a.suggested_action(), StartsWith("HUMAN_INTERVENTION_REQUIRED"));
  v1::LoopThresholds t = Defaults();
  t.set_quality_gate(3);
  EXPECT_EQ(Analyze(header, {}, t).pattern(), v1::LOOP_PATTERN_NONE);
  // Ties go to the first check name, whatever the map order.
  (*header.mutable_quality_gate_fail_streaks())["build"] = 2;
  EXPECT_EQ(Analyze(header, {}).quality_gate_check(), "build");
}

TEST(LoopRulesTest, PatternsAreCheckedInOrder) {
  v1::StoredTaskHeader header;
  header.set_failures_at_tier(5);
  (*header.mutable_quality_gate_fail_streaks())["lint"] = 5;
  EXPECT_EQ(Analyze(header, {"x", "x"}).pattern(), v1::LOOP_PATTERN_REPEATED_ERROR);
  EXPECT_EQ(Analyze(header, {"x", "y"}).pattern(), v1::LOOP_PATTERN_STUCK_TIER);
  header.set_failures_at_tier(0);
  EXPECT_EQ(Analyze(header, {"x", "y"}).pattern(), v1::LOOP_PATTERN_QUALITY_GATE_LOOP);
}

TEST(LoopRulesTest, SuggestedActionDependsOnTheTier) {
  v1::StoredTaskHeader header;
  v1::LoopAnalysis low = Analyze(header, {"x", "x"}, Defaults(), /*tier=*/2);
  EXPECT_THAT(low.suggested_action(), HasSubstr("two tiers"));
  v1::LoopAnalysis high = Analyze(header, {"x", "x"}, Defaults(), /*tier=*/6);
  EXPECT_THAT(high.suggested_action(), StartsWith("HUMAN_INTERVENTION_REQUIRED"));
  header.set_failures_at_tier(3);
  EXPECT_THAT(Analyze(header, {"x", "y"}, Defaults(), 3).suggested_action(),
              StartsWith("Escalate"));
  EXPECT_THAT(Analyze(header, {"x", "y"}, Defaults(), 7).suggested_action(),
              StartsWith("HUMAN_INTERVENTION_REQUIRED"));
}

TEST(LoopRulesTest, Thresholds) {
  v1::LoopThresholds d = Defaults();
  EXPECT_EQ(d.repeated_error(), 2);
  EXPECT_EQ(d.stuck_tier(), 3);
  EXPECT_EQ(d.quality_gate(), 2);
  BreakerOptions server;
  server.repeated_error_threshold = 4;
  v1::LoopThresholds overrides;
  overrides.set_stuck_tier(9);
  auto t = ResolveThresholds(server, overrides);
  ASSERT_OK(t);
  EXPECT_EQ(t->repeated_error(), 4);
  EXPECT_EQ(t->stuck_tier(), 9);
  EXPECT_EQ(t->quality_gate(), 2);
  for (int bad : {0, -1}) {
    v1::LoopThresholds o;
    o.set_repeated_error(bad);
    EXPECT_EQ(ResolveThresholds(server, o).status().code(), absl::StatusCode::kInvalidArgument);
    o.clear_repeated_error();
    o.set_stuck_tier(bad);
    EXPECT_EQ(ResolveThresholds(server, o).status().code(), absl::StatusCode::kInvalidArgument);
    o.clear_stuck_tier();
    o.set_quality_gate(bad);
    EXPECT_EQ(ResolveThresholds(server, o).status().code(), absl::StatusCode::kInvalidArgument);
  }
  v1::LoopThresholds too_many;
  too_many.set_repeated_error(kLoopFailureWindow + 1);
  EXPECT_EQ(ResolveThresholds(server, too_many).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_OK(ValidateBreakerOptions(BreakerOptions()));
  BreakerOptions bad;
  bad.stuck_tier_threshold = 0;
  EXPECT_FALSE(ValidateBreakerOptions(bad).ok());
}

TEST(LoopRulesTest, HumanInterventionTier) {
  EXPECT_EQ(HumanInterventionTier(7), 6);
  EXPECT_EQ(HumanInterventionTier(3), 2);
  EXPECT_EQ(HumanInterventionTier(2), 1);
  EXPECT_EQ(HumanInterventionTier(1), 1);
}

TEST(LoopRulesTest, SummaryNamesEverythingAPersonNeeds) {
  v1::StoredTaskHeader header;
  header.set_task_id("abc12345");
  header.set_description("Fix the login bug");
  header.set_attempt_count(3);
  v1::LoopAnalysis a =
      AnalyzeLoop(header, Failures({"TypeError: x", "TypeError: y"}), Defaults(), 2, "gpt-5.1", 6);
  const std::string s = FormatBreakSummary(a, "same error again", absl::FromUnixSeconds(0));
  for (const char* part :
       {"Task:          abc12345", "Fix the login bug", "Loop pattern:  repeated_error",
        "Attempts:      3", "Current tier:  2 (gpt-5.1)", "Reason:        same error again",
        "TypeError: y", "Suggested action:", "Force escalate two tiers",
        "Next steps:", "coordctl breaker cleanup abc12345", "1970-01-01 00:00:00 UTC"}) {
    EXPECT_THAT(s, HasSubstr(part));
  }
}

// ---- The breaker on a store ----

class BreakerTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(TaskStateOptions(), BreakerOptions()); }

  void Open(TaskStateOptions task_options, BreakerOptions breaker_options) {
    breaker_.reset();
    tasks_.reset();
    store_.reset();
    absl::StatusOr<std::unique_ptr<storage::Store>> store =
        storage::testing::OpenTestStore(dir_.Sub("db"), /*sync_writes=*/false);
    ASSERT_OK(store);
    store_ = *std::move(store);
    tasks_ = std::make_unique<TaskStateStore>(store_.get(), std::move(task_options));
    breaker_ = std::make_unique<Breaker>(store_.get(), tasks_.get(), breaker_options);
  }

  std::string Init(const std::string& description) {
    auto r = tasks_->Init(description);
    EXPECT_OK(r);
    return r.ok() ? r->task_id() : "";
  }

  void Fail(const std::string& id, const std::string& error) {
    ASSERT_OK(tasks_->IncrementAttempt(id));
    ASSERT_OK(tasks_->RecordFailure(id, error));
  }

  void Gate(const std::string& id, const std::string& check, bool passed) {
    v1::RecordQualityGateRequest r;
    r.set_task_id(id);
    r.set_check(check);
    r.set_passed(passed);
    ASSERT_OK(tasks_->RecordQualityGate(r));
  }

  void SetTier(const std::string& id, int tier) {
    ASSERT_OK(tasks_->SetField(id, "model_tier", absl::StrCat(tier)));
  }

  v1::CheckLoopResponse Check(const std::string& id) {
    v1::CheckLoopRequest r;
    r.set_task_id(id);
    auto c = breaker_->Check(r);
    EXPECT_OK(c);
    return c.ok() ? *c : v1::CheckLoopResponse();
  }

  v1::ForceEscalateResponse Force(const std::string& id) {
    v1::ForceEscalateRequest r;
    r.set_task_id(id);
    auto f = breaker_->ForceEscalate(r);
    EXPECT_OK(f);
    return f.ok() ? *f : v1::ForceEscalateResponse();
  }

  std::vector<v1::BreakerLogEntry> Log(int tail = 0) {
    v1::ReadBreakerLogRequest r;
    r.set_tail(tail);
    auto log = breaker_->ReadLog(r);
    EXPECT_OK(log);
    if (!log.ok()) return {};
    return {log->entries().begin(), log->entries().end()};
  }

  TempDir dir_;
  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<TaskStateStore> tasks_;
  std::unique_ptr<Breaker> breaker_;
};

TEST_F(BreakerTest, CheckFindsEachPattern) {
  const std::string repeated = Init("repeated");
  Fail(repeated, "Timeout after 30s");
  EXPECT_FALSE(Check(repeated).looping());
  Fail(repeated, "Timeout after 30s");
  v1::CheckLoopResponse c = Check(repeated);
  EXPECT_TRUE(c.looping());
  EXPECT_EQ(c.pattern(), v1::LOOP_PATTERN_REPEATED_ERROR);
  EXPECT_EQ(c.pattern_type(), "repeated_error");

  const std::string stuck = Init("stuck");
  Fail(stuck, "first problem here");
  Fail(stuck, "a second, unrelated one");
  EXPECT_FALSE(Check(stuck).looping());
  Fail(stuck, "3rd: nothing alike");
  EXPECT_EQ(Check(stuck).pattern(), v1::LOOP_PATTERN_STUCK_TIER);
  // An escalation resets the count.
  v1::EscalateRequest escalate;
  escalate.set_task_id(stuck);
  ASSERT_OK(tasks_->Escalate(escalate));
  EXPECT_FALSE(Check(stuck).looping());

  const std::string gate = Init("gate");
  Gate(gate, "lint", false);
  Gate(gate, "lint", true);  // a pass resets the streak
  Gate(gate, "lint", false);
  Gate(gate, "tests", false);
  EXPECT_FALSE(Check(gate).looping());
  Gate(gate, "lint", false);
  EXPECT_EQ(Check(gate).pattern(), v1::LOOP_PATTERN_QUALITY_GATE_LOOP);
}

TEST_F(BreakerTest, PerCallThresholdsOverrideTheServers) {
  const std::string id = Init("t");
  Fail(id, "same");
  Fail(id, "same");
  v1::CheckLoopRequest r;
  r.set_task_id(id);
  r.mutable_thresholds()->set_repeated_error(3);
  auto c = breaker_->Check(r);
  ASSERT_OK(c);
  EXPECT_FALSE(c->looping());
  r.mutable_thresholds()->set_repeated_error(0);
  EXPECT_EQ(breaker_->Check(r).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(BreakerTest, ServerThresholdsApplyByDefault) {
  BreakerOptions options;
  options.repeated_error_threshold = 3;
  Open(TaskStateOptions(), options);
  const std::string id = Init("t");
  Fail(id, "same");
  Fail(id, "same");
  EXPECT_FALSE(Check(id).looping());
  Fail(id, "same");
  EXPECT_TRUE(Check(id).looping());
}

TEST_F(BreakerTest, AnalyzeReportsTheState) {
  const std::string id = Init("Fix the login bug");
  Fail(id, "TypeError: a is undefined");
  Fail(id, "TypeError: b is undefined");
  v1::AnalyzeLoopRequest r;
  r.set_task_id(id);
  auto a = breaker_->Analyze(r);
  ASSERT_OK(a);
  EXPECT_EQ(a->task_id(), id);
  EXPECT_EQ(a->task_desc(), "Fix the login bug");
  EXPECT_EQ(a->pattern_type(), "repeated_error");
  EXPECT_EQ(a->attempt_count(), 2);
  EXPECT_EQ(a->current_tier(), 1);
  EXPECT_EQ(a->current_model(), "codex-mini");
  EXPECT_EQ(a->repeated_error_count(), 2);
  EXPECT_EQ(a->latest_error(), "TypeError: b is undefined");
  EXPECT_THAT(a->suggested_action(), HasSubstr("two tiers"));
  EXPECT_EQ(a->thresholds().repeated_error(), 2);
}

// The web console's view of the analysis: what Analyze says, without a log entry.
TEST_F(BreakerTest, PreviewIsTheAnalysisWithoutALogEntry) {
  const std::string id = Init("Fix the login bug");
  Fail(id, "TypeError: a is undefined");
  Fail(id, "TypeError: b is undefined");
  const size_t logged = Log().size();
  absl::StatusOr<v1::LoopAnalysis> preview = breaker_->Preview(id);
  ASSERT_OK(preview);
  EXPECT_EQ(Log().size(), logged);
  v1::AnalyzeLoopRequest r;
  r.set_task_id(id);
  absl::StatusOr<v1::LoopAnalysis> analyzed = breaker_->Analyze(r);
  ASSERT_OK(analyzed);
  EXPECT_EQ(preview->SerializeAsString(), analyzed->SerializeAsString());
  EXPECT_EQ(preview->pattern_type(), "repeated_error");
  EXPECT_EQ(breaker_->Preview("00000000").status().code(), absl::StatusCode::kNotFound);
}

// Every change of a task's retry state or of its breaker records is announced once committed
// (the web console's live feed); reads are not.
TEST_F(BreakerTest, EveryCommittedChangeIsAnnounced) {
  std::vector<std::string> changed;
  tasks_->set_on_change([&](const std::string& id) { changed.push_back(id); });
  const std::string id = Init("Fix the login bug");
  EXPECT_EQ(changed, std::vector<std::string>{id});
  Init("Fix the login bug");  // already there: nothing changed
  EXPECT_EQ(changed.size(), 1u);
  Fail(id, "TypeError: a is undefined");  // an attempt and a failure
  EXPECT_EQ(changed.size(), 3u);
  ASSERT_OK(tasks_->GetState(id));
  ASSERT_OK(breaker_->Preview(id));
  EXPECT_EQ(changed.size(), 3u);
  Force(id);
  v1::BreakRequest block;
  block.set_task_id(id);
  ASSERT_OK(breaker_->Break(block));
  ASSERT_OK(breaker_->Cleanup(id));
  EXPECT_EQ(changed.size(), 6u);
  // A refused change announces nothing.
  EXPECT_FALSE(tasks_->RecordFailure("00000000", "x").ok());
  EXPECT_EQ(changed.size(), 6u);
  for (const std::string& c : changed) EXPECT_EQ(c, id);
}

TEST_F(BreakerTest, ForceEscalateJumpsTwoTiers) {
  const std::string id = Init("t");
  v1::ForceEscalateResponse f = Force(id);
  EXPECT_EQ(f.result(), v1::FORCE_ESCALATE_RESULT_ESCALATED);
  EXPECT_EQ(f.from_tier(), 1);
  EXPECT_EQ(f.to_tier(), 3);
  EXPECT_EQ(f.model(), "codex");
  auto state = tasks_->GetState(id);
  ASSERT_OK(state);
  ASSERT_EQ(state->escalation_log_size(), 1);
  EXPECT_TRUE(state->escalation_log(0).forced());
  EXPECT_EQ(state->escalation_log(0).reason(), "Loop detected, forcing escalation");
}

TEST_F(BreakerTest, ForceEscalateNearTheTopAsksForAPerson) {
  const std::string id = Init("t");
  SetTier(id, 5);
  v1::ForceEscalateResponse f = Force(id);  // 5 -> 7
  EXPECT_EQ(f.result(), v1::FORCE_ESCALATE_RESULT_ESCALATED);
  EXPECT_EQ(f.to_tier(), 7);
  for (int tier : {6, 7}) {
    SetTier(id, tier);
    auto before = tasks_->GetState(id);
    ASSERT_OK(before);
    f = Force(id);
    EXPECT_EQ(f.result(), v1::FORCE_ESCALATE_RESULT_HUMAN_INTERVENTION_REQUIRED) << tier;
    EXPECT_EQ(f.from_tier(), tier);
    EXPECT_EQ(f.to_tier(), tier);
    auto after = tasks_->GetState(id);
    ASSERT_OK(after);
    EXPECT_EQ(after->model_tier(), tier);
    EXPECT_EQ(after->escalation_log_size(), before->escalation_log_size());
  }
  std::vector<v1::BreakerLogEntry> log = Log();
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.back().level(), v1::BREAKER_LOG_LEVEL_ALERT);
  EXPECT_THAT(log.back().message(), HasSubstr("HUMAN_INTERVENTION_REQUIRED"));
}

TEST_F(BreakerTest, ForceEscalateOnAShortLadder) {
  TaskStateOptions options;
  options.tier_ladder = {"s", "m", "l"};
  Open(options, BreakerOptions());
  const std::string id = Init("t");
  EXPECT_EQ(Force(id).to_tier(), 3);  // 1 -> 3
  SetTier(id, 2);
  EXPECT_EQ(Force(id).result(), v1::FORCE_ESCALATE_RESULT_HUMAN_INTERVENTION_REQUIRED);
}

TEST_F(BreakerTest, BreakBlocksUntilCleanup) {
  const std::string id = Init("Fix the login bug");
  Fail(id, "Timeout after 30s");
  Fail(id, "Timeout after 30s");
  v1::BreakRequest request;
  request.set_task_id(id);
  request.set_reason("keeps timing out");
  auto broken = breaker_->Break(request);
  ASSERT_OK(broken);
  for (const std::string& part :
       {id, std::string("Fix the login bug"), std::string("repeated_error"),
        std::string("Attempts:      2"), std::string("Current tier:  1 (codex-mini)"),
        std::string("keeps timing out"), std::string("Timeout after 30s"),
        std::string("Suggested action:"), std::string("Next steps:")}) {
    EXPECT_THAT(broken->summary(), HasSubstr(part));
  }
  EXPECT_EQ(broken->blocked().pattern_type(), "repeated_error");
  EXPECT_EQ(broken->blocked().attempt_count(), 2);

  // Blocked: no more attempts, nothing changes.
  auto refused = tasks_->IncrementAttempt(id);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("blocked"));
  auto state = tasks_->GetState(id);
  ASSERT_OK(state);
  EXPECT_EQ(state->attempt_count(), 2);
  EXPECT_TRUE(state->blocked());
  EXPECT_EQ(state->block_reason(), "keeps timing out");

  EXPECT_EQ(breaker_->Break(request).status().code(), absl::StatusCode::kAlreadyExists);
  auto status = breaker_->Status();
  ASSERT_OK(status);
  ASSERT_EQ(status->blocked_tasks_size(), 1);
  EXPECT_EQ(status->blocked_tasks(0).task_id(), id);
  EXPECT_EQ(status->blocked_tasks(0).reason(), "keeps timing out");
  auto summary = breaker_->GetSummary(id);
  ASSERT_OK(summary);
  EXPECT_EQ(summary->summary(), broken->summary());

  auto cleaned = breaker_->Cleanup(id);
  ASSERT_OK(cleaned);
  EXPECT_TRUE(cleaned->was_blocked());
  EXPECT_TRUE(cleaned->had_state());
  status = breaker_->Status();
  ASSERT_OK(status);
  EXPECT_EQ(status->blocked_tasks_size(), 0);
  EXPECT_EQ(breaker_->GetSummary(id).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(tasks_->GetState(id).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(breaker_->Cleanup(id).status().code(), absl::StatusCode::kNotFound);
  // The task starts over.
  Init("Fix the login bug");
  auto n = tasks_->IncrementAttempt(id);
  ASSERT_OK(n);
  EXPECT_EQ(*n, 1);
}

TEST_F(BreakerTest, AnalyzeOfABlockedTaskShowsTheAnalysisAtTheBlock) {
  const std::string id = Init("Fix the login bug");
  Fail(id, "Timeout after 30s");
  Fail(id, "Timeout after 30s");
  v1::AnalyzeLoopRequest analyze;
  analyze.set_task_id(id);
  auto before = breaker_->Analyze(analyze);
  ASSERT_OK(before);
  EXPECT_FALSE(before->has_at_block());
  v1::BreakRequest request;
  request.set_task_id(id);
  ASSERT_OK(breaker_->Break(request));
  ASSERT_OK(tasks_->RecordFailure(id, "disk full"));  // the fresh analysis moves on
  auto after = breaker_->Analyze(analyze);
  ASSERT_OK(after);
  EXPECT_EQ(after->latest_error(), "disk full");
  ASSERT_TRUE(after->has_at_block());
  EXPECT_EQ(after->at_block().source(), "coordinator");
  EXPECT_EQ(after->at_block().analysis().pattern_type(), "repeated_error");
  EXPECT_EQ(after->at_block().analysis().latest_error(), "Timeout after 30s");
  EXPECT_GT(after->at_block().time().seconds(), 0);
}

// The scripts' blocked.json entry, as `coordctl import aria` sends it.
v1::ImportedBlock ScriptBlock(const std::string& id) {
  v1::ImportedBlock block;
  v1::BlockedTask* entry = block.mutable_entry();
  entry->set_task_id(id);
  entry->set_task_desc("Fix the login bug");
  entry->set_reason("Same error appearing 4 times");
  entry->mutable_blocked_time()->set_seconds(1795518416);
  entry->set_attempt_count(4);
  entry->set_final_tier(2);
  entry->set_pattern_type("repeated_error");
  block.set_summary("ARIA ITERATION BREAKER - TASK BLOCKED\n(the script's text)\n");
  v1::LoopAnalysis* a = block.mutable_analysis()->mutable_analysis();
  a->set_task_id(id);
  a->set_pattern_type("repeated_error");
  a->set_pattern(v1::LOOP_PATTERN_REPEATED_ERROR);
  a->set_attempt_count(4);
  a->set_current_tier(2);
  a->set_current_model("2");
  a->set_suggested_action("Force escalate 2 tiers (skip ineffective middle tier)");
  block.mutable_analysis()->mutable_time()->set_seconds(1795518415);
  return block;
}

TEST_F(BreakerTest, AnImportedBlockShowsAsTheScriptsHadIt) {
  v1::ImportTaskRequest request;
  v1::TaskState* state = request.mutable_state();
  state->set_task_id("257cb146");
  state->set_description("Fix the login bug");
  state->set_attempt_count(5);  // attempts went on after the break in the state file
  state->set_model_tier(3);
  state->mutable_create_time()->set_seconds(1795518400);
  *request.mutable_block() = ScriptBlock("257cb146");
  ASSERT_OK(tasks_->Import(request));

  // Status: the registry's values at the break, not the state's now.
  auto status = breaker_->Status();
  ASSERT_OK(status);
  ASSERT_EQ(status->blocked_tasks_size(), 1);
  const v1::BlockedTask& entry = status->blocked_tasks(0);
  EXPECT_EQ(entry.attempt_count(), 4);
  EXPECT_EQ(entry.final_tier(), 2);
  EXPECT_EQ(entry.pattern_type(), "repeated_error");
  EXPECT_EQ(entry.reason(), "Same error appearing 4 times");
  EXPECT_EQ(entry.blocked_time().seconds(), 1795518416);
  // The summary file's text, byte for byte.
  auto summary = breaker_->GetSummary("257cb146");
  ASSERT_OK(summary);
  EXPECT_EQ(summary->summary(), "ARIA ITERATION BREAKER - TASK BLOCKED\n(the script's text)\n");
  // The state file did not say blocked; the registry did.
  auto got = tasks_->GetState("257cb146");
  ASSERT_OK(got);
  EXPECT_TRUE(got->blocked());
  EXPECT_EQ(got->block_reason(), "Same error appearing 4 times");
  EXPECT_EQ(tasks_->IncrementAttempt("257cb146").status().code(),
            absl::StatusCode::kFailedPrecondition);
  // Analyze: a fresh analysis, and the scripts' at the block.
  v1::AnalyzeLoopRequest analyze;
  analyze.set_task_id("257cb146");
  auto a = breaker_->Analyze(analyze);
  ASSERT_OK(a);
  EXPECT_EQ(a->attempt_count(), 5);
  ASSERT_TRUE(a->has_at_block());
  EXPECT_EQ(a->at_block().source(), "aria-scripts");
  EXPECT_EQ(a->at_block().analysis().suggested_action(),
            "Force escalate 2 tiers (skip ineffective middle tier)");
  EXPECT_EQ(a->at_block().time().seconds(), 1795518415);
}

TEST_F(BreakerTest, ARegistryEntryWithoutStateImportsAlone) {
  v1::ImportTaskRequest request;
  *request.mutable_block() = ScriptBlock("75ba6a6b");
  request.mutable_block()->clear_summary();  // no summary file either
  auto imported = tasks_->Import(request);
  ASSERT_OK(imported);
  EXPECT_EQ(imported->task_id(), "75ba6a6b");
  EXPECT_FALSE(imported->replaced());
  auto status = breaker_->Status();
  ASSERT_OK(status);
  ASSERT_EQ(status->blocked_tasks_size(), 1);
  EXPECT_EQ(status->blocked_tasks(0).attempt_count(), 4);
  auto summary = breaker_->GetSummary("75ba6a6b");
  ASSERT_OK(summary);
  EXPECT_THAT(summary->summary(), HasSubstr("Same error appearing 4 times"));
  EXPECT_THAT(summary->summary(), HasSubstr("Force escalate 2 tiers"));
  // No retry state: analyze finds nothing, as the script's analyze did without a state file.
  v1::AnalyzeLoopRequest analyze;
  analyze.set_task_id("75ba6a6b");
  EXPECT_EQ(breaker_->Analyze(analyze).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(tasks_->Import(request).status().code(), absl::StatusCode::kAlreadyExists);
  request.set_replace(true);
  auto replaced = tasks_->Import(request);
  ASSERT_OK(replaced);
  EXPECT_TRUE(replaced->replaced());
  auto cleaned = breaker_->Cleanup("75ba6a6b");
  ASSERT_OK(cleaned);
  EXPECT_TRUE(cleaned->was_blocked());
  EXPECT_FALSE(cleaned->had_state());
  status = breaker_->Status();
  ASSERT_OK(status);
  EXPECT_EQ(status->blocked_tasks_size(), 0);
}

TEST_F(BreakerTest, BadImportedBlocksStoreNothing) {
  std::vector<std::pair<std::string, v1::ImportTaskRequest>> cases;
  auto add = [&](const std::string& name, auto mutate) {
    v1::ImportTaskRequest r;
    r.mutable_state()->set_task_id("257cb146");
    r.mutable_state()->set_description("Fix the login bug");
    r.mutable_state()->set_model_tier(1);
    r.mutable_state()->mutable_create_time()->set_seconds(1795518400);
    *r.mutable_block() = ScriptBlock("257cb146");
    mutate(r);
    cases.emplace_back(name, std::move(r));
  };
  add("another task's entry", [](v1::ImportTaskRequest& r) {
    r.mutable_block()->mutable_entry()->set_task_id("0000beef");
  });
  add("control character", [](v1::ImportTaskRequest& r) {
    r.clear_state();
    r.mutable_block()->mutable_entry()->set_task_id("a\nb");
  });
  add("huge id", [](v1::ImportTaskRequest& r) {
    r.clear_state();
    r.mutable_block()->mutable_entry()->set_task_id(std::string(300, 'x'));
  });
  add("huge summary", [](v1::ImportTaskRequest& r) {
    r.mutable_block()->set_summary(std::string((256 << 10) + 1, 's'));
  });
  add("huge reason", [](v1::ImportTaskRequest& r) {
    r.mutable_block()->mutable_entry()->set_reason(std::string((4 << 10) + 1, 'r'));
  });
  add("negative attempts",
      [](v1::ImportTaskRequest& r) { r.mutable_block()->mutable_entry()->set_attempt_count(-1); });
  add("bad analysis pattern", [](v1::ImportTaskRequest& r) {
    r.mutable_block()->mutable_analysis()->mutable_analysis()->set_pattern_type("a\tb");
  });
  for (const auto& [name, request] : cases) {
    SCOPED_TRACE(name);
    const absl::Status s = tasks_->Import(request).status();
    EXPECT_TRUE(s.code() == absl::StatusCode::kInvalidArgument ||
                s.code() == absl::StatusCode::kResourceExhausted)
        << s;
  }
  auto status = breaker_->Status();
  ASSERT_OK(status);
  EXPECT_EQ(status->blocked_tasks_size(), 0);
  EXPECT_EQ(tasks_->GetState("257cb146").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(BreakerTest, TaskCleanupAlsoClearsTheBlock) {
  const std::string id = Init("t");
  v1::BreakRequest request;
  request.set_task_id(id);
  ASSERT_OK(breaker_->Break(request));
  auto was_blocked = tasks_->Cleanup(id);
  ASSERT_OK(was_blocked);
  EXPECT_TRUE(*was_blocked);
  auto status = breaker_->Status();
  ASSERT_OK(status);
  EXPECT_EQ(status->blocked_tasks_size(), 0);
}

TEST_F(BreakerTest, BadInputChangesNothingAndIsNotLogged) {
  const std::string id = Init("t");
  v1::CheckLoopRequest check;
  EXPECT_EQ(breaker_->Check(check).status().code(), absl::StatusCode::kInvalidArgument);
  check.set_task_id("deadbeef");
  EXPECT_EQ(breaker_->Check(check).status().code(), absl::StatusCode::kNotFound);
  check.set_task_id(std::string(300, 'x'));
  EXPECT_EQ(breaker_->Check(check).status().code(), absl::StatusCode::kInvalidArgument);
  v1::AnalyzeLoopRequest analyze;
  analyze.set_task_id(id);
  analyze.mutable_thresholds()->set_stuck_tier(-3);
  EXPECT_EQ(breaker_->Analyze(analyze).status().code(), absl::StatusCode::kInvalidArgument);
  v1::ForceEscalateRequest force;
  force.set_task_id("deadbeef");
  EXPECT_EQ(breaker_->ForceEscalate(force).status().code(), absl::StatusCode::kNotFound);
  force.set_task_id(id);
  force.set_reason(std::string((4 << 10) + 1, 'r'));
  EXPECT_EQ(breaker_->ForceEscalate(force).status().code(), absl::StatusCode::kResourceExhausted);
  v1::BreakRequest brk;
  brk.set_task_id("deadbeef");
  EXPECT_EQ(breaker_->Break(brk).status().code(), absl::StatusCode::kNotFound);
  brk.set_task_id("");
  EXPECT_EQ(breaker_->Break(brk).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(breaker_->GetSummary(id).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(breaker_->Cleanup("deadbeef").status().code(), absl::StatusCode::kNotFound);
  v1::ReadBreakerLogRequest log;
  log.set_tail(-1);
  EXPECT_EQ(breaker_->ReadLog(log).status().code(), absl::StatusCode::kInvalidArgument);

  EXPECT_TRUE(Log().empty());
  auto state = tasks_->GetState(id);
  ASSERT_OK(state);
  EXPECT_EQ(state->model_tier(), 1);
  EXPECT_FALSE(state->blocked());
}

TEST_F(BreakerTest, EveryActionIsLoggedInOrder) {
  const std::string id = Init("t");
  Fail(id, "x");
  Fail(id, "x");
  Check(id);
  v1::AnalyzeLoopRequest analyze;
  analyze.set_task_id(id);
  ASSERT_OK(breaker_->Analyze(analyze));
  Force(id);
  v1::BreakRequest brk;
  brk.set_task_id(id);
  brk.set_reason("stop");
  ASSERT_OK(breaker_->Break(brk));
  ASSERT_OK(breaker_->Cleanup(id));
  std::vector<v1::BreakerLogEntry> log = Log();
  ASSERT_EQ(log.size(), 5u);
  const v1::BreakerLogLevel levels[] = {v1::BREAKER_LOG_LEVEL_ALERT, v1::BREAKER_LOG_LEVEL_INFO,
                                        v1::BREAKER_LOG_LEVEL_WARN, v1::BREAKER_LOG_LEVEL_ERROR,
                                        v1::BREAKER_LOG_LEVEL_INFO};
  for (size_t i = 0; i < log.size(); ++i) {
    EXPECT_EQ(log[i].seq(), static_cast<int64_t>(i + 1));
    EXPECT_EQ(log[i].level(), levels[i]) << i;
    EXPECT_EQ(log[i].task_id(), id);
    EXPECT_GT(log[i].time().seconds(), 0);
  }
  EXPECT_THAT(log[0].message(), HasSubstr("repeated_error"));
  EXPECT_THAT(log[3].message(), HasSubstr("stop"));
  // --tail
  std::vector<v1::BreakerLogEntry> tail = Log(2);
  ASSERT_EQ(tail.size(), 2u);
  EXPECT_EQ(tail[0].seq(), 4);
  // Entries are records keyed by a big-endian seq: byte order is numeric order.
  EXPECT_LT(keys::BreakerLogEntry(255), keys::BreakerLogEntry(256));
  EXPECT_OK(store_->Get(storage::ColumnFamily::kTasks, keys::BreakerLogEntry(5)));
}

TEST_F(BreakerTest, LogPagesAndRetention) {
  BreakerOptions options;
  options.log_retention = 3;
  Open(TaskStateOptions(), options);
  const std::string id = Init("t");
  for (int i = 0; i < 7; ++i) Check(id);
  std::vector<v1::BreakerLogEntry> log = Log();
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[0].seq(), 5);
  EXPECT_EQ(log[2].seq(), 7);

  v1::ReadBreakerLogRequest request;
  request.set_page_size(2);
  std::vector<int64_t> seqs;
  do {
    auto page = breaker_->ReadLog(request);
    ASSERT_OK(page);
    for (const auto& e : page->entries()) seqs.push_back(e.seq());
    request.set_page_token(page->next_page_token());
  } while (!request.page_token().empty());
  EXPECT_EQ(seqs, (std::vector<int64_t>{5, 6, 7}));
}

TEST_F(BreakerTest, RepeatedErrorLooksAtABoundedWindow) {
  const std::string id = Init("t");
  // Two matching errors far back, then kLoopFailureWindow different ones, then one more
  // match: the old ones are outside the window.
  Fail(id, "Ancient failure");
  Fail(id, "Ancient failure");
  for (int i = 0; i < kLoopFailureWindow - 1; ++i) Fail(id, absl::StrCat(i, " ", i * 7919));
  Fail(id, "Ancient failure");
  v1::AnalyzeLoopRequest r;
  r.set_task_id(id);
  r.mutable_thresholds()->set_stuck_tier(100000);
  auto a = breaker_->Analyze(r);
  ASSERT_OK(a);
  EXPECT_EQ(a->repeated_error_count(), 1);
  EXPECT_EQ(a->pattern(), v1::LOOP_PATTERN_NONE);
}

// ---- Ownership (docs/security.md, "Ownership") ----

TEST_F(BreakerTest, AnAgentActsOnlyOnItsOwnTasks) {
  const Access green = Access::Agent("green");
  const Access purple = Access::Agent("purple");
  const std::string id = tasks_->Init("green's task", green)->task_id();
  Fail(id, "boom");
  const v1::TaskState before = *tasks_->GetState(id);
  const size_t log_before = Log().size();

  v1::CheckLoopRequest check;
  check.set_task_id(id);
  v1::AnalyzeLoopRequest analyze;
  analyze.set_task_id(id);
  v1::ForceEscalateRequest force;
  force.set_task_id(id);
  v1::BreakRequest brk;
  brk.set_task_id(id);
  for (const absl::Status& s :
       {breaker_->Check(check, purple).status(), breaker_->Analyze(analyze, purple).status(),
        breaker_->ForceEscalate(force, purple).status(), breaker_->Break(brk, purple).status(),
        breaker_->Cleanup(id, purple).status()}) {
    EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  }
  // Nothing changed, and nothing was logged.
  EXPECT_EQ(tasks_->GetState(id)->DebugString(), before.DebugString());
  EXPECT_EQ(Log().size(), log_before);

  // The owner breaks it; the entries and the registry carry the owner.
  ASSERT_OK(breaker_->Check(check, green));
  ASSERT_OK(breaker_->Break(brk, green));
  absl::StatusOr<v1::GetBreakerStatusResponse> status = breaker_->Status(green);
  ASSERT_OK(status);
  ASSERT_EQ(status->blocked_tasks_size(), 1);
  EXPECT_EQ(status->blocked_tasks(0).owner(), "green");
  EXPECT_OK(breaker_->GetSummary(id, green));
  EXPECT_EQ(Log().back().owner(), "green");

  // Another agent sees no trace of it: the summary reads as "not blocked", the status and the
  // log leave it out.
  absl::Status summary = breaker_->GetSummary(id, purple).status();
  EXPECT_EQ(summary, absl::NotFoundError(absl::StrCat("task ", id, " is not blocked")));
  EXPECT_EQ(breaker_->GetSummary("0000beef", purple).status().message(),
            "task 0000beef is not blocked");
  EXPECT_EQ(breaker_->Status(purple)->blocked_tasks_size(), 0);
  absl::StatusOr<v1::ReadBreakerLogResponse> purple_log =
      breaker_->ReadLog(v1::ReadBreakerLogRequest(), purple);
  ASSERT_OK(purple_log);
  EXPECT_EQ(purple_log->entries_size(), 0);
  // Unscoped callers (admins, readers) see everything.
  EXPECT_EQ(breaker_->Status()->blocked_tasks_size(), 1);
  EXPECT_OK(breaker_->GetSummary(id));

  // The owner cleans up its own task; the cleanup's entry is its own too.
  ASSERT_OK(breaker_->Cleanup(id, green));
  v1::ReadBreakerLogRequest tail;
  tail.set_tail(1);
  absl::StatusOr<v1::ReadBreakerLogResponse> last = breaker_->ReadLog(tail, green);
  ASSERT_OK(last);
  ASSERT_EQ(last->entries_size(), 1);
  EXPECT_THAT(last->entries(0).message(), ::testing::HasSubstr("Cleaned up"));
}

TEST_F(BreakerTest, AgentsPageThroughTheirOwnLogEntries) {
  const Access green = Access::Agent("green");
  const std::string mine = tasks_->Init("green's", green)->task_id();
  const std::string other = Init("nobody's");
  for (int i = 0; i < 3; ++i) {
    Check(other);
    v1::CheckLoopRequest check;
    check.set_task_id(mine);
    ASSERT_OK(breaker_->Check(check, green));
  }
  v1::ReadBreakerLogRequest request;
  request.set_page_size(2);
  std::vector<std::string> seen;
  do {
    absl::StatusOr<v1::ReadBreakerLogResponse> page = breaker_->ReadLog(request, green);
    ASSERT_OK(page);
    for (const v1::BreakerLogEntry& e : page->entries()) seen.push_back(e.task_id());
    request.set_page_token(page->next_page_token());
  } while (!request.page_token().empty());
  EXPECT_EQ(seen, std::vector<std::string>(3, mine));
  EXPECT_EQ(Log().size(), 6u);
}

}  // namespace
}  // namespace coordinator
