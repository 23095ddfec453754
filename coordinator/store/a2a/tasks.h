// The task part of the A2A store: tasks (status, artifacts, a version), their history and
// append-only event log, snapshots and listings, the agent's updates (one by one or in bursts)
// and cancellation of a task no agent runs. Every change of a task is one transaction that
// locks the task header first; a change that also queues a delivery (a client's message) or
// webhook calls (a status change) does so in that same transaction, and is published on the
// notifier once it has committed. Knows nothing of gRPC.
#ifndef COORDINATOR_STORE_A2A_TASKS_H_
#define COORDINATOR_STORE_A2A_TASKS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "a2a/v1/a2a.pb.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "coordinator/store/a2a/notifier.h"
#include "coordinator/store/a2a/push_config.h"
#include "coordinator/store/a2a/task_change.h"
#include "coordinator/store/records/access.h"
#include "coordinator/store/records/limits.h"
#include "coordinator/store/records/purge.h"
#include "coordinator/v1/a2a_stored.pb.h"
#include "storage/store.h"

namespace coordinator {

namespace a2apb = ::lf::a2a::v1;

// True for COMPLETED, FAILED, CANCELED and REJECTED.
bool IsTerminal(a2apb::TaskState state);
// True for terminal states and the interrupted ones (INPUT_REQUIRED, AUTH_REQUIRED): where a
// blocking SendMessage returns and an agent's stream ends.
bool IsFinalOrInterrupted(a2apb::TaskState state);

// Whether `access` sees an A2A task: unscoped callers (admins, readers, no authentication) see
// every task; an agent principal sees the tasks it sent (StoredTask.owner) and those routed to it
// (tenant), and changes only the ones it sent (Access::Owns). A task an agent may not see is
// answered exactly as a task that does not exist.
bool SeesTask(const Access& access, const v1::StoredTask& header);
bool SeesTask(const Access& access, const v1::TaskIndexEntry& entry);

class A2ATasks {
 public:
  // `notifier` may be null (nobody watches: exports, tests). `options` checks the push config a
  // message may carry.
  A2ATasks(storage::Store* store, TaskNotifier* notifier, Limits limits,
           A2AStoreOptions options = {})
      : store_(store), notifier_(notifier), limits_(limits), options_(options) {}

  // What a change did (task_change.h).
  using Change = TaskChange;

  // What ApplyAgentBurst did.
  struct BurstResult {
    Change change;
    // How many of the updates were applied (the rest came after the task stopped).
    size_t applied = 0;
    // The delivery named in the call is no longer queued: it was dequeued in the same
    // transaction, or had already gone (the task was canceled meanwhile).
    bool delivery_done = false;
  };

  // The store the tasks live in (for callers that run these calls in a DurabilityScope).
  storage::Store* store() const { return store_; }

  // Checks a client's message: message_id, role, at least one part with content, ids, size.
  [[nodiscard]] absl::Status ValidateMessage(const a2apb::Message& message) const;

  // Stores a client's message for agent `tenant` before anything is sent to the agent. Without
  // message.task_id a task is created (new task id; the message's context_id or a new one);
  // with one, that task is continued (it must exist, belong to `tenant` when `tenant` is set,
  // match the message's context_id, and not have ended). Either way the message is appended to
  // the history, the task goes to SUBMITTED (logged as an event), and a delivery is queued.
  // `push_config`, when given, is registered for the task in the same write, as created in
  // `push_version` (the A2A version of the request, push_config.h). A new task is
  // owned by `access`'s principal (none without authentication); a task continued must be one
  // `access` owns (TASK_NOT_FOUND when it does not see it, PERMISSION_DENIED when it only sees
  // it).
  //
  // Sending the same message again is safe: a message whose message_id is that of the message
  // that created its task (the new task's id is derived from the agent, the sender's principal
  // and the message_id) or of the newest message on the task it continues is a repeat. It is
  // answered with the task as it is (Change::repeated, Change::sent_seq naming the first one's
  // history seq), and nothing is stored or queued again; a repeat whose content differs is
  // ALREADY_EXISTS.
  [[nodiscard]] absl::StatusOr<Change> AcceptMessage(
      absl::string_view tenant, const a2apb::Message& message,
      const a2apb::TaskPushNotificationConfig* push_config = nullptr,
      const Access& access = Access::Unscoped(), absl::string_view push_version = kPushVersion10);

