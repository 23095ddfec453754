#include "coordinator/store/work/task_graph.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "common/validation.h"
#include "google/protobuf/util/json_util.h"

namespace coordinator {
namespace {

using v1::WorkItem;

// Keys of a task object that TaskGraphTask names; any other key is kept as metadata.
const absl::flat_hash_set<std::string>& KnownTaskKeys() {
  static const auto* keys = new absl::flat_hash_set<std::string>{
      "id", "title", "description", "level", "dependencies", "files", "verification"};
  return *keys;
}

// Top-level keys of task-graph.json that TaskGraph names.
const absl::flat_hash_set<std::string>& KnownTopKeys() {
  static const auto* keys = new absl::flat_hash_set<std::string>{"feature", "tasks", "levels"};
  return *keys;
}

std::string JsonError(absl::string_view what, const google::protobuf::util::Status& s) {
  return absl::StrCat("task-graph.json: ", what, ": ", std::string(s.message()));
}

// A path-like field: 1 to max bytes, no control characters.
absl::Status ValidatePath(absl::string_view field, absl::string_view value, size_t max_bytes) {
  if (value.empty()) return absl::InvalidArgumentError(absl::StrCat(field, " is empty"));
  RETURN_IF_ERROR(common::ValidateSize(field, value, max_bytes));
  for (size_t i = 0; i < value.size(); ++i) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (c < 0x20 || c == 0x7F) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s contains a control character (0x%02x) at byte %d", field, c, i));
    }
  }
  return absl::OkStatus();
}

// "./a/b" and "a/b" name the same file; ownership compares the normalized form.
std::string NormalizePath(absl::string_view path) {
  while (absl::StartsWith(path, "./")) path.remove_prefix(2);
  return std::string(path);
}

absl::Status ValidateFields(const WorkItem& item, const WorkLimits& limits) {
  const std::string task = absl::StrCat("task ", item.item_id());
  RETURN_IF_ERROR(
      common::ValidateSize(absl::StrCat(task, ": title"), item.title(), limits.max_path_bytes));
  RETURN_IF_ERROR(common::ValidateSize(absl::StrCat(task, ": description"), item.description(),
                                       limits.max_text_bytes));
  RETURN_IF_ERROR(
      common::ValidateSize(absl::StrCat(task, ": branch"), item.branch(), limits.max_path_bytes));
  RETURN_IF_ERROR(common::ValidateSize(absl::StrCat(task, ": worktree"), item.worktree(),
                                       limits.max_path_bytes));
  RETURN_IF_ERROR(common::ValidateSize(absl::StrCat(task, ": verification command"),
                                       item.verification().command(), limits.max_text_bytes));
  if (item.level() < 0 || item.level() > limits.max_level) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: level %d is not in 0..%d", task, item.level(), limits.max_level));
  }
  if (static_cast<size_t>(item.dependencies_size()) > limits.max_dependencies) {
    return absl::ResourceExhaustedError(absl::StrFormat("%s has %d dependencies; the limit is %d",
                                                        task, item.dependencies_size(),
                                                        limits.max_dependencies));
  }
  const size_t files = item.owned_files_size() + item.files().create_size() +
                       item.files().modify_size() + item.files().read_size();
  if (files > limits.max_files) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("%s lists %d files; the limit is %d", task, files, limits.max_files));
  }
  for (const auto* list : {&item.owned_files(), &item.files().create(), &item.files().modify(),
                           &item.files().read()}) {
    for (const std::string& path : *list) {
      RETURN_IF_ERROR(ValidatePath(absl::StrCat(task, ": file path"), path, limits.max_path_bytes));
    }
  }
  if (item.metadata().ByteSizeLong() > limits.max_metadata_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("%s: metadata is %d bytes; the limit is %d bytes", task,
                        item.metadata().ByteSizeLong(), limits.max_metadata_bytes));
  }
  if (!item.adapter().empty()) {
    RETURN_IF_ERROR(common::ValidateId(absl::StrCat(task, ": adapter"), item.adapter()));
  }
  RETURN_IF_ERROR(ValidateCapabilities(absl::StrCat(task, ": required capability"),
                                       item.required_capabilities()));
  return absl::OkStatus();
}

