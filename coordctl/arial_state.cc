#include "coordctl/arial_state.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "coordctl/aria_state_json.h"
#include "coordctl/import_json.h"
#include "coordctl/json_write.h"

namespace coordctl {
namespace {

using coordinator::v1::ItemStatus;
using coordinator::v1::Run;
using coordinator::v1::WorkItem;
using google::protobuf::Struct;
using google::protobuf::Value;

// The metadata key under which what the coordinator has no field for is kept.
constexpr char kArialKey[] = "arial";

// The key, inside the run's kArialKey, of the project the run was imported from.
constexpr char kProjectDirKey[] = "projectDir";

// The keys ArialState and Workstream name (lib/state.ts), in the order Arial writes them, then
// "dependencies", which the schema lacks and a file may add.
const std::vector<std::string>& ArialKeyOrder() {
  static const auto* order =
      new std::vector<std::string>{"version",      "specsDir",    "baseBranch",
                                   "status",       "createdAt",   "updatedAt",
                                   "workstreams",  "id",          "specFile",
                                   "title",        "description", "branch",
                                   "worktreePath", "pid",         "startedAt",
                                   "completedAt",  "retryCount",  "lastError",
                                   "summary",      "adapter",     "requiredCapabilities",
                                   "dependencies"};
  return *order;
}

bool IsRunKey(const std::string& key) {
  return key == "version" || key == "specsDir" || key == "baseBranch" || key == "status" ||
         key == "createdAt" || key == "updatedAt" || key == "workstreams";
}

bool IsWorkstreamKey(const std::string& key) {
  const auto& order = ArialKeyOrder();
  return std::find(order.begin() + 7, order.end(), key) != order.end() || key == "status";
}

absl::StatusOr<ItemStatus> ParseStatus(const std::string& where, const std::string& s) {
  if (s == "pending") return coordinator::v1::ITEM_STATUS_PENDING;
  if (s == "running") return coordinator::v1::ITEM_STATUS_RUNNING;
  if (s == "done") return coordinator::v1::ITEM_STATUS_DONE;
  if (s == "failed") return coordinator::v1::ITEM_STATUS_FAILED;
  return absl::InvalidArgumentError(absl::StrCat(
      where, " is \"", s.substr(0, 40), "\"; Arial's are pending, running, done and failed"));
}

// Arial has no "blocked": a workstream out of attempts has failed.
std::string ArialItemStatus(ItemStatus s) {
  switch (s) {
    case coordinator::v1::ITEM_STATUS_RUNNING:
      return "running";
    case coordinator::v1::ITEM_STATUS_DONE:
      return "done";
    case coordinator::v1::ITEM_STATUS_FAILED:
    case coordinator::v1::ITEM_STATUS_BLOCKED:
      return "failed";
    default:
      return "pending";
  }
}

// Arial's updateRunStatus: completed when every workstream is done, failed when one failed,
// running when one runs, otherwise the status as it was.
std::string DeriveStatus(const std::vector<std::string>& statuses, const std::string& previous) {
  if (std::all_of(statuses.begin(), statuses.end(),
                  [](const std::string& s) { return s == "done"; })) {
    return "completed";
  }
  auto any = [&](const char* want) {
    return std::any_of(statuses.begin(), statuses.end(),
                       [&](const std::string& s) { return s == want; });
  };
  if (any("failed")) return "failed";
  if (any("running")) return "running";
  return previous;
}

// The run status Arial would have had for a run made here (no stored one).
std::string ArialRunStatus(coordinator::v1::RunStatus s) {
  switch (s) {
    case coordinator::v1::RUN_STATUS_COMPLETED:
      return "completed";
    case coordinator::v1::RUN_STATUS_FAILED:
      return "failed";
    case coordinator::v1::RUN_STATUS_PLANNING:
      return "planning";
    default:
      return "running";
  }
}

const Struct& ArialMeta(const Struct& metadata) {
  const Value* v = FindField(metadata, kArialKey);
  return v != nullptr && v->has_struct_value() ? v->struct_value() : Struct::default_instance();
}

// One workstream into an item; `index` is its place in the file.
absl::StatusOr<WorkItem> ParseWorkstream(const Struct& object, int index, bool v1) {
  const JsonObject w(object, absl::StrCat("workstreams[", index, "]"));
  WorkItem item;
  Struct meta;
  SetField(&meta, "index", JsonNumber(index));

  absl::StatusOr<std::optional<std::string>> id = w.String("id", true);
  if (!id.ok()) return id.status();
  if (absl::Status s = ValidatePathSafeId(w.Name("id"), **id); !s.ok()) return s;
  item.set_item_id(**id);

  auto text = [&](const char* key, bool required) -> absl::StatusOr<std::string> {
    absl::StatusOr<std::optional<std::string>> v = w.String(key, required);
    if (!v.ok()) return v.status();
    return v->value_or("");
  };
  absl::StatusOr<std::string> spec_file = text("specFile", !v1);
  if (!spec_file.ok()) return spec_file.status();
  SetField(&meta, "specFile", JsonString(*spec_file));
  absl::StatusOr<std::string> title = text("title", false);
  if (!title.ok()) return title.status();
  item.set_title(*title);
  absl::StatusOr<std::string> description = text("description", false);
  if (!description.ok()) return description.status();
  item.set_description(*description);
  absl::StatusOr<std::string> status = text("status", true);
  if (!status.ok()) return status.status();
  absl::StatusOr<ItemStatus> parsed_status = ParseStatus(w.Name("status"), *status);
  if (!parsed_status.ok()) return parsed_status.status();
  item.set_status(*parsed_status);

  // Version 1 files may lack what version 2 added: the defaults Arial gives a new workstream.
  absl::StatusOr<std::optional<std::string>> branch = w.String("branch", !v1);
  if (!branch.ok()) return branch.status();
  item.set_branch(branch->value_or(absl::StrCat("arial/", item.item_id())));
  absl::StatusOr<std::optional<std::string>> worktree = w.String("worktreePath", !v1);
  if (!worktree.ok()) return worktree.status();
  item.set_worktree(worktree->value_or(absl::StrCat(".arial/worktrees/", item.item_id())));
  absl::StatusOr<std::optional<int64_t>> retries = w.Integer("retryCount", !v1, 0, INT32_MAX);
  if (!retries.ok()) return retries.status();
  SetField(&meta, "retryCount", JsonNumber(static_cast<double>(retries->value_or(0))));

  absl::StatusOr<std::optional<int64_t>> pid = w.Integer("pid", false, 1, INT32_MAX);
  if (!pid.ok()) return pid.status();
  if (pid->has_value()) {
    item.set_pid(**pid);
    SetField(&meta, "pid", JsonNumber(static_cast<double>(**pid)));
  }
  for (const char* key : {"startedAt", "completedAt"}) {
    absl::StatusOr<std::optional<std::string>> t = w.String(key, false);
    if (!t.ok()) return t.status();
    if (!t->has_value()) continue;
    absl::StatusOr<absl::Time> time = ParseIsoTime(w.Name(key), **t);
    if (!time.ok()) return time.status();
    *(std::string(key) == "startedAt" ? item.mutable_start_time() : item.mutable_complete_time()) =
        ToTimestamp(*time);
    SetField(&meta, key, JsonString(**t));  // the text as written, for the export
  }
  for (const char* key : {"lastError", "summary"}) {
    absl::StatusOr<std::optional<std::string>> t = w.String(key, false);
    if (!t.ok()) return t.status();
    if (!t->has_value()) continue;
    if (std::string(key) == "lastError") {
      item.set_last_error(**t);
    } else {
      item.set_summary(**t);
    }
    SetField(&meta, key, JsonString(**t));
  }
  absl::StatusOr<std::optional<std::string>> adapter = w.String("adapter", false);
  if (!adapter.ok()) return adapter.status();
  if (adapter->has_value()) item.set_adapter(**adapter);
  absl::StatusOr<std::optional<std::vector<std::string>>> caps =
      w.Strings("requiredCapabilities", false);
  if (!caps.ok()) return caps.status();
  if (caps->has_value()) {
    for (const std::string& c : **caps) item.add_required_capabilities(c);
    // Kept as given: the coordinator normalizes the list, an export gives it back as it was.
    SetField(&meta, "requiredCapabilities", JsonStrings(**caps));
  }
  absl::StatusOr<std::optional<std::vector<std::string>>> deps = w.Strings("dependencies", false);
  if (!deps.ok()) return deps.status();
  if (deps->has_value()) {
    for (const std::string& d : **deps) item.add_dependencies(d);
  }

  Struct extra;
  for (const auto& [key, value] : object.fields()) {
    if (!IsWorkstreamKey(key)) SetField(&extra, key, value);
  }
  if (!extra.fields().empty())
    SetField(&meta, "extra", [&] {
      Value v;
      *v.mutable_struct_value() = std::move(extra);
      return v;
    }());
  Value meta_value;
  *meta_value.mutable_struct_value() = std::move(meta);
  SetField(item.mutable_metadata(), kArialKey, std::move(meta_value));
  return item;
}

// `dir` lexically normal and without a trailing separator ("/p/" is "/p"), so that it
// compares equal to the same directory written otherwise; empty unless absolute.
std::filesystem::path AbsoluteDir(const std::string& dir) {
  std::filesystem::path p = std::filesystem::path(dir).lexically_normal();
  if (!p.is_absolute()) return {};
  if (!p.has_filename() && p != p.root_path()) p = p.parent_path();
  return p;
}

// The directory Arial's paths are written relative to: --project-dir, else the project the run
// was imported from, else, for a run made here from <project>/specs (absolute), <project>.
std::string ExportProject(const Run& run, const std::string& imported_from,
                          const std::string& project_dir) {
  if (!project_dir.empty()) return project_dir;
  if (!imported_from.empty()) return imported_from;
  const std::filesystem::path specs = AbsoluteDir(run.specs_dir());
  return specs.empty() ? "" : specs.parent_path().string();
}

}  // namespace

absl::StatusOr<ArialRun> ParseArialState(absl::string_view json, const std::string& project_dir) {
  absl::StatusOr<Struct> parsed = ParseJsonObject(json);
  if (!parsed.ok()) return parsed.status();
  const JsonObject top(*parsed, "");

  if (!top.Has("version")) {
    return absl::InvalidArgumentError("version is missing: not an Arial state file");
  }
  absl::StatusOr<std::optional<int64_t>> version = top.Integer("version", true, 0, INT32_MAX);
  if (!version.ok()) return version.status();
  if (**version != 1 && **version != kArialStateVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat("version ", **version, " is not one this coordinator reads (1 or 2)"));
  }
  const bool v1 = **version == 1;

