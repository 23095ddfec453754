#include "coordinator/store/a2a/tasks.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <utility>

#include "a2a_protocol/errors.h"
#include "a2a_protocol/message.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/sha256.h"
#include "common/status_macros.h"
#include "common/uuid.h"
#include "common/validation.h"
#include "coordinator/store/a2a/records.h"
#include "coordinator/store/records/keys.h"
#include "coordinator/store/records/page_token.h"
#include "coordinator/store/records/record_codec.h"
#include "coordinator/store/records/tallies.h"
#include "coordinator/store/records/time_util.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "storage/key_codec.h"

namespace coordinator {

using storage::ColumnFamily;
using storage::Transaction;

namespace {

constexpr int kDefaultTaskPageSize = 50;
constexpr int kMaxTaskPageSize = 100;
// Histories up to this many messages are read with point reads, longer ones with one scan.
constexpr int64_t kPointReadHistory = 16;

uint64_t InvertedMicros(const google::protobuf::Timestamp& ts) {
  return keys::A2AInvertedMicros(absl::ToUnixMicros(FromProtoTime(ts)));
}

// `stored` (may be null) receives the message as stored.
absl::Status AppendHistory(Transaction& txn, v1::StoredTask& header, a2apb::Message message,
                           a2apb::Message* stored = nullptr) {
  message.set_task_id(header.task().id());
  message.set_context_id(header.task().context_id());
  header.set_history_count(header.history_count() + 1);
  RETURN_IF_ERROR(txn.Put(ColumnFamily::kA2A,
                          keys::A2ATaskSeqRecord(header.task().id(), keys::kA2ATaskHistory,
                                                 static_cast<uint64_t>(header.history_count())),
                          EncodeRecord(message)));
  if (stored != nullptr) *stored = std::move(message);
  return absl::OkStatus();
}

// Appends `event` to the log; a status change also queues one webhook call per push config.
// `answer` (may be null) marks the event as a direct Message answer.
absl::Status AppendEvent(Transaction& txn, v1::StoredTask& header, a2apb::StreamResponse event,
                         A2ATasks::Change* change, const v1::MessageAnswer* answer = nullptr) {
  const std::string& task_id = header.task().id();
  v1::StoredEvent stored;
  header.set_last_event_seq(header.last_event_seq() + 1);
  stored.set_seq(header.last_event_seq());
  stored.set_version(header.version());
  *stored.mutable_time() = ToProtoTime(absl::Now());
  *stored.mutable_event() = std::move(event);
  if (answer != nullptr) *stored.mutable_message_answer() = *answer;
  RETURN_IF_ERROR(txn.Put(
      ColumnFamily::kA2A,
      keys::A2ATaskSeqRecord(task_id, keys::kA2ATaskEvent, static_cast<uint64_t>(stored.seq())),
      EncodeRecord(stored)));
  if (stored.event().has_status_update()) {
    ASSIGN_OR_RETURN(const bool queued, a2a_records::QueuePushCalls(txn, header, stored));
    if (queued) change->pushes_queued = true;
  }
  change->events.push_back(std::move(stored));
  return absl::OkStatus();
}

absl::Status MergeArtifact(Transaction& txn, v1::StoredTask& header,
                           const a2apb::TaskArtifactUpdateEvent& update, A2ATasks::Change* change) {
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

// The Message a direct answer gives the client that sent history message `sent_seq`: the
// status message the answer made, without the task id unless the agent's Message named a task.
// nullopt when `answer` is absent or answers another message.
std::optional<a2apb::Message> AnswerTo(const v1::MessageAnswer* answer,
                                       const a2apb::TaskStatus& status, int64_t sent_seq) {
  if (answer == nullptr || answer->answers_seq() != sent_seq || !status.has_message()) {
    return std::nullopt;
  }
  a2apb::Message message = status.message();
  if (!answer->names_task()) message.clear_task_id();
  return message;
}

// One agent update applied to the locked `header` (see ApplyAgentUpdate), which answers history
// message `delivery_seq` (0: not known). Sets `*touched` when the header changed and must be
// written.
absl::Status ApplyOneUpdate(Transaction& txn, v1::StoredTask& header,
                            const a2apb::StreamResponse& update, int64_t delivery_seq,
                            A2ATasks::Change* change, bool* touched) {
  RETURN_IF_ERROR(A2ATasks::CheckAgentUpdate(update));
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
        RETURN_IF_ERROR(a2a_records::SetStatus(txn, header, status, change));
      }
      break;
    }
    case a2apb::StreamResponse::kStatusUpdate:
      RETURN_IF_ERROR(a2a_records::SetStatus(txn, header, update.status_update().status(), change));
      break;
    case a2apb::StreamResponse::kArtifactUpdate:
      RETURN_IF_ERROR(MergeArtifact(txn, header, update.artifact_update(), change));
      break;
    case a2apb::StreamResponse::kMessage: {
      // A direct answer: stored as the status message that completes the task, and marked so
      // that the client whose message it answers gets the Message itself (SendAnswer).
      v1::MessageAnswer answer;
      answer.set_answers_seq(delivery_seq);
      answer.set_names_task(!update.message().task_id().empty());
      a2apb::TaskStatus completed;
      completed.set_state(a2apb::TASK_STATE_COMPLETED);
      *completed.mutable_message() = update.message();
      RETURN_IF_ERROR(a2a_records::SetStatus(txn, header, completed, change, &answer));
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

namespace a2a_records {

std::string TaskIndexKey(const v1::StoredTask& header) {
  return keys::A2ATaskByTime(InvertedMicros(header.task().status().timestamp()),
                             header.task().id());
}

absl::StatusOr<v1::StoredTask> LockTask(Transaction& txn, absl::string_view task_id) {
  absl::StatusOr<std::string> raw =
      txn.GetForUpdate(ColumnFamily::kA2A, keys::A2ATaskHeader(task_id));
  if (absl::IsNotFound(raw.status())) return a2a_protocol::TaskNotFound(task_id);
  RETURN_IF_ERROR(raw.status());
  v1::StoredTask header;
  RETURN_IF_ERROR(DecodeRecord(*raw, &header));
  return header;
}

absl::Status PutTaskHeader(Transaction& txn, const v1::StoredTask& header) {
  return txn.Put(ColumnFamily::kA2A, keys::A2ATaskHeader(header.task().id()), EncodeRecord(header));
}

absl::Status PutTask(Transaction& txn, const v1::StoredTask& header,
                     const std::string& old_index_key) {
  RETURN_IF_ERROR(PutTaskHeader(txn, header));
  if (!old_index_key.empty()) RETURN_IF_ERROR(txn.Delete(ColumnFamily::kA2A, old_index_key));
  v1::TaskIndexEntry entry;
  entry.set_tenant(header.tenant());
  entry.set_context_id(header.task().context_id());
  entry.set_state(header.task().status().state());
  entry.set_owner(header.owner());
  return txn.Put(ColumnFamily::kA2A, TaskIndexKey(header), EncodeRecord(entry));
}

// What `access` may do with `header`'s task (see A2ATasks::CheckAccess).
absl::Status TaskAccess(const v1::StoredTask& header, const Access& access, bool change) {
  if (!SeesTask(access, header)) return a2a_protocol::TaskNotFound(header.task().id());
  if (change && !access.Owns(header.owner())) {
    return absl::PermissionDeniedError(absl::StrCat("agent ", access.principal,
                                                    " may not change task ", header.task().id(),
                                                    ": it was routed to it, not sent by it"));
  }
  return absl::OkStatus();
}

absl::Status OwnedBy(const v1::StoredTask& header, absl::string_view tenant) {
  if (!tenant.empty() && header.tenant() != tenant)
    return a2a_protocol::TaskNotFound(header.task().id());
  return absl::OkStatus();
}

absl::StatusOr<v1::StoredTask> ReadTask(storage::Store* store, absl::string_view tenant,
                                        absl::string_view task_id) {
  RETURN_IF_ERROR(common::ValidateId("id", task_id));
  absl::StatusOr<std::string> raw = store->Get(ColumnFamily::kA2A, keys::A2ATaskHeader(task_id));
  if (absl::IsNotFound(raw.status())) return a2a_protocol::TaskNotFound(task_id);
  RETURN_IF_ERROR(raw.status());
  v1::StoredTask header;
  RETURN_IF_ERROR(DecodeRecord(*raw, &header));
  RETURN_IF_ERROR(OwnedBy(header, tenant));
  return header;
}

absl::Status SetStatus(Transaction& txn, v1::StoredTask& header, a2apb::TaskStatus status,
                       A2ATasks::Change* change, const v1::MessageAnswer* answer) {
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
  // The header keeps the answer only as long as the status it made (a direct answer ends the
  // task, so nothing replaces that status today; this keeps it true if something ever does).
  if (answer != nullptr) {
    *header.mutable_message_answer() = *answer;
  } else {
    header.clear_message_answer();
  }
  a2apb::StreamResponse event;
  a2apb::TaskStatusUpdateEvent* update = event.mutable_status_update();
  update->set_task_id(header.task().id());
  update->set_context_id(header.task().context_id());
  *update->mutable_status() = std::move(status);
  return AppendEvent(txn, header, std::move(event), change, answer);
}

void PublishChange(TaskNotifier* notifier, const A2ATasks::Change& change) {
  if (notifier == nullptr) return;
  if (!change.events.empty()) notifier->Notify(change.header.task().id());
  if (change.pushes_queued) notifier->PushesQueued();
}

// What makes two sends the same message: its content without the ids the coordinator sets (a
// new task's, a context it picked), serialized deterministically (maps in key order).
std::string MessageDigest(a2apb::Message message) {
  message.clear_task_id();
  message.clear_context_id();
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream out(&bytes);
    google::protobuf::io::CodedOutputStream coded(&out);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  return common::Sha256Hex(bytes);
}

// The id of the task a message without task_id creates: derived from the agent, the sender and
// the message_id, so that the same message sent again finds the task the first one made. UUID
// layout, version 8 (RFC 9562: custom).
std::string DerivedTaskId(absl::string_view tenant, absl::string_view principal,
                          absl::string_view message_id) {
  std::string hex = common::Sha256Hex(
      absl::StrCat(tenant.size(), ":", tenant, principal.size(), ":", principal, message_id));
  hex[12] = '8';
  hex[16] = "89ab"[(hex[16] >= 'a' ? hex[16] - 'a' + 10 : hex[16] - '0') & 3];
  return absl::StrCat(hex.substr(0, 8), "-", hex.substr(8, 4), "-", hex.substr(12, 4), "-",
                      hex.substr(16, 4), "-", hex.substr(20, 12));
}

// `message` sent again on `header`'s task, which an earlier send of it created or continued
// last: the change that answers it with the task as it is, storing nothing.
absl::StatusOr<A2ATasks::Change> RepeatedMessage(Transaction& txn, const v1::StoredTask& header,
                                                 const a2apb::Message& message,
                                                 const std::string& digest) {
  int64_t seq = header.last_message_seq();
  std::string first_digest = header.last_message_digest();
  if (header.last_message_id() != message.message_id()) {
    // The task's first message, continued since: its record says what it held.
    seq = 1;
    ASSIGN_OR_RETURN(
        const std::string raw,
        txn.GetForUpdate(ColumnFamily::kA2A,
                         keys::A2ATaskSeqRecord(header.task().id(), keys::kA2ATaskHistory, 1)));
    a2apb::Message first;
    RETURN_IF_ERROR(DecodeRecord(raw, &first));
    first_digest = first.message_id() == message.message_id() ? MessageDigest(first) : "";
  }
  if (first_digest != digest ||
      (!message.context_id().empty() && message.context_id() != header.task().context_id())) {
    return absl::AlreadyExistsError(absl::StrCat(
        "message_id ", message.message_id(), " was sent to this agent before (task ",
        header.task().id(), ") with other content; a new message needs a new message_id"));
  }
  A2ATasks::Change change;
  change.header = header;
  change.sent_seq = seq;
  change.repeated = true;
  return change;
}

}  // namespace a2a_records

using a2a_records::LockTask;
using a2a_records::OwnedBy;
using a2a_records::PutTask;
using a2a_records::ReadTask;
using a2a_records::SetStatus;
using a2a_records::TaskAccess;
using a2a_records::TaskIndexKey;

bool IsTerminal(a2apb::TaskState state) {
  return state == a2apb::TASK_STATE_COMPLETED || state == a2apb::TASK_STATE_FAILED ||
         state == a2apb::TASK_STATE_CANCELED || state == a2apb::TASK_STATE_REJECTED;
}

bool SeesTask(const Access& access, const v1::StoredTask& header) {
  return !access.scoped || access.Owns(header.owner()) || header.tenant() == access.principal;
}

bool SeesTask(const Access& access, const v1::TaskIndexEntry& entry) {
  return !access.scoped || access.Owns(entry.owner()) || entry.tenant() == access.principal;
}

bool IsFinalOrInterrupted(a2apb::TaskState state) {
  return IsTerminal(state) || state == a2apb::TASK_STATE_INPUT_REQUIRED ||
         state == a2apb::TASK_STATE_AUTH_REQUIRED;
}

absl::Status A2ATasks::ValidateMessage(const a2apb::Message& message) const {
  return a2a_protocol::ValidateMessage(message, limits_.max_message_bytes, "max_message_bytes");
}

absl::StatusOr<A2ATasks::Change> A2ATasks::AcceptMessage(
    absl::string_view tenant, const a2apb::Message& message,
    const a2apb::TaskPushNotificationConfig* push_config, const Access& access,
    absl::string_view push_version) {
  RETURN_IF_ERROR(ValidateMessage(message));
  RETURN_IF_ERROR(common::ValidateOptionalId("tenant", tenant));
  if (message.task_id().empty() && tenant.empty()) {
    return absl::InvalidArgumentError("tenant is required: it names the agent to send to");
  }
  if (push_config != nullptr) {
    RETURN_IF_ERROR(ValidatePushConfig(*push_config, limits_, options_));
    RETURN_IF_ERROR(ValidatePushVersion(push_version));
  }
  const std::string new_task_id =
      a2a_records::DerivedTaskId(tenant, access.principal, message.message_id());
  const std::string new_context_id =
      message.context_id().empty() ? common::NewUuid() : message.context_id();
  const std::string digest = a2a_records::MessageDigest(message);

  Change change;
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    change = Change();
    v1::StoredTask header;
    std::string old_index_key;
    const auto now = ToProtoTime(absl::Now());
    if (message.task_id().empty()) {
      // The task this message made when it was sent before, if it was.
      absl::StatusOr<v1::StoredTask> made = LockTask(txn, new_task_id);
      if (made.ok()) {
        ASSIGN_OR_RETURN(change, a2a_records::RepeatedMessage(txn, *made, message, digest));
        return absl::OkStatus();
      }
      if (!absl::IsNotFound(made.status())) return made.status();
      header.mutable_task()->set_id(new_task_id);
      header.mutable_task()->set_context_id(new_context_id);
      header.set_tenant(std::string(tenant));
      header.set_owner(access.principal);
      header.set_push_config_count(0);
      *header.mutable_create_time() = now;
    } else {
      ASSIGN_OR_RETURN(header, LockTask(txn, message.task_id()));
      RETURN_IF_ERROR(TaskAccess(header, access, /*change=*/true));
      RETURN_IF_ERROR(OwnedBy(header, tenant));
      // The newest message on the task, sent again: answered as it was, even once it ended.
      if (header.last_message_id() == message.message_id()) {
        ASSIGN_OR_RETURN(change, a2a_records::RepeatedMessage(txn, header, message, digest));
        return absl::OkStatus();
      }
      if (!message.context_id().empty() && message.context_id() != header.task().context_id()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "message.context_id ", message.context_id(), " does not match task ",
            header.task().id(), ", which belongs to context ", header.task().context_id()));
      }
      if (IsTerminal(header.task().status().state())) {
        return a2a_protocol::UnsupportedOperation(
            absl::StrCat("task ", header.task().id(), " has ended (",
                         a2apb::TaskState_Name(header.task().status().state()),
                         ") and accepts no more messages"));
      }
      old_index_key = TaskIndexKey(header);
    }
    header.set_version(header.version() + 1);
    *header.mutable_update_time() = now;
    RETURN_IF_ERROR(AppendHistory(txn, header, message, &change.queued_message));
    const int64_t history_seq = header.history_count();
    header.set_last_message_id(message.message_id());
    header.set_last_message_seq(history_seq);
    header.set_last_message_digest(digest);
    change.sent_seq = history_seq;
    a2apb::TaskStatus submitted;
    submitted.set_state(a2apb::TASK_STATE_SUBMITTED);
    RETURN_IF_ERROR(SetStatus(txn, header, submitted, &change));
    RETURN_IF_ERROR(a2a_records::QueueDelivery(txn, header, history_seq, now));
    change.queued_delivery_seq = history_seq;
    if (push_config != nullptr) {
      a2apb::TaskPushNotificationConfig config = *push_config;
      // Without an id the config is the task's own, found by the task id (as A2A SDKs do).
      if (config.id().empty()) config.set_id(header.task().id());
      config.set_task_id(header.task().id());
      config.set_tenant(header.tenant());
      RETURN_IF_ERROR(a2a_records::PutPushConfig(txn, header, config, push_version));
    }
    RETURN_IF_ERROR(PutTask(txn, header, old_index_key));
    change.header = std::move(header);
    return absl::OkStatus();
  }));
  a2a_records::PublishChange(notifier_, change);
  return change;
}

