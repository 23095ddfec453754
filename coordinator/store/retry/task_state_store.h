// Domain logic of task retry state (the ARIA task-state scripts' semantics) on the storage
// interface: task ids from SHA-256, attempts, tiers on a configurable ladder, failures,
// escalations, quality-gate results and custom fields. Validates its input and knows nothing
// of gRPC. Every change is one transaction that locks the task's header, so concurrent changes
// of one task never lose an update; an append writes one history record plus the small header
// (key layout in coordinator/store/records/keys.h). The loop breaker composes the Txn* building
// blocks below into its own transactions.
#ifndef COORDINATOR_STORE_RETRY_TASK_STATE_STORE_H_
#define COORDINATOR_STORE_RETRY_TASK_STATE_STORE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "coordinator/store/records/access.h"
#include "coordinator/v1/breaker.pb.h"
#include "coordinator/v1/task_state.pb.h"
#include "storage/store.h"

namespace coordinator {

// The default ladder, tier 1 first.
std::vector<std::string> DefaultTierLadder();

// OK when `ladder` can be used: 1 to 64 distinct names, each a valid identifier.
[[nodiscard]] absl::Status ValidateTierLadder(const std::vector<std::string>& ladder);

struct TaskStateOptions {
  // Model names by tier, tier 1 first (default DefaultTierLadder()).
  std::vector<std::string> tier_ladder = DefaultTierLadder();
  // Longest description (default 64 KiB).
  size_t max_description_bytes = 64 << 10;
  // Longest error text of one failure (default 16 KiB).
  size_t max_error_bytes = 16 << 10;
  // Longest escalation or block reason (default 4 KiB).
  size_t max_reason_bytes = 4 << 10;
  // Longest quality-gate detail (default 16 KiB).
  size_t max_detail_bytes = 16 << 10;
  // Longest custom field value (default 64 KiB).
  size_t max_field_value_bytes = 64 << 10;
  // Custom fields per task (default 64).
  size_t max_custom_fields = 64;
  // Distinct quality-gate checks per task (default 256).
  size_t max_quality_gate_checks = 256;
  // Records of each history kind one import may carry (default 10000).
  size_t max_import_records = 10000;
  // Longest imported break summary (the scripts' <id>-summary.txt; default 256 KiB).
  size_t max_imported_summary_bytes = 256 << 10;
  // Tasks per page of ListTasks; a larger page_size is lowered to this (default 1000; the server
  // sets it from --max_page_size).
  int max_page_size = 1000;
};

// The task id of `description`: the first 8 hex characters (lowercase) of its SHA-256.
std::string TaskIdForDescription(absl::string_view description);

// The prompt text of `failures`: "Previous failures:" and one line per failure,
// "  Attempt <n> (model: <m>): <error>", every line ending in '\n' (lines inside an error are
// indented too). Empty when there are no failures.
std::string FormatFailureContext(const std::vector<v1::TaskFailure>& failures);

// OK when `field` is a usable field name: [A-Za-z_][A-Za-z0-9_]*, 1 to 64 bytes.
[[nodiscard]] absl::Status ValidateFieldName(absl::string_view field);

class TaskStateStore {
 public:
  TaskStateStore(storage::Store* store, TaskStateOptions options)
      : store_(store), options_(std::move(options)) {}

  // Ownership (docs/security.md): a task is owned by the principal that created it (Init or
  // Import); one without an owner belongs to nobody. For a scoped `access` (an agent), a read of
  // a task it does not own answers NOT_FOUND exactly as for an unknown task, and a change
  // answers PERMISSION_DENIED and changes nothing. Unscoped access (the default) reaches all.

