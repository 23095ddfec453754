#include "coordinator/store/a2a_task_store.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "common/uuid.h"
#include "common/validation.h"
#include "a2a_protocol/errors.h"
#include "coordinator/store/keys.h"
#include "coordinator/store/page_token.h"
#include "coordinator/store/record_codec.h"
#include "coordinator/store/time_util.h"
#include "storage/key_codec.h"

namespace coordinator {
namespace {

using storage::ColumnFamily;
using storage::Transaction;

constexpr int kDefaultTaskPageSize = 50;
constexpr int kMaxTaskPageSize = 100;
constexpr int kDefaultConfigPageSize = 50;
constexpr int kMaxConfigPageSize = 100;
constexpr size_t kMaxUrlBytes = 2048;
// Histories up to this many messages are read with point reads, longer ones with one scan.
constexpr int64_t kPointReadHistory = 16;

uint64_t InvertedMicros(const google::protobuf::Timestamp& ts) {
  const int64_t micros = absl::ToUnixMicros(FromProtoTime(ts));
  return std::numeric_limits<uint64_t>::max() - static_cast<uint64_t>(std::max<int64_t>(micros, 0));
}

std::string IndexKey(const v1::StoredTask& header) {
  return keys::A2ATaskByTime(InvertedMicros(header.task().status().timestamp()),
                             header.task().id());
}

absl::StatusOr<v1::StoredTask> LockTask(Transaction& txn, absl::string_view task_id) {
  absl::StatusOr<std::string> raw =
      txn.GetForUpdate(ColumnFamily::kA2A, keys::A2ATaskHeader(task_id));
  if (absl::IsNotFound(raw.status())) return a2a::TaskNotFound(task_id);
  RETURN_IF_ERROR(raw.status());
  v1::StoredTask header;
  RETURN_IF_ERROR(DecodeRecord(*raw, &header));
  return header;
}

// Writes the header and moves its index entry. `old_index_key` is "" for a new task.
absl::Status PutTask(Transaction& txn, const v1::StoredTask& header,
                     const std::string& old_index_key) {
  RETURN_IF_ERROR(
      txn.Put(ColumnFamily::kA2A, keys::A2ATaskHeader(header.task().id()), EncodeRecord(header)));
  if (!old_index_key.empty()) RETURN_IF_ERROR(txn.Delete(ColumnFamily::kA2A, old_index_key));
  v1::TaskIndexEntry entry;
  entry.set_tenant(header.tenant());
  entry.set_context_id(header.task().context_id());
  entry.set_state(header.task().status().state());
  return txn.Put(ColumnFamily::kA2A, IndexKey(header), EncodeRecord(entry));
}

absl::Status OwnedBy(const v1::StoredTask& header, absl::string_view tenant) {
  if (!tenant.empty() && header.tenant() != tenant) return a2a::TaskNotFound(header.task().id());
  return absl::OkStatus();
}

absl::StatusOr<v1::StoredTask> ReadTask(storage::Store* store, absl::string_view tenant,
                                        absl::string_view task_id) {
  RETURN_IF_ERROR(common::ValidateId("id", task_id));
  absl::StatusOr<std::string> raw = store->Get(ColumnFamily::kA2A, keys::A2ATaskHeader(task_id));
  if (absl::IsNotFound(raw.status())) return a2a::TaskNotFound(task_id);
  RETURN_IF_ERROR(raw.status());
  v1::StoredTask header;
  RETURN_IF_ERROR(DecodeRecord(*raw, &header));
  RETURN_IF_ERROR(OwnedBy(header, tenant));
  return header;
}

absl::Status AppendHistory(Transaction& txn, v1::StoredTask& header, a2apb::Message message) {
  message.set_task_id(header.task().id());
  message.set_context_id(header.task().context_id());
  header.set_history_count(header.history_count() + 1);
  return txn.Put(ColumnFamily::kA2A,
                 keys::A2ATaskSeqRecord(header.task().id(), keys::kA2ATaskHistory,
                                        static_cast<uint64_t>(header.history_count())),
                 EncodeRecord(message));
}

// Appends `event` to the log; a status change also queues one webhook call per push config.
absl::Status AppendEvent(Transaction& txn, v1::StoredTask& header, a2apb::StreamResponse event,
                         A2ATaskStore::Change* change) {
  const std::string& task_id = header.task().id();
  v1::StoredEvent stored;
  header.set_last_event_seq(header.last_event_seq() + 1);
  stored.set_seq(header.last_event_seq());
  stored.set_version(header.version());
  *stored.mutable_time() = ToProtoTime(absl::Now());
  *stored.mutable_event() = std::move(event);
  RETURN_IF_ERROR(txn.Put(
      ColumnFamily::kA2A,
      keys::A2ATaskSeqRecord(task_id, keys::kA2ATaskEvent, static_cast<uint64_t>(stored.seq())),
      EncodeRecord(stored)));
  if (stored.event().has_status_update()) {
    const std::string prefix = keys::A2ATaskKindPrefix(task_id, keys::kA2ATaskPushConfig);
    std::unique_ptr<storage::Iterator> it =
        txn.NewIterator(ColumnFamily::kA2A, prefix, storage::PrefixUpperBound(prefix));
    for (; it->Valid(); it->Next()) {
      v1::PushDelivery push;
      RETURN_IF_ERROR(DecodeRecord(it->value(), push.mutable_config()));
      push.set_seq(static_cast<uint64_t>(stored.seq()));
      push.set_task_id(task_id);
      push.set_config_id(push.config().id());
      *push.mutable_payload() = stored.event();
      push.set_state(v1::PUSH_STATE_PENDING);
      *push.mutable_next_attempt_time() = stored.time();
      RETURN_IF_ERROR(txn.Put(ColumnFamily::kA2A,
                              keys::A2APushPending(task_id, push.seq(), push.config_id()),
                              EncodeRecord(push)));
      change->pushes_queued = true;
    }
    RETURN_IF_ERROR(it->status());
  }
  change->events.push_back(std::move(stored));
  return absl::OkStatus();
}

// Sets the status (stamped now), records its message in the history and logs the change.
absl::Status SetStatus(Transaction& txn, v1::StoredTask& header, a2apb::TaskStatus status,
                       A2ATaskStore::Change* change) {
  *status.mutable_timestamp() = ToProtoTime(absl::Now());
  if (status.has_message()) {
    a2apb::Message* message = status.mutable_message();
    message->set_task_id(header.task().id());
    message->set_context_id(header.task().context_id());
    if (message->role() == a2apb::ROLE_UNSPECIFIED) message->set_role(a2apb::ROLE_AGENT);
    if (message->message_id().empty()) message->set_message_id(common::NewUuid());
    RETURN_IF_ERROR(AppendHistory(txn, header, *message));
  }
  *header.mutable_task()->mutable_status() = status;
  a2apb::StreamResponse event;
  a2apb::TaskStatusUpdateEvent* update = event.mutable_status_update();
  update->set_task_id(header.task().id());
  update->set_context_id(header.task().context_id());
  *update->mutable_status() = std::move(status);
  return AppendEvent(txn, header, std::move(event), change);
}

absl::Status MergeArtifact(Transaction& txn, v1::StoredTask& header,
                           const a2apb::TaskArtifactUpdateEvent& update,
                           A2ATaskStore::Change* change) {
  a2apb::Task* task = header.mutable_task();
  a2apb::Artifact* existing = nullptr;
  for (a2apb::Artifact& a : *task->mutable_artifacts()) {
    if (a.artifact_id() == update.artifact().artifact_id()) existing = &a;
  }
  if (existing != nullptr && update.append()) {
    for (const a2apb::Part& p : update.artifact().parts()) *existing->add_parts() = p;
  } else if (existing != nullptr) {
    *existing = update.artifact();
  } else {
    *task->add_artifacts() = update.artifact();
  }
  a2apb::StreamResponse event;
  *event.mutable_artifact_update() = update;
  event.mutable_artifact_update()->set_task_id(task->id());
  event.mutable_artifact_update()->set_context_id(task->context_id());
  return AppendEvent(txn, header, std::move(event), change);
}

absl::Status ValidateHistoryLength(std::optional<int> history_length) {
  if (history_length.has_value() && *history_length < 0) {
    return absl::InvalidArgumentError("history_length must not be negative");
  }
  return absl::OkStatus();
}

// The task as served, with the latest `history_length` messages (all when unset).
absl::StatusOr<a2apb::Task> AssembleTask(storage::Store* store, const v1::StoredTask& header,
                                         std::optional<int> history_length) {
  a2apb::Task task = header.task();
  int64_t first = 1;
  if (history_length.has_value()) first = header.history_count() - *history_length + 1;
  first = std::max<int64_t>(first, 1);
  if (first > header.history_count()) return task;
  if (header.history_count() - first < kPointReadHistory) {
    // Record by record: a point read waits only for the writes to its own key, which committed
    // no later than the header just read (and made durable by that read), where a scan would
    // wait for a sync of everything anyone committed meanwhile.
    for (int64_t seq = first; seq <= header.history_count(); ++seq) {
      absl::StatusOr<std::string> raw = store->Get(
          ColumnFamily::kA2A,
          keys::A2ATaskSeqRecord(task.id(), keys::kA2ATaskHistory, static_cast<uint64_t>(seq)));
      if (absl::IsNotFound(raw.status())) continue;  // being deleted by retention, as a scan
      RETURN_IF_ERROR(raw.status());
      RETURN_IF_ERROR(DecodeRecord(*raw, task.add_history()));
    }
    return task;
  }
  const std::string prefix = keys::A2ATaskKindPrefix(task.id(), keys::kA2ATaskHistory);
  const std::string upper = keys::A2ATaskSeqRecord(
      task.id(), keys::kA2ATaskHistory, static_cast<uint64_t>(header.history_count()) + 1);
  std::unique_ptr<storage::Iterator> it = store->NewIterator(ColumnFamily::kA2A, prefix, upper);
  it->Seek(keys::A2ATaskSeqRecord(task.id(), keys::kA2ATaskHistory, static_cast<uint64_t>(first)));
  for (; it->Valid(); it->Next()) RETURN_IF_ERROR(DecodeRecord(it->value(), task.add_history()));
  RETURN_IF_ERROR(it->status());
  return task;
}

absl::Status ValidatePart(const a2apb::Part& part, int index) {
  if (part.content_case() == a2apb::Part::CONTENT_NOT_SET) {
    return absl::InvalidArgumentError(
        absl::StrCat("message.parts[", index, "] has no content (text, raw, url or data)"));
  }
  return absl::OkStatus();
}

}  // namespace

bool IsTerminal(a2apb::TaskState state) {
  return state == a2apb::TASK_STATE_COMPLETED || state == a2apb::TASK_STATE_FAILED ||
         state == a2apb::TASK_STATE_CANCELED || state == a2apb::TASK_STATE_REJECTED;
}

bool IsFinalOrInterrupted(a2apb::TaskState state) {
  return IsTerminal(state) || state == a2apb::TASK_STATE_INPUT_REQUIRED ||
         state == a2apb::TASK_STATE_AUTH_REQUIRED;
}

absl::Status A2ATaskStore::ValidateMessage(const a2apb::Message& message) const {
  RETURN_IF_ERROR(common::ValidateId("message.message_id", message.message_id()));
  RETURN_IF_ERROR(common::ValidateOptionalId("message.task_id", message.task_id()));
  RETURN_IF_ERROR(common::ValidateOptionalId("message.context_id", message.context_id()));
  if (message.role() != a2apb::ROLE_USER && message.role() != a2apb::ROLE_AGENT) {
    return absl::InvalidArgumentError("message.role must be ROLE_USER or ROLE_AGENT");
  }
  if (message.parts().empty()) {
    return absl::InvalidArgumentError("message.parts is empty: a message needs at least one part");
  }
  for (int i = 0; i < message.parts_size(); ++i) RETURN_IF_ERROR(ValidatePart(message.parts(i), i));
  if (message.ByteSizeLong() > limits_.max_message_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("message is %d bytes; the limit is %d bytes (--max_message_bytes)",
                        message.ByteSizeLong(), limits_.max_message_bytes));
  }
  return absl::OkStatus();
}

