#include "coordctl/mahabharatha_logs.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "coordctl/import_json.h"
#include "coordctl/json_write.h"
#include "coordctl/mahabharatha_state.h"
#include "google/protobuf/struct.pb.h"

namespace coordctl {
namespace {

using coordinator::v1::WorkEvent;
using google::protobuf::Struct;
using google::protobuf::Value;

// The orchestrator's own file: MAHABHARATHA's orchestrator logs as worker "orchestrator".
constexpr char kOrchestrator[] = "orchestrator";
constexpr char kOrchestratorFile[] = "workers/worker-orchestrator.jsonl";
// ext4 and most file systems: 255 bytes in a name, so worker-<id>.jsonl holds 242 of the id.
constexpr size_t kMaxNameBytes = 255;

// Key order of StructuredLogWriter.emit (a dict in insertion order), then of "data"; and of
// the events of TaskArtifactCapture.write_event (the caller's keys, then "ts" by setdefault).
const std::vector<std::string>& LineKeys() {
  static const auto* keys = new std::vector<std::string>{
      "ts",         "level",   "worker_id",   "feature",      "message",
      "task_id",    "phase",   "event",       "data",         "duration_ms",
      "attempt",    "epoch",   "item_status", "level_status", "worker_status",
      "run_status", "summary", "error",       "reason",       "merge_commit",
      "seq"};
  return *keys;
}
const std::vector<std::string>& TaskKeys() {
  static const auto* keys = new std::vector<std::string>{
      "event",       "worker_id",    "level",         "attempt",    "epoch",
      "item_status", "level_status", "worker_status", "run_status", "summary",
      "error",       "reason",       "merge_commit",  "seq",        "ts"};
  return *keys;
}

std::string Lower(absl::string_view name, absl::string_view prefix) {
  absl::ConsumePrefix(&name, prefix);
  return absl::AsciiStrToLower(name);
}

// "2026-02-16T15:31:07.747137Z", as StructuredLogWriter stamps its lines
// (datetime.now(UTC).isoformat() with "Z"), but always with the six digits: isoformat() drops
// them at a whole second, and "...:07Z" then sorts after "...:07.5Z" in the aggregator's
// string sort.
std::string LogTime(const google::protobuf::Timestamp& t) {
  return absl::FormatTime("%Y-%m-%d%ET%H:%M:%E6SZ", FromTimestamp(t), absl::UTCTimeZone());
}

bool NamesAFile(const std::string& id, size_t room) {
  return ValidatePathSafeId("id", id).ok() && id.size() <= room;
}

// What one event says, in MAHABHARATHA's words.
struct Line {
  std::string level = "info";  // the log level: debug, info, warn, error
  std::string message;
  std::string phase;           // "" for none
  std::string event;           // their LogEvent value, or ours where they have none
  bool orchestrators = false;  // the orchestrator logs it, not the worker
};

Line Describe(const WorkEvent& e) {
  const std::string& task = e.item_id();
  Line l;
  switch (e.kind()) {
    case WorkEvent::KIND_RUN_CREATED:
      l.message = absl::StrCat("Run ", e.run_id(), " created");
      l.event = "run_created";
      l.orchestrators = true;
      break;
    case WorkEvent::KIND_ITEM_CREATED:
      l.message = absl::StrCat("Task ", task, " created at level ", e.level());
      l.event = "item_created";
      l.orchestrators = true;
      break;
    case WorkEvent::KIND_ITEM_CLAIMED:
      l.message = absl::StrCat("Task ", task, " started");
      l.phase = "execute";
      l.event = "task_started";
      break;
    case WorkEvent::KIND_ITEM_COMPLETED:
      l.message = absl::StrCat("Task ", task, " completed");
      l.phase = "execute";
      l.event = "task_completed";
      break;
    case WorkEvent::KIND_ITEM_FAILED:
      l.level = "error";
      l.message = absl::StrCat("Task ", task, " failed: ", e.message());
      l.phase = "execute";
      l.event = "task_failed";
      break;
    case WorkEvent::KIND_ITEM_HEARTBEAT_LOST:
      l.level = "warn";
      l.message = absl::StrCat("Task ", task, " lost worker ", e.worker_id(), ": ", e.message());
      l.event = "heartbeat_stale";
      l.orchestrators = true;
      break;
    case WorkEvent::KIND_ITEM_RETRIED:
      l.message = absl::StrCat("Task ", task, " sent back to pending");
      l.event = "item_retried";
      l.orchestrators = true;
      break;
    case WorkEvent::KIND_LEVEL_CHANGED:
      l.orchestrators = true;
      switch (e.level_status()) {
        case coordinator::v1::LEVEL_STATUS_RUNNING:
          l.message = absl::StrCat("Level ", e.level(), " started");
          l.event = "level_started";
          break;
        case coordinator::v1::LEVEL_STATUS_COMPLETE:
          l.message = absl::StrCat("Level ", e.level(), " complete");
          l.event = "level_complete";
          break;
        case coordinator::v1::LEVEL_STATUS_MERGED:
          l.message = absl::StrCat("Level ", e.level(), " merge complete");
          l.event = "merge_complete";
          break;
        default:
          l.message = absl::StrCat("Level ", e.level(), " ",
                                   Lower(LevelStatus_Name(e.level_status()), "LEVEL_STATUS_"));
          l.event = "level_changed";
          break;
      }
      break;
    case WorkEvent::KIND_WORKER_CHANGED: {
      const std::string status = Lower(WorkerStatus_Name(e.worker_status()), "WORKER_STATUS_");
      if (e.worker_status() == coordinator::v1::WORKER_STATUS_LOST) l.level = "warn";
      l.message = absl::StrCat("Worker ", e.worker_id(), " ", status,
                               e.message().empty() ? "" : ": ", e.message());
      l.event = "worker_changed";
      break;
    }
    case WorkEvent::KIND_RUN_STATUS_CHANGED:
      l.message = absl::StrCat("Run ", e.run_id(), " ",
                               Lower(RunStatus_Name(e.run_status()), "RUN_STATUS_"));
      l.event = "run_status_changed";
      l.orchestrators = true;
      break;
    default:
      l.message = absl::StrCat("Run ", e.run_id(), ": event ", static_cast<int>(e.kind()));
      l.event = "unknown";
      l.orchestrators = true;
      break;
  }
  if (e.worker_id().empty()) l.orchestrators = true;
  return l;
}

// The fields an event carries besides its kind, for "data" and execution.jsonl.
void PutDetails(const WorkEvent& e, Struct* s) {
  if (!e.item_id().empty() || e.kind() == WorkEvent::KIND_LEVEL_CHANGED) {
    SetField(s, "level", JsonNumber(static_cast<double>(e.level())));
  }
  if (e.attempt() != 0) SetField(s, "attempt", JsonNumber(e.attempt()));
  if (e.epoch() != 0) SetField(s, "epoch", JsonNumber(static_cast<double>(e.epoch())));
  if (e.item_status() != coordinator::v1::ITEM_STATUS_UNSPECIFIED) {
    SetField(s, "item_status", JsonString(Lower(ItemStatus_Name(e.item_status()), "ITEM_STATUS_")));
  }
  if (e.level_status() != coordinator::v1::LEVEL_STATUS_UNSPECIFIED) {
    SetField(s, "level_status",
             JsonString(Lower(LevelStatus_Name(e.level_status()), "LEVEL_STATUS_")));
  }
  if (e.worker_status() != coordinator::v1::WORKER_STATUS_UNSPECIFIED) {
    SetField(s, "worker_status",
             JsonString(Lower(WorkerStatus_Name(e.worker_status()), "WORKER_STATUS_")));
  }
  if (e.run_status() != coordinator::v1::RUN_STATUS_UNSPECIFIED) {
    SetField(s, "run_status", JsonString(Lower(RunStatus_Name(e.run_status()), "RUN_STATUS_")));
  }
  if (!e.message().empty()) {
    const char* key = "reason";
    if (e.kind() == WorkEvent::KIND_ITEM_COMPLETED) key = "summary";
    if (e.kind() == WorkEvent::KIND_ITEM_FAILED) key = "error";
    if (e.kind() == WorkEvent::KIND_LEVEL_CHANGED) key = "merge_commit";
    SetField(s, key, JsonString(e.message()));
  }
  SetField(s, "seq", JsonNumber(static_cast<double>(e.seq())));
}

}  // namespace

MahabharathaLogs::MahabharathaLogs(std::string feature) : feature_(std::move(feature)) {}

void MahabharathaLogs::Append(const std::string& path, const std::string& line) {
  std::string& text = files_[path];
  absl::StrAppend(&text, line, "\n");
  changed_.insert(path);
}

void MahabharathaLogs::NoteUnnamed(const std::string& id) {
  for (const std::string& seen : unnamed_) {
    if (seen == id) return;
  }
  unnamed_.push_back(id);
}

std::string MahabharathaLogs::WorkerFile(const std::string& id) {
  if (NamesAFile(id, kMaxNameBytes - std::string("worker-.jsonl").size())) {
    return absl::StrCat("workers/worker-", id, ".jsonl");
  }
  NoteUnnamed(id);
  return kOrchestratorFile;
}

void MahabharathaLogs::Add(const WorkEvent& event) {
  const Line l = Describe(event);
  Struct data;
  PutDetails(event, &data);
  // The orchestrator logs what happened to a worker (a lost lease) under its own name.
  if (event.kind() == WorkEvent::KIND_ITEM_HEARTBEAT_LOST) {
    SetField(&data, "worker_id", numbers_.Id(event.worker_id()));
  }

  Struct line;
  SetField(&line, "ts", JsonString(LogTime(event.time())));
  SetField(&line, "level", JsonString(l.level));
  SetField(&line, "worker_id",
           l.orchestrators ? JsonString(kOrchestrator) : numbers_.Id(event.worker_id()));
  SetField(&line, "feature", JsonString(feature_));
  SetField(&line, "message", JsonString(l.message));
  if (!event.item_id().empty()) SetField(&line, "task_id", JsonString(event.item_id()));
  if (!l.phase.empty()) SetField(&line, "phase", JsonString(l.phase));
  SetField(&line, "event", JsonString(l.event));
  SetField(&line, "data", StructValue(data));
  const absl::Time at = FromTimestamp(event.time());
  if (event.kind() == WorkEvent::KIND_ITEM_CLAIMED) {
    claimed_at_[event.item_id()] = at;
  } else if (event.kind() == WorkEvent::KIND_ITEM_COMPLETED) {
    if (auto it = claimed_at_.find(event.item_id()); it != claimed_at_.end()) {
      SetField(&line, "duration_ms",
               JsonNumber(static_cast<double>(absl::ToInt64Milliseconds(at - it->second))));
      claimed_at_.erase(it);
    }
  } else if (event.kind() == WorkEvent::KIND_ITEM_FAILED ||
             event.kind() == WorkEvent::KIND_ITEM_HEARTBEAT_LOST) {
    claimed_at_.erase(event.item_id());
  }
  Append(l.orchestrators ? kOrchestratorFile : WorkerFile(numbers_.Key(event.worker_id())),
         WriteJsonLine(StructValue(std::move(line)), LineKeys()));

  if (event.item_id().empty()) return;
  if (!NamesAFile(event.item_id(), kMaxNameBytes)) {
    NoteUnnamed(event.item_id());
    return;
  }
  Struct task;
  SetField(&task, "event", JsonString(l.event));
  if (!event.worker_id().empty()) SetField(&task, "worker_id", numbers_.Id(event.worker_id()));
  for (auto& [key, value] : *data.mutable_fields()) SetField(&task, key, std::move(value));
  SetField(&task, "ts", JsonString(LogTime(event.time())));
  Append(absl::StrCat("tasks/", event.item_id(), "/execution.jsonl"),
         WriteJsonLine(StructValue(std::move(task)), TaskKeys()));
}

std::set<std::string> MahabharathaLogs::TakeChanged() {
  std::set<std::string> out;
  out.swap(changed_);
  return out;
}

}  // namespace coordctl