  // OK when `access` may read (or, with `change`, change) task `task_id`: TASK_NOT_FOUND when
  // the task does not exist or `access` does not see it, PERMISSION_DENIED when it sees it but
  // may not change it. The owner of a task never changes, so the answer holds afterwards.
  [[nodiscard]] absl::Status CheckAccess(absl::string_view task_id, const Access& access,
                                         bool change = false);

  [[nodiscard]] absl::StatusOr<v1::StoredTask> GetHeader(absl::string_view task_id);

  // The task as served. `tenant`, when set, must own the task (else TASK_NOT_FOUND).
  // `history_length`: unset for all of the history, 0 for none, n for the latest n.
  [[nodiscard]] absl::StatusOr<a2apb::Task> GetTask(absl::string_view tenant,
                                                    absl::string_view task_id,
                                                    std::optional<int> history_length);
  // What SendMessage answers the client that sent history message `sent_seq` of the task (the
  // Change::sent_seq of its AcceptMessage), once its turn has ended: the agent's
  // Message when the agent answered that message with one instead of a task (A2A's direct
  // answer; without task_id unless the agent's Message named a task, and with the task's
  // context_id), else the task with `history_length` applied (as GetTask). The task stays
  // stored either way; GetTask shows the answer as its status message.
  [[nodiscard]] absl::StatusOr<a2apb::SendMessageResponse> SendAnswer(
      absl::string_view task_id, int64_t sent_seq, std::optional<int> history_length);
  // The same from the task's header as the caller just read it (GetHeader), which is not read
  // again.
  [[nodiscard]] absl::StatusOr<a2apb::SendMessageResponse> SendAnswer(
      const v1::StoredTask& header, int64_t sent_seq, std::optional<int> history_length);
  // A logged event as SendStreamingMessage streams it to the client that sent history message
  // `sent_seq`: the status change that the agent's direct Message answer to that message made
  // becomes that Message (as SendAnswer gives it); any other event is served as logged.
  static a2apb::StreamResponse SendStreamEvent(v1::StoredEvent event, int64_t sent_seq);
  // Like GetTask with all of the history, plus the sequence number of the last event the
  // returned state includes: a subscriber sends this and then the events after it.
  [[nodiscard]] absl::StatusOr<std::pair<a2apb::Task, int64_t>> Snapshot(absl::string_view tenant,
                                                                         absl::string_view task_id);

  // Tasks, newest status first, with the filters and paging of the A2A ListTasks call; only
  // those `access` sees, counted in total_size. A page token is good for the same filters and
  // caller only.
  [[nodiscard]] absl::StatusOr<a2apb::ListTasksResponse> ListTasks(
      const a2apb::ListTasksRequest& request, const Access& access = Access::Unscoped());