absl::StatusOr<v1::StoredTask> A2ATasks::GetHeader(absl::string_view task_id) {
  return ReadTask(store_, "", task_id);
}

absl::Status A2ATasks::CheckAccess(absl::string_view task_id, const Access& access, bool change) {
  if (!access.scoped) return absl::OkStatus();  // as if it exists: the call itself says
  ASSIGN_OR_RETURN(const v1::StoredTask header, ReadTask(store_, "", task_id));
  return TaskAccess(header, access, change);
}

absl::StatusOr<a2apb::Task> A2ATasks::GetTask(absl::string_view tenant, absl::string_view task_id,
                                              std::optional<int> history_length) {
  RETURN_IF_ERROR(ValidateHistoryLength(history_length));
  ASSIGN_OR_RETURN(v1::StoredTask header, ReadTask(store_, tenant, task_id));
  return AssembleTask(store_, header, history_length);
}

absl::StatusOr<a2apb::SendMessageResponse> A2ATasks::SendAnswer(absl::string_view task_id,
                                                                int64_t sent_seq,
                                                                std::optional<int> history_length) {
  RETURN_IF_ERROR(ValidateHistoryLength(history_length));
  ASSIGN_OR_RETURN(const v1::StoredTask header, ReadTask(store_, "", task_id));
  return SendAnswer(header, sent_seq, history_length);
}

