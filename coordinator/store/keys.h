// The coordinator's key layout (see docs/storage.md). Record-type bytes are on disk: never
// change or reuse one. Everything about one context lives under ContextPrefix(context_id) in
// the contexts family, so one context's records sit together and go together.
#ifndef COORDINATOR_STORE_KEYS_H_
#define COORDINATOR_STORE_KEYS_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "storage/key_codec.h"

namespace coordinator::keys {

// Record types (the first key byte).
inline constexpr uint8_t kContextScoped = 0x10;    // family kContexts
inline constexpr uint8_t kContextsByAgent = 0x20;  // family kIndex

// What follows the context prefix in the kContexts family.
inline constexpr uint8_t kContextHeader = 0x00;        // TaskContext
inline constexpr uint8_t kCommandRecord = 0x01;        // + seq: CommandRecord
inline constexpr uint8_t kConversationMeta = 0x02;     // ConversationMeta
inline constexpr uint8_t kConversationMessage = 0x03;  // + seq: ConversationMessage

inline std::string ContextPrefix(absl::string_view context_id) {
  return storage::KeyBuilder(kContextScoped).AddString(context_id).key();
}
inline std::string ContextHeader(absl::string_view context_id) {
  return storage::KeyBuilder(kContextScoped).AddString(context_id).AddByte(kContextHeader).key();
}
inline std::string CommandRecord(absl::string_view context_id, uint64_t seq) {
  return storage::KeyBuilder(kContextScoped)
      .AddString(context_id)
      .AddByte(kCommandRecord)
      .AddUint64(seq)
      .key();
}
inline std::string CommandPrefix(absl::string_view context_id) {
  return storage::KeyBuilder(kContextScoped).AddString(context_id).AddByte(kCommandRecord).key();
}
inline std::string ConversationMeta(absl::string_view context_id) {
  return storage::KeyBuilder(kContextScoped).AddString(context_id).AddByte(kConversationMeta).key();
}
inline std::string ConversationMessage(absl::string_view context_id, uint64_t seq) {
  return storage::KeyBuilder(kContextScoped)
      .AddString(context_id)
      .AddByte(kConversationMessage)
      .AddUint64(seq)
      .key();
}
inline std::string ConversationPrefix(absl::string_view context_id) {
  return storage::KeyBuilder(kContextScoped)
      .AddString(context_id)
      .AddByte(kConversationMessage)
      .key();
}
inline std::string AgentIndexPrefix(absl::string_view agent) {
  return storage::KeyBuilder(kContextsByAgent).AddString(agent).key();
}
inline std::string AgentIndex(absl::string_view agent, absl::string_view context_id) {
  return storage::KeyBuilder(kContextsByAgent).AddString(agent).AddString(context_id).key();
}

// ---- A2A gateway: family kA2A (see docs/a2a.md). ----
//
//   0x50 <name>                                  Agent (the registry; name = A2A tenant)
//   0x51 <task_id> 0x00                          StoredTask (header, without history)
//   0x51 <task_id> 0x01 <seq:u64>                lf.a2a.v1.Message: history entry seq
//   0x51 <task_id> 0x02 <seq:u64>                StoredEvent: the task's append-only event log
//   0x51 <task_id> 0x03 <config_id>              lf.a2a.v1.TaskPushNotificationConfig
//   0x51 <task_id> 0x04 <event_seq:u64> <config_id>  PushDelivery, finished (attempt record)
//   0x52 <inverted_status_micros:u64> <task_id>  TaskIndexEntry: tasks, newest status first
//   0x53 <task_id> <history_seq:u64>             PendingDelivery: a message not yet delivered
//   0x54 <task_id> <event_seq:u64> <config_id>   PushDelivery, still to be POSTed
//
// Every change of a task locks its header first, so a task's changes are serialized and the
// header's counters (history_count, last_event_seq) always match the records.
inline constexpr uint8_t kA2AAgent = 0x50;        // family kA2A
inline constexpr uint8_t kA2ATaskScoped = 0x51;   // family kA2A
inline constexpr uint8_t kA2ATasksByTime = 0x52;  // family kA2A
inline constexpr uint8_t kA2ADelivery = 0x53;     // family kA2A
inline constexpr uint8_t kA2APushPending = 0x54;  // family kA2A

// What follows the A2A task prefix.
inline constexpr uint8_t kA2ATaskHeader = 0x00;
inline constexpr uint8_t kA2ATaskHistory = 0x01;
inline constexpr uint8_t kA2ATaskEvent = 0x02;
inline constexpr uint8_t kA2ATaskPushConfig = 0x03;
inline constexpr uint8_t kA2ATaskPushLog = 0x04;

inline std::string A2AAgent(absl::string_view name) {
  return storage::KeyBuilder(kA2AAgent).AddString(name).key();
}
inline std::string A2ATaskPrefix(absl::string_view task_id) {
  return storage::KeyBuilder(kA2ATaskScoped).AddString(task_id).key();
}
inline std::string A2ATaskHeader(absl::string_view task_id) {
  return storage::KeyBuilder(kA2ATaskScoped).AddString(task_id).AddByte(kA2ATaskHeader).key();
}
// `kind` is kA2ATaskHistory or kA2ATaskEvent.
inline std::string A2ATaskSeqRecord(absl::string_view task_id, uint8_t kind, uint64_t seq) {
  return storage::KeyBuilder(kA2ATaskScoped).AddString(task_id).AddByte(kind).AddUint64(seq).key();
}
inline std::string A2ATaskKindPrefix(absl::string_view task_id, uint8_t kind) {
  return storage::KeyBuilder(kA2ATaskScoped).AddString(task_id).AddByte(kind).key();
}
inline std::string A2APushConfig(absl::string_view task_id, absl::string_view config_id) {
  return storage::KeyBuilder(kA2ATaskScoped)
      .AddString(task_id)
      .AddByte(kA2ATaskPushConfig)
      .AddString(config_id)
      .key();
}
inline std::string A2APushLog(absl::string_view task_id, uint64_t event_seq,
                              absl::string_view config_id) {
  return storage::KeyBuilder(kA2ATaskScoped)
      .AddString(task_id)
      .AddByte(kA2ATaskPushLog)
      .AddUint64(event_seq)
      .AddString(config_id)
      .key();
}
inline std::string A2ATaskByTime(uint64_t inverted_micros, absl::string_view task_id) {
  return storage::KeyBuilder(kA2ATasksByTime).AddUint64(inverted_micros).AddString(task_id).key();
}
inline std::string A2ADelivery(absl::string_view task_id, uint64_t history_seq) {
  return storage::KeyBuilder(kA2ADelivery).AddString(task_id).AddUint64(history_seq).key();
}
inline std::string A2ADeliveryTaskPrefix(absl::string_view task_id) {
  return storage::KeyBuilder(kA2ADelivery).AddString(task_id).key();
}
inline std::string A2APushPending(absl::string_view task_id, uint64_t event_seq,
                                  absl::string_view config_id) {
  return storage::KeyBuilder(kA2APushPending)
      .AddString(task_id)
      .AddUint64(event_seq)
      .AddString(config_id)
      .key();
}

// ---- Work coordination: family kWork (see docs/work.md). ----
//
//   0x40 <run_id> 0x00                        WorkRunRecord (run, counters, open items per level)
//   0x40 <run_id> 0x01 <item_id>              WorkItem
//   0x40 <run_id> 0x02 <level:u64> <item_id>  empty: the item is pending (claim candidates)
//   0x41 <expire_micros:u64> <run_id> <item_id>  empty: a running item's lease (the reaper's scan)
//
// Claims and status changes lock the run record first, then the item; heartbeats and
// checkpoints lock only the item, so they never wait on the run.
inline constexpr uint8_t kWorkRunScoped = 0x40;  // family kWork
inline constexpr uint8_t kWorkLeases = 0x41;     // family kWork

// What follows the run prefix.
inline constexpr uint8_t kRunHeader = 0x00;
inline constexpr uint8_t kRunItem = 0x01;
inline constexpr uint8_t kRunPending = 0x02;

inline std::string RunPrefix(absl::string_view run_id) {
  return storage::KeyBuilder(kWorkRunScoped).AddString(run_id).key();
}
inline std::string RunHeader(absl::string_view run_id) {
  return storage::KeyBuilder(kWorkRunScoped).AddString(run_id).AddByte(kRunHeader).key();
}
inline std::string RunItem(absl::string_view run_id, absl::string_view item_id) {
  return storage::KeyBuilder(kWorkRunScoped)
      .AddString(run_id)
      .AddByte(kRunItem)
      .AddString(item_id)
      .key();
}
inline std::string RunItemPrefix(absl::string_view run_id) {
  return storage::KeyBuilder(kWorkRunScoped).AddString(run_id).AddByte(kRunItem).key();
}
inline std::string RunPending(absl::string_view run_id, uint64_t level, absl::string_view item_id) {
  return storage::KeyBuilder(kWorkRunScoped)
      .AddString(run_id)
      .AddByte(kRunPending)
      .AddUint64(level)
      .AddString(item_id)
      .key();
}
inline std::string RunPendingLevelPrefix(absl::string_view run_id, uint64_t level) {
  return storage::KeyBuilder(kWorkRunScoped)
      .AddString(run_id)
      .AddByte(kRunPending)
      .AddUint64(level)
      .key();
}
inline std::string WorkLease(uint64_t expire_micros, absl::string_view run_id,
                             absl::string_view item_id) {
  return storage::KeyBuilder(kWorkLeases)
      .AddUint64(expire_micros)
      .AddString(run_id)
      .AddString(item_id)
      .key();
}
// Every lease key that expires before `expire_micros` sorts before this one.
inline std::string WorkLeaseBound(uint64_t expire_micros) {
  return storage::KeyBuilder(kWorkLeases).AddUint64(expire_micros).key();
}

// ---- Retry state and the loop breaker: family kTasks (see docs/retry-and-breaker.md). ----
//
//   0x30 <task_id> 0x00             StoredTaskHeader: scalars, custom fields, counters
//   0x30 <task_id> 0x01 <seq:u64>   TaskFailure          (seq 1, 2, ... = header.failure_count)
//   0x30 <task_id> 0x02 <seq:u64>   TaskEscalation       (header.escalation_count)
//   0x30 <task_id> 0x03 <seq:u64>   QualityGateResult    (header.quality_gate_count)
//   0x30 <task_id> 0x04             StoredBreakSummary   (while the task is blocked)
//   0x31 <task_id>                  BlockedTask          (the blocked registry)
//   0x32                            StoredBreakerLogMeta (seq of the newest log entry)
//   0x33 <seq:u64>                  BreakerLogEntry      (append-only)
//
// An append writes its record and rewrites only the small header, whatever the history's
// length. Every change locks the header (GetForUpdate), so concurrent changes of one task are
// serialized; a breaker action locks the header before the log meta, never the other way.
inline constexpr uint8_t kTaskScoped = 0x30;       // family kTasks
inline constexpr uint8_t kBlockedRegistry = 0x31;  // family kTasks
inline constexpr uint8_t kBreakerLogMeta = 0x32;   // family kTasks
inline constexpr uint8_t kBreakerLog = 0x33;       // family kTasks

// What follows the task prefix.
inline constexpr uint8_t kTaskHeader = 0x00;
inline constexpr uint8_t kTaskFailure = 0x01;
inline constexpr uint8_t kTaskEscalation = 0x02;
inline constexpr uint8_t kTaskQualityGate = 0x03;
inline constexpr uint8_t kTaskBreakSummary = 0x04;

inline std::string TaskPrefix(absl::string_view task_id) {
  return storage::KeyBuilder(kTaskScoped).AddString(task_id).key();
}
inline std::string TaskHeader(absl::string_view task_id) {
  return storage::KeyBuilder(kTaskScoped).AddString(task_id).AddByte(kTaskHeader).key();
}
// `kind` is kTaskFailure, kTaskEscalation or kTaskQualityGate.
inline std::string TaskHistoryRecord(absl::string_view task_id, uint8_t kind, uint64_t seq) {
  return storage::KeyBuilder(kTaskScoped).AddString(task_id).AddByte(kind).AddUint64(seq).key();
}
inline std::string TaskHistoryPrefix(absl::string_view task_id, uint8_t kind) {
  return storage::KeyBuilder(kTaskScoped).AddString(task_id).AddByte(kind).key();
}
inline std::string TaskBreakSummary(absl::string_view task_id) {
  return storage::KeyBuilder(kTaskScoped).AddString(task_id).AddByte(kTaskBreakSummary).key();
}
inline std::string BlockedRegistry(absl::string_view task_id) {
  return storage::KeyBuilder(kBlockedRegistry).AddString(task_id).key();
}
inline std::string BreakerLogMeta() { return storage::KeyBuilder(kBreakerLogMeta).key(); }
inline std::string BreakerLogEntry(uint64_t seq) {
  return storage::KeyBuilder(kBreakerLog).AddUint64(seq).key();
}

}  // namespace coordinator::keys

#endif  // COORDINATOR_STORE_KEYS_H_