  // Creates the task of `description`, owned by access.principal, or returns the existing one.
  // The task id is the start of the SHA-256 of `id_text` when given (InitTaskRequest.id_text),
  // else of the description.
  [[nodiscard]] absl::StatusOr<v1::InitTaskResponse> Init(
      absl::string_view description, const Access& access = {},
      std::optional<absl::string_view> id_text = std::nullopt);
  [[nodiscard]] absl::StatusOr<v1::TaskState> GetState(absl::string_view task_id,
                                                       const Access& access = {});
  [[nodiscard]] absl::StatusOr<std::string> GetField(absl::string_view task_id,
                                                     absl::string_view field,
                                                     const Access& access = {});
  [[nodiscard]] absl::StatusOr<std::string> SetField(absl::string_view task_id,
                                                     absl::string_view field,
                                                     absl::string_view value,
                                                     const Access& access = {});
  // FAILED_PRECONDITION when the breaker blocked the task.
  [[nodiscard]] absl::StatusOr<int32_t> IncrementAttempt(absl::string_view task_id,
                                                         const Access& access = {});
  [[nodiscard]] absl::StatusOr<v1::GetTierResponse> GetTier(absl::string_view task_id,
                                                            const Access& access = {});
  [[nodiscard]] absl::StatusOr<v1::EscalateResponse> Escalate(const v1::EscalateRequest& request,
                                                              const Access& access = {});
  [[nodiscard]] absl::StatusOr<v1::TaskFailure> RecordFailure(absl::string_view task_id,
                                                              absl::string_view error,
                                                              const Access& access = {});
  [[nodiscard]] absl::StatusOr<v1::QualityGateResult> RecordQualityGate(
      const v1::RecordQualityGateRequest& request, const Access& access = {});
  [[nodiscard]] absl::StatusOr<v1::GetFailureContextResponse> GetFailureContext(
      absl::string_view task_id, int32_t tail, const Access& access = {});
  // Removes the state, its histories and its breaker records. Returns whether it was blocked.
  [[nodiscard]] absl::StatusOr<bool> Cleanup(absl::string_view task_id, const Access& access = {});
  // A scoped caller lists only its own tasks.
  [[nodiscard]] absl::StatusOr<v1::ListTasksResponse> List(const v1::ListTasksRequest& request,
                                                           const Access& access = {});
  // The task is owned by state.owner, or by access.principal when that is empty; a scoped
  // caller can name only itself, and replaces only a task of its own.
  [[nodiscard]] absl::StatusOr<v1::ImportTaskResponse> Import(const v1::ImportTaskRequest& request,
                                                              const Access& access = {});

  // Called with the task id after each committed change of a task's state or of its breaker
  // records (the breaker calls Changed for its own), on the committing thread: it must be quick
  // (the web console's feed). Set before the first call; default none.
  void set_on_change(std::function<void(const std::string&)> fn) { on_change_ = std::move(fn); }
  // Tells the on_change hook that `task_id` changed.
  void Changed(absl::string_view task_id) const {
    if (on_change_) on_change_(std::string(task_id));
  }

  // What the breaker's analysis reads: the committed header and its last `window` failures
  // (oldest first), without locking either (failures appended after the header was read are
  // left out, so the two agree). NOT_FOUND as GetState.
  struct ForAnalysis {
    v1::StoredTaskHeader header;
    std::vector<v1::TaskFailure> recent;
  };
  [[nodiscard]] absl::StatusOr<ForAnalysis> ReadForAnalysis(absl::string_view task_id,
                                                            int64_t window,
                                                            const Access& access = {});

  // Counts the tasks that have no owner (stored before ownership or without authentication);
  // the server logs it at start when authentication is on.
  [[nodiscard]] absl::StatusOr<int64_t> CountUnowned();

  // ---- Building blocks for transactions of the breaker. ----