absl::StatusOr<a2apb::SendMessageResponse> A2ATasks::SendAnswer(const v1::StoredTask& header,
                                                                int64_t sent_seq,
                                                                std::optional<int> history_length) {
  RETURN_IF_ERROR(ValidateHistoryLength(history_length));
  a2apb::SendMessageResponse response;
  std::optional<a2apb::Message> answer =
      AnswerTo(header.has_message_answer() ? &header.message_answer() : nullptr,
               header.task().status(), sent_seq);
  if (answer.has_value()) {
    *response.mutable_message() = *std::move(answer);
  } else {
    ASSIGN_OR_RETURN(*response.mutable_task(), AssembleTask(store_, header, history_length));
  }
  return response;
}

a2apb::StreamResponse A2ATasks::SendStreamEvent(v1::StoredEvent event, int64_t sent_seq) {
  if (event.event().has_status_update()) {
    std::optional<a2apb::Message> answer =
        AnswerTo(event.has_message_answer() ? &event.message_answer() : nullptr,
                 event.event().status_update().status(), sent_seq);
    if (answer.has_value()) {
      a2apb::StreamResponse response;
      *response.mutable_message() = *std::move(answer);
      return response;
    }
  }
  return std::move(*event.mutable_event());
}

absl::StatusOr<std::pair<a2apb::Task, int64_t>> A2ATasks::Snapshot(absl::string_view tenant,
                                                                   absl::string_view task_id) {
  // The header alone fixes the snapshot: history records up to history_count never change.
  ASSIGN_OR_RETURN(v1::StoredTask header, ReadTask(store_, tenant, task_id));
  ASSIGN_OR_RETURN(a2apb::Task task, AssembleTask(store_, header, std::nullopt));
  return std::make_pair(std::move(task), header.last_event_seq());
}