absl::StatusOr<A2ATaskStore::Change> A2ATaskStore::AcceptMessage(
    absl::string_view tenant, const a2apb::Message& message,
    const a2apb::TaskPushNotificationConfig* push_config) {
  RETURN_IF_ERROR(ValidateMessage(message));
  RETURN_IF_ERROR(common::ValidateOptionalId("tenant", tenant));
  if (message.task_id().empty() && tenant.empty()) {
    return absl::InvalidArgumentError("tenant is required: it names the agent to send to");
  }
  if (push_config != nullptr) RETURN_IF_ERROR(ValidatePushConfig(*push_config));
  const std::string new_task_id = common::NewUuid();
  const std::string new_context_id =
      message.context_id().empty() ? common::NewUuid() : message.context_id();

  Change change;
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    change = Change();
    v1::StoredTask header;
    std::string old_index_key;
    const auto now = ToProtoTime(absl::Now());
    if (message.task_id().empty()) {
      header.mutable_task()->set_id(new_task_id);
      header.mutable_task()->set_context_id(new_context_id);
      header.set_tenant(std::string(tenant));
      *header.mutable_create_time() = now;
    } else {
      ASSIGN_OR_RETURN(header, LockTask(txn, message.task_id()));
      RETURN_IF_ERROR(OwnedBy(header, tenant));
      if (!message.context_id().empty() && message.context_id() != header.task().context_id()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "message.context_id ", message.context_id(), " does not match task ",
            header.task().id(), ", which belongs to context ", header.task().context_id()));
      }
      if (IsTerminal(header.task().status().state())) {
        return a2a::UnsupportedOperation(
            absl::StrCat("task ", header.task().id(), " has ended (",
                         a2apb::TaskState_Name(header.task().status().state()),
                         ") and accepts no more messages"));
      }
      old_index_key = IndexKey(header);
    }
    header.set_version(header.version() + 1);
    *header.mutable_update_time() = now;
    RETURN_IF_ERROR(AppendHistory(txn, header, message));
    const int64_t history_seq = header.history_count();
    a2apb::TaskStatus submitted;
    submitted.set_state(a2apb::TASK_STATE_SUBMITTED);
    RETURN_IF_ERROR(SetStatus(txn, header, submitted, &change));

    v1::PendingDelivery delivery;
    delivery.set_task_id(header.task().id());
    delivery.set_tenant(header.tenant());
    delivery.set_history_seq(history_seq);
    *delivery.mutable_next_attempt_time() = now;
    *delivery.mutable_enqueue_time() = now;
    header.set_pending_deliveries(header.pending_deliveries() + 1);
    RETURN_IF_ERROR(
        txn.Put(ColumnFamily::kA2A,
                keys::A2ADelivery(header.task().id(), static_cast<uint64_t>(history_seq)),
                EncodeRecord(delivery)));
    change.queued_delivery_seq = history_seq;
    if (push_config != nullptr) {
      a2apb::TaskPushNotificationConfig config = *push_config;
      if (config.id().empty()) config.set_id(common::NewUuid());
      config.set_task_id(header.task().id());
      config.set_tenant(header.tenant());
      RETURN_IF_ERROR(txn.Put(ColumnFamily::kA2A,
                              keys::A2APushConfig(config.task_id(), config.id()),
                              EncodeRecord(config)));
    }
    RETURN_IF_ERROR(PutTask(txn, header, old_index_key));
    change.header = std::move(header);
    return absl::OkStatus();
  }));
  return change;
}