  ArialRun out;
  Run& run = out.run;
  run.set_kind(coordinator::v1::RUN_KIND_WORKSTREAMS);
  Struct meta;
  absl::StatusOr<std::optional<std::string>> specs_dir = top.String("specsDir", true);
  if (!specs_dir.ok()) return specs_dir.status();
  run.set_specs_dir(**specs_dir);
  absl::StatusOr<std::optional<std::string>> base = top.String("baseBranch", true);
  if (!base.ok()) return base.status();
  run.set_base_branch(**base);
  absl::StatusOr<std::optional<std::string>> status = top.String("status", true);
  if (!status.ok()) return status.status();
  if (**status != "planning" && **status != "running" && **status != "completed" &&
      **status != "failed") {
    return absl::InvalidArgumentError(
        absl::StrCat("status is \"", status->value().substr(0, 40),
                     "\"; Arial's are planning, running, completed and failed"));
  }
  SetField(&meta, "status", JsonString(**status));
  for (const char* key : {"createdAt", "updatedAt"}) {
    absl::StatusOr<std::optional<std::string>> t = top.String(key, true);
    if (!t.ok()) return t.status();
    if (absl::Status s = ParseIsoTime(key, **t).status(); !s.ok()) return s;
    SetField(&meta, key, JsonString(**t));
  }
  Struct extra;
  for (const auto& [key, value] : parsed->fields()) {
    if (!IsRunKey(key)) SetField(&extra, key, value);
  }
  if (!extra.fields().empty()) SetField(&meta, "extra", StructValue(std::move(extra)));
  if (!project_dir.empty()) SetField(&meta, kProjectDirKey, JsonString(project_dir));
  SetField(run.mutable_metadata(), kArialKey, StructValue(std::move(meta)));