  // Reads and locks the header of `task_id` for a change; NOT_FOUND (with a clear message) when
  // absent, PERMISSION_DENIED when a scoped `access` does not own the task.
  [[nodiscard]] static absl::StatusOr<v1::StoredTaskHeader> TxnLockHeader(storage::Transaction& txn,
                                                                          absl::string_view task_id,
                                                                          const Access& access);
  // Writes `header`, stamping its update time.
  [[nodiscard]] static absl::Status TxnPutHeader(storage::Transaction& txn,
                                                 v1::StoredTaskHeader& header);
  // The last `window` failures of the task whose locked header is `header`, oldest first.
  [[nodiscard]] static absl::StatusOr<std::vector<v1::TaskFailure>> TxnRecentFailures(
      storage::Transaction& txn, const v1::StoredTaskHeader& header, int64_t window);
  // Moves the task `steps` tiers up (capped at the top), appends the escalation record and
  // updates `header` (written by the caller with TxnPutHeader).
  [[nodiscard]] absl::StatusOr<v1::TaskEscalation> TxnEscalate(storage::Transaction& txn,
                                                               v1::StoredTaskHeader& header,
                                                               int64_t steps,
                                                               absl::string_view reason,
                                                               bool forced) const;
  struct Removal {
    bool had_state = false;
    bool was_blocked = false;
    std::string owner;  // of the removed task
  };
  // Deletes every record of the task and its registry entry. NOT_FOUND when there was neither,
  // PERMISSION_DENIED when a scoped `access` does not own the task.
  [[nodiscard]] static absl::StatusOr<Removal> TxnRemoveTask(storage::Transaction& txn,
                                                             absl::string_view task_id,
                                                             const Access& access);
  // PERMISSION_DENIED unless `access` may change a task owned by `owner`.
  [[nodiscard]] static absl::Status CheckChange(const Access& access, absl::string_view task_id,
                                                absl::string_view owner);

  // The header's tier, clamped to the ladder (a ladder shortened by configuration reads as
  // its top).
  int32_t EffectiveTier(const v1::StoredTaskHeader& header) const;
  // Model name of `tier` (clamped to the ladder).
  const std::string& ModelName(int32_t tier) const;
  int32_t ladder_size() const { return static_cast<int32_t>(options_.tier_ladder.size()); }
  const TaskStateOptions& options() const { return options_; }

 private:
  // The committed header; NOT_FOUND also when a scoped `access` does not own the task.
  [[nodiscard]] absl::StatusOr<v1::StoredTaskHeader> ReadHeader(absl::string_view task_id,
                                                                const Access& access);
  [[nodiscard]] absl::Status ValidateImport(const v1::TaskState& state) const;
  // The block of an import: the registry entry, summary and analysis, each bounded as the
  // other RPCs bound the same text.
  [[nodiscard]] absl::Status ValidateImportedBlock(const v1::ImportedBlock& block) const;
  // The header of an imported state owned by `owner`: its counters derived from the histories,
  // as if they had been appended here; blocked as the state (or the request's block) says.
  [[nodiscard]] absl::StatusOr<v1::StoredTaskHeader> ImportedHeader(
      const v1::ImportTaskRequest& request, const std::string& owner) const;
  // Writes the imported state's failures, escalations and quality-gate results, numbered from 1
  // (a failure's tier: its model's place on this server's ladder).
  [[nodiscard]] absl::Status TxnPutImportedHistory(storage::Transaction& txn,
                                                   const v1::TaskState& state) const;
  // Import of a registry entry whose task has no retry state.
  [[nodiscard]] absl::StatusOr<v1::ImportTaskResponse> ImportBlockOnly(
      const v1::ImportTaskRequest& request, const Access& access);
  // Writes the registry entry (owned by `owner`) and the summary record of an imported block.
  [[nodiscard]] static absl::Status TxnPutImportedBlock(storage::Transaction& txn,
                                                        v1::ImportedBlock block,
                                                        const std::string& owner);
  // Before an import over a task that exists (`existing` header or `registered` entry found):
  // PERMISSION_DENIED unless `access` may change it, ALREADY_EXISTS unless `replace`; then
  // removes it.
  [[nodiscard]] static absl::Status CheckReplace(storage::Transaction& txn,
                                                 absl::string_view task_id,
                                                 const absl::StatusOr<std::string>& existing,
                                                 const absl::StatusOr<std::string>& registered,
                                                 bool replace, const Access& access);
  // A history field as a JSON array in the scripts' file format.
  [[nodiscard]] absl::StatusOr<std::string> ListFieldJson(absl::string_view task_id,
                                                          const v1::StoredTaskHeader& header,
                                                          absl::string_view field);

  storage::Store* store_;  // not owned
  const TaskStateOptions options_;
  std::function<void(const std::string&)> on_change_;
};

}  // namespace coordinator

#endif  // COORDINATOR_STORE_RETRY_TASK_STATE_STORE_H_