absl::StatusOr<v1::StoredTask> A2ATaskStore::GetHeader(absl::string_view task_id) {
  return ReadTask(store_, "", task_id);
}

absl::StatusOr<a2apb::Task> A2ATaskStore::GetTask(absl::string_view tenant,
                                                  absl::string_view task_id,
                                                  std::optional<int> history_length) {
  RETURN_IF_ERROR(ValidateHistoryLength(history_length));
  ASSIGN_OR_RETURN(v1::StoredTask header, ReadTask(store_, tenant, task_id));
  return AssembleTask(store_, header, history_length);
}

absl::StatusOr<std::pair<a2apb::Task, int64_t>> A2ATaskStore::Snapshot(absl::string_view tenant,
                                                                       absl::string_view task_id) {
  // The header alone fixes the snapshot: history records up to history_count never change.
  ASSIGN_OR_RETURN(v1::StoredTask header, ReadTask(store_, tenant, task_id));
  ASSIGN_OR_RETURN(a2apb::Task task, AssembleTask(store_, header, std::nullopt));
  return std::make_pair(std::move(task), header.last_event_seq());
}

absl::StatusOr<a2apb::ListTasksResponse> A2ATaskStore::ListTasks(
    const a2apb::ListTasksRequest& request) {
  RETURN_IF_ERROR(common::ValidateOptionalId("tenant", request.tenant()));
  RETURN_IF_ERROR(common::ValidateOptionalId("context_id", request.context_id()));
  if (!a2apb::TaskState_IsValid(request.status())) {
    return absl::InvalidArgumentError(
        absl::StrCat("status ", request.status(), " is not a task state"));
  }
  std::optional<int> history_length;
  if (request.has_history_length()) history_length = request.history_length();
  RETURN_IF_ERROR(ValidateHistoryLength(history_length));
  if (request.has_page_size() &&
      (request.page_size() < 1 || request.page_size() > kMaxTaskPageSize)) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_size must be between 1 and ", kMaxTaskPageSize));
  }
  const int page_size = request.has_page_size() ? request.page_size() : kDefaultTaskPageSize;
  const bool has_after = request.has_status_timestamp_after();
  const absl::Time after = FromProtoTime(request.status_timestamp_after());
  const std::string filter =
      absl::StrCat(request.tenant().size(), ":", request.tenant(), ":", request.context_id().size(),
                   ":", request.context_id(), ":", static_cast<int>(request.status()), ":",
                   has_after ? absl::FormatTime(after) : "");
  ASSIGN_OR_RETURN(std::string resume, DecodePageToken(request.page_token(), "a2a_tasks", filter));

  const std::string prefix(1, static_cast<char>(keys::kA2ATasksByTime));
  std::string upper = storage::PrefixUpperBound(prefix);
  if (has_after) {
    // Entries are ordered newest first; those at or before `after` start at this key.
    google::protobuf::Timestamp bound = request.status_timestamp_after();
    upper = keys::A2ATaskByTime(InvertedMicros(bound), "");
  }
  std::unique_ptr<storage::Iterator> it = store_->NewIterator(ColumnFamily::kA2A, prefix, upper);
  a2apb::ListTasksResponse response;
  response.set_page_size(page_size);
  int total = 0;
  bool reached_resume = resume.empty();
  std::vector<std::string> page_ids;
  for (; it->Valid(); it->Next()) {
    v1::TaskIndexEntry entry;
    RETURN_IF_ERROR(DecodeRecord(it->value(), &entry));
    if (!request.tenant().empty() && entry.tenant() != request.tenant()) continue;
    if (!request.context_id().empty() && entry.context_id() != request.context_id()) continue;
    if (request.status() != a2apb::TASK_STATE_UNSPECIFIED && entry.state() != request.status())
      continue;
    ++total;
    if (!reached_resume && it->key() >= absl::string_view(resume)) reached_resume = true;
    if (!reached_resume) continue;
    if (static_cast<int>(page_ids.size()) < page_size) {
      storage::KeyReader reader(it->key());
      RETURN_IF_ERROR(reader.ReadByte().status());
      RETURN_IF_ERROR(reader.ReadUint64().status());
      ASSIGN_OR_RETURN(std::string task_id, reader.ReadString());
      page_ids.push_back(std::move(task_id));
    } else if (response.next_page_token().empty()) {
      response.set_next_page_token(EncodePageToken("a2a_tasks", filter, it->key()));
    }
  }
  RETURN_IF_ERROR(it->status());
  response.set_total_size(total);
  const bool include_artifacts = request.has_include_artifacts() && request.include_artifacts();
  for (const std::string& id : page_ids) {
    absl::StatusOr<v1::StoredTask> header = ReadTask(store_, "", id);
    if (absl::IsNotFound(header.status())) continue;
    RETURN_IF_ERROR(header.status());
    ASSIGN_OR_RETURN(a2apb::Task task, AssembleTask(store_, *header, history_length));
    if (!include_artifacts) task.clear_artifacts();
    *response.add_tasks() = std::move(task);
  }
  return response;
}