  auto list = parsed->fields().find("workstreams");
  if (list == parsed->fields().end()) return absl::InvalidArgumentError("workstreams is missing");
  if (list->second.kind_case() != Value::kListValue) {
    return absl::InvalidArgumentError("workstreams must be an array");
  }
  absl::flat_hash_set<std::string> ids;
  const auto& values = list->second.list_value().values();
  for (int i = 0; i < values.size(); ++i) {
    if (values[i].kind_case() != Value::kStructValue) {
      return absl::InvalidArgumentError(absl::StrCat("workstreams[", i, "] must be an object"));
    }
    absl::StatusOr<WorkItem> item = ParseWorkstream(values[i].struct_value(), i, v1);
    if (!item.ok()) return item.status();
    if (!ids.insert(item->item_id()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("workstreams[", i, "]: workstream ", item->item_id(), " appears twice"));
    }
    out.items.push_back(*std::move(item));
  }
  return out;
}

std::string ReplayArialRunStatus(const std::string& start,
                                 const std::vector<coordinator::v1::WorkEvent>& events) {
  std::string status = start;
  std::vector<std::string> ids;  // in order of creation
  absl::flat_hash_map<std::string, std::string> of;
  for (const coordinator::v1::WorkEvent& e : events) {
    if (e.item_id().empty() || e.item_status() == coordinator::v1::ITEM_STATUS_UNSPECIFIED) {
      continue;
    }
    auto [it, inserted] = of.emplace(e.item_id(), "");
    if (inserted) ids.push_back(e.item_id());
    const std::string now = ArialItemStatus(e.item_status());
    if (e.kind() == coordinator::v1::WorkEvent::KIND_ITEM_CREATED) {
      it->second = now;  // addWorkstream does not derive the status
      continue;
    }
    it->second = now;
    std::vector<std::string> statuses;
    statuses.reserve(ids.size());
    for (const std::string& id : ids) statuses.push_back(of[id]);
    status = DeriveStatus(statuses, status);
  }
  return status;
}

