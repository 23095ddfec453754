// The coordinator's key layout (see docs/storage.md): the record-type bytes and a builder for
// every key and scan prefix. No key is built anywhere else. Everything about one context lives
// under ContextPrefix(context_id) in the contexts family, so one context's records sit together
// and go together; the same holds for a run (RunPrefix), an A2A task (A2ATaskPrefix) and a retry
// task (TaskPrefix).
#ifndef COORDINATOR_STORE_RECORDS_KEYS_H_
#define COORDINATOR_STORE_RECORDS_KEYS_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "absl/strings/string_view.h"
#include "storage/key_codec.h"

namespace coordinator::keys {

// ---- Record types. ----
//
// DO NOT CHANGE THESE ENUM VALUES: they are embedded in the keys on disk. A new record type takes
// a new value; a retired value is never reused (old databases may still hold it). Each enum is
// listed in its kAll... array below, and its ...Name switch has no default, so an enumerator left
// out of the switch fails the build (-Werror=switch, below) and one left out of the array fails
// keys_test; a duplicate value fails the static_asserts.

// The first byte of every key.
enum class RecordType : uint8_t {
  kContextScoped = 0x10,    // family kContexts: one context's records (ContextRecord follows)
  kContextsByAgent = 0x20,  // family kIndex: contexts by agent
  kContextsByTime = 0x21,   // family kIndex: contexts, newest first
  kTaskScoped = 0x30,       // family kTasks: one retry task's records (TaskRecord follows)
  kBlockedRegistry = 0x31,  // family kTasks: blocked tasks
  kBreakerLogMeta = 0x32,   // family kTasks: the breaker log's newest seq
  kBreakerLog = 0x33,       // family kTasks: the breaker log
  kWorkRunScoped = 0x40,    // family kWork: one run's records (RunRecord follows)
  kWorkLeases = 0x41,       // family kWork: running items by lease expiry
  kA2AAgent = 0x50,         // family kA2A: the agent registry
  kA2ATaskScoped = 0x51,    // family kA2A: one A2A task's records (A2ATaskRecord follows)
  kA2ATasksByTime = 0x52,   // family kA2A: A2A tasks, newest status first
  kA2ADelivery = 0x53,      // family kA2A: messages still to be delivered to agents
  kA2APushPending = 0x54,   // family kA2A: webhook calls still to be made
  kTally = 0x60,            // family kIndex: one stripe of a running total (tallies.h)
  kDerivedBuilt = 0x61,     // family kIndex: which derived records (totals, indexes) are built
};

// What follows the context prefix (RecordType::kContextScoped).
enum class ContextRecord : uint8_t {
  kHeader = 0x00,               // TaskContext
  kCommand = 0x01,              // + seq: CommandRecord
  kConversationMeta = 0x02,     // ConversationMeta
  kConversationMessage = 0x03,  // + seq: ConversationMessage
  kCommandRequest = 0x04,       // + request_id: the seq of the command it recorded
  kMessageRequest = 0x05,       // + request_id: the seq of the message it appended
};

// What follows the retry-task prefix (RecordType::kTaskScoped).
enum class TaskRecord : uint8_t {
  kHeader = 0x00,        // StoredTaskHeader
  kFailure = 0x01,       // + seq: TaskFailure
  kEscalation = 0x02,    // + seq: TaskEscalation
  kQualityGate = 0x03,   // + seq: QualityGateResult
  kBreakSummary = 0x04,  // StoredBreakSummary
};

// What follows the run prefix (RecordType::kWorkRunScoped).
enum class RunRecord : uint8_t {
  kHeader = 0x00,   // WorkRunRecord
  kItem = 0x01,     // + item_id: WorkItem
  kPending = 0x02,  // + level + item_id: empty (claim candidates)
  kEvent = 0x03,    // + seq: WorkEvent (the run's event log)
  kWorker = 0x04,   // + worker_id: RunWorker (the run's worker registry)
};

// What follows the A2A task prefix (RecordType::kA2ATaskScoped).
enum class A2ATaskRecord : uint8_t {
  kHeader = 0x00,      // StoredTask
  kHistory = 0x01,     // + seq: lf.a2a.v1.Message
  kEvent = 0x02,       // + seq: StoredEvent
  kPushConfig = 0x03,  // + config_id: StoredPushConfig (or a bare TaskPushNotificationConfig)
  kPushLog = 0x04,     // + event_seq + config_id: PushDelivery, finished
};

inline constexpr RecordType kAllRecordTypes[] = {
    RecordType::kContextScoped, RecordType::kContextsByAgent, RecordType::kContextsByTime,
    RecordType::kTaskScoped,    RecordType::kBlockedRegistry, RecordType::kBreakerLogMeta,
    RecordType::kBreakerLog,    RecordType::kWorkRunScoped,   RecordType::kWorkLeases,
    RecordType::kA2AAgent,      RecordType::kA2ATaskScoped,   RecordType::kA2ATasksByTime,
    RecordType::kA2ADelivery,   RecordType::kA2APushPending,  RecordType::kTally,
    RecordType::kDerivedBuilt,
};
inline constexpr ContextRecord kAllContextRecords[] = {
    ContextRecord::kHeader,           ContextRecord::kCommand,
    ContextRecord::kConversationMeta, ContextRecord::kConversationMessage,
    ContextRecord::kCommandRequest,   ContextRecord::kMessageRequest};
inline constexpr TaskRecord kAllTaskRecords[] = {TaskRecord::kHeader, TaskRecord::kFailure,
                                                 TaskRecord::kEscalation, TaskRecord::kQualityGate,
                                                 TaskRecord::kBreakSummary};
inline constexpr RunRecord kAllRunRecords[] = {RunRecord::kHeader, RunRecord::kItem,
                                               RunRecord::kPending, RunRecord::kEvent,
                                               RunRecord::kWorker};
inline constexpr A2ATaskRecord kAllA2ATaskRecords[] = {
    A2ATaskRecord::kHeader, A2ATaskRecord::kHistory, A2ATaskRecord::kEvent,
    A2ATaskRecord::kPushConfig, A2ATaskRecord::kPushLog};

// The byte a value is stored as.
template <typename Enum>
constexpr uint8_t Byte(Enum value) {
  return static_cast<uint8_t>(value);
}

// True when no two values of `values` are equal.
template <typename Enum, size_t N>
constexpr bool AllDistinct(const Enum (&values)[N]) {
  for (size_t i = 0; i < N; ++i) {
    for (size_t j = i + 1; j < N; ++j) {
      if (values[i] == values[j]) return false;
    }
  }
  return true;
}
static_assert(AllDistinct(kAllRecordTypes), "two record types share a byte");
static_assert(AllDistinct(kAllContextRecords), "two context records share a byte");
static_assert(AllDistinct(kAllTaskRecords), "two retry-task records share a byte");
static_assert(AllDistinct(kAllRunRecords), "two run records share a byte");
static_assert(AllDistinct(kAllA2ATaskRecords), "two A2A task records share a byte");

// Names for tests and messages; "" for a byte that is no enumerator. No default case: a new
// enumerator must be named here, and the pragma makes forgetting it an error.
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wswitch"
constexpr absl::string_view Name(RecordType type) {
  switch (type) {
    case RecordType::kContextScoped:
      return "context";
    case RecordType::kContextsByAgent:
      return "contexts-by-agent";
    case RecordType::kContextsByTime:
      return "contexts-by-time";
    case RecordType::kTaskScoped:
      return "retry-task";
    case RecordType::kBlockedRegistry:
      return "blocked-registry";
    case RecordType::kBreakerLogMeta:
      return "breaker-log-meta";
    case RecordType::kBreakerLog:
      return "breaker-log";
    case RecordType::kWorkRunScoped:
      return "run";
    case RecordType::kWorkLeases:
      return "work-lease";
    case RecordType::kA2AAgent:
      return "a2a-agent";
    case RecordType::kA2ATaskScoped:
      return "a2a-task";
    case RecordType::kA2ATasksByTime:
      return "a2a-tasks-by-time";
    case RecordType::kA2ADelivery:
      return "a2a-delivery";
    case RecordType::kA2APushPending:
      return "a2a-push-pending";
    case RecordType::kTally:
      return "tally";
    case RecordType::kDerivedBuilt:
      return "derived-built";
  }
  return "";
}
constexpr absl::string_view Name(ContextRecord record) {
  switch (record) {
    case ContextRecord::kHeader:
      return "context-header";
    case ContextRecord::kCommand:
      return "command";
    case ContextRecord::kConversationMeta:
      return "conversation-meta";
    case ContextRecord::kConversationMessage:
      return "conversation-message";
    case ContextRecord::kCommandRequest:
      return "command-request";
    case ContextRecord::kMessageRequest:
      return "message-request";
  }
  return "";
}
constexpr absl::string_view Name(TaskRecord record) {
  switch (record) {
    case TaskRecord::kHeader:
      return "retry-task-header";
    case TaskRecord::kFailure:
      return "failure";
    case TaskRecord::kEscalation:
      return "escalation";
    case TaskRecord::kQualityGate:
      return "quality-gate";
    case TaskRecord::kBreakSummary:
      return "break-summary";
  }
  return "";
}
constexpr absl::string_view Name(RunRecord record) {
  switch (record) {
    case RunRecord::kHeader:
      return "run-header";
    case RunRecord::kItem:
      return "item";
    case RunRecord::kPending:
      return "pending";
    case RunRecord::kEvent:
      return "run-event";
    case RunRecord::kWorker:
      return "run-worker";
  }
  return "";
}
constexpr absl::string_view Name(A2ATaskRecord record) {
  switch (record) {
    case A2ATaskRecord::kHeader:
      return "a2a-task-header";
    case A2ATaskRecord::kHistory:
      return "history";
    case A2ATaskRecord::kEvent:
      return "event";
    case A2ATaskRecord::kPushConfig:
      return "push-config";
    case A2ATaskRecord::kPushLog:
      return "push-log";
  }
  return "";
}
#pragma GCC diagnostic pop

// The byte constants the code has always used; the enums above are their source.
inline constexpr uint8_t kContextScoped = Byte(RecordType::kContextScoped);
inline constexpr uint8_t kContextsByAgent = Byte(RecordType::kContextsByAgent);
inline constexpr uint8_t kContextsByTime = Byte(RecordType::kContextsByTime);
inline constexpr uint8_t kContextHeader = Byte(ContextRecord::kHeader);
inline constexpr uint8_t kCommandRecord = Byte(ContextRecord::kCommand);
inline constexpr uint8_t kConversationMeta = Byte(ContextRecord::kConversationMeta);
inline constexpr uint8_t kConversationMessage = Byte(ContextRecord::kConversationMessage);
inline constexpr uint8_t kCommandRequest = Byte(ContextRecord::kCommandRequest);
inline constexpr uint8_t kMessageRequest = Byte(ContextRecord::kMessageRequest);
inline constexpr uint8_t kTaskScoped = Byte(RecordType::kTaskScoped);
inline constexpr uint8_t kBlockedRegistry = Byte(RecordType::kBlockedRegistry);
inline constexpr uint8_t kBreakerLogMeta = Byte(RecordType::kBreakerLogMeta);
inline constexpr uint8_t kBreakerLog = Byte(RecordType::kBreakerLog);
inline constexpr uint8_t kTaskHeader = Byte(TaskRecord::kHeader);
inline constexpr uint8_t kTaskFailure = Byte(TaskRecord::kFailure);
inline constexpr uint8_t kTaskEscalation = Byte(TaskRecord::kEscalation);
inline constexpr uint8_t kTaskQualityGate = Byte(TaskRecord::kQualityGate);
inline constexpr uint8_t kTaskBreakSummary = Byte(TaskRecord::kBreakSummary);
inline constexpr uint8_t kWorkRunScoped = Byte(RecordType::kWorkRunScoped);
inline constexpr uint8_t kWorkLeases = Byte(RecordType::kWorkLeases);
inline constexpr uint8_t kRunHeader = Byte(RunRecord::kHeader);
inline constexpr uint8_t kRunItem = Byte(RunRecord::kItem);
inline constexpr uint8_t kRunPending = Byte(RunRecord::kPending);
inline constexpr uint8_t kRunEvent = Byte(RunRecord::kEvent);
inline constexpr uint8_t kRunWorker = Byte(RunRecord::kWorker);
inline constexpr uint8_t kA2AAgent = Byte(RecordType::kA2AAgent);
inline constexpr uint8_t kA2ATaskScoped = Byte(RecordType::kA2ATaskScoped);
inline constexpr uint8_t kA2ATasksByTime = Byte(RecordType::kA2ATasksByTime);
inline constexpr uint8_t kA2ADelivery = Byte(RecordType::kA2ADelivery);
inline constexpr uint8_t kA2APushPending = Byte(RecordType::kA2APushPending);
inline constexpr uint8_t kA2ATaskHeader = Byte(A2ATaskRecord::kHeader);
inline constexpr uint8_t kA2ATaskHistory = Byte(A2ATaskRecord::kHistory);
inline constexpr uint8_t kA2ATaskEvent = Byte(A2ATaskRecord::kEvent);
inline constexpr uint8_t kA2ATaskPushConfig = Byte(A2ATaskRecord::kPushConfig);
inline constexpr uint8_t kA2ATaskPushLog = Byte(A2ATaskRecord::kPushLog);
inline constexpr uint8_t kTally = Byte(RecordType::kTally);
inline constexpr uint8_t kDerivedBuilt = Byte(RecordType::kDerivedBuilt);

// Every key of one record type: the prefix of a family-wide scan (all contexts, all runs, the
// whole lease index, ...).
inline std::string TypePrefix(RecordType type) { return storage::KeyBuilder(Byte(type)).key(); }

// ---- Contexts: families kContexts and kIndex (see docs/storage.md). ----
//
//   0x10 <context_id> 0x00             TaskContext (header)            ContextStore
//   0x10 <context_id> 0x01 <seq:u64>   CommandRecord                   ContextStore
//   0x10 <context_id> 0x02             ConversationMeta                ConversationStore
//   0x10 <context_id> 0x03 <seq:u64>   ConversationMessage             ConversationStore
//   0x10 <context_id> 0x04 <request>   seq of the command it recorded  ContextStore
//   0x10 <context_id> 0x05 <request>   seq of the message it appended  ConversationStore
//   0x20 <agent> <context_id>          empty: contexts by agent        ContextStore
//   0x21 <inverted_create_micros:u64> <context_id>  empty: newest first  ContextStore
//
// RecordCommand locks the header, AppendMessage the conversation meta; deleting locks both.
inline std::string AllContextsPrefix() { return TypePrefix(RecordType::kContextScoped); }
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
// The request ids of RecordCommand and AppendMessage (retries answered from the record).
inline std::string CommandRequest(absl::string_view context_id, absl::string_view request_id) {
  return storage::KeyBuilder(kContextScoped)
      .AddString(context_id)
      .AddByte(kCommandRequest)
      .AddString(request_id)
      .key();
}
inline std::string CommandRequestPrefix(absl::string_view context_id) {
  return storage::KeyBuilder(kContextScoped).AddString(context_id).AddByte(kCommandRequest).key();
}
inline std::string MessageRequest(absl::string_view context_id, absl::string_view request_id) {
  return storage::KeyBuilder(kContextScoped)
      .AddString(context_id)
      .AddByte(kMessageRequest)
      .AddString(request_id)
      .key();
}
inline std::string MessageRequestPrefix(absl::string_view context_id) {
  return storage::KeyBuilder(kContextScoped).AddString(context_id).AddByte(kMessageRequest).key();
}
inline std::string AgentIndexPrefix(absl::string_view agent) {
  return storage::KeyBuilder(kContextsByAgent).AddString(agent).key();
}
inline std::string AgentIndex(absl::string_view agent, absl::string_view context_id) {
  return storage::KeyBuilder(kContextsByAgent).AddString(agent).AddString(context_id).key();
}
// The time index orders by the create time inverted, so the newest comes first (the A2A tasks'
// index does the same); a time before the epoch counts as the epoch.
inline std::string ContextsByTimePrefix() { return TypePrefix(RecordType::kContextsByTime); }
inline std::string ContextByTime(int64_t create_unix_micros, absl::string_view context_id) {
  return storage::KeyBuilder(kContextsByTime)
      .AddUint64(std::numeric_limits<uint64_t>::max() -
                 static_cast<uint64_t>(create_unix_micros < 0 ? 0 : create_unix_micros))
      .AddString(context_id)
      .key();
}

// ---- Running totals: family kIndex (see coordinator/store/records/tallies.h). ----
//
//   0x60 <tally:u8> <group> <stripe:u8>   StoredTally: one stripe of one group's total
//   0x61 <name>                            Int64Value: the version of the derived records <name>
//                                          built ("tallies": kTalliesVersion; "contexts-by-time")
//
// A total is split over stripes so that writers of different records rarely share a lock; the
// writer of a record locks the record first, then one stripe.
inline std::string AllTalliesPrefix() { return TypePrefix(RecordType::kTally); }
inline std::string TallyPrefix(uint8_t tally) {
  return storage::KeyBuilder(kTally).AddByte(tally).key();
}
inline std::string TallyGroupPrefix(uint8_t tally, absl::string_view group) {
  return storage::KeyBuilder(kTally).AddByte(tally).AddString(group).key();
}
inline std::string TallyStripe(uint8_t tally, absl::string_view group, uint8_t stripe) {
  return storage::KeyBuilder(kTally).AddByte(tally).AddString(group).AddByte(stripe).key();
}
// Derived records are built from the records at start when their marker is missing.
inline std::string DerivedBuilt(absl::string_view name) {
  return storage::KeyBuilder(kDerivedBuilt).AddString(name).key();
}

// ---- A2A gateway: family kA2A (see docs/a2a.md). ----
//
//   0x50 <name>                                  Agent (the registry; name = A2A tenant)
//   0x51 <task_id> 0x00                          StoredTask (header, without history)
//   0x51 <task_id> 0x01 <seq:u64>                lf.a2a.v1.Message: history entry seq
//   0x51 <task_id> 0x02 <seq:u64>                StoredEvent: the task's append-only event log
//   0x51 <task_id> 0x03 <config_id>              StoredPushConfig (older: its bare config)
//   0x51 <task_id> 0x04 <event_seq:u64> <config_id>  PushDelivery, finished (attempt record)
//   0x52 <inverted_status_micros:u64> <task_id>  TaskIndexEntry: tasks, newest status first
//   0x53 <task_id> <history_seq:u64>             PendingDelivery: a message not yet delivered
//   0x54 <task_id> <event_seq:u64> <config_id>   PushDelivery, still to be POSTed
//
// Every change of a task locks its header first, so a task's changes are serialized and the
// header's counters (history_count, last_event_seq) always match the records.
inline std::string A2AAgentsPrefix() { return TypePrefix(RecordType::kA2AAgent); }
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
// The index orders by the status time inverted, so the newest comes first. A time before the
// epoch counts as the epoch.
inline uint64_t A2AInvertedMicros(int64_t status_unix_micros) {
  return std::numeric_limits<uint64_t>::max() -
         static_cast<uint64_t>(status_unix_micros < 0 ? 0 : status_unix_micros);
}
// The status time (Unix micros) an index key's inverted field stands for.
inline int64_t A2AStatusMicros(uint64_t inverted_micros) {
  return static_cast<int64_t>(std::numeric_limits<uint64_t>::max() - inverted_micros);
}
inline std::string A2ATasksByTimePrefix() { return TypePrefix(RecordType::kA2ATasksByTime); }
inline std::string A2ATaskByTime(uint64_t inverted_micros, absl::string_view task_id) {
  return storage::KeyBuilder(kA2ATasksByTime).AddUint64(inverted_micros).AddString(task_id).key();
}
// The index entry of a task whose status time is `status_unix_micros`.
inline std::string A2ATaskByStatusTime(int64_t status_unix_micros, absl::string_view task_id) {
  return A2ATaskByTime(A2AInvertedMicros(status_unix_micros), task_id);
}
inline std::string A2ADeliveriesPrefix() { return TypePrefix(RecordType::kA2ADelivery); }
inline std::string A2ADelivery(absl::string_view task_id, uint64_t history_seq) {
  return storage::KeyBuilder(kA2ADelivery).AddString(task_id).AddUint64(history_seq).key();
}
inline std::string A2ADeliveryTaskPrefix(absl::string_view task_id) {
  return storage::KeyBuilder(kA2ADelivery).AddString(task_id).key();
}
inline std::string A2APushPendingPrefix() { return TypePrefix(RecordType::kA2APushPending); }
inline std::string A2APushPending(absl::string_view task_id, uint64_t event_seq,
                                  absl::string_view config_id) {
  return storage::KeyBuilder(kA2APushPending)
      .AddString(task_id)
      .AddUint64(event_seq)
      .AddString(config_id)
      .key();
}
inline std::string A2APushPendingTaskPrefix(absl::string_view task_id) {
  return storage::KeyBuilder(kA2APushPending).AddString(task_id).key();
}

// ---- Work coordination: family kWork (see docs/work.md). ----
//
//   0x40 <run_id> 0x00                        WorkRunRecord (run, counters, open items per level)
//   0x40 <run_id> 0x01 <item_id>              WorkItem
//   0x40 <run_id> 0x02 <level:u64> <item_id>  empty: the item is pending (claim candidates)
//   0x40 <run_id> 0x03 <seq:u64>              WorkEvent: the run's event log
//   0x40 <run_id> 0x04 <worker_id>            RunWorker: the run's worker registry
//   0x41 <expire_micros:u64> <run_id> <item_id>  empty: a running item's lease (the reaper's scan)
//
// Claims and status changes lock the run record first, then the item, then the worker; heartbeats
// and checkpoints lock only the item and its worker, so they never wait on the run. Event log
// entries are numbered by the run record's last_event_seq, so only changes that lock the run
// log.
inline std::string AllRunsPrefix() { return TypePrefix(RecordType::kWorkRunScoped); }
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
// Every pending entry of the run, whatever its level.
inline std::string RunPendingPrefix(absl::string_view run_id) {
  return storage::KeyBuilder(kWorkRunScoped).AddString(run_id).AddByte(kRunPending).key();
}
inline std::string RunPendingLevelPrefix(absl::string_view run_id, uint64_t level) {
  return storage::KeyBuilder(kWorkRunScoped)
      .AddString(run_id)
      .AddByte(kRunPending)
      .AddUint64(level)
      .key();
}
inline std::string RunEvent(absl::string_view run_id, uint64_t seq) {
  return storage::KeyBuilder(kWorkRunScoped)
      .AddString(run_id)
      .AddByte(kRunEvent)
      .AddUint64(seq)
      .key();
}
inline std::string RunEventPrefix(absl::string_view run_id) {
  return storage::KeyBuilder(kWorkRunScoped).AddString(run_id).AddByte(kRunEvent).key();
}
inline std::string RunWorker(absl::string_view run_id, absl::string_view worker_id) {
  return storage::KeyBuilder(kWorkRunScoped)
      .AddString(run_id)
      .AddByte(kRunWorker)
      .AddString(worker_id)
      .key();
}
inline std::string RunWorkerPrefix(absl::string_view run_id) {
  return storage::KeyBuilder(kWorkRunScoped).AddString(run_id).AddByte(kRunWorker).key();
}
inline std::string WorkLeasesPrefix() { return TypePrefix(RecordType::kWorkLeases); }
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
inline std::string AllTasksPrefix() { return TypePrefix(RecordType::kTaskScoped); }
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
inline std::string BlockedRegistryPrefix() { return TypePrefix(RecordType::kBlockedRegistry); }
inline std::string BlockedRegistry(absl::string_view task_id) {
  return storage::KeyBuilder(kBlockedRegistry).AddString(task_id).key();
}
inline std::string BreakerLogMeta() { return storage::KeyBuilder(kBreakerLogMeta).key(); }
inline std::string BreakerLogPrefix() { return TypePrefix(RecordType::kBreakerLog); }
inline std::string BreakerLogEntry(uint64_t seq) {
  return storage::KeyBuilder(kBreakerLog).AddUint64(seq).key();
}

}  // namespace coordinator::keys

#endif  // COORDINATOR_STORE_RECORDS_KEYS_H_