absl::Status A2ATaskStore::CheckAgentUpdate(const a2apb::StreamResponse& update) {
  switch (update.payload_case()) {
    case a2apb::StreamResponse::kStatusUpdate:
      if (update.status_update().status().state() == a2apb::TASK_STATE_UNSPECIFIED) {
        return a2a::InvalidAgentResponse("agent sent a status update without a state");
      }
      return absl::OkStatus();
    case a2apb::StreamResponse::PAYLOAD_NOT_SET:
      return a2a::InvalidAgentResponse("agent sent an empty stream response");
    default:
      return absl::OkStatus();
  }
}

namespace {

// One agent update applied to the locked `header` (see ApplyAgentUpdate). Sets `*touched` when
// the header changed and must be written.
absl::Status ApplyOneUpdate(Transaction& txn, v1::StoredTask& header,
                            const a2apb::StreamResponse& update, A2ATaskStore::Change* change,
                            bool* touched) {
  RETURN_IF_ERROR(A2ATaskStore::CheckAgentUpdate(update));
  if (update.has_task() && header.agent_task_id().empty() && !update.task().id().empty()) {
    header.set_agent_task_id(update.task().id());
    *touched = true;
  }
  if (IsTerminal(header.task().status().state())) return absl::OkStatus();  // ignored
  *touched = true;
  const size_t events_before = change->events.size();
  header.set_version(header.version() + 1);
  switch (update.payload_case()) {
    case a2apb::StreamResponse::kTask: {
      for (const a2apb::Artifact& artifact : update.task().artifacts()) {
        a2apb::TaskArtifactUpdateEvent a;
        *a.mutable_artifact() = artifact;
        RETURN_IF_ERROR(MergeArtifact(txn, header, a, change));
      }
      const a2apb::TaskStatus& status = update.task().status();
      if (status.state() != a2apb::TASK_STATE_UNSPECIFIED &&
          (status.state() != header.task().status().state() || status.has_message())) {
        RETURN_IF_ERROR(SetStatus(txn, header, status, change));
      }
      break;
    }
    case a2apb::StreamResponse::kStatusUpdate:
      RETURN_IF_ERROR(SetStatus(txn, header, update.status_update().status(), change));
      break;
    case a2apb::StreamResponse::kArtifactUpdate:
      RETURN_IF_ERROR(MergeArtifact(txn, header, update.artifact_update(), change));
      break;
    case a2apb::StreamResponse::kMessage: {
      a2apb::TaskStatus completed;
      completed.set_state(a2apb::TASK_STATE_COMPLETED);
      *completed.mutable_message() = update.message();
      RETURN_IF_ERROR(SetStatus(txn, header, completed, change));
      break;
    }
    case a2apb::StreamResponse::PAYLOAD_NOT_SET:
      break;  // refused by CheckAgentUpdate
  }
  if (change->events.size() == events_before) header.set_version(header.version() - 1);
  *header.mutable_update_time() = ToProtoTime(absl::Now());
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<A2ATaskStore::Change> A2ATaskStore::ApplyAgentUpdate(
    absl::string_view task_id, const a2apb::StreamResponse& update) {
  ASSIGN_OR_RETURN(BurstResult result, ApplyAgentBurst(task_id, absl::MakeConstSpan(&update, 1)));
  return std::move(result.change);
}

absl::StatusOr<A2ATaskStore::BurstResult> A2ATaskStore::ApplyAgentBurst(
    absl::string_view task_id, absl::Span<const a2apb::StreamResponse> updates,
    int64_t delivery_seq) {
  BurstResult result;
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    result = BurstResult();
    ASSIGN_OR_RETURN(v1::StoredTask header, LockTask(txn, task_id));
    const std::string old_index_key = IndexKey(header);
    bool touched = false;
    for (const a2apb::StreamResponse& update : updates) {
      RETURN_IF_ERROR(ApplyOneUpdate(txn, header, update, &result.change, &touched));
      ++result.applied;
      if (IsFinalOrInterrupted(header.task().status().state())) break;
    }
    if (delivery_seq > 0 && IsFinalOrInterrupted(header.task().status().state())) {
      const std::string key = keys::A2ADelivery(task_id, static_cast<uint64_t>(delivery_seq));
      absl::StatusOr<std::string> existing = txn.GetForUpdate(ColumnFamily::kA2A, key);
      if (existing.ok()) {
        RETURN_IF_ERROR(txn.Delete(ColumnFamily::kA2A, key));
        header.set_pending_deliveries(std::max<int64_t>(header.pending_deliveries() - 1, 0));
        touched = true;
      } else if (!absl::IsNotFound(existing.status())) {
        return existing.status();
      }
      result.delivery_done = true;
    }
    if (touched) RETURN_IF_ERROR(PutTask(txn, header, old_index_key));
    result.change.header = std::move(header);
    return absl::OkStatus();
  }));
  return result;
}

