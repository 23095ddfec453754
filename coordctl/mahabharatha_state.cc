#include "coordctl/mahabharatha_state.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/worker_numbers.h"
#include "coordctl/aria_state_json.h"
#include "coordctl/import_json.h"
#include "coordctl/json_write.h"
#include "coordctl/run_commands.h"

namespace coordctl {
namespace {

using coordinator::v1::ItemStatus;
using coordinator::v1::LevelStatus;
using coordinator::v1::Run;
using coordinator::v1::RunWorker;
using coordinator::v1::WorkItem;
using google::protobuf::Struct;
using google::protobuf::Value;

constexpr char kMahabharathaKey[] = "mahabharatha";

// The StateManager's keys in the order it writes them (its initial state, then a task's, a
// worker's and a level's), so an export reads like its files.
const std::vector<std::string>& MahabharathaKeyOrder() {
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
std::string MahabharathaTaskStatus(ItemStatus s) {
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

std::string MahabharathaLevelStatus(LevelStatus s) {
  switch (s) {
    case coordinator::v1::LEVEL_STATUS_RUNNING:
      return "running";
    case coordinator::v1::LEVEL_STATUS_COMPLETE:
      return "complete";
    case coordinator::v1::LEVEL_STATUS_MERGED:
      return "complete";  // with merge_status "complete" (FormatMahabharathaState)
    default:
      return "pending";
  }
}

std::string MahabharathaWorkerStatus(coordinator::v1::WorkerStatus s) {
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

// The status a level entry of the file says: merged when its merge completed (their
// LevelCoordinator writes status "complete" and then merge_status "complete"; "merged" is what
// set_level_status(level, "merged") writes), else its status.
LevelStatus LevelStatusOf(const Struct& level) {
  if (StringField(level, "merge_status") == "complete") return coordinator::v1::LEVEL_STATUS_MERGED;
  return ParseLevelStatus(StringField(level, "status"));
}

const Struct& MahabharathaMeta(const Struct& metadata, const char* key) {
  const Value* m = FindField(metadata, kMahabharathaKey);
  if (m == nullptr || !m->has_struct_value()) return Struct::default_instance();
  const Value* v = FindField(m->struct_value(), key);
  return v != nullptr && v->has_struct_value() ? v->struct_value() : Struct::default_instance();
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

absl::StatusOr<WorkItem> ParseTask(const std::string& id, const Struct& object,
                                   bool* levels_known) {
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
  if (level->has_value()) *levels_known = true;
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
  SetField(&meta, "task", StructValue(object));
  SetField(item.mutable_metadata(), kMahabharathaKey, StructValue(std::move(meta)));
  return item;
}

}  // namespace

MahabharathaWorkerNumbers::MahabharathaWorkerNumbers(const std::vector<RunWorker>& workers) {
  absl::flat_hash_set<int64_t> taken;
  std::vector<const RunWorker*> unnumbered;
  for (const RunWorker& w : workers) {
    if (!w.has_number()) {
      unnumbered.push_back(&w);
      continue;
    }
    numbers_[w.worker_id()] = w.number();
    taken.insert(w.number());
  }
  // As the coordinator would have numbered them, joining in the order they did.
  std::stable_sort(unnumbered.begin(), unnumbered.end(),
                   [](const RunWorker* a, const RunWorker* b) {
                     const bool a_named = common::WorkerIdAsNumber(a->worker_id()).has_value();
                     const bool b_named = common::WorkerIdAsNumber(b->worker_id()).has_value();
                     if (a_named != b_named) return a_named;
                     return FromTimestamp(a->create_time()) < FromTimestamp(b->create_time());
                   });
  for (const RunWorker* w : unnumbered) {
    const int64_t n = common::NewWorkerNumber(w->worker_id(), taken);
    numbers_[w->worker_id()] = n;
    taken.insert(n);
  }
}

Value MahabharathaWorkerNumbers::Id(const std::string& worker_id) const {
  auto it = numbers_.find(worker_id);
  if (it != numbers_.end()) return JsonNumber(static_cast<double>(it->second));
  if (std::optional<int64_t> n = common::WorkerIdAsNumber(worker_id); n.has_value()) {
    return JsonNumber(static_cast<double>(*n));
  }
  return JsonString(worker_id);
}

std::string MahabharathaWorkerNumbers::Key(const std::string& worker_id) const {
  auto it = numbers_.find(worker_id);
  return it != numbers_.end() ? absl::StrCat(it->second) : worker_id;
}

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
    absl::StatusOr<WorkItem> item = ParseTask(id, value.struct_value(), &out.levels_known);
    if (!item.ok()) return item.status();
    out.items.push_back(*std::move(item));
  }
  Struct state = *parsed;
  state.mutable_fields()->erase("tasks");
  Struct meta;
  SetField(&meta, "state", StructValue(std::move(state)));
  SetField(run.mutable_metadata(), kMahabharathaKey, StructValue(std::move(meta)));
  return out;
}

absl::Status JoinMahabharathaTaskGraph(absl::string_view task_graph_json, MahabharathaRun* run) {
  absl::StatusOr<Struct> top = ParseJsonObject(task_graph_json);
  if (!top.ok()) return top.status();
  const std::string feature = StringField(*top, "feature");
  if (!feature.empty() && feature != run->run.feature()) {
    return absl::InvalidArgumentError(
        absl::StrCat("task-graph.json is for feature \"", feature.substr(0, 256),
                     "\", the state file for \"", run->run.feature(), "\""));
  }
  absl::StatusOr<std::vector<WorkItem>> graph = ParseItemsJson(task_graph_json, kMaxSpecFiles);
  if (!graph.ok()) return graph.status();
  std::map<std::string, WorkItem*> by_id;
  for (WorkItem& item : run->items) by_id[item.item_id()] = &item;
  std::map<std::string, WorkItem> joined;
  for (WorkItem& task : *graph) {
    if (joined.count(task.item_id()) > 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("task-graph.json has task ", task.item_id(), " twice"));
    }
    auto it = by_id.find(task.item_id());
    if (it == by_id.end()) {  // not started: as the graph has it
      joined.emplace(task.item_id(), std::move(task));
      continue;
    }
    WorkItem item = *it->second;
    if (!task.title().empty()) item.set_title(task.title());
    if (!task.description().empty()) item.set_description(task.description());
    item.set_level(task.level());
    *item.mutable_dependencies() = task.dependencies();
    *item.mutable_files() = task.files();
    *item.mutable_owned_files() = task.owned_files();
    *item.mutable_verification() = task.verification();
    for (const auto& field : task.metadata().fields()) {
      if (field.first != kMahabharathaKey)
        (*item.mutable_metadata()->mutable_fields())[field.first] = field.second;
    }
    joined.emplace(item.item_id(), std::move(item));
  }
  for (const WorkItem& item : run->items) {
    if (joined.count(item.item_id()) == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tasks.", item.item_id(), " is in the state file but not in task-graph.json"));
    }
  }
  run->items.clear();
  for (auto& entry : joined) run->items.push_back(std::move(entry.second));
  run->levels_known = true;
  return absl::OkStatus();
}

absl::StatusOr<coordinator::v1::ImportRunRequest> MahabharathaImportRequest(
    const MahabharathaRun& parsed) {
  coordinator::v1::ImportRunRequest request;
  *request.mutable_run() = parsed.run;
  if (parsed.levels_known) {
    // Kept with the run, so that the export writes each task's level (FormatMahabharathaState).
    (*(*request.mutable_run()->mutable_metadata()->mutable_fields())[kMahabharathaKey]
          .mutable_struct_value()
          ->mutable_fields())["levels_known"]
        .set_bool_value(true);
  }
  const Struct& state = MahabharathaMeta(parsed.run.metadata(), "state");
  // Which worker's current_task each task is.
  std::map<std::string, std::string> current_of;
  if (const Value* v = FindField(state, "workers"); v != nullptr && v->has_struct_value()) {
    std::vector<std::string> keys;
    for (const auto& entry : v->struct_value().fields()) keys.push_back(entry.first);
    std::sort(keys.begin(), keys.end());
    for (const std::string& key : keys) {
      const Struct& w = v->struct_value().fields().at(key).struct_value();
      RunWorker* worker = request.add_workers();
      worker->set_worker_id(key);
      const std::string status = StringField(w, "status");
      if (status == "crashed" || status == "stalled") {
        worker->set_status(coordinator::v1::WORKER_STATUS_LOST);
      } else if (status == "stopping" || status == "stopped") {
        worker->set_status(coordinator::v1::WORKER_STATUS_STOPPED);
      } else {
        worker->set_status(coordinator::v1::WORKER_STATUS_IDLE);
      }
      worker->set_status_reason(status.empty() ? "" : absl::StrCat("imported as ", status));
      if (const Value* t = FindField(w, "current_task"); t != nullptr && t->has_string_value()) {
        current_of.emplace(t->string_value(), key);
      }
      if (const Value* t = FindField(w, "health_check_at"); t != nullptr && t->has_string_value()) {
        absl::StatusOr<absl::Time> time = ParseIsoTime("health_check_at", t->string_value());
        if (time.ok()) *worker->mutable_last_heartbeat_time() = ToTimestamp(*time);
      }
      if (const Value* n = FindField(w, "tasks_completed");
          n != nullptr && n->kind_case() == Value::kNumberValue && n->number_value() >= 0 &&
          n->number_value() < 1e15) {
        worker->set_items_completed(static_cast<int64_t>(n->number_value()));
      }
    }
  }
  for (const WorkItem& parsed_item : parsed.items) {
    WorkItem* item = request.add_items();
    *item = parsed_item;
    if (item->status() != coordinator::v1::ITEM_STATUS_PENDING) item->set_attempts(1);
    if (item->status() == coordinator::v1::ITEM_STATUS_RUNNING && item->worker_id().empty()) {
      auto it = current_of.find(item->item_id());
      if (it == current_of.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("tasks.", item->item_id(),
                         " is running but has no worker_id, and no worker's current_task is it"));
      }
      item->set_worker_id(it->second);
    }
    if (item->status() != coordinator::v1::ITEM_STATUS_DONE) item->clear_complete_time();
  }
  if (parsed.levels_known) {
    if (const Value* v = FindField(state, "levels"); v != nullptr && v->has_struct_value()) {
      std::vector<std::pair<int64_t, const Struct*>> levels;
      for (const auto& entry : v->struct_value().fields()) {
        int64_t n = 0;
        if (absl::SimpleAtoi(entry.first, &n)) levels.emplace_back(n, &entry.second.struct_value());
      }
      std::sort(levels.begin(), levels.end());
      for (const auto& entry : levels) {
        const Struct& l = *entry.second;
        if (LevelStatusOf(l) != coordinator::v1::LEVEL_STATUS_MERGED) continue;
        coordinator::v1::LevelState* level = request.mutable_run()->add_level_states();
        level->set_level(entry.first);
        level->set_status(coordinator::v1::LEVEL_STATUS_MERGED);
        level->set_merge_commit(StringField(l, "merge_commit"));
        for (const char* key : {"started_at", "completed_at", "merge_completed_at"}) {
          const std::string text = StringField(l, key);
          if (text.empty()) continue;
          absl::StatusOr<absl::Time> time = ParseIsoTime(key, text);
          if (!time.ok()) continue;
          const std::string k = key;
          *(k == "started_at"     ? level->mutable_start_time()
            : k == "completed_at" ? level->mutable_complete_time()
                                  : level->mutable_merge_time()) = ToTimestamp(*time);
        }
      }
    }
  }
  return request;
}

namespace {

// The execution_log entry of `event` as their append_event writes it ({timestamp, event, data});
// nullopt for an event their log has no entry for. `items_at_level` counts a level's tasks.
std::optional<Value> ExecutionLogEntry(const coordinator::v1::WorkEvent& event,
                                       const std::map<int64_t, int>& items_at_level,
                                       const MahabharathaWorkerNumbers& numbers) {
  using coordinator::v1::WorkEvent;
  std::string name;
  Struct data;
  switch (event.kind()) {
    case WorkEvent::KIND_ITEM_CLAIMED:
      name = "task_claimed";
      break;
    case WorkEvent::KIND_ITEM_COMPLETED:
      name = "task_complete";
      break;
    case WorkEvent::KIND_ITEM_FAILED:
      name = "task_failed";
      SetField(&data, "error", JsonString(event.message()));
      break;
    case WorkEvent::KIND_ITEM_RETRIED:
      name = "task_retry";
      break;
    case WorkEvent::KIND_ITEM_HEARTBEAT_LOST:
      name = "task_stale_detected";
      break;
    case WorkEvent::KIND_LEVEL_CHANGED:
      if (event.level_status() == coordinator::v1::LEVEL_STATUS_RUNNING) {
        name = "level_started";
        auto it = items_at_level.find(event.level());
        SetField(&data, "tasks", JsonNumber(it == items_at_level.end() ? 0 : it->second));
      } else if (event.level_status() == coordinator::v1::LEVEL_STATUS_COMPLETE) {
        // Merging is a step of its own here (run level merge), as in their deferred merge.
        name = "level_complete";
        SetField(&data, "merge_deferred", JsonBool(true));
      } else if (event.level_status() == coordinator::v1::LEVEL_STATUS_MERGED) {
        name = "level_complete";
        if (!event.message().empty()) SetField(&data, "merge_commit", JsonString(event.message()));
      } else {
        return std::nullopt;
      }
      SetField(&data, "level", JsonNumber(static_cast<double>(event.level())));
      break;
    default:
      return std::nullopt;
  }
  if (!event.item_id().empty()) SetField(&data, "task_id", JsonString(event.item_id()));
  if (!event.worker_id().empty()) SetField(&data, "worker_id", numbers.Id(event.worker_id()));
  Struct entry;
  SetField(&entry, "timestamp", JsonString(PythonIsoTime(FromTimestamp(event.time()))));
  SetField(&entry, "event", JsonString(name));
  SetField(&entry, "data", StructValue(std::move(data)));
  return StructValue(std::move(entry));
}

// What stopped a failed or blocked run, in a line: its failed tasks, the first with its error.
std::string RunFailure(const Run& run, const std::vector<WorkItem>& items) {
  std::vector<const WorkItem*> failed;
  for (const WorkItem& item : items) {
    if (item.status() == coordinator::v1::ITEM_STATUS_FAILED ||
        item.status() == coordinator::v1::ITEM_STATUS_BLOCKED) {
      failed.push_back(&item);
    }
  }
  const bool blocked = run.status() == coordinator::v1::RUN_STATUS_BLOCKED;
  if (failed.empty()) return blocked ? "run blocked" : "run failed";
  std::string text =
      absl::StrCat(failed.size(), failed.size() == 1 ? " task " : " tasks ",
                   blocked ? "out of attempts" : "failed", ": ", failed.front()->item_id());
  if (!failed.front()->last_error().empty()) {
    absl::StrAppend(&text, " (", failed.front()->last_error(), ")");
  }
  if (failed.size() > 1) absl::StrAppend(&text, " and ", failed.size() - 1, " more");
  return text;
}

// execution_log: as imported, then what happened here since (the import's own entries, made in
// its commit at the run's creation time, are not theirs).
void WriteExecutionLog(const Run& run, const std::vector<WorkItem>& items,
                       const MahabharathaWorkerNumbers& numbers,
                       const std::vector<coordinator::v1::WorkEvent>& events, bool imported,
                       Struct* state_out) {
  Struct& state = *state_out;
  std::map<int64_t, int> items_at_level;
  for (const WorkItem& item : items) ++items_at_level[item.level()];
  Value log;
  if (const Value* v = FindField(state, "execution_log"); v != nullptr && v->has_list_value()) {
    log = *v;
  }
  log.mutable_list_value();
  // A level starts in the commit of its first claim, at the same time: their coordinator
  // logs the level's start before any of its claims, so at one time a start comes first.
  struct Logged {
    absl::Time time;
    bool level_started;
    Value entry;
  };
  std::vector<Logged> appended;
  for (const coordinator::v1::WorkEvent& event : events) {
    const absl::Time time = FromTimestamp(event.time());
    if (imported && time <= FromTimestamp(run.create_time())) continue;
    std::optional<Value> entry = ExecutionLogEntry(event, items_at_level, numbers);
    if (!entry.has_value()) continue;
    appended.push_back({time,
                        event.kind() == coordinator::v1::WorkEvent::KIND_LEVEL_CHANGED &&
                            event.level_status() == coordinator::v1::LEVEL_STATUS_RUNNING,
                        *std::move(entry)});
  }
  std::stable_sort(appended.begin(), appended.end(), [](const Logged& a, const Logged& b) {
    return a.time != b.time ? a.time < b.time : a.level_started && !b.level_started;
  });
  for (Logged& logged : appended) {
    *log.mutable_list_value()->add_values() = std::move(logged.entry);
  }
  if (!appended.empty() || !imported) SetField(&state, "execution_log", std::move(log));
}

// The tasks, each as set_task_status writes a task the coordinator changed (or made); whether
// any was.
bool WriteTasks(const Run& run, const std::vector<WorkItem>& items,
                const MahabharathaWorkerNumbers& numbers, bool imported, Struct* state_out) {
  Struct& state = *state_out;
  bool changed = !imported;
  // A task's level, title and description, which their status --tasks shows, are written when
  // the coordinator knows them and the file did not have them: the level of a run made here or
  // imported with its task graph (a plain state file has none; its tasks read as level 1).
  const bool write_levels = !imported || [&] {
    const Value* m = FindField(run.metadata(), kMahabharathaKey);
    const Value* known = m != nullptr && m->has_struct_value()
                             ? FindField(m->struct_value(), "levels_known")
                             : nullptr;
    return known != nullptr && known->kind_case() == Value::kBoolValue && known->bool_value();
  }();
  Struct tasks;
  for (const WorkItem& item : items) {
    const Struct& task_original = MahabharathaMeta(item.metadata(), "task");
    Struct task = task_original;
    if (write_levels && item.level() > 0 && FindField(task, "level") == nullptr) {
      SetField(&task, "level", JsonNumber(static_cast<double>(item.level())));
    }
    if (!item.title().empty() && FindField(task, "title") == nullptr) {
      SetField(&task, "title", JsonString(item.title()));
    }
    if (!item.description().empty() && FindField(task, "description") == nullptr) {
      SetField(&task, "description", JsonString(item.description()));
    }
    // An item the coordinator changed (or made) is written as set_task_status writes a task.
    const bool item_changed = item.version() > 1 || task_original.fields().empty();
    if (item_changed) {
      changed = true;
      const std::string updated = PythonIsoTime(FromTimestamp(item.update_time()));
      SetField(&task, "status", JsonString(MahabharathaTaskStatus(item.status())));
      SetField(&task, "updated_at", JsonString(updated));
      if (!item.worker_id().empty()) SetField(&task, "worker_id", numbers.Id(item.worker_id()));
      if (item.has_start_time()) {
        const std::string started = PythonIsoTime(FromTimestamp(item.start_time()));
        SetField(&task, "claimed_at", JsonString(started));
        SetField(&task, "started_at", JsonString(started));
      }
      if (item.status() == coordinator::v1::ITEM_STATUS_DONE && item.has_complete_time()) {
        SetField(&task, "completed_at",
                 JsonString(PythonIsoTime(FromTimestamp(item.complete_time()))));
        // As their worker records it (record_task_duration) once the task is committed; their
        // metrics and status read it.
        if (item.has_start_time()) {
          const absl::Duration took =
              FromTimestamp(item.complete_time()) - FromTimestamp(item.start_time());
          SetField(&task, "duration_ms",
                   JsonNumber(static_cast<double>(
                       absl::ToInt64Milliseconds(std::max(took, absl::ZeroDuration())))));
        }
      }
      if (!item.last_error().empty()) SetField(&task, "error", JsonString(item.last_error()));
      if (item.attempts() > 1) {
        const Value* before = FindField(task_original, "retry_count");
        const double imported_retries =
            before != nullptr && before->kind_case() == Value::kNumberValue ? before->number_value()
                                                                            : 0;
        SetField(&task, "retry_count", JsonNumber(imported_retries + item.attempts() - 1));
      }
    }
    SetField(&tasks, item.item_id(), StructValue(std::move(task)));
  }
  SetField(&state, "tasks", StructValue(std::move(tasks)));

  return changed;
}

// current_level, the error of a failed run, and the levels whose status moved since the import.
void WriteLevels(const Run& run, const std::vector<WorkItem>& items, Struct* state_out) {
  Struct& state = *state_out;
  SetField(&state, "current_level", JsonNumber(static_cast<double>(run.current_level())));
  // A run that stopped on a failure: the error their status shows (set_error), unless the
  // file holds one of its own.
  if (const Value* error = FindField(state, "error");
      (error == nullptr || error->has_null_value()) &&
      (run.status() == coordinator::v1::RUN_STATUS_FAILED ||
       run.status() == coordinator::v1::RUN_STATUS_BLOCKED)) {
    SetField(&state, "error", JsonString(RunFailure(run, items)));
  }
  // Levels whose status moved since the import, as set_level_status writes them.
  Struct levels;
  if (const Value* v = FindField(state, "levels"); v != nullptr && v->has_struct_value()) {
    levels = v->struct_value();
  }
  for (const coordinator::v1::LevelState& live : run.level_states()) {
    const std::string key = absl::StrCat(live.level());
    Struct level;
    if (const Value* v = FindField(levels, key); v != nullptr && v->has_struct_value()) {
      level = v->struct_value();
    }
    const Value* was = FindField(level, "status");
    if (was != nullptr && was->kind_case() == Value::kStringValue &&
        LevelStatusOf(level) == live.status()) {
      continue;
    }
    if (was == nullptr && live.status() == coordinator::v1::LEVEL_STATUS_PENDING) continue;
    SetField(&level, "status", JsonString(MahabharathaLevelStatus(live.status())));
    SetField(&level, "updated_at", JsonString(PythonIsoTime(FromTimestamp(run.update_time()))));
    if (live.status() == coordinator::v1::LEVEL_STATUS_MERGED) {
      // As set_level_merge_status(level, COMPLETE) writes it after set_level_status.
      const std::string merged = PythonIsoTime(
          FromTimestamp(live.has_merge_time() ? live.merge_time() : run.update_time()));
      SetField(&level, "merge_status", JsonString("complete"));
      SetField(&level, "merge_updated_at", JsonString(merged));
      SetField(&level, "merge_completed_at", JsonString(merged));
    }
    if (live.has_start_time()) {
      SetField(&level, "started_at", JsonString(PythonIsoTime(FromTimestamp(live.start_time()))));
    }
    if (live.has_complete_time()) {
      SetField(&level, "completed_at",
               JsonString(PythonIsoTime(FromTimestamp(live.complete_time()))));
    }
    if (!live.merge_commit().empty())
      SetField(&level, "merge_commit", JsonString(live.merge_commit()));
    SetField(&levels, key, StructValue(std::move(level)));
  }
  SetField(&state, "levels", StructValue(std::move(levels)));
}

// The coordinator's worker registry over the imported workers.
void WriteWorkers(const Run& run, const std::vector<RunWorker>& workers,
                  const MahabharathaWorkerNumbers& numbers, Struct* state_out) {
  Struct& state = *state_out;
  Struct map;
  if (const Value* v = FindField(state, "workers"); v != nullptr && v->has_struct_value()) {
    map = v->struct_value();
  }
  for (const RunWorker& w : workers) {
    Struct entry;
    const std::string key = numbers.Key(w.worker_id());
    if (const Value* v = FindField(map, key); v != nullptr && v->has_struct_value()) {
      entry = v->struct_value();
      // Registered by the import (with the run) and not changed since: as it was imported.
      if (w.has_create_time() &&
          w.create_time().SerializeAsString() == run.create_time().SerializeAsString() &&
          w.update_time().SerializeAsString() == w.create_time().SerializeAsString()) {
        continue;
      }
    }
    SetField(&entry, "worker_id", numbers.Id(w.worker_id()));
    SetField(&entry, "status", JsonString(MahabharathaWorkerStatus(w.status())));
    SetField(&entry, "current_task",
             w.current_item().empty() ? JsonNull() : JsonString(w.current_item()));
    SetField(&entry, "health_check_at",
             w.has_last_heartbeat_time()
                 ? JsonString(PythonIsoTime(FromTimestamp(w.last_heartbeat_time())))
                 : JsonNull());
    if (w.has_create_time()) {
      SetField(&entry, "started_at", JsonString(PythonIsoTime(FromTimestamp(w.create_time()))));
    }
    SetField(&entry, "tasks_completed", JsonNumber(static_cast<double>(w.items_completed())));
    // Every key WorkerState.to_dict writes, but `branch`: their state renderer takes len() of
    // it, which fails on null; without it, it shows "-".
    for (const char* key :
         {"port", "container_id", "worktree_path", "ready_at", "last_task_completed_at"}) {
      if (FindField(entry, key) == nullptr) SetField(&entry, key, JsonNull());
    }
    if (FindField(entry, "context_usage") == nullptr)
      SetField(&entry, "context_usage", JsonNumber(0));
    SetField(&map, key, StructValue(std::move(entry)));
  }
  SetField(&state, "workers", StructValue(std::move(map)));
}

}  // namespace

std::string FormatMahabharathaState(const Run& run, const std::vector<WorkItem>& items,
                                    const std::vector<RunWorker>& workers,
                                    const std::vector<coordinator::v1::WorkEvent>* events) {
  const MahabharathaWorkerNumbers numbers(workers);
  const Struct& original = MahabharathaMeta(run.metadata(), "state");
  const bool imported = !original.fields().empty();
  Struct state = original;
  if (!imported) {
    // The StateManager's initial state.
    SetField(&state, "started_at", JsonString(PythonIsoTime(FromTimestamp(run.create_time()))));
    SetField(&state, "current_level", JsonNumber(0));
    SetField(&state, "workers", StructValue(Struct()));
    SetField(&state, "levels", StructValue(Struct()));
    Value log;
    log.mutable_list_value();
    SetField(&state, "execution_log", log);
    SetField(&state, "metrics", JsonNull());
    SetField(&state, "paused", JsonBool(false));
    SetField(&state, "error", JsonNull());
  }
  SetField(&state, "feature", JsonString(run.feature()));

  if (events != nullptr) WriteExecutionLog(run, items, numbers, *events, imported, &state);
  if (WriteTasks(run, items, numbers, imported, &state)) WriteLevels(run, items, &state);
  if (!workers.empty()) WriteWorkers(run, workers, numbers, &state);
  return WriteJson(StructValue(std::move(state)), 2, MahabharathaKeyOrder());
}

std::string FormatMahabharathaAssignments(const Run& run, const std::vector<WorkItem>& items,
                                          const std::vector<RunWorker>& workers, absl::Time now) {
  const MahabharathaWorkerNumbers numbers(workers);
  std::vector<const WorkItem*> held;
  std::set<std::string> holders;
  for (const RunWorker& w : workers) holders.insert(w.worker_id());
  const size_t registered = holders.size();
  for (const WorkItem& item : items) {
    if (item.worker_id().empty()) continue;
    held.push_back(&item);
    holders.insert(item.worker_id());
  }
  std::stable_sort(held.begin(), held.end(), [](const WorkItem* a, const WorkItem* b) {
    return a->level() != b->level() ? a->level() < b->level() : a->item_id() < b->item_id();
  });
  Value assignments;
  assignments.mutable_list_value();
  for (const WorkItem* item : held) {
    Struct entry;
    SetField(&entry, "task_id", JsonString(item->item_id()));
    SetField(&entry, "worker_id", numbers.Id(item->worker_id()));
    // save_to_file writes these two constants ("Would need task data for actual level").
    SetField(&entry, "level", JsonNumber(0));
    SetField(&entry, "estimated_minutes", JsonNumber(15));
    *assignments.mutable_list_value()->add_values() = StructValue(std::move(entry));
  }
  Struct out;
  SetField(&out, "feature", JsonString(run.feature()));
  SetField(&out, "worker_count",
           JsonNumber(static_cast<double>(std::max(registered, holders.size()))));
  SetField(&out, "assignments", std::move(assignments));
  SetField(&out, "generated_at", JsonString(PythonIsoTime(now)));
  return WriteJson(StructValue(std::move(out)), 2,
                   {"feature", "worker_count", "assignments", "generated_at", "task_id",
                    "worker_id", "level", "estimated_minutes"});
}

}  // namespace coordctl