coordinator::v1::ImportRunRequest ArialImportRequest(const ArialRun& parsed) {
  coordinator::v1::ImportRunRequest request;
  *request.mutable_run() = parsed.run;
  for (const WorkItem& parsed_item : parsed.items) {
    WorkItem* item = request.add_items();
    *item = parsed_item;
    if (item->status() != coordinator::v1::ITEM_STATUS_PENDING) item->set_attempts(1);
    if (item->status() == coordinator::v1::ITEM_STATUS_RUNNING) {
      item->set_worker_id(item->pid() != 0 ? absl::StrCat("arial-", item->pid()) : "arial");
    } else {
      item->set_pid(0);
    }
    if (item->status() != coordinator::v1::ITEM_STATUS_DONE) item->clear_complete_time();
  }
  return request;
}

std::string ArialProjectDir(const std::string& state_file) {
  const std::filesystem::path file = std::filesystem::path(state_file).lexically_normal();
  if (!file.is_absolute() || !file.has_filename()) return "";
  const std::filesystem::path dir = file.parent_path();
  return (dir.filename() == ".arial" ? dir.parent_path() : dir).string();
}

std::string ArialProjectPath(const std::string& path, const std::string& imported_from,
                             const std::string& project_dir, bool dot) {
  // An empty path names nothing: joined to a directory it would name the directory.
  if (path.empty()) return path;
  const bool relative = std::filesystem::path(path).is_relative();
  const std::filesystem::path base = AbsoluteDir(imported_from);
  if (relative && base.empty()) return path;
  const std::filesystem::path full =
      (relative ? base / path : std::filesystem::path(path)).lexically_normal();
  const std::filesystem::path project = AbsoluteDir(project_dir);
  const std::filesystem::path inside =
      project.empty() ? std::filesystem::path() : full.lexically_relative(project);
  if (inside.empty() || *inside.begin() == "..") return relative ? full.generic_string() : path;
  // Arial reads it from the project it was imported from, so the file's own spelling holds.
  if (relative && base == project) return path;
  if (inside == ".") return ".";
  return dot ? "./" + inside.generic_string() : inside.generic_string();
}

