#include "coordinator/store/retry/breaker.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "common/metrics.h"
#include "common/status_macros.h"
#include "common/validation.h"
#include "coordinator/store/records/keys.h"
#include "coordinator/store/records/page_token.h"
#include "coordinator/store/records/record_codec.h"
#include "coordinator/store/records/time_util.h"
#include "coordinator/store/retry/error_similarity.h"
#include "storage/key_codec.h"

namespace coordinator {
namespace {

using storage::ColumnFamily;
using storage::Transaction;
using v1::LoopPattern;

constexpr int kDefaultLogPageSize = 500;
// Longest piece of caller text (a reason, an error) quoted in a log message.
constexpr size_t kMaxQuotedBytes = 512;
constexpr char kDefaultForceReason[] = "Loop detected, forcing escalation";
constexpr char kDefaultBreakReason[] = "Circuit breaker triggered";

// `text` cut to at most `max` bytes without splitting a UTF-8 sequence, "..." marking a cut.
std::string Clip(absl::string_view text, size_t max) {
  if (text.size() <= max) return std::string(text);
  size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return absl::StrCat(text.substr(0, end), "...");
}

std::string Indent(absl::string_view text) {
  return absl::StrCat("  ", absl::StrReplaceAll(text, {{"\n", "\n  "}}));
}

std::string SuggestAction(LoopPattern pattern, int32_t tier, int32_t human_tier,
                          absl::string_view check) {
  const bool near_top = tier >= human_tier;
  switch (pattern) {
    case v1::LOOP_PATTERN_REPEATED_ERROR:
      return near_top ? "HUMAN_INTERVENTION_REQUIRED: the same error persists near the top of "
                        "the ladder; the problem is not the model"
                      : "Force escalate two tiers: the tier in between would likely repeat "
                        "the same mistake";
    case v1::LOOP_PATTERN_STUCK_TIER:
      return near_top ? "HUMAN_INTERVENTION_REQUIRED: failing near the top of the ladder with "
                        "no stronger model left to try"
                      : "Escalate: the current tier is not solving the task";
    case v1::LOOP_PATTERN_QUALITY_GATE_LOOP:
      return absl::StrCat("HUMAN_INTERVENTION_REQUIRED: quality gate \"", check,
                          "\" keeps failing; review the code or the gate itself");
    default:
      return "Continue: no loop detected";
  }
}

std::string NextSteps(const v1::LoopAnalysis& a) {
  const std::string& id = a.task_id();
  std::string steps;
  int n = 0;
  auto add = [&](absl::string_view line) { absl::StrAppend(&steps, "  ", ++n, ". ", line, "\n"); };
  add(absl::StrCat("Read the whole history: coordctl task state ", id));
  switch (a.pattern()) {
    case v1::LOOP_PATTERN_REPEATED_ERROR:
      add("Find why every attempt ends in the same error: reproduce it by hand, check the "
          "environment, inputs and assumptions the prompt makes");
      break;
    case v1::LOOP_PATTERN_STUCK_TIER:
      add("Decide whether a stronger model would help or the task must be split or "
          "reworded");
      break;
    case v1::LOOP_PATTERN_QUALITY_GATE_LOOP:
      add(absl::StrCat("Run the \"", a.quality_gate_check(),
                       "\" check yourself and decide whether the code or the gate is wrong"));
      break;
    default:
      add("Decide whether the task should be retried at all");
      break;
  }
  add(
      absl::StrCat("Fix the cause, then clear the block (this also removes the retry state): "
                   "coordctl breaker cleanup ",
                   id));
  add("Start the task again from a fresh state with coordctl task init");
  return steps;
}

}  // namespace

absl::Status ValidateBreakerOptions(const BreakerOptions& options) {
  if (options.repeated_error_threshold < 1 ||
      options.repeated_error_threshold > kLoopFailureWindow) {
    return absl::InvalidArgumentError(
        absl::StrFormat("the repeated_error threshold must be from 1 to %d", kLoopFailureWindow));
  }
  if (options.stuck_tier_threshold < 1 || options.quality_gate_threshold < 1) {
    return absl::InvalidArgumentError(
        "the stuck_tier and quality_gate thresholds must be at least 1");
  }
  if (options.log_retention < 0) {
    return absl::InvalidArgumentError("the log retention must not be negative");
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::LoopThresholds> ResolveThresholds(const BreakerOptions& defaults,
                                                     const v1::LoopThresholds& overrides) {
  v1::LoopThresholds t;
  t.set_repeated_error(overrides.has_repeated_error() ? overrides.repeated_error()
                                                      : defaults.repeated_error_threshold);
  t.set_stuck_tier(overrides.has_stuck_tier() ? overrides.stuck_tier()
                                              : defaults.stuck_tier_threshold);
  t.set_quality_gate(overrides.has_quality_gate() ? overrides.quality_gate()
                                                  : defaults.quality_gate_threshold);
  if (t.repeated_error() < 1 || t.repeated_error() > kLoopFailureWindow) {
    return absl::InvalidArgumentError(
        absl::StrFormat("thresholds.repeated_error must be from 1 to %d, not %d",
                        kLoopFailureWindow, t.repeated_error()));
  }
  if (t.stuck_tier() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("thresholds.stuck_tier must be at least 1, not ", t.stuck_tier()));
  }
  if (t.quality_gate() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("thresholds.quality_gate must be at least 1, not ", t.quality_gate()));
  }
  return t;
}

int32_t HumanInterventionTier(int32_t ladder_size) { return std::max(1, ladder_size - 1); }

const char* LoopPatternName(LoopPattern pattern) {
  switch (pattern) {
    case v1::LOOP_PATTERN_REPEATED_ERROR:
      return "repeated_error";
    case v1::LOOP_PATTERN_STUCK_TIER:
      return "stuck_tier";
    case v1::LOOP_PATTERN_QUALITY_GATE_LOOP:
      return "quality_gate_loop";
    default:
      return "none";
  }
}

namespace {

// The ARIA script's quality-gate rule, for callers that only record failures: at least `k` of
// the `recent` failures mention "Quality gate", and at least `k` of those match the first.
bool QualityGateTextsRepeat(const std::vector<v1::TaskFailure>& recent, int32_t k) {
  const std::string* first = nullptr;
  int32_t like_first = 0;
  for (const v1::TaskFailure& f : recent) {
    if (!absl::StrContains(f.error(), "Quality gate")) continue;
    if (first == nullptr) first = &f.error();
    if (ErrorsMatch(f.error(), *first)) ++like_first;
  }
  return like_first >= k;
}

}  // namespace

v1::LoopAnalysis AnalyzeLoop(const v1::StoredTaskHeader& header,
                             const std::vector<v1::TaskFailure>& recent,
                             const v1::LoopThresholds& thresholds, int32_t tier,
                             const std::string& model, int32_t human_tier) {
  v1::LoopAnalysis a;
  a.set_task_id(header.task_id());
  a.set_task_desc(header.description());
  a.set_attempt_count(header.attempt_count());
  a.set_current_tier(tier);
  a.set_current_model(model);
  a.set_escalations_done(
      static_cast<int32_t>(std::min<int64_t>(header.escalation_count(), INT32_MAX)));
  a.set_failures_at_tier(header.failures_at_tier());
  a.set_blocked(header.blocked());
  *a.mutable_thresholds() = thresholds;

  int32_t repeated = 0;
  if (!recent.empty()) {
    const std::string& latest = recent.back().error();
    a.set_latest_error(latest);
    for (const v1::TaskFailure& f : recent) {
      if (ErrorsMatch(f.error(), latest)) ++repeated;
    }
  }
  a.set_repeated_error_count(repeated);

  // The check with the longest failing streak; ties go to the first name, so the answer does
  // not depend on map order.
  for (const auto& [check, streak] : header.quality_gate_fail_streaks()) {
    if (streak > a.quality_gate_failures() ||
        (streak == a.quality_gate_failures() && streak > 0 && check < a.quality_gate_check())) {
      a.set_quality_gate_check(check);
      a.set_quality_gate_failures(streak);
    }
  }

  // Each pattern holds on our definition or on the ARIA script's (issue 18: a superset, so that
  // a caller switching from the scripts loses no detection); pattern_condition says which.
  LoopPattern pattern = v1::LOOP_PATTERN_NONE;
  if (!recent.empty() && repeated >= thresholds.repeated_error()) {
    pattern = v1::LOOP_PATTERN_REPEATED_ERROR;
    a.set_pattern_condition("similar_errors");
  } else if (header.failures_at_tier() >= thresholds.stuck_tier()) {
    pattern = v1::LOOP_PATTERN_STUCK_TIER;
    a.set_pattern_condition("failures_since_tier_change");
  } else if (header.attempt_count() >= thresholds.stuck_tier() && header.escalation_count() == 0) {
    pattern = v1::LOOP_PATTERN_STUCK_TIER;
    a.set_pattern_condition("attempts_never_escalated");
  } else if (a.quality_gate_failures() >= thresholds.quality_gate()) {
    pattern = v1::LOOP_PATTERN_QUALITY_GATE_LOOP;
    a.set_pattern_condition("quality_gate_results");
  } else if (QualityGateTextsRepeat(recent, thresholds.quality_gate())) {
    pattern = v1::LOOP_PATTERN_QUALITY_GATE_LOOP;
    a.set_pattern_condition("quality_gate_failure_texts");
  }
  a.set_pattern(pattern);
  a.set_pattern_type(LoopPatternName(pattern));
  a.set_suggested_action(SuggestAction(pattern, tier, human_tier, a.quality_gate_check()));
  return a;
}

std::string FormatBreakSummary(const v1::LoopAnalysis& a, absl::string_view reason,
                               absl::Time blocked_at) {
  const std::string rule(72, '=');
  std::string s = absl::StrCat(rule, "\nLOOP BREAKER: TASK BLOCKED\n", rule, "\n\n");
  absl::StrAppend(&s, "Task:          ", a.task_id(), "\n");
  absl::StrAppend(&s, "Blocked at:    ",
                  absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", blocked_at, absl::UTCTimeZone()), "\n");
  absl::StrAppend(&s, "Loop pattern:  ", a.pattern_type(), "\n");
  absl::StrAppend(&s, "Attempts:      ", a.attempt_count(), "\n");
  absl::StrAppend(&s, "Current tier:  ", a.current_tier(), " (", a.current_model(), ")\n");
  absl::StrAppend(&s, "Reason:        ", reason, "\n\n");
  absl::StrAppend(&s, "Description:\n", Indent(a.task_desc()), "\n\n");
  if (a.latest_error().empty()) {
    absl::StrAppend(&s, "Repeated error: none recorded\n\n");
  } else {
    absl::StrAppend(&s, "Repeated error (", a.repeated_error_count(),
                    " of the recent failures "
                    "match it):\n",
                    Indent(a.latest_error()), "\n\n");
  }
  if (!a.quality_gate_check().empty()) {
    absl::StrAppend(&s, "Failing quality gate: ", a.quality_gate_check(), " (",
                    a.quality_gate_failures(), " failures since it last passed)\n\n");
  }
  const std::string action =
      a.pattern() == v1::LOOP_PATTERN_NONE
          ? "Review by hand: the task was blocked on request, without a detected loop pattern"
          : a.suggested_action();
  absl::StrAppend(&s, "Suggested action:\n", Indent(action), "\n\n");
  absl::StrAppend(&s, "Next steps:\n", NextSteps(a));
  return s;
}

// ---- Breaker ----

absl::Status Breaker::TxnLog(Transaction& txn, v1::BreakerLogLevel level, absl::string_view task_id,
                             absl::string_view owner, absl::string_view message) {
  v1::StoredBreakerLogMeta meta;
  absl::StatusOr<std::string> raw = txn.GetForUpdate(ColumnFamily::kTasks, keys::BreakerLogMeta());
  if (raw.ok()) {
    RETURN_IF_ERROR(DecodeRecord(*raw, &meta));
  } else if (!absl::IsNotFound(raw.status())) {
    return raw.status();
  }
  v1::BreakerLogEntry entry;
  entry.set_seq(meta.last_seq() + 1);
  *entry.mutable_time() = ToProtoTime(absl::Now());
  entry.set_level(level);
  entry.set_task_id(std::string(task_id));
  entry.set_message(std::string(message));
  entry.set_owner(std::string(owner));
  RETURN_IF_ERROR(txn.Put(ColumnFamily::kTasks,
                          keys::BreakerLogEntry(static_cast<uint64_t>(entry.seq())),
                          EncodeRecord(entry)));
  meta.set_last_seq(entry.seq());
  RETURN_IF_ERROR(txn.Put(ColumnFamily::kTasks, keys::BreakerLogMeta(), EncodeRecord(meta)));
  if (options_.log_retention > 0 && entry.seq() > options_.log_retention) {
    RETURN_IF_ERROR(txn.Delete(ColumnFamily::kTasks, keys::BreakerLogEntry(static_cast<uint64_t>(
                                                         entry.seq() - options_.log_retention))));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::LoopAnalysis> Breaker::TxnAnalyze(Transaction& txn, absl::string_view task_id,
                                                     const v1::LoopThresholds& thresholds,
                                                     const Access& access,
                                                     v1::StoredTaskHeader* header) {
  ASSIGN_OR_RETURN(*header, TaskStateStore::TxnLockHeader(txn, task_id, access));
  ASSIGN_OR_RETURN(std::vector<v1::TaskFailure> recent,
                   TaskStateStore::TxnRecentFailures(txn, *header, kLoopFailureWindow));
  const int32_t tier = tasks_->EffectiveTier(*header);
  return AnalyzeLoop(*header, recent, thresholds, tier, tasks_->ModelName(tier),
                     HumanInterventionTier(tasks_->ladder_size()));
}

namespace {

std::string DescribeLoop(const v1::LoopAnalysis& a) {
  switch (a.pattern()) {
    case v1::LOOP_PATTERN_REPEATED_ERROR:
      return absl::StrFormat(
          "Loop detected in task %s: repeated_error (%d recent failures "
          "match the latest error)",
          a.task_id(), a.repeated_error_count());
    case v1::LOOP_PATTERN_STUCK_TIER:
      return absl::StrFormat(
          "Loop detected in task %s: stuck_tier (%d failures at tier %d "
          "without a tier change)",
          a.task_id(), a.failures_at_tier(), a.current_tier());
    case v1::LOOP_PATTERN_QUALITY_GATE_LOOP:
      return absl::StrFormat(
          "Loop detected in task %s: quality_gate_loop (check %s failed %d times in a row)",
          a.task_id(), a.quality_gate_check(), a.quality_gate_failures());
    default:
      return absl::StrCat("No loop in task ", a.task_id());
  }
}

}  // namespace

absl::StatusOr<v1::CheckLoopResponse> Breaker::Check(const v1::CheckLoopRequest& request,
                                                     const Access& access) {
  RETURN_IF_ERROR(common::ValidateId("task_id", request.task_id()));
  ASSIGN_OR_RETURN(v1::LoopThresholds thresholds,
                   ResolveThresholds(options_, request.thresholds()));
  v1::CheckLoopResponse response;
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    v1::StoredTaskHeader header;
    ASSIGN_OR_RETURN(v1::LoopAnalysis a,
                     TxnAnalyze(txn, request.task_id(), thresholds, access, &header));
    response.set_looping(a.pattern() != v1::LOOP_PATTERN_NONE);
    response.set_pattern(a.pattern());
    response.set_pattern_type(a.pattern_type());
    return TxnLog(txn,
                  response.looping() ? v1::BREAKER_LOG_LEVEL_ALERT : v1::BREAKER_LOG_LEVEL_INFO,
                  request.task_id(), header.owner(), DescribeLoop(a));
  }));
  tasks_->Changed(request.task_id());
  return response;
}

absl::StatusOr<v1::LoopAnalysis> Breaker::Analyze(const v1::AnalyzeLoopRequest& request,
                                                  const Access& access) {
  RETURN_IF_ERROR(common::ValidateId("task_id", request.task_id()));
  ASSIGN_OR_RETURN(v1::LoopThresholds thresholds,
                   ResolveThresholds(options_, request.thresholds()));
  v1::LoopAnalysis analysis;
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    v1::StoredTaskHeader header;
    ASSIGN_OR_RETURN(analysis, TxnAnalyze(txn, request.task_id(), thresholds, access, &header));
    if (header.blocked()) {
      // The analysis kept at the block, beside the fresh one (for a task imported from the
      // scripts, theirs).
      absl::StatusOr<std::string> raw =
          txn.GetForUpdate(ColumnFamily::kTasks, keys::TaskBreakSummary(request.task_id()));
      if (!raw.ok() && !absl::IsNotFound(raw.status())) return raw.status();
      if (raw.ok()) {
        v1::StoredBreakSummary summary;
        RETURN_IF_ERROR(DecodeRecord(*raw, &summary));
        if (summary.has_analysis()) *analysis.mutable_at_block() = summary.analysis();
      }
    }
    return TxnLog(
        txn, v1::BREAKER_LOG_LEVEL_INFO, request.task_id(), header.owner(),
        absl::StrCat("Analyzed task ", request.task_id(), ": pattern ", analysis.pattern_type(),
                     "; suggested: ", analysis.suggested_action()));
  }));
  tasks_->Changed(request.task_id());
  return analysis;
}