// Finds a dependency cycle with an iterative depth-first search (a recursive one could run out
// of stack on a long chain). Returns the cycle as "A -> B -> A", or "" when there is none.
std::string FindCycle(const std::vector<WorkItem>& items,
                      const absl::flat_hash_map<std::string, size_t>& index) {
  enum Color : uint8_t { kWhite, kGray, kBlack };
  std::vector<Color> color(items.size(), kWhite);
  std::vector<std::pair<size_t, int>> stack;  // (item, next dependency to visit)
  for (size_t root = 0; root < items.size(); ++root) {
    if (color[root] != kWhite) continue;
    stack.emplace_back(root, 0);
    color[root] = kGray;
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next == items[node].dependencies_size()) {
        color[node] = kBlack;
        stack.pop_back();
        continue;
      }
      const size_t dep = index.at(items[node].dependencies(next++));
      if (color[dep] == kGray) {
        std::vector<std::string> path;
        auto start = std::find_if(stack.begin(), stack.end(),
                                  [dep](const auto& frame) { return frame.first == dep; });
        for (auto it = start; it != stack.end(); ++it) path.push_back(items[it->first].item_id());
        path.push_back(items[dep].item_id());
        return absl::StrJoin(path, " -> ");
      }
      if (color[dep] == kWhite) {
        color[dep] = kGray;
        stack.emplace_back(dep, 0);
      }
    }
  }
  return "";
}

}  // namespace

absl::StatusOr<ParsedTaskGraph> ParseTaskGraphJson(absl::string_view json,
                                                   const WorkLimits& limits) {
  RETURN_IF_ERROR(common::ValidateSize("task-graph.json", json, limits.max_graph_json_bytes));
  google::protobuf::Struct doc;
  google::protobuf::util::Status s = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &doc);
  if (!s.ok()) return absl::InvalidArgumentError(JsonError("not a JSON object", s));

  // Split the document into what TaskGraph names and what it does not, then let protobuf's JSON
  // mapping parse the known part (it checks the types and names the offending field).
  ParsedTaskGraph parsed;
  google::protobuf::Struct known;
  std::vector<google::protobuf::Struct> task_metadata;
  for (const auto& [key, value] : doc.fields()) {
    if (!KnownTopKeys().contains(key)) {
      (*parsed.metadata.mutable_fields())[key] = value;
      continue;
    }
    if (key != "tasks") {
      (*known.mutable_fields())[key] = value;
      continue;
    }
    if (value.kind_case() != google::protobuf::Value::kListValue) {
      return absl::InvalidArgumentError("task-graph.json: \"tasks\" must be a list");
    }
    google::protobuf::ListValue* tasks = (*known.mutable_fields())["tasks"].mutable_list_value();
    for (int i = 0; i < value.list_value().values_size(); ++i) {
      const google::protobuf::Value& task = value.list_value().values(i);
      if (task.kind_case() != google::protobuf::Value::kStructValue) {
        return absl::InvalidArgumentError(
            absl::StrFormat("task-graph.json: tasks[%d] is not an object", i));
      }
      google::protobuf::Struct* known_task = tasks->add_values()->mutable_struct_value();
      google::protobuf::Struct& metadata = task_metadata.emplace_back();
      for (const auto& [task_key, task_value] : task.struct_value().fields()) {
        auto* target = KnownTaskKeys().contains(task_key) ? known_task : &metadata;
        (*target->mutable_fields())[task_key] = task_value;
      }
    }
  }
  std::string known_json;
  s = google::protobuf::util::MessageToJsonString(known, &known_json);
  if (!s.ok()) return absl::InvalidArgumentError(JsonError("cannot be read", s));
  google::protobuf::util::JsonParseOptions options;
  // Unknown keys inside "files" and "verification" are dropped; top-level and task-level ones
  // were set aside above as metadata.
  options.ignore_unknown_fields = true;
  s = google::protobuf::util::JsonStringToMessage(known_json, &parsed.graph, options);
  if (!s.ok()) return absl::InvalidArgumentError(JsonError("a field has the wrong type", s));
  for (int i = 0; i < parsed.graph.tasks_size(); ++i) {
    *parsed.graph.mutable_tasks(i)->mutable_metadata() = std::move(task_metadata[i]);
  }
  return parsed;
}

std::vector<WorkItem> TaskGraphToItems(const v1::TaskGraph& graph) {
  std::vector<WorkItem> items;
  items.reserve(graph.tasks_size());
  for (const v1::TaskGraphTask& task : graph.tasks()) {
    WorkItem& item = items.emplace_back();
    item.set_item_id(task.id());
    item.set_title(task.title());
    item.set_description(task.description());
    item.set_level(task.level());
    *item.mutable_dependencies() = task.dependencies();
    *item.mutable_files() = task.files();
    *item.mutable_verification() = task.verification();
    *item.mutable_metadata() = task.metadata();
  }
  return items;
}

