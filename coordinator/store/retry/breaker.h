// The loop breaker: finds tasks that keep failing the same way and acts on them (a forced
// two-tier escalation, or a block that waits for a person), on top of the retry state of
// TaskStateStore. Knows nothing of gRPC. Every action runs in one transaction together with
// its log entry, so the log never disagrees with what happened.
//
// Loop patterns, checked in this order (N, M, K are the thresholds):
//   repeated_error     the latest error matches (error_similarity.h) at least N of the task's
//                      last kLoopFailureWindow failures, itself included.
//   stuck_tier         at least M failures were recorded since the tier last changed.
//   quality_gate_loop  one quality-gate check failed at least K times since it last passed.
#ifndef COORDINATOR_STORE_RETRY_BREAKER_H_
#define COORDINATOR_STORE_RETRY_BREAKER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "coordinator/store/retry/task_state_store.h"
#include "coordinator/v1/breaker.pb.h"
#include "storage/store.h"

namespace coordinator {

// How many of a task's most recent failures repeated_error compares with the latest one. It
// bounds the cost of a check whatever the length of the history.
inline constexpr int kLoopFailureWindow = 200;

struct BreakerOptions {
  // N of repeated_error (default 2; 1 to kLoopFailureWindow).
  int repeated_error_threshold = 2;
  // M of stuck_tier (default 3).
  int stuck_tier_threshold = 3;
  // K of quality_gate_loop (default 2).
  int quality_gate_threshold = 2;
  // Log entries kept (default 100000): appending entry s deletes entry s - retention.
  // 0 keeps every entry.
  int64_t log_retention = 100000;
  // Entries per page of the breaker log; a larger page_size is lowered to this (default 1000;
  // the server sets it from --max_page_size).
  int max_log_page_size = 1000;
};

[[nodiscard]] absl::Status ValidateBreakerOptions(const BreakerOptions& options);

// The server's thresholds with the per-call `overrides` applied. INVALID_ARGUMENT for an
// override below 1 (or a repeated_error above kLoopFailureWindow).
[[nodiscard]] absl::StatusOr<v1::LoopThresholds> ResolveThresholds(
    const BreakerOptions& defaults, const v1::LoopThresholds& overrides);

// The tier from which ForceEscalate answers HUMAN_INTERVENTION_REQUIRED instead of climbing:
// one below the top of the ladder (6 on the default ladder of 7), at least 1.
int32_t HumanInterventionTier(int32_t ladder_size);

// "repeated_error", "stuck_tier", "quality_gate_loop" or "none".
const char* LoopPatternName(v1::LoopPattern pattern);

// What a task's state says about loops. `recent` is the task's last failures, oldest first
// (at most kLoopFailureWindow of them); `tier` and `model` are its current ones.
v1::LoopAnalysis AnalyzeLoop(const v1::StoredTaskHeader& header,
                             const std::vector<v1::TaskFailure>& recent,
                             const v1::LoopThresholds& thresholds, int32_t tier,
                             const std::string& model, int32_t human_tier);

// The human-readable summary Break stores.
std::string FormatBreakSummary(const v1::LoopAnalysis& analysis, absl::string_view reason,
                               absl::Time blocked_at);

class Breaker {
 public:
  Breaker(storage::Store* store, TaskStateStore* tasks, BreakerOptions options)
      : store_(store), tasks_(tasks), options_(options) {}

  // Ownership as in TaskStateStore: for a scoped `access` (an agent), the actions (Check and
  // Analyze too: they write the log) on a task it does not own are PERMISSION_DENIED, the
  // summary of one is NOT_FOUND as for a task that is not blocked, and the status and the log
  // show only its own tasks. Unscoped access (the default) reaches all.
  [[nodiscard]] absl::StatusOr<v1::CheckLoopResponse> Check(const v1::CheckLoopRequest& request,
                                                            const Access& access = {});
  [[nodiscard]] absl::StatusOr<v1::LoopAnalysis> Analyze(const v1::AnalyzeLoopRequest& request,
                                                         const Access& access = {});
  // The analysis Analyze would give with the server's thresholds, read without locking and
  // without a log entry: what the web console shows beside each task (a page view must not
  // write the log).
  [[nodiscard]] absl::StatusOr<v1::LoopAnalysis> Preview(absl::string_view task_id,
                                                         const Access& access = {});
  [[nodiscard]] absl::StatusOr<v1::ForceEscalateResponse> ForceEscalate(
      const v1::ForceEscalateRequest& request, const Access& access = {});
  [[nodiscard]] absl::StatusOr<v1::BreakResponse> Break(const v1::BreakRequest& request,
                                                        const Access& access = {});
  [[nodiscard]] absl::StatusOr<v1::GetBreakerStatusResponse> Status(const Access& access = {});
  [[nodiscard]] absl::StatusOr<v1::GetBreakSummaryResponse> GetSummary(absl::string_view task_id,
                                                                       const Access& access = {});
  [[nodiscard]] absl::StatusOr<v1::CleanupBreakerResponse> Cleanup(absl::string_view task_id,
                                                                   const Access& access = {});
  // `tail` counts the log's last entries, of which a scoped caller reads its own.
  [[nodiscard]] absl::StatusOr<v1::ReadBreakerLogResponse> ReadLog(
      const v1::ReadBreakerLogRequest& request, const Access& access = {});

 private:
  // Locks the task's header for a change by `access` and analyzes it inside `txn`.
  [[nodiscard]] absl::StatusOr<v1::LoopAnalysis> TxnAnalyze(storage::Transaction& txn,
                                                            absl::string_view task_id,
                                                            const v1::LoopThresholds& thresholds,
                                                            const Access& access,
                                                            v1::StoredTaskHeader* header);
  // Appends one log entry about the task owned by `owner`. Locks the log's meta record: call it
  // after locking task headers.
  [[nodiscard]] absl::Status TxnLog(storage::Transaction& txn, v1::BreakerLogLevel level,
                                    absl::string_view task_id, absl::string_view owner,
                                    absl::string_view message);

  storage::Store* store_;  // not owned
  TaskStateStore* tasks_;  // not owned
  const BreakerOptions options_;
};

}  // namespace coordinator

#endif  // COORDINATOR_STORE_RETRY_BREAKER_H_