absl::StatusOr<v1::LoopAnalysis> Breaker::Preview(absl::string_view task_id, const Access& access) {
  ASSIGN_OR_RETURN(const v1::LoopThresholds thresholds,
                   ResolveThresholds(options_, v1::LoopThresholds()));
  ASSIGN_OR_RETURN(const TaskStateStore::ForAnalysis read,
                   tasks_->ReadForAnalysis(task_id, kLoopFailureWindow, access));
  const int32_t tier = tasks_->EffectiveTier(read.header);
  return AnalyzeLoop(read.header, read.recent, thresholds, tier, tasks_->ModelName(tier),
                     HumanInterventionTier(tasks_->ladder_size()));
}

namespace {

// Counts a breaker action for /metrics: force_escalate (a tier jump), human_intervention (asked
// at the top of the ladder), break (a task blocked).
void CountTrip(const std::string& action) {
  static common::CounterFamily* const trips = [] {
    common::CounterFamily* family = common::MetricsRegistry::Default().AddCounter(
        "coordinator_breaker_trips_total",
        "Loop-breaker actions taken, by action: force_escalate, human_intervention, break.",
        {"action"});
    // All three show (at 0) from the first trip on.
    for (const char* a : {"force_escalate", "human_intervention", "break"}) family->WithLabels({a});
    return family;
  }();
  trips->WithLabels({action})->Increment();
}

}  // namespace