absl::StatusOr<a2apb::ListTasksResponse> A2ATasks::ListTasks(const a2apb::ListTasksRequest& request,
                                                             const Access& access) {
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
  const std::string filter = absl::StrCat(
      request.tenant().size(), ":", request.tenant(), ":", request.context_id().size(), ":",
      request.context_id(), ":", static_cast<int>(request.status()), ":",
      has_after ? absl::FormatTime(after) : "", ":", access.scoped ? access.principal : "");
  ASSIGN_OR_RETURN(std::string resume, DecodePageToken(request.page_token(), "a2a_tasks", filter));

  const std::string prefix = keys::A2ATasksByTimePrefix();
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
    if (!SeesTask(access, entry)) continue;
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

absl::Status A2ATasks::CheckAgentUpdate(const a2apb::StreamResponse& update) {
  switch (update.payload_case()) {
    case a2apb::StreamResponse::kStatusUpdate:
      if (update.status_update().status().state() == a2apb::TASK_STATE_UNSPECIFIED) {
        return a2a_protocol::InvalidAgentResponse("agent sent a status update without a state");
      }
      return absl::OkStatus();
    case a2apb::StreamResponse::PAYLOAD_NOT_SET:
      return a2a_protocol::InvalidAgentResponse("agent sent an empty stream response");
    default:
      return absl::OkStatus();
  }
}

absl::StatusOr<A2ATasks::Change> A2ATasks::ApplyAgentUpdate(absl::string_view task_id,
                                                            const a2apb::StreamResponse& update) {
  ASSIGN_OR_RETURN(BurstResult result, ApplyAgentBurst(task_id, absl::MakeConstSpan(&update, 1)));
  return std::move(result.change);
}

absl::StatusOr<A2ATasks::BurstResult> A2ATasks::ApplyAgentBurst(
    absl::string_view task_id, absl::Span<const a2apb::StreamResponse> updates,
    int64_t delivery_seq) {
  BurstResult result;
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    result = BurstResult();
    ASSIGN_OR_RETURN(v1::StoredTask header, LockTask(txn, task_id));
    const std::string old_index_key = TaskIndexKey(header);
    bool touched = false;
    for (const a2apb::StreamResponse& update : updates) {
      RETURN_IF_ERROR(ApplyOneUpdate(txn, header, update, delivery_seq, &result.change, &touched));
      ++result.applied;
      if (IsFinalOrInterrupted(header.task().status().state())) break;
    }
    if (delivery_seq > header.agent_answered_seq() && result.applied > 0 &&
        !header.agent_task_id().empty()) {
      header.set_agent_answered_seq(delivery_seq);
      touched = true;
    }
    if (delivery_seq > 0 && IsFinalOrInterrupted(header.task().status().state())) {
      ASSIGN_OR_RETURN(const bool dequeued,
                       a2a_records::DequeueDelivery(txn, header, delivery_seq));
      if (dequeued) touched = true;
      result.delivery_done = true;
    }
    if (touched) RETURN_IF_ERROR(PutTask(txn, header, old_index_key));
    result.change.header = std::move(header);
    return absl::OkStatus();
  }));
  a2a_records::PublishChange(notifier_, result.change);
  return result;
}