  // Applies one update from the agent running the task: a Task (the agent's view: its id is
  // remembered as the agent's task id, its status and artifacts are merged), a status update,
  // an artifact update, or a Message (a direct answer: recorded as the status message that
  // completes the task, and marked as the answer to the message being delivered, see
  // SendAnswer). Ids in the update are replaced by the coordinator's. Updates to an ended task
  // are ignored.
  [[nodiscard]] absl::StatusOr<Change> ApplyAgentUpdate(absl::string_view task_id,
                                                        const a2apb::StreamResponse& update);
  // INVALID_AGENT_RESPONSE for an update no task can take (empty, or a status update without a
  // state); OK otherwise. ApplyAgentUpdate and ApplyAgentBurst refuse such an update.
  [[nodiscard]] static absl::Status CheckAgentUpdate(const a2apb::StreamResponse& update);
  // Applies a burst of updates that arrived together from the agent running the task, in one
  // transaction (so one durable write): each exactly as ApplyAgentUpdate would, in order,
  // stopping after the first one that leaves the task final or interrupted (IsFinalOrInterrupted;
  // later updates are not applied). When `delivery_seq` > 0 and the task is final or
  // interrupted afterwards, the delivery of history message `delivery_seq` is dequeued in the
  // same transaction; a direct Message answer in the burst is recorded as answering it, and the
  // header records that the agent answered message `delivery_seq` (agent_answered_seq). All or
  // nothing: if any update is invalid or a write fails, nothing is stored.
  [[nodiscard]] absl::StatusOr<BurstResult> ApplyAgentBurst(
      absl::string_view task_id, absl::Span<const a2apb::StreamResponse> updates,
      int64_t delivery_seq = 0);

  // Events with seq > after_seq, oldest first, at most `max`.
  [[nodiscard]] absl::StatusOr<std::vector<v1::StoredEvent>> ReadEvents(absl::string_view task_id,
                                                                        int64_t after_seq, int max);
  // Message `seq` of the task's history (what a delivery carries).
  [[nodiscard]] absl::StatusOr<a2apb::Message> HistoryMessage(absl::string_view task_id,
                                                              int64_t seq);

  // The agent no longer knows the task by `agent_task_id` (it restarted and kept its tasks in
  // memory): forgets that id (and agent_answered_seq), so the next delivery starts a task afresh
  // at the agent. Nothing changes when the task's agent id is another one by now. Clients see
  // no change: the task, its history and events stay as they are.
  [[nodiscard]] absl::Status ForgetAgentTaskId(absl::string_view task_id,
                                               absl::string_view agent_task_id);

  // Ends a task that its agent is not running: CANCELED, its queued deliveries dropped.
  // TASK_NOT_CANCELABLE when it has already ended.
  [[nodiscard]] absl::StatusOr<Change> CancelLocally(absl::string_view tenant,
                                                     absl::string_view task_id,
                                                     absl::string_view reason);

 private:
  storage::Store* store_;   // not owned
  TaskNotifier* notifier_;  // not owned; may be null
  const Limits limits_;
  const A2AStoreOptions options_;
};

// ---- A task's life, for retention: a task has ended when IsTerminal(its state) (above); these
// find ended tasks and delete one with everything under it. ----

// One task as the tasks-by-time index shows it.
struct IndexedA2ATask {
  std::string task_id;
  std::string context_id;
  a2apb::TaskState state = a2apb::TASK_STATE_UNSPECIFIED;
  absl::Time status_time;
};

// Calls `visit` with every task of the tasks-by-time index, newest status first; stops at the
// first error `visit` returns.
[[nodiscard]] absl::Status ForEachIndexedA2ATask(
    storage::Store& store, absl::FunctionRef<absl::Status(IndexedA2ATask)> visit);

// One step of deleting the task with everything under it, inside `txn`, at most `limit` keys.
// Locks the header and asks `eligible`; deletes the history, the event log, the push configs
// and the push log, and last, together and only when they fit, its queued deliveries and
// webhook calls, its index entry and the header.
[[nodiscard]] absl::StatusOr<PurgeProgress> PurgeA2ATaskStep(
    storage::Transaction& txn, absl::string_view task_id, int64_t limit,
    absl::FunctionRef<bool(const v1::StoredTask&)> eligible);

// Keys a purge of the task deletes (what a dry run counts).
[[nodiscard]] absl::StatusOr<int64_t> CountA2ATaskPurge(storage::Store& store,
                                                        absl::string_view task_id);

}  // namespace coordinator

#endif  // COORDINATOR_STORE_A2A_TASKS_H_