absl::StatusOr<v1::ForceEscalateResponse> Breaker::ForceEscalate(
    const v1::ForceEscalateRequest& request, const Access& access) {
  RETURN_IF_ERROR(common::ValidateId("task_id", request.task_id()));
  RETURN_IF_ERROR(
      common::ValidateSize("reason", request.reason(), tasks_->options().max_reason_bytes));
  const std::string reason = request.reason().empty() ? kDefaultForceReason : request.reason();
  v1::ForceEscalateResponse response;
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(v1::StoredTaskHeader header,
                     TaskStateStore::TxnLockHeader(txn, request.task_id(), access));
    const int32_t from = tasks_->EffectiveTier(header);
    response.set_from_tier(from);
    if (from >= HumanInterventionTier(tasks_->ladder_size())) {
      response.set_result(v1::FORCE_ESCALATE_RESULT_HUMAN_INTERVENTION_REQUIRED);
      response.set_to_tier(from);
      response.set_model(tasks_->ModelName(from));
      return TxnLog(txn, v1::BREAKER_LOG_LEVEL_ALERT, request.task_id(), header.owner(),
                    absl::StrFormat("HUMAN_INTERVENTION_REQUIRED for task %s: already at tier "
                                    "%d (%s); not escalated: %s",
                                    request.task_id(), from, tasks_->ModelName(from),
                                    Clip(reason, kMaxQuotedBytes)));
    }
    ASSIGN_OR_RETURN(v1::TaskEscalation escalation,
                     tasks_->TxnEscalate(txn, header, 2, reason, /*forced=*/true));
    RETURN_IF_ERROR(TaskStateStore::TxnPutHeader(txn, header));
    response.set_result(v1::FORCE_ESCALATE_RESULT_ESCALATED);
    response.set_to_tier(escalation.to_tier());
    response.set_model(tasks_->ModelName(escalation.to_tier()));
    return TxnLog(
        txn, v1::BREAKER_LOG_LEVEL_WARN, request.task_id(), header.owner(),
        absl::StrFormat("Force escalated task %s from tier %d (%s) to tier %d (%s): %s",
                        request.task_id(), from, tasks_->ModelName(from), escalation.to_tier(),
                        response.model(), Clip(reason, kMaxQuotedBytes)));
  }));
  tasks_->Changed(request.task_id());
  CountTrip(response.result() == v1::FORCE_ESCALATE_RESULT_ESCALATED ? "force_escalate"
                                                                     : "human_intervention");
  return response;
}