absl::StatusOr<std::vector<v1::StoredEvent>> A2ATaskStore::ReadEvents(absl::string_view task_id,
                                                                      int64_t after_seq, int max) {
  const std::string prefix = keys::A2ATaskKindPrefix(task_id, keys::kA2ATaskEvent);
  std::unique_ptr<storage::Iterator> it =
      store_->NewIterator(ColumnFamily::kA2A, prefix, storage::PrefixUpperBound(prefix));
  it->Seek(
      keys::A2ATaskSeqRecord(task_id, keys::kA2ATaskEvent, static_cast<uint64_t>(after_seq) + 1));
  std::vector<v1::StoredEvent> events;
  for (; it->Valid() && static_cast<int>(events.size()) < max; it->Next()) {
    v1::StoredEvent event;
    RETURN_IF_ERROR(DecodeRecord(it->value(), &event));
    events.push_back(std::move(event));
  }
  RETURN_IF_ERROR(it->status());
  return events;
}

absl::StatusOr<std::vector<v1::PendingDelivery>> A2ATaskStore::PendingDeliveries(int max) {
  const std::string prefix(1, static_cast<char>(keys::kA2ADelivery));
  std::unique_ptr<storage::Iterator> it =
      store_->NewIterator(ColumnFamily::kA2A, prefix, storage::PrefixUpperBound(prefix));
  std::vector<v1::PendingDelivery> out;
  for (; it->Valid() && static_cast<int>(out.size()) < max; it->Next()) {
    v1::PendingDelivery d;
    RETURN_IF_ERROR(DecodeRecord(it->value(), &d));
    out.push_back(std::move(d));
  }
  RETURN_IF_ERROR(it->status());
  return out;
}

absl::StatusOr<a2apb::Message> A2ATaskStore::HistoryMessage(absl::string_view task_id,
                                                            int64_t seq) {
  absl::StatusOr<std::string> raw = store_->Get(
      ColumnFamily::kA2A,
      keys::A2ATaskSeqRecord(task_id, keys::kA2ATaskHistory, static_cast<uint64_t>(seq)));
  RETURN_IF_ERROR(raw.status());
  a2apb::Message message;
  RETURN_IF_ERROR(DecodeRecord(*raw, &message));
  return message;
}

absl::StatusOr<v1::PendingDelivery> A2ATaskStore::GetDelivery(absl::string_view task_id,
                                                              int64_t history_seq) {
  RETURN_IF_ERROR(common::ValidateId("task_id", task_id));
  absl::StatusOr<std::string> raw = store_->Get(
      ColumnFamily::kA2A, keys::A2ADelivery(task_id, static_cast<uint64_t>(history_seq)));
  if (absl::IsNotFound(raw.status())) {
    return absl::NotFoundError(
        absl::StrCat("no queued delivery of message ", history_seq, " of task ", task_id));
  }
  RETURN_IF_ERROR(raw.status());
  v1::PendingDelivery delivery;
  RETURN_IF_ERROR(DecodeRecord(*raw, &delivery));
  return delivery;
}

absl::StatusOr<int64_t> A2ATaskStore::DeliveryDone(absl::string_view task_id, int64_t history_seq) {
  int64_t remaining = 0;
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(v1::StoredTask header, LockTask(txn, task_id));
    remaining = header.pending_deliveries();
    const std::string key = keys::A2ADelivery(task_id, static_cast<uint64_t>(history_seq));
    absl::StatusOr<std::string> existing = txn.GetForUpdate(ColumnFamily::kA2A, key);
    if (absl::IsNotFound(existing.status())) return absl::OkStatus();  // canceled meanwhile
    RETURN_IF_ERROR(existing.status());
    RETURN_IF_ERROR(txn.Delete(ColumnFamily::kA2A, key));
    header.set_pending_deliveries(std::max<int64_t>(header.pending_deliveries() - 1, 0));
    remaining = header.pending_deliveries();
    return txn.Put(ColumnFamily::kA2A, keys::A2ATaskHeader(task_id), EncodeRecord(header));
  }));
  return remaining;
}

