#include "coordctl/mahabharatha_state.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "coordctl/aria_state_json.h"
#include "coordctl/import_json.h"
#include "coordctl/json_write.h"

namespace coordctl {
namespace {

using coordinator::v1::ItemStatus;
using coordinator::v1::LevelStatus;
using coordinator::v1::Run;
using coordinator::v1::RunWorker;
using coordinator::v1::WorkItem;
using google::protobuf::Struct;
using google::protobuf::Value;

constexpr char kMetaKey[] = "mahabharatha";

// The StateManager's keys in the order it writes them (its initial state, then a task's, a
// worker's and a level's), so an export reads like its files.
const std::vector<std::string>& KeyOrder() {
  static const auto* order = new std::vector<std::string>{
      "feature", "status", "started_at", "current_level", "tasks", "workers", "levels",
      "execution_log", "metrics", "paused", "error",
      // a task
      "updated_at", "worker_id", "claimed_at", "completed_at", "retry_count", "last_retry_at",
      "next_retry_at",
      // a worker
      "current_task", "port", "container_id", "worktree_path", "branch", "health_check_at",
      "ready_at", "last_task_completed_at", "tasks_completed", "context_usage",
      // a level
      "merge_commit", "merge_status", "merge_updated_at", "merge_details", "merge_completed_at"};
  return *order;
}

absl::StatusOr<ItemStatus> ParseTaskStatus(const std::string& where, const std::string& s) {
  if (s == "todo" || s == "pending" || s == "paused") return coordinator::v1::ITEM_STATUS_PENDING;
  if (s == "claimed" || s == "in_progress" || s == "verifying") {
    return coordinator::v1::ITEM_STATUS_RUNNING;
  }
  if (s == "complete") return coordinator::v1::ITEM_STATUS_DONE;
  if (s == "failed") return coordinator::v1::ITEM_STATUS_FAILED;
  if (s == "blocked") return coordinator::v1::ITEM_STATUS_BLOCKED;
  return absl::InvalidArgumentError(
      absl::StrCat(where, " is \"", s.substr(0, 40),
                   "\"; MAHABHARATHA's are todo, pending, claimed, in_progress, verifying, "
                   "complete, failed, blocked and paused"));
}

// What set_task_status writes for our status.
std::string TaskStatusName(ItemStatus s) {
  switch (s) {
    case coordinator::v1::ITEM_STATUS_RUNNING:
      return "in_progress";
    case coordinator::v1::ITEM_STATUS_DONE:
      return "complete";
    case coordinator::v1::ITEM_STATUS_FAILED:
      return "failed";
    case coordinator::v1::ITEM_STATUS_BLOCKED:
      return "blocked";
    default:
      return "pending";
  }
}

LevelStatus ParseLevelStatus(const std::string& s) {
  if (s == "pending") return coordinator::v1::LEVEL_STATUS_PENDING;
  if (s == "running" || s == "in_progress") return coordinator::v1::LEVEL_STATUS_RUNNING;
  if (s == "complete") return coordinator::v1::LEVEL_STATUS_COMPLETE;
  if (s == "merged") return coordinator::v1::LEVEL_STATUS_MERGED;
  return coordinator::v1::LEVEL_STATUS_UNSPECIFIED;
}

std::string LevelStatusName(LevelStatus s) {
  switch (s) {
    case coordinator::v1::LEVEL_STATUS_RUNNING:
      return "running";
    case coordinator::v1::LEVEL_STATUS_COMPLETE:
      return "complete";
    case coordinator::v1::LEVEL_STATUS_MERGED:
      return "merged";
    default:
      return "pending";
  }
}

std::string WorkerStatusName(coordinator::v1::WorkerStatus s) {
  switch (s) {
    case coordinator::v1::WORKER_STATUS_BUSY:
      return "running";
    case coordinator::v1::WORKER_STATUS_STOPPED:
      return "stopped";
    case coordinator::v1::WORKER_STATUS_LOST:
      return "crashed";
    default:
      return "idle";
  }
}

constexpr const char* kWorkerStatuses[] = {"initializing",  "ready",    "running", "idle",
                                           "checkpointing", "stopping", "stopped", "crashed",
                                           "blocked",       "stalled"};

void Put(Struct* s, const std::string& key, Value v) { (*s->mutable_fields())[key] = std::move(v); }

const Value* Get(const Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  return it == s.fields().end() ? nullptr : &it->second;
}

Value StructValue(Struct s) {
  Value v;
  *v.mutable_struct_value() = std::move(s);
  return v;
}

const Struct& Meta(const Struct& metadata, const char* key) {
  const Value* m = Get(metadata, kMetaKey);
  if (m == nullptr || !m->has_struct_value()) return Struct::default_instance();
  const Value* v = Get(m->struct_value(), key);
  return v != nullptr && v->has_struct_value() ? v->struct_value() : Struct::default_instance();
}

// A worker id as MAHABHARATHA wrote it: a number when it is one.
Value WorkerIdValue(const std::string& id) {
  int64_t n = 0;
  if (!id.empty() && absl::SimpleAtoi(id, &n) && absl::StrCat(n) == id) {
    return JsonNumber(static_cast<double>(n));
  }
  return JsonString(id);
}

absl::Status CheckTime(const JsonObject& o, const char* key) {
  absl::StatusOr<std::optional<std::string>> t = o.String(key, false, /*null_ok=*/true);
  if (!t.ok()) return t.status();
  if (t->has_value()) return ParseIsoTime(o.Name(key), **t).status();
  return absl::OkStatus();
}

// Keys of an object that must all be whole numbers ("0", "1", ...): workers and levels.
absl::Status CheckNumberKeys(const Struct& object, const std::string& where) {
  for (const auto& [key, value] : object.fields()) {
    int64_t n = 0;
    if (!absl::SimpleAtoi(key, &n) || absl::StrCat(n) != key || n < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " has the key \"", key.substr(0, 40), "\"; keys are numbers"));
    }
    if (value.kind_case() != Value::kStructValue) {
      return absl::InvalidArgumentError(absl::StrCat(where, ".", key, " must be an object"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<WorkItem> ParseTask(const std::string& id, const Struct& object) {
  const JsonObject t(object, absl::StrCat("tasks.", id));
  WorkItem item;
  item.set_item_id(id);
  absl::StatusOr<std::optional<std::string>> status = t.String("status", false);
  if (!status.ok()) return status.status();
  absl::StatusOr<ItemStatus> parsed =
      ParseTaskStatus(t.Name("status"), status->value_or("pending"));
  if (!parsed.ok()) return parsed.status();
  item.set_status(*parsed);
  absl::StatusOr<std::optional<int64_t>> level = t.Integer("level", false, 0, INT32_MAX);
  if (!level.ok()) return level.status();
  item.set_level(level->value_or(1));
  absl::StatusOr<std::optional<std::vector<std::string>>> deps = t.Strings("dependencies", false);
  if (!deps.ok()) return deps.status();
  for (const std::string& d : deps->value_or(std::vector<std::string>{})) item.add_dependencies(d);
  for (const char* key : {"title", "description", "error"}) {
    absl::StatusOr<std::optional<std::string>> text = t.String(key, false, /*null_ok=*/true);
    if (!text.ok()) return text.status();
    if (!text->has_value()) continue;
    if (std::string(key) == "title") item.set_title(**text);
    if (std::string(key) == "description") item.set_description(**text);
    if (std::string(key) == "error") item.set_last_error(**text);
  }
  if (t.Has("worker_id") && !object.fields().at("worker_id").has_null_value()) {
    const Value& w = object.fields().at("worker_id");
    if (w.kind_case() == Value::kNumberValue) {
      absl::StatusOr<std::optional<int64_t>> n = t.Integer("worker_id", true, 0, INT32_MAX);
      if (!n.ok()) return n.status();
      item.set_worker_id(absl::StrCat(**n));
    } else if (w.kind_case() == Value::kStringValue) {
      item.set_worker_id(w.string_value());
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(t.Name("worker_id"), " must be a number, a string or null"));
    }
  }
  for (const char* key : {"started_at", "completed_at", "claimed_at", "updated_at", "last_retry_at",
                          "next_retry_at"}) {
    if (absl::Status s = CheckTime(t, key); !s.ok()) return s;
  }
  for (const char* key : {"started_at", "completed_at"}) {
    absl::StatusOr<std::optional<std::string>> text = t.String(key, false, true);
    if (!text.ok() || !text->has_value()) continue;
    absl::StatusOr<absl::Time> time = ParseIsoTime(key, **text);
    if (!time.ok()) continue;
    *(std::string(key) == "started_at" ? item.mutable_start_time() : item.mutable_complete_time()) =
        ToTimestamp(*time);
  }
  absl::StatusOr<std::optional<int64_t>> retries = t.Integer("retry_count", false, 0, INT32_MAX);
  if (!retries.ok()) return retries.status();
  Struct meta;
  Put(&meta, "task", StructValue(object));
  Put(item.mutable_metadata(), kMetaKey, StructValue(std::move(meta)));
  return item;
}

}  // namespace

absl::StatusOr<MahabharathaRun> ParseMahabharathaState(absl::string_view json) {
  absl::StatusOr<Struct> parsed = ParseJsonObject(json);
  if (!parsed.ok()) return parsed.status();
  const JsonObject top(*parsed, "");
  MahabharathaRun out;
  Run& run = out.run;
  run.set_kind(coordinator::v1::RUN_KIND_TASK_GRAPH);
  absl::StatusOr<std::optional<std::string>> feature = top.String("feature", true);
  if (!feature.ok()) return feature.status();
  if (absl::Status s = ValidatePathSafeId("feature", **feature); !s.ok()) return s;
  run.set_feature(**feature);
  absl::StatusOr<std::optional<std::string>> status = top.String("status", false);
  if (!status.ok()) return status.status();
  absl::StatusOr<std::optional<int64_t>> current =
      top.Integer("current_level", false, 0, INT32_MAX);
  if (!current.ok()) return current.status();
  for (const char* key : {"started_at", "completed_at"}) {
    if (absl::Status s = CheckTime(top, key); !s.ok()) return s;
  }
  absl::StatusOr<const Struct*> workers = top.Object("workers", false);
  if (!workers.ok()) return workers.status();
  if (*workers != nullptr) {
    if (absl::Status s = CheckNumberKeys(**workers, "workers"); !s.ok()) return s;
    for (const auto& [key, value] : (*workers)->fields()) {
      const JsonObject w(value.struct_value(), absl::StrCat("workers.", key));
      absl::StatusOr<std::optional<std::string>> ws = w.String("status", false);
      if (!ws.ok()) return ws.status();
      if (ws->has_value() && std::find(std::begin(kWorkerStatuses), std::end(kWorkerStatuses),
                                       **ws) == std::end(kWorkerStatuses)) {
        return absl::InvalidArgumentError(absl::StrCat(w.Name("status"), " is \"",
                                                       ws->value().substr(0, 40),
                                                       "\", not a MAHABHARATHA worker status"));
      }
      absl::StatusOr<std::optional<std::string>> task = w.String("current_task", false, true);
      if (!task.ok()) return task.status();
      for (const char* t :
           {"health_check_at", "started_at", "ready_at", "last_task_completed_at"}) {
        if (absl::Status s = CheckTime(w, t); !s.ok()) return s;
      }
    }
  }
  absl::StatusOr<const Struct*> levels = top.Object("levels", false);
  if (!levels.ok()) return levels.status();
  if (*levels != nullptr) {
    if (absl::Status s = CheckNumberKeys(**levels, "levels"); !s.ok()) return s;
    for (const auto& [key, value] : (*levels)->fields()) {
      const JsonObject l(value.struct_value(), absl::StrCat("levels.", key));
      absl::StatusOr<std::optional<std::string>> ls = l.String("status", false);
      if (!ls.ok()) return ls.status();
      for (const char* t : {"updated_at", "started_at", "completed_at"}) {
        if (absl::Status s = CheckTime(l, t); !s.ok()) return s;
      }
    }
  }
  absl::StatusOr<const Struct*> tasks = top.Object("tasks", true);
  if (!tasks.ok()) return tasks.status();
  std::vector<std::string> ids;
  for (const auto& [id, value] : (*tasks)->fields()) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (const std::string& id : ids) {
    if (absl::Status s = ValidatePathSafeId(absl::StrCat("task id"), id); !s.ok()) return s;
    const Value& value = (*tasks)->fields().at(id);
    if (value.kind_case() != Value::kStructValue) {
      return absl::InvalidArgumentError(absl::StrCat("tasks.", id, " must be an object"));
    }
    absl::StatusOr<WorkItem> item = ParseTask(id, value.struct_value());
    if (!item.ok()) return item.status();
    out.items.push_back(*std::move(item));
  }
  Struct state = *parsed;
  state.mutable_fields()->erase("tasks");
  Struct meta;
  Put(&meta, "state", StructValue(std::move(state)));
  Put(run.mutable_metadata(), kMetaKey, StructValue(std::move(meta)));
  return out;
}

std::string FormatMahabharathaState(const Run& run, const std::vector<WorkItem>& items,
                                    const std::vector<RunWorker>& workers) {
  const Struct& original = Meta(run.metadata(), "state");
  const bool imported = !original.fields().empty();
  Struct state = original;
  if (!imported) {
    // The StateManager's initial state.
    Put(&state, "started_at", JsonString(PythonIsoTime(FromTimestamp(run.create_time()))));
    Put(&state, "current_level", JsonNumber(0));
    Put(&state, "workers", StructValue(Struct()));
    Put(&state, "levels", StructValue(Struct()));
    Value log;
    log.mutable_list_value();
    Put(&state, "execution_log", log);
    Put(&state, "metrics", JsonNull());
    Put(&state, "paused", JsonBool(false));
    Put(&state, "error", JsonNull());
  }
  Put(&state, "feature", JsonString(run.feature()));

  bool changed = !imported;
  Struct tasks;
  for (const WorkItem& item : items) {
    const Struct& task_original = Meta(item.metadata(), "task");
    Struct task = task_original;
    // An item the coordinator changed (or made) is written as set_task_status writes a task.
    const bool item_changed = item.version() > 1 || task_original.fields().empty();
    if (item_changed) {
      changed = true;
      const std::string updated = PythonIsoTime(FromTimestamp(item.update_time()));
      Put(&task, "status", JsonString(TaskStatusName(item.status())));
      Put(&task, "updated_at", JsonString(updated));
      if (!item.worker_id().empty()) Put(&task, "worker_id", WorkerIdValue(item.worker_id()));
      if (item.has_start_time()) {
        const std::string started = PythonIsoTime(FromTimestamp(item.start_time()));
        Put(&task, "claimed_at", JsonString(started));
        Put(&task, "started_at", JsonString(started));
      }
      if (item.status() == coordinator::v1::ITEM_STATUS_DONE && item.has_complete_time()) {
        Put(&task, "completed_at", JsonString(PythonIsoTime(FromTimestamp(item.complete_time()))));
      }
      if (!item.last_error().empty()) Put(&task, "error", JsonString(item.last_error()));
      if (item.attempts() > 1) {
        const Value* before = Get(task_original, "retry_count");
        const double imported_retries =
            before != nullptr && before->kind_case() == Value::kNumberValue ? before->number_value()
                                                                            : 0;
        Put(&task, "retry_count", JsonNumber(imported_retries + item.attempts() - 1));
      }
    }
    Put(&tasks, item.item_id(), StructValue(std::move(task)));
  }
  Put(&state, "tasks", StructValue(std::move(tasks)));

  if (changed) {
    Put(&state, "current_level", JsonNumber(static_cast<double>(run.current_level())));
    // Levels whose status moved since the import, as set_level_status writes them.
    Struct levels;
    if (const Value* v = Get(state, "levels"); v != nullptr && v->has_struct_value()) {
      levels = v->struct_value();
    }
    for (const coordinator::v1::LevelState& live : run.level_states()) {
      const std::string key = absl::StrCat(live.level());
      Struct level;
      if (const Value* v = Get(levels, key); v != nullptr && v->has_struct_value()) {
        level = v->struct_value();
      }
      const Value* was = Get(level, "status");
      if (was != nullptr && was->kind_case() == Value::kStringValue &&
          ParseLevelStatus(was->string_value()) == live.status()) {
        continue;
      }
      if (was == nullptr && live.status() == coordinator::v1::LEVEL_STATUS_PENDING) continue;
      Put(&level, "status", JsonString(LevelStatusName(live.status())));
      Put(&level, "updated_at", JsonString(PythonIsoTime(FromTimestamp(run.update_time()))));
      if (live.has_start_time()) {
        Put(&level, "started_at", JsonString(PythonIsoTime(FromTimestamp(live.start_time()))));
      }
      if (live.has_complete_time()) {
        Put(&level, "completed_at", JsonString(PythonIsoTime(FromTimestamp(live.complete_time()))));
      }
      if (!live.merge_commit().empty())
        Put(&level, "merge_commit", JsonString(live.merge_commit()));
      Put(&levels, key, StructValue(std::move(level)));
    }
    Put(&state, "levels", StructValue(std::move(levels)));
  }

  // The coordinator's worker registry over the imported workers.
  if (!workers.empty()) {
    Struct map;
    if (const Value* v = Get(state, "workers"); v != nullptr && v->has_struct_value()) {
      map = v->struct_value();
    }
    for (const RunWorker& w : workers) {
      Struct entry;
      if (const Value* v = Get(map, w.worker_id()); v != nullptr && v->has_struct_value()) {
        entry = v->struct_value();
      }
      Put(&entry, "worker_id", WorkerIdValue(w.worker_id()));
      Put(&entry, "status", JsonString(WorkerStatusName(w.status())));
      Put(&entry, "current_task",
          w.current_item().empty() ? JsonNull() : JsonString(w.current_item()));
      Put(&entry, "health_check_at",
          w.has_last_heartbeat_time()
              ? JsonString(PythonIsoTime(FromTimestamp(w.last_heartbeat_time())))
              : JsonNull());
      if (w.has_create_time()) {
        Put(&entry, "started_at", JsonString(PythonIsoTime(FromTimestamp(w.create_time()))));
      }
      Put(&entry, "tasks_completed", JsonNumber(static_cast<double>(w.items_completed())));
      for (const char* key : {"port", "container_id", "worktree_path", "branch", "ready_at",
                              "last_task_completed_at"}) {
        if (Get(entry, key) == nullptr) Put(&entry, key, JsonNull());
      }
      if (Get(entry, "context_usage") == nullptr) Put(&entry, "context_usage", JsonNumber(0));
      Put(&map, w.worker_id(), StructValue(std::move(entry)));
    }
    Put(&state, "workers", StructValue(std::move(map)));
  }
  return WriteJson(StructValue(std::move(state)), 2, KeyOrder());
}

}  // namespace coordctl