absl::StatusOr<v1::BreakResponse> Breaker::Break(const v1::BreakRequest& request,
                                                 const Access& access) {
  RETURN_IF_ERROR(common::ValidateId("task_id", request.task_id()));
  RETURN_IF_ERROR(
      common::ValidateSize("reason", request.reason(), tasks_->options().max_reason_bytes));
  ASSIGN_OR_RETURN(v1::LoopThresholds thresholds,
                   ResolveThresholds(options_, request.thresholds()));
  const std::string reason = request.reason().empty() ? kDefaultBreakReason : request.reason();
  v1::BreakResponse response;
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    v1::StoredTaskHeader header;
    ASSIGN_OR_RETURN(v1::LoopAnalysis a,
                     TxnAnalyze(txn, request.task_id(), thresholds, access, &header));
    if (header.blocked()) {
      return absl::AlreadyExistsError(
          absl::StrCat("task ", request.task_id(), " is already blocked (", header.block_reason(),
                       "); read its summary with GetBreakSummary or clear it with Cleanup"));
    }
    const absl::Time now = absl::Now();
    header.set_blocked(true);
    *header.mutable_blocked_time() = ToProtoTime(now);
    header.set_block_reason(reason);
    RETURN_IF_ERROR(TaskStateStore::TxnPutHeader(txn, header));

    v1::StoredBreakSummary summary;
    summary.set_summary(FormatBreakSummary(a, reason, now));
    *summary.mutable_analysis()->mutable_analysis() = a;
    *summary.mutable_analysis()->mutable_time() = header.blocked_time();
    summary.mutable_analysis()->set_source("coordinator");
    RETURN_IF_ERROR(txn.Put(ColumnFamily::kTasks, keys::TaskBreakSummary(request.task_id()),
                            EncodeRecord(summary)));

    v1::BlockedTask* entry = response.mutable_blocked();
    entry->set_task_id(header.task_id());
    entry->set_task_desc(header.description());
    entry->set_reason(reason);
    *entry->mutable_blocked_time() = header.blocked_time();
    entry->set_attempt_count(header.attempt_count());
    entry->set_final_tier(a.current_tier());
    entry->set_pattern_type(a.pattern_type());
    entry->set_owner(header.owner());
    RETURN_IF_ERROR(txn.Put(ColumnFamily::kTasks, keys::BlockedRegistry(request.task_id()),
                            EncodeRecord(*entry)));
    response.set_summary(summary.summary());
    return TxnLog(txn, v1::BREAKER_LOG_LEVEL_ERROR, request.task_id(), header.owner(),
                  absl::StrFormat("Circuit breaker blocked task %s (pattern %s, %d attempts, "
                                  "tier %d): %s",
                                  request.task_id(), a.pattern_type(), a.attempt_count(),
                                  a.current_tier(), Clip(reason, kMaxQuotedBytes)));
  }));
  tasks_->Changed(request.task_id());
  CountTrip("break");
  return response;
}

