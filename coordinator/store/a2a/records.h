// The in-transaction steps over the A2A records, shared by the parts of the A2A store
// (A2ATasks, A2ADeliveryQueue, A2APush) so that an operation spanning parts stays one
// transaction: a client's message appends to the history, queues its delivery and may register
// a push config; the burst that ends an agent's turn dequeues its delivery; a status change
// queues webhook calls; a delivery given up fails its task. Each step is defined in the .cc of
// the part that owns its records. Internal to coordinator/store/: callers use the parts.
#ifndef COORDINATOR_STORE_A2A_RECORDS_H_
#define COORDINATOR_STORE_A2A_RECORDS_H_

#include <cstdint>
#include <string>

#include "a2a/v1/a2a.pb.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "coordinator/store/a2a/notifier.h"
#include "coordinator/store/a2a/task_change.h"
#include "coordinator/v1/a2a_stored.pb.h"
#include "google/protobuf/timestamp.pb.h"
#include "storage/store.h"

namespace coordinator::a2a_records {

// --- Task records (tasks.cc). ---

// The key of the task's entry in the by-status-time index.
std::string TaskIndexKey(const v1::StoredTask& header);
// Reads the task header for update (the lock every change of the task takes first);
// TASK_NOT_FOUND when there is none.
absl::StatusOr<v1::StoredTask> LockTask(storage::Transaction& txn, absl::string_view task_id);
// Writes the header alone, for a change that leaves its index entry as it is.
absl::Status PutTaskHeader(storage::Transaction& txn, const v1::StoredTask& header);
// Writes the header and moves its index entry. `old_index_key` is "" for a new task.
absl::Status PutTask(storage::Transaction& txn, const v1::StoredTask& header,
                     const std::string& old_index_key);
// TASK_NOT_FOUND unless `tenant` is empty or owns the task.
absl::Status OwnedBy(const v1::StoredTask& header, absl::string_view tenant);
// The task header outside a transaction, checked against `tenant` as OwnedBy does.
absl::StatusOr<v1::StoredTask> ReadTask(storage::Store* store, absl::string_view tenant,
                                        absl::string_view task_id);
// Sets the status (stamped now), records its message in the history and logs the change, which
// queues one webhook call per push config of the task. `answer`, when given, marks the change as
// the agent's direct Message answer (in the header and the logged event). The caller bumps the
// version and writes the header.
absl::Status SetStatus(storage::Transaction& txn, v1::StoredTask& header, a2apb::TaskStatus status,
                       TaskChange* change, const v1::MessageAnswer* answer = nullptr);
// After `change` committed: wakes the task's watchers when it appended events, and the webhook
// loop when it queued calls. `notifier` may be null.
void PublishChange(TaskNotifier* notifier, const TaskChange& change);

// --- Delivery records (delivery_queue.cc). ---

// Queues the delivery of history message `history_seq`, due `now`; counts it in the header.
absl::Status QueueDelivery(storage::Transaction& txn, v1::StoredTask& header, int64_t history_seq,
                           const google::protobuf::Timestamp& now);
// Dequeues the delivery of history message `history_seq` and uncounts it in the header. False
// when it was not queued (any more).
absl::StatusOr<bool> DequeueDelivery(storage::Transaction& txn, v1::StoredTask& header,
                                     int64_t history_seq);
// Dequeues every delivery of the task.
absl::Status DropDeliveries(storage::Transaction& txn, v1::StoredTask& header);

// --- Push records (push.cc). ---

// The record of `config` created in `protocol_version` (kPushVersion10 or kPushVersion03).
std::string EncodePushConfig(const a2apb::TaskPushNotificationConfig& config,
                             absl::string_view protocol_version);
// Reads a push config record: a StoredPushConfig, or a bare config stored before there were
// versions (then created over 1.0).
absl::Status DecodePushConfig(absl::string_view raw, v1::StoredPushConfig* stored);
// Stores `config` (its task_id and id set), created in `protocol_version`, under the task of the
// locked `header`, and counts it in header.push_config_count when it is new; the caller writes
// the header.
absl::Status PutPushConfig(storage::Transaction& txn, v1::StoredTask& header,
                           const a2apb::TaskPushNotificationConfig& config,
                           absl::string_view protocol_version);
// Queues one webhook call carrying `event` (just appended to the log of the locked `header`'s
// task) per push config of the task, due at the event's time. Whether it queued any. Looks for
// configs only when header.push_config_count says there are some, or is absent (a task stored
// before it was kept: then it records the count; the caller writes the header).
absl::StatusOr<bool> QueuePushCalls(storage::Transaction& txn, v1::StoredTask& header,
                                    const v1::StoredEvent& event);

}  // namespace coordinator::a2a_records

#endif  // COORDINATOR_STORE_A2A_RECORDS_H_