absl::StatusOr<A2ATaskStore::Change> A2ATaskStore::DeliveryFailed(absl::string_view task_id,
                                                                  int64_t history_seq,
                                                                  absl::string_view error,
                                                                  absl::Time next_attempt,
                                                                  bool give_up) {
  Change change;
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    change = Change();
    ASSIGN_OR_RETURN(v1::StoredTask header, LockTask(txn, task_id));
    const std::string key = keys::A2ADelivery(task_id, static_cast<uint64_t>(history_seq));
    absl::StatusOr<std::string> raw = txn.GetForUpdate(ColumnFamily::kA2A, key);
    if (absl::IsNotFound(raw.status())) {
      change.header = std::move(header);
      return absl::OkStatus();
    }
    RETURN_IF_ERROR(raw.status());
    v1::PendingDelivery delivery;
    RETURN_IF_ERROR(DecodeRecord(*raw, &delivery));
    delivery.set_attempts(delivery.attempts() + 1);
    delivery.set_last_error(std::string(error));
    *delivery.mutable_next_attempt_time() = ToProtoTime(next_attempt);
    if (!give_up) {
      change.header = std::move(header);
      return txn.Put(ColumnFamily::kA2A, key, EncodeRecord(delivery));
    }
    RETURN_IF_ERROR(txn.Delete(ColumnFamily::kA2A, key));
    header.set_pending_deliveries(std::max<int64_t>(header.pending_deliveries() - 1, 0));
    const std::string old_index_key = IndexKey(header);
    if (!IsTerminal(header.task().status().state())) {
      header.set_version(header.version() + 1);
      a2apb::TaskStatus failed;
      failed.set_state(a2apb::TASK_STATE_FAILED);
      a2apb::Message* reason = failed.mutable_message();
      reason->set_role(a2apb::ROLE_AGENT);
      reason->add_parts()->set_text(absl::StrCat("delivery to agent ", header.tenant(),
                                                 " failed after ", delivery.attempts(),
                                                 " attempts: ", error));
      RETURN_IF_ERROR(SetStatus(txn, header, failed, &change));
      *header.mutable_update_time() = ToProtoTime(absl::Now());
    }
    RETURN_IF_ERROR(PutTask(txn, header, old_index_key));
    change.header = std::move(header);
    return absl::OkStatus();
  }));
  return change;
}

absl::Status A2ATaskStore::RetryDeliveriesNow(absl::string_view tenant) {
  ASSIGN_OR_RETURN(std::vector<v1::PendingDelivery> pending, PendingDeliveries(100000));
  const auto now = ToProtoTime(absl::Now());
  for (const v1::PendingDelivery& d : pending) {
    if (d.tenant() != tenant) continue;
    RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
      const std::string key =
          keys::A2ADelivery(d.task_id(), static_cast<uint64_t>(d.history_seq()));
      absl::StatusOr<std::string> raw = txn.GetForUpdate(ColumnFamily::kA2A, key);
      if (absl::IsNotFound(raw.status())) return absl::OkStatus();
      RETURN_IF_ERROR(raw.status());
      v1::PendingDelivery current;
      RETURN_IF_ERROR(DecodeRecord(*raw, &current));
      *current.mutable_next_attempt_time() = now;
      return txn.Put(ColumnFamily::kA2A, key, EncodeRecord(current));
    }));
  }
  return absl::OkStatus();
}

absl::StatusOr<A2ATaskStore::Change> A2ATaskStore::CancelLocally(absl::string_view tenant,
                                                                 absl::string_view task_id,
                                                                 absl::string_view reason) {
  RETURN_IF_ERROR(common::ValidateId("id", task_id));
  Change change;
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    change = Change();
    ASSIGN_OR_RETURN(v1::StoredTask header, LockTask(txn, task_id));
    RETURN_IF_ERROR(OwnedBy(header, tenant));
    if (IsTerminal(header.task().status().state())) {
      return a2a::TaskNotCancelable(
          absl::StrCat("task ", task_id, " has already ended (",
                       a2apb::TaskState_Name(header.task().status().state()), ")"));
    }
    const std::string old_index_key = IndexKey(header);
    const std::string prefix = keys::A2ADeliveryTaskPrefix(task_id);
    std::unique_ptr<storage::Iterator> it =
        txn.NewIterator(ColumnFamily::kA2A, prefix, storage::PrefixUpperBound(prefix));
    for (; it->Valid(); it->Next()) RETURN_IF_ERROR(txn.Delete(ColumnFamily::kA2A, it->key()));
    RETURN_IF_ERROR(it->status());
    header.set_pending_deliveries(0);
    header.set_version(header.version() + 1);
    a2apb::TaskStatus canceled;
    canceled.set_state(a2apb::TASK_STATE_CANCELED);
    if (!reason.empty()) {
      canceled.mutable_message()->set_role(a2apb::ROLE_AGENT);
      canceled.mutable_message()->add_parts()->set_text(std::string(reason));
    }
    RETURN_IF_ERROR(SetStatus(txn, header, canceled, &change));
    *header.mutable_update_time() = ToProtoTime(absl::Now());
    RETURN_IF_ERROR(PutTask(txn, header, old_index_key));
    change.header = std::move(header);
    return absl::OkStatus();
  }));
  return change;
}

absl::Status A2ATaskStore::ValidatePushConfig(
    const a2apb::TaskPushNotificationConfig& config) const {
  RETURN_IF_ERROR(common::ValidateOptionalId("id", config.id()));
  if (config.url().empty()) return absl::InvalidArgumentError("push config url is required");
  RETURN_IF_ERROR(common::ValidateSize("url", config.url(), kMaxUrlBytes));
  if (!absl::StartsWith(config.url(), "http://") && !absl::StartsWith(config.url(), "https://")) {
    return absl::InvalidArgumentError("push config url must be an http:// or https:// URL");
  }
  if (absl::Status allowed = AllowedWebhookUrl(config.url()).status(); !allowed.ok()) {
    return absl::Status(allowed.code(), absl::StrCat("push config url: ", allowed.message()));
  }
  RETURN_IF_ERROR(
      common::ValidateSize("token", config.token(), limits_.max_field_bytes, "max_field_bytes"));
  RETURN_IF_ERROR(common::ValidateSize("authentication.credentials",
                                       config.authentication().credentials(),
                                       limits_.max_field_bytes, "max_field_bytes"));
  return absl::OkStatus();
}