absl::StatusOr<v1::GetBreakerStatusResponse> Breaker::Status(const Access& access) {
  const std::string prefix = keys::BlockedRegistryPrefix();
  std::unique_ptr<storage::Iterator> it =
      store_->NewIterator(ColumnFamily::kTasks, prefix, storage::PrefixUpperBound(prefix));
  v1::GetBreakerStatusResponse response;
  for (; it->Valid(); it->Next()) {
    v1::BlockedTask entry;
    RETURN_IF_ERROR(DecodeRecord(it->value(), &entry));
    if (access.Owns(entry.owner())) *response.add_blocked_tasks() = std::move(entry);
  }
  RETURN_IF_ERROR(it->status());
  return response;
}

absl::StatusOr<v1::GetBreakSummaryResponse> Breaker::GetSummary(absl::string_view task_id,
                                                                const Access& access) {
  RETURN_IF_ERROR(common::ValidateId("task_id", task_id));
  const absl::Status not_blocked =
      absl::NotFoundError(absl::StrCat("task ", task_id, " is not blocked"));
  if (access.scoped) {
    // Another's task reads exactly as one that is not blocked.
    absl::StatusOr<v1::GetTierResponse> owned = tasks_->GetTier(task_id, access);
    if (absl::IsNotFound(owned.status())) return not_blocked;
    RETURN_IF_ERROR(owned.status());
  }
  absl::StatusOr<std::string> raw =
      store_->Get(ColumnFamily::kTasks, keys::TaskBreakSummary(task_id));
  if (absl::IsNotFound(raw.status())) return not_blocked;
  RETURN_IF_ERROR(raw.status());
  v1::StoredBreakSummary summary;
  RETURN_IF_ERROR(DecodeRecord(*raw, &summary));
  v1::GetBreakSummaryResponse response;
  response.set_summary(summary.summary());
  return response;
}