namespace {

// One workstream of FormatArialState; its paths relative to `project` (ArialProjectPath).
Struct FormatWorkstream(const WorkItem& item, const std::string& imported_from,
                        const std::string& project) {
  const Struct& meta = ArialMeta(item.metadata());
  // Values the item was imported with count only while it is as it was created.
  const bool as_imported = item.version() <= 1;
  Struct w;
  if (const Value* extra = FindField(meta, "extra");
      extra != nullptr && extra->has_struct_value()) {
    w = extra->struct_value();
  }
  SetField(&w, "id", JsonString(item.item_id()));
  // A relative specFile is the file's, relative to the project it was imported from. An item
  // made here has no specFile: its description is its spec's absolute path, or free text that
  // no directory is joined to.
  SetField(&w, "specFile",
           JsonString(FindField(meta, "specFile") != nullptr
                          ? ArialProjectPath(StringField(meta, "specFile"), imported_from, project,
                                             /*dot=*/false)
                          : ArialProjectPath(item.description(), "", project, /*dot=*/false)));
  SetField(&w, "title", JsonString(item.title()));
  SetField(&w, "description", JsonString(item.description()));
  SetField(&w, "status", JsonString(ArialItemStatus(item.status())));
  SetField(&w, "branch", JsonString(item.branch()));
  SetField(&w, "worktreePath", JsonString(item.worktree()));
  if (item.pid() != 0) {
    SetField(&w, "pid", JsonNumber(static_cast<double>(item.pid())));
  } else if (const Value* pid = FindField(meta, "pid"); pid != nullptr && as_imported) {
    SetField(&w, "pid", *pid);
  }
  for (const auto& [key, ts] :
       {std::pair<const char*, const google::protobuf::Timestamp*>{"startedAt", &item.start_time()},
        {"completedAt", &item.complete_time()}}) {
    const bool set =
        std::string(key) == "startedAt" ? item.has_start_time() : item.has_complete_time();
    if (!set) {
      // Imported with it (completedAt of a workstream that is not done), and not changed.
      if (const Value* v = FindField(meta, key); v != nullptr && as_imported) SetField(&w, key, *v);
      continue;
    }
    // The text it was imported with when it names the same time; else as Arial writes one.
    const std::string original = StringField(meta, key);
    absl::StatusOr<absl::Time> parsed = ParseIsoTime(key, original);
    SetField(&w, key,
             JsonString(!original.empty() && parsed.ok() && *parsed == FromTimestamp(*ts)
                            ? original
                            : JsIsoTime(FromTimestamp(*ts))));
  }
  // Retries: those before the import, then one per claim after the first.
  const Value* imported_retries = FindField(meta, "retryCount");
  const double before =
      imported_retries != nullptr && imported_retries->kind_case() == Value::kNumberValue
          ? imported_retries->number_value()
          : 0;
  SetField(&w, "retryCount", JsonNumber(before + std::max(0, item.attempts() - 1)));
  if (!item.last_error().empty()) {
    SetField(&w, "lastError", JsonString(item.last_error()));
  } else if (const Value* v = FindField(meta, "lastError"); v != nullptr && as_imported) {
    SetField(&w, "lastError", *v);
  }
  if (!item.summary().empty()) {
    SetField(&w, "summary", JsonString(item.summary()));
  } else if (const Value* v = FindField(meta, "summary"); v != nullptr && as_imported) {
    SetField(&w, "summary", *v);
  }
  if (!item.adapter().empty()) SetField(&w, "adapter", JsonString(item.adapter()));
  if (const Value* caps = FindField(meta, "requiredCapabilities"); caps != nullptr) {
    SetField(&w, "requiredCapabilities", *caps);
  } else if (item.required_capabilities_size() > 0) {
    SetField(
        &w, "requiredCapabilities",
        JsonStrings({item.required_capabilities().begin(), item.required_capabilities().end()}));
  }
  if (item.dependencies_size() > 0) {
    SetField(&w, "dependencies",
             JsonStrings({item.dependencies().begin(), item.dependencies().end()}));
  }
  return w;
}

}  // namespace