absl::StatusOr<a2apb::TaskPushNotificationConfig> A2ATaskStore::CreatePushConfig(
    const a2apb::TaskPushNotificationConfig& request) {
  RETURN_IF_ERROR(common::ValidateId("task_id", request.task_id()));
  RETURN_IF_ERROR(ValidatePushConfig(request));
  a2apb::TaskPushNotificationConfig config = request;
  if (config.id().empty()) config.set_id(common::NewUuid());
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(v1::StoredTask header, LockTask(txn, config.task_id()));
    RETURN_IF_ERROR(OwnedBy(header, request.tenant()));
    config.set_tenant(header.tenant());
    const std::string prefix = keys::A2ATaskKindPrefix(config.task_id(), keys::kA2ATaskPushConfig);
    std::unique_ptr<storage::Iterator> it =
        txn.NewIterator(ColumnFamily::kA2A, prefix, storage::PrefixUpperBound(prefix));
    int count = 0;
    bool replacing = false;
    for (; it->Valid(); it->Next()) {
      ++count;
      if (it->key() == keys::A2APushConfig(config.task_id(), config.id())) replacing = true;
    }
    RETURN_IF_ERROR(it->status());
    if (!replacing && count >= options_.max_push_configs_per_task) {
      return absl::ResourceExhaustedError(absl::StrCat("task ", config.task_id(), " already has ",
                                                       count, " push configs; the limit is ",
                                                       options_.max_push_configs_per_task));
    }
    return txn.Put(ColumnFamily::kA2A, keys::A2APushConfig(config.task_id(), config.id()),
                   EncodeRecord(config));
  }));
  return config;
}

absl::StatusOr<a2apb::TaskPushNotificationConfig> A2ATaskStore::GetPushConfig(
    absl::string_view tenant, absl::string_view task_id, absl::string_view id) {
  RETURN_IF_ERROR(ReadTask(store_, tenant, task_id).status());
  RETURN_IF_ERROR(common::ValidateId("id", id));
  absl::StatusOr<std::string> raw =
      store_->Get(ColumnFamily::kA2A, keys::A2APushConfig(task_id, id));
  if (absl::IsNotFound(raw.status())) {
    return absl::NotFoundError(
        absl::StrCat("push config ", id, " of task ", task_id, " not found"));
  }
  RETURN_IF_ERROR(raw.status());
  a2apb::TaskPushNotificationConfig config;
  RETURN_IF_ERROR(DecodeRecord(*raw, &config));
  return config;
}

absl::StatusOr<a2apb::ListTaskPushNotificationConfigsResponse> A2ATaskStore::ListPushConfigs(
    const a2apb::ListTaskPushNotificationConfigsRequest& request) {
  RETURN_IF_ERROR(ReadTask(store_, request.tenant(), request.task_id()).status());
  ASSIGN_OR_RETURN(const int page_size, ResolvePageSize(request.page_size(), kDefaultConfigPageSize,
                                                        kMaxConfigPageSize));
  ASSIGN_OR_RETURN(std::string resume,
                   DecodePageToken(request.page_token(), "a2a_push_configs", request.task_id()));
  const std::string prefix = keys::A2ATaskKindPrefix(request.task_id(), keys::kA2ATaskPushConfig);
  std::unique_ptr<storage::Iterator> it =
      store_->NewIterator(ColumnFamily::kA2A, prefix, storage::PrefixUpperBound(prefix));
  if (!resume.empty()) it->Seek(keys::A2APushConfig(request.task_id(), resume));
  a2apb::ListTaskPushNotificationConfigsResponse response;
  for (; it->Valid(); it->Next()) {
    a2apb::TaskPushNotificationConfig config;
    RETURN_IF_ERROR(DecodeRecord(it->value(), &config));
    if (response.configs_size() == page_size) {
      response.set_next_page_token(
          EncodePageToken("a2a_push_configs", request.task_id(), config.id()));
      break;
    }
    *response.add_configs() = std::move(config);
  }
  RETURN_IF_ERROR(it->status());
  return response;
}

absl::Status A2ATaskStore::DeletePushConfig(absl::string_view tenant, absl::string_view task_id,
                                            absl::string_view id) {
  RETURN_IF_ERROR(common::ValidateId("task_id", task_id));
  RETURN_IF_ERROR(common::ValidateId("id", id));
  return store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(v1::StoredTask header, LockTask(txn, task_id));
    RETURN_IF_ERROR(OwnedBy(header, tenant));
    const std::string key = keys::A2APushConfig(task_id, id);
    absl::StatusOr<std::string> raw = txn.GetForUpdate(ColumnFamily::kA2A, key);
    if (absl::IsNotFound(raw.status())) {
      return absl::NotFoundError(
          absl::StrCat("push config ", id, " of task ", task_id, " not found"));
    }
    RETURN_IF_ERROR(raw.status());
    return txn.Delete(ColumnFamily::kA2A, key);
  });
}

absl::StatusOr<std::vector<v1::PushDelivery>> A2ATaskStore::PendingPushes(int max) {
  const std::string prefix(1, static_cast<char>(keys::kA2APushPending));
  std::unique_ptr<storage::Iterator> it =
      store_->NewIterator(ColumnFamily::kA2A, prefix, storage::PrefixUpperBound(prefix));
  std::vector<v1::PushDelivery> out;
  for (; it->Valid() && static_cast<int>(out.size()) < max; it->Next()) {
    v1::PushDelivery push;
    RETURN_IF_ERROR(DecodeRecord(it->value(), &push));
    out.push_back(std::move(push));
  }
  RETURN_IF_ERROR(it->status());
  return out;
}

absl::StatusOr<common::HttpUrl> A2ATaskStore::AllowedWebhookUrl(absl::string_view url) const {
  ASSIGN_OR_RETURN(common::HttpUrl parsed, common::ParseHttpUrl(url));
  RETURN_IF_ERROR(options_.outbound_allow.Check(url, "outbound_allow_hosts"));
  return parsed;
}