absl::StatusOr<std::vector<v1::StoredEvent>> A2ATasks::ReadEvents(absl::string_view task_id,
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

absl::StatusOr<a2apb::Message> A2ATasks::HistoryMessage(absl::string_view task_id, int64_t seq) {
  absl::StatusOr<std::string> raw = store_->Get(
      ColumnFamily::kA2A,
      keys::A2ATaskSeqRecord(task_id, keys::kA2ATaskHistory, static_cast<uint64_t>(seq)));
  RETURN_IF_ERROR(raw.status());
  a2apb::Message message;
  RETURN_IF_ERROR(DecodeRecord(*raw, &message));
  return message;
}

absl::Status A2ATasks::ForgetAgentTaskId(absl::string_view task_id,
                                         absl::string_view agent_task_id) {
  return store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(v1::StoredTask header, LockTask(txn, task_id));
    if (header.agent_task_id().empty() || header.agent_task_id() != agent_task_id) {
      return absl::OkStatus();
    }
    header.clear_agent_task_id();
    header.clear_agent_answered_seq();
    header.set_version(header.version() + 1);
    *header.mutable_update_time() = ToProtoTime(absl::Now());
    return txn.Put(ColumnFamily::kA2A, keys::A2ATaskHeader(header.task().id()),
                   EncodeRecord(header));
  });
}