std::string FormatArialState(const Run& run, const std::vector<WorkItem>& items,
                             const std::vector<coordinator::v1::WorkEvent>* events,
                             const std::string& project_dir) {
  const Struct& run_meta = ArialMeta(run.metadata());
  const std::string imported_from = StringField(run_meta, kProjectDirKey);
  const std::string project = ExportProject(run, imported_from, project_dir);
  Struct state;
  SetField(&state, "version", JsonNumber(kArialStateVersion));
  SetField(&state, "specsDir",
           JsonString(ArialProjectPath(run.specs_dir(), imported_from, project, /*dot=*/true)));
  SetField(&state, "baseBranch", JsonString(run.base_branch()));

  // Imported order first, then items added here by id.
  std::vector<const WorkItem*> ordered;
  for (const WorkItem& item : items) ordered.push_back(&item);
  auto index = [](const WorkItem* item) {
    const Value* v = FindField(ArialMeta(item->metadata()), "index");
    return v != nullptr && v->kind_case() == Value::kNumberValue ? v->number_value() : 1e18;
  };
  std::stable_sort(ordered.begin(), ordered.end(), [&](const WorkItem* a, const WorkItem* b) {
    const double ia = index(a);
    const double ib = index(b);
    return ia != ib ? ia < ib : a->item_id() < b->item_id();
  });

  bool changed = false;
  std::vector<std::string> statuses;
  Value workstreams;
  workstreams.mutable_list_value();
  for (const WorkItem* item : ordered) {
    changed = changed || item->version() > 1;
    statuses.push_back(ArialItemStatus(item->status()));
    *workstreams.mutable_list_value()->add_values() =
        StructValue(FormatWorkstream(*item, imported_from, project));
  }

  const std::string previous = FindField(run_meta, "status") != nullptr
                                   ? StringField(run_meta, "status")
                                   : ArialRunStatus(run.status());
  // Arial derives the status on every change of a workstream; unchanged, the file keeps its own
  // (a run with no workstreams is not "completed" until something happens).
  std::string status = previous;
  if (changed) {
    // A run made here started as Arial's createState does: planning.
    const bool imported = FindField(run_meta, "status") != nullptr;
    status = events != nullptr ? ReplayArialRunStatus(imported ? previous : "planning", *events)
                               : DeriveStatus(statuses, previous);
  }
  SetField(&state, "status", JsonString(status));
  const std::string created = StringField(run_meta, "createdAt");
  SetField(&state, "createdAt",
           JsonString(!created.empty() ? created : JsIsoTime(FromTimestamp(run.create_time()))));
  const std::string updated = StringField(run_meta, "updatedAt");
  SetField(&state, "updatedAt",
           JsonString(!changed && !updated.empty() ? updated
                                                   : JsIsoTime(FromTimestamp(run.update_time()))));
  SetField(&state, "workstreams", std::move(workstreams));
  if (const Value* extra = FindField(run_meta, "extra");
      extra != nullptr && extra->has_struct_value()) {
    for (const auto& [key, value] : extra->struct_value().fields()) {
      if (!state.fields().contains(key)) SetField(&state, key, value);
    }
  }
  return WriteJson(StructValue(std::move(state)), 0, ArialKeyOrder());
}

}  // namespace coordctl