absl::Status ValidateCapabilities(absl::string_view field,
                                  const google::protobuf::RepeatedPtrField<std::string>& list) {
  if (list.size() > kMaxCapabilities) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("%s: %d are named; the limit is %d", field, list.size(), kMaxCapabilities));
  }
  absl::flat_hash_set<absl::string_view> seen;
  for (const std::string& capability : list) {
    RETURN_IF_ERROR(common::ValidateId(field, capability));
    if (!seen.insert(capability).second) {
      return absl::InvalidArgumentError(absl::StrCat(field, " ", capability, " is named twice"));
    }
  }
  return absl::OkStatus();
}

absl::Status NormalizeAndValidateItems(std::vector<WorkItem>* items, const WorkLimits& limits,
                                       size_t existing) {
  if (items->size() <= existing) return absl::InvalidArgumentError("a run needs at least one item");
  if (items->size() > limits.max_items) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("the run has %d items; the limit is %d", items->size(), limits.max_items));
  }
  absl::flat_hash_map<std::string, size_t> index;
  for (size_t i = 0; i < items->size(); ++i) {
    WorkItem& item = (*items)[i];
    if (i < existing) {  // stored: already normalized and checked
      index.emplace(item.item_id(), i);
      continue;
    }
    RETURN_IF_ERROR(
        common::ValidateId(absl::StrFormat("id of item %d", i - existing + 1), item.item_id()));
    if (!index.emplace(item.item_id(), i).second) {
      return index[item.item_id()] < existing
                 ? absl::AlreadyExistsError(
                       absl::StrCat("task ", item.item_id(), " already exists in the run"))
                 : absl::InvalidArgumentError(
                       absl::StrCat("task ", item.item_id(), " appears more than once"));
    }
    RETURN_IF_ERROR(ValidateFields(item, limits));
    // Output-only fields are the coordinator's to set.
    const WorkItem input = item;
    item.Clear();
    item.set_item_id(input.item_id());
    item.set_title(input.title());
    item.set_description(input.description());
    item.set_level(input.level());
    *item.mutable_dependencies() = input.dependencies();
    *item.mutable_files() = input.files();
    *item.mutable_verification() = input.verification();
    item.set_branch(input.branch());
    item.set_worktree(input.worktree());
    *item.mutable_metadata() = input.metadata();
    item.set_adapter(input.adapter());
    *item.mutable_required_capabilities() = input.required_capabilities();
    std::vector<std::string> owned;
    for (const auto* list :
         {&input.owned_files(), &input.files().create(), &input.files().modify()}) {
      for (const std::string& path : *list) owned.push_back(NormalizePath(path));
    }
    std::sort(owned.begin(), owned.end());
    owned.erase(std::unique(owned.begin(), owned.end()), owned.end());
    for (std::string& path : owned) item.add_owned_files(std::move(path));
  }

  // Dependencies: known, not the item itself, and not on a higher level. With that, edges only
  // go down or sideways, so a cycle can only be among items of one level.
  for (const WorkItem& item : *items) {
    absl::flat_hash_set<absl::string_view> seen;
    for (const std::string& dep : item.dependencies()) {
      auto it = index.find(dep);
      if (it == index.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("task ", item.item_id(), " depends on unknown task ", dep));
      }
      if (dep == item.item_id()) {
        return absl::InvalidArgumentError(absl::StrCat("task ", dep, " depends on itself"));
      }
      if (!seen.insert(dep).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("task ", item.item_id(), " lists dependency ", dep, " twice"));
      }
      const WorkItem& target = (*items)[it->second];
      if (target.level() > item.level()) {
        return absl::InvalidArgumentError(
            absl::StrFormat("task %s (level %d) depends on task %s at higher level %d",
                            item.item_id(), item.level(), dep, target.level()));
      }
    }
  }
  if (std::string cycle = FindCycle(*items, index); !cycle.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("dependency cycle: ", cycle));
  }

  // Ownership: items of one level run side by side, so no two of them may own one file.
  absl::flat_hash_map<std::pair<int64_t, std::string>, absl::string_view> owner;
  for (const WorkItem& item : *items) {
    for (const std::string& path : item.owned_files()) {
      auto [it, inserted] = owner.try_emplace({item.level(), path}, item.item_id());
      if (!inserted) {
        return absl::InvalidArgumentError(
            absl::StrFormat("file %s is owned by both task %s and task %s at level %d", path,
                            it->second, item.item_id(), item.level()));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace coordinator