absl::StatusOr<A2ATasks::Change> A2ATasks::CancelLocally(absl::string_view tenant,
                                                         absl::string_view task_id,
                                                         absl::string_view reason) {
  RETURN_IF_ERROR(common::ValidateId("id", task_id));
  Change change;
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    change = Change();
    ASSIGN_OR_RETURN(v1::StoredTask header, LockTask(txn, task_id));
    RETURN_IF_ERROR(OwnedBy(header, tenant));
    if (IsTerminal(header.task().status().state())) {
      return a2a_protocol::TaskNotCancelable(
          absl::StrCat("task ", task_id, " has already ended (",
                       a2apb::TaskState_Name(header.task().status().state()), ")"));
    }
    const std::string old_index_key = TaskIndexKey(header);
    RETURN_IF_ERROR(a2a_records::DropDeliveries(txn, header));
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
  a2a_records::PublishChange(notifier_, change);
  return change;
}

// --- Ended tasks: the terminal predicate and the purge of ended tasks go here. ---

// ---- A task's life, for retention (see the header). ----

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
  int64_t deliveries = 0;  // of `rest`, the queued deliveries (the first prefix)
  for (const std::string& prefix :
       {keys::A2ADeliveryTaskPrefix(task_id), keys::A2APushPendingTaskPrefix(task_id)}) {
    std::unique_ptr<storage::Iterator> it =
        txn.NewIterator(kFamily, prefix, storage::PrefixUpperBound(prefix));
    for (; it->Valid(); it->Next()) rest.emplace_back(it->key());
    RETURN_IF_ERROR(it->status());
    if (prefix == keys::A2ADeliveryTaskPrefix(task_id)) {
      deliveries = static_cast<int64_t>(rest.size());
    }
  }
  if (progress.deleted + static_cast<int64_t>(rest.size()) + 2 > limit) return progress;
  for (const std::string& key : rest) RETURN_IF_ERROR(txn.Delete(kFamily, key));
  RETURN_IF_ERROR(
      Tallies::TxnAdd(txn, Tally::kDeliveriesQueued, header.tenant(), task_id, -deliveries));
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