absl::Status A2ATaskStore::RecordPushAttempt(const v1::PushDelivery& push,
                                             const v1::PushAttempt& attempt, bool delivered,
                                             bool give_up) {
  return store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    const std::string key = keys::A2APushPending(push.task_id(), push.seq(), push.config_id());
    absl::StatusOr<std::string> raw = txn.GetForUpdate(ColumnFamily::kA2A, key);
    if (absl::IsNotFound(raw.status())) return absl::OkStatus();
    RETURN_IF_ERROR(raw.status());
    v1::PushDelivery current;
    RETURN_IF_ERROR(DecodeRecord(*raw, &current));
    *current.add_attempts() = attempt;
    const int attempts = current.attempts_size();
    if (!delivered && !give_up && attempts < options_.push_max_attempts) {
      absl::Duration backoff = options_.push_initial_backoff;
      for (int i = 1; i < attempts && backoff < options_.push_max_backoff; ++i) backoff *= 2;
      backoff = std::min(backoff, options_.push_max_backoff);
      *current.mutable_next_attempt_time() = ToProtoTime(absl::Now() + backoff);
      return txn.Put(ColumnFamily::kA2A, key, EncodeRecord(current));
    }
    current.set_state(delivered ? v1::PUSH_STATE_DELIVERED : v1::PUSH_STATE_FAILED);
    current.clear_next_attempt_time();
    RETURN_IF_ERROR(txn.Delete(ColumnFamily::kA2A, key));
    return txn.Put(ColumnFamily::kA2A,
                   keys::A2APushLog(push.task_id(), push.seq(), push.config_id()),
                   EncodeRecord(current));
  });
}

absl::StatusOr<std::vector<v1::PushDelivery>> A2ATaskStore::PushLog(absl::string_view task_id) {
  const std::string prefix = keys::A2ATaskKindPrefix(task_id, keys::kA2ATaskPushLog);
  std::unique_ptr<storage::Iterator> it =
      store_->NewIterator(ColumnFamily::kA2A, prefix, storage::PrefixUpperBound(prefix));
  std::vector<v1::PushDelivery> out;
  for (; it->Valid(); it->Next()) {
    v1::PushDelivery push;
    RETURN_IF_ERROR(DecodeRecord(it->value(), &push));
    out.push_back(std::move(push));
  }
  RETURN_IF_ERROR(it->status());
  return out;
}

// ---- A task's life (the header's last block). Self-contained, so that it moves as one piece
// into the split task store. ----

absl::Status ForEachIndexedA2ATask(storage::Store& store,
                                   absl::FunctionRef<absl::Status(IndexedA2ATask)> visit) {
  const std::string prefix = keys::A2ATasksByTimePrefix();
  std::unique_ptr<storage::Iterator> it =
      store.NewIterator(storage::ColumnFamily::kA2A, prefix, storage::PrefixUpperBound(prefix));
  for (; it->Valid(); it->Next()) {
    v1::TaskIndexEntry entry;
    RETURN_IF_ERROR(DecodeRecord(it->value(), &entry));
    storage::KeyReader reader(it->key());
    RETURN_IF_ERROR(reader.ReadByte().status());
    ASSIGN_OR_RETURN(const uint64_t inverted, reader.ReadUint64());
    IndexedA2ATask task;
    ASSIGN_OR_RETURN(task.task_id, reader.ReadString());
    task.context_id = entry.context_id();
    task.state = entry.state();
    task.status_time = absl::FromUnixMicros(keys::A2AStatusMicros(inverted));
    RETURN_IF_ERROR(visit(std::move(task)));
  }
  return it->status();
}

absl::StatusOr<PurgeProgress> PurgeA2ATaskStep(
    storage::Transaction& txn, absl::string_view task_id, int64_t limit,
    absl::FunctionRef<bool(const v1::StoredTask&)> eligible) {
  constexpr storage::ColumnFamily kFamily = storage::ColumnFamily::kA2A;
  PurgeProgress progress;
  const std::string header_key = keys::A2ATaskHeader(task_id);
  absl::StatusOr<std::string> raw = txn.GetForUpdate(kFamily, header_key);
  if (absl::IsNotFound(raw.status())) {
    progress.absent = true;
    progress.finished = true;
    return progress;
  }
  RETURN_IF_ERROR(raw.status());
  v1::StoredTask header;
  RETURN_IF_ERROR(DecodeRecord(*raw, &header));
  if (!eligible(header)) {
    progress.kept = true;
    return progress;
  }
  // Children first, in key order.
  for (const uint8_t kind : {keys::kA2ATaskHistory, keys::kA2ATaskEvent, keys::kA2ATaskPushConfig,
                             keys::kA2ATaskPushLog}) {
    ASSIGN_OR_RETURN(const bool done,
                     DeletePrefix(txn, kFamily, keys::A2ATaskKindPrefix(task_id, kind), limit,
                                  &progress.deleted));
    if (!done) return progress;
  }
  // The rest is small: queued deliveries and webhook calls, the index entry and the header. It
  // goes in one go, and only when it fits in the budget.
  std::vector<std::string> rest;
  for (const std::string& prefix :
       {keys::A2ADeliveryTaskPrefix(task_id), keys::A2APushPendingTaskPrefix(task_id)}) {
    std::unique_ptr<storage::Iterator> it =
        txn.NewIterator(kFamily, prefix, storage::PrefixUpperBound(prefix));
    for (; it->Valid(); it->Next()) rest.emplace_back(it->key());
    RETURN_IF_ERROR(it->status());
  }
  if (progress.deleted + static_cast<int64_t>(rest.size()) + 2 > limit) return progress;
  for (const std::string& key : rest) RETURN_IF_ERROR(txn.Delete(kFamily, key));
  const int64_t status_micros =
      absl::ToUnixMicros(FromProtoTime(header.task().status().timestamp()));
  RETURN_IF_ERROR(
      txn.Delete(kFamily, keys::A2ATaskByStatusTime(status_micros, header.task().id())));
  RETURN_IF_ERROR(txn.Delete(kFamily, header_key));
  progress.deleted += static_cast<int64_t>(rest.size()) + 2;
  progress.finished = true;
  return progress;
}

absl::StatusOr<int64_t> CountA2ATaskPurge(storage::Store& store, absl::string_view task_id) {
  int64_t n = 1;  // the index entry
  for (const std::string& prefix :
       {keys::A2ATaskPrefix(task_id), keys::A2ADeliveryTaskPrefix(task_id),
        keys::A2APushPendingTaskPrefix(task_id)}) {
    ASSIGN_OR_RETURN(const int64_t under, CountPrefix(store, storage::ColumnFamily::kA2A, prefix));
    n += under;
  }
  return n;
}

}  // namespace coordinator