absl::StatusOr<v1::CleanupBreakerResponse> Breaker::Cleanup(absl::string_view task_id,
                                                            const Access& access) {
  RETURN_IF_ERROR(common::ValidateId("task_id", task_id));
  v1::CleanupBreakerResponse response;
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(TaskStateStore::Removal removal,
                     TaskStateStore::TxnRemoveTask(txn, task_id, access));
    response.set_was_blocked(removal.was_blocked);
    response.set_had_state(removal.had_state);
    return TxnLog(txn, v1::BREAKER_LOG_LEVEL_INFO, task_id, removal.owner,
                  absl::StrCat("Cleaned up task ", task_id,
                               removal.was_blocked ? " (removed from the blocked registry)"
                                                   : " (it was not blocked)"));
  }));
  tasks_->Changed(task_id);
  return response;
}

absl::StatusOr<v1::ReadBreakerLogResponse> Breaker::ReadLog(
    const v1::ReadBreakerLogRequest& request, const Access& access) {
  if (request.tail() < 0) return absl::InvalidArgumentError("tail must not be negative");
  ASSIGN_OR_RETURN(const int page_size, ResolvePageSize(request.page_size(), kDefaultLogPageSize,
                                                        options_.max_log_page_size));
  const std::string filter = absl::StrCat(request.tail());
  ASSIGN_OR_RETURN(std::string resume,
                   DecodePageToken(request.page_token(), "breaker_log", filter));
  v1::ReadBreakerLogResponse response;
  v1::StoredBreakerLogMeta meta;
  absl::StatusOr<std::string> raw = store_->Get(ColumnFamily::kTasks, keys::BreakerLogMeta());
  if (absl::IsNotFound(raw.status())) return response;
  RETURN_IF_ERROR(raw.status());
  RETURN_IF_ERROR(DecodeRecord(*raw, &meta));

  std::string start;
  if (!resume.empty()) {
    start = absl::StrCat(keys::BreakerLogPrefix(), resume);
  } else {
    const int64_t first =
        request.tail() > 0 ? std::max<int64_t>(1, meta.last_seq() - request.tail() + 1) : 1;
    start = keys::BreakerLogEntry(static_cast<uint64_t>(first));
  }
  const std::string prefix = keys::BreakerLogPrefix();
  std::unique_ptr<storage::Iterator> it =
      store_->NewIterator(ColumnFamily::kTasks, prefix, storage::PrefixUpperBound(prefix));
  it->Seek(start);
  for (; it->Valid(); it->Next()) {
    v1::BreakerLogEntry entry;
    RETURN_IF_ERROR(DecodeRecord(it->value(), &entry));
    if (entry.seq() > meta.last_seq()) break;  // appended after the meta was read
    if (!access.Owns(entry.owner())) continue;
    if (response.entries_size() == page_size) {
      response.set_next_page_token(
          EncodePageToken("breaker_log", filter, it->key().substr(prefix.size())));
      break;
    }
    *response.add_entries() = std::move(entry);
  }
  RETURN_IF_ERROR(it->status());
  return response;
}

}  // namespace coordinator
