#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "common/validation.h"
#include "common/worker_numbers.h"
#include "coordinator/store/records/keys.h"
#include "coordinator/store/records/page_token.h"
#include "coordinator/store/records/record_codec.h"
#include "coordinator/store/records/tallies.h"
#include "coordinator/store/records/time_util.h"
#include "coordinator/store/work/work_records.h"
#include "coordinator/store/work/work_store.h"
#include "storage/durability_scope.h"
#include "storage/key_codec.h"

namespace coordinator {

using storage::ColumnFamily;
using storage::Transaction;
using v1::ItemStatus;
using v1::Run;
using v1::WorkItem;
using v1::WorkRunRecord;
using work_records::AddCount;
using work_records::ChangeEvent;
using work_records::CurrentLevel;
using work_records::DeriveLevelStatus;
using work_records::FindLevel;
using work_records::GenerateRunId;
using work_records::ItemEvent;
using work_records::kCurrentLayout;
using work_records::kFamily;
using work_records::LevelWord;
using work_records::LockedRun;
using work_records::PutRun;
using work_records::PutWorker;
using work_records::ResolveClaimants;
using work_records::ResolvePolicy;
using work_records::ResolveTtl;
using work_records::StatusWord;
using work_records::ValidatePid;
using work_records::ValidateText;
using work_records::WriteItem;

namespace {

// ---- Importing a run under way (ImportRun). ----

// INVALID_ARGUMENT unless `ts` is unset or a time protobuf can represent.
absl::Status ValidateImportedTime(absl::string_view field, const google::protobuf::Timestamp& ts) {
  constexpr int64_t kMinSeconds = -62135596800;  // 0001-01-01T00:00:00Z
  constexpr int64_t kMaxSeconds = 253402300799;  // 9999-12-31T23:59:59Z
  if (ts.seconds() < kMinSeconds || ts.seconds() > kMaxSeconds || ts.nanos() < 0 ||
      ts.nanos() > 999999999) {
    return absl::InvalidArgumentError(absl::StrCat(field, " is not a valid time"));
  }
  return absl::OkStatus();
}

// Checks the state `input` gives an item and sets it on `item` (normalized, pending): status,
// worker, attempts (the epoch is their number), times, pid, texts; a running item gets a lease
// of `ttl` from `now`.
absl::Status ApplyImportedItemState(const WorkItem& input, const v1::RetryPolicy& policy,
                                    const WorkLimits& limits, absl::Duration ttl, absl::Time now,
                                    WorkItem* item) {
  const std::string& id = input.item_id();
  if (!v1::ItemStatus_IsValid(input.status())) {
    return absl::InvalidArgumentError(
        absl::StrFormat("task %s has status %d, which is not an item status", id, input.status()));
  }
  const ItemStatus status =
      input.status() == v1::ITEM_STATUS_UNSPECIFIED ? v1::ITEM_STATUS_PENDING : input.status();
  if (input.attempts() < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("task %s has %d attempts; attempts are 0 or more", id, input.attempts()));
  }
  if (input.attempts() > policy.max_attempts()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "task %s has used %d attempts; the run's retry policy allows %d (raise max_attempts to "
        "import it)",
        id, input.attempts(), policy.max_attempts()));
  }
  if (!input.worker_id().empty()) {
    RETURN_IF_ERROR(common::ValidateId(absl::StrCat("worker_id of task ", id), input.worker_id()));
  } else if (status == v1::ITEM_STATUS_RUNNING) {
    return absl::InvalidArgumentError(
        absl::StrCat("task ", id, " is running but names no worker_id"));
  }
  RETURN_IF_ERROR(ValidatePid(input.pid()));
  RETURN_IF_ERROR(
      ValidateImportedTime(absl::StrCat("start_time of task ", id), input.start_time()));
  RETURN_IF_ERROR(
      ValidateImportedTime(absl::StrCat("complete_time of task ", id), input.complete_time()));
  RETURN_IF_ERROR(
      ValidateImportedTime(absl::StrCat("checkpoint_time of task ", id), input.checkpoint_time()));
  if (input.has_complete_time() && status != v1::ITEM_STATUS_DONE) {
    return absl::InvalidArgumentError(absl::StrCat("task ", id, " is ", StatusWord(status),
                                                   " but has a complete_time; only a done task "
                                                   "has one"));
  }
  for (const auto& [field, value] :
       {std::pair<const char*, const std::string*>{"last_error", &input.last_error()},
        {"summary", &input.summary()},
        {"status_reason", &input.status_reason()},
        {"checkpoint", &input.checkpoint()},
        {"progress", &input.progress()}}) {
    RETURN_IF_ERROR(ValidateText(absl::StrCat(field, " of task ", id), *value, limits));
  }
  item->set_status(status);
  item->set_worker_id(input.worker_id());
  // A running item was claimed at least once; every claim is an attempt and an epoch.
  const int attempts =
      status == v1::ITEM_STATUS_RUNNING ? std::max(1, input.attempts()) : input.attempts();
  item->set_attempts(attempts);
  item->set_epoch(attempts);
  if (input.has_start_time()) *item->mutable_start_time() = input.start_time();
  if (input.has_complete_time()) *item->mutable_complete_time() = input.complete_time();
  item->set_last_error(input.last_error());
  item->set_summary(input.summary());
  item->set_status_reason(input.status_reason());
  item->set_checkpoint(input.checkpoint());
  if (!input.checkpoint().empty()) {
    *item->mutable_checkpoint_time() =
        input.has_checkpoint_time() ? input.checkpoint_time() : ToProtoTime(now);
  }
  item->set_progress(input.progress());
  if (status == v1::ITEM_STATUS_RUNNING) {
    if (!item->has_start_time()) *item->mutable_start_time() = ToProtoTime(now);
    item->set_pid(input.pid());
    *item->mutable_lease_expire_time() = ToProtoTime(now + ttl);
    *item->mutable_lease_ttl() = ToProtoDuration(ttl);
  }
  return absl::OkStatus();
}

// INVALID_ARGUMENT when imported states contradict the claim rules: a running or done task
// whose dependency is not done, or a running task above a level with tasks not done.
absl::Status CheckImportedItems(const std::vector<WorkItem>& items) {
  absl::flat_hash_map<absl::string_view, const WorkItem*> by_id;
  std::optional<int64_t> lowest_open;
  for (const WorkItem& item : items) {
    by_id.emplace(item.item_id(), &item);
    if (item.status() != v1::ITEM_STATUS_DONE &&
        (!lowest_open.has_value() || item.level() < *lowest_open)) {
      lowest_open = item.level();
    }
  }
  for (const WorkItem& item : items) {
    if (item.status() != v1::ITEM_STATUS_RUNNING && item.status() != v1::ITEM_STATUS_DONE) {
      continue;
    }
    for (const std::string& dep : item.dependencies()) {
      const WorkItem& dependency = *by_id.at(dep);
      if (dependency.status() != v1::ITEM_STATUS_DONE) {
        return absl::InvalidArgumentError(
            absl::StrCat("task ", item.item_id(), " is ", StatusWord(item.status()),
                         " but its dependency ", dep, " is ", StatusWord(dependency.status()),
                         "; a task runs only after its "
                         "dependencies are done"));
      }
    }
    if (item.status() == v1::ITEM_STATUS_RUNNING && item.level() > *lowest_open) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "task %s (level %d) is running but level %d has tasks not done; only the lowest level "
          "with open tasks runs",
          item.item_id(), item.level(), *lowest_open));
    }
  }
  return absl::OkStatus();
}

// Applies the levels `settings` marks merged (and the level times it gives) to `run`, whose
// level states are derived from its items: a merged level must be complete, and every level
// below it merged.
absl::Status ApplyImportedLevels(const Run& settings, const WorkLimits& limits, absl::Time now,
                                 Run* run) {
  std::map<int64_t, const v1::LevelState*> given;
  for (const v1::LevelState& level : settings.level_states()) {
    if (!v1::LevelStatus_IsValid(level.status())) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "level %d has status %d, which is not a level status", level.level(), level.status()));
    }
    if (!given.emplace(level.level(), &level).second) {
      return absl::InvalidArgumentError(
          absl::StrFormat("level %d appears more than once", level.level()));
    }
    if (FindLevel(run, level.level(), /*create=*/false) == nullptr) {
      std::vector<std::string> have;
      for (const v1::LevelState& l : run->level_states()) have.push_back(absl::StrCat(l.level()));
      return absl::InvalidArgumentError(
          absl::StrFormat("level %d has no tasks (the run's levels: %s)", level.level(),
                          absl::StrJoin(have, ", ")));
    }
    const std::string name = absl::StrCat("level ", level.level());
    RETURN_IF_ERROR(common::ValidateSize(absl::StrCat("merge_commit of ", name),
                                         level.merge_commit(), limits.max_path_bytes));
    RETURN_IF_ERROR(ValidateImportedTime(absl::StrCat("start_time of ", name), level.start_time()));
    RETURN_IF_ERROR(
        ValidateImportedTime(absl::StrCat("complete_time of ", name), level.complete_time()));
    RETURN_IF_ERROR(ValidateImportedTime(absl::StrCat("merge_time of ", name), level.merge_time()));
  }
  bool lower_merged = true;
  for (v1::LevelState& level : *run->mutable_level_states()) {
    auto it = given.find(level.level());
    const v1::LevelState* in = it == given.end() ? nullptr : it->second;
    if (in != nullptr && in->has_start_time() && level.status() != v1::LEVEL_STATUS_PENDING) {
      *level.mutable_start_time() = in->start_time();
    }
    if (in != nullptr && in->has_complete_time() && level.status() == v1::LEVEL_STATUS_COMPLETE) {
      *level.mutable_complete_time() = in->complete_time();
    }
    const bool merged = in != nullptr && in->status() == v1::LEVEL_STATUS_MERGED;
    if (merged) {
      if (level.status() != v1::LEVEL_STATUS_COMPLETE) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "level %d is marked merged but is %s (%d of %d tasks done); only a complete level can "
            "be merged",
            level.level(), LevelWord(level.status()), level.done(), level.total()));
      }
      if (!lower_merged) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "level %d is marked merged but a level below it is not; levels merge in order",
            level.level()));
      }
      level.set_status(v1::LEVEL_STATUS_MERGED);
      *level.mutable_merge_time() = in->has_merge_time() ? in->merge_time() : ToProtoTime(now);
      level.set_merge_commit(in->merge_commit());
    }
    lower_merged = lower_merged && merged;
  }
  return absl::OkStatus();
}

// The worker registry of an imported run: the workers `state` lists, and the holder of every
// running item (registered when not listed). A worker holding items is busy.
absl::StatusOr<std::vector<v1::RunWorker>> ImportedWorkers(const v1::ImportRunRequest& state,
                                                           absl::string_view run_id,
                                                           const std::vector<WorkItem>& items,
                                                           const WorkLimits& limits,
                                                           absl::Time now) {
  if (static_cast<size_t>(state.workers_size()) > limits.max_items) {
    return absl::ResourceExhaustedError(absl::StrFormat("the run lists %d workers; the limit is %d",
                                                        state.workers_size(), limits.max_items));
  }
  std::map<std::string, v1::RunWorker> workers;
  for (const v1::RunWorker& in : state.workers()) {
    RETURN_IF_ERROR(common::ValidateId("worker_id", in.worker_id()));
    const std::string name = absl::StrCat("worker ", in.worker_id());
    if (!v1::WorkerStatus_IsValid(in.status())) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s has status %d, which is not a worker status", name, in.status()));
    }
    RETURN_IF_ERROR(ValidateCapabilities(absl::StrCat("capability of ", name), in.capabilities()));
    RETURN_IF_ERROR(ValidatePid(in.pid()));
    if (in.items_completed() < 0 || in.items_failed() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, " has a negative count of items completed or failed"));
    }
    RETURN_IF_ERROR(common::ValidateSize(absl::StrCat("status_reason of ", name),
                                         in.status_reason(), limits.max_text_bytes));
    RETURN_IF_ERROR(ValidateImportedTime(absl::StrCat("last_heartbeat_time of ", name),
                                         in.last_heartbeat_time()));
    v1::RunWorker worker;
    worker.set_worker_id(in.worker_id());
    worker.set_run_id(std::string(run_id));
    worker.set_status(in.status() == v1::WORKER_STATUS_UNSPECIFIED ? v1::WORKER_STATUS_IDLE
                                                                   : in.status());
    if (in.has_last_heartbeat_time()) {
      *worker.mutable_last_heartbeat_time() = in.last_heartbeat_time();
    }
    *worker.mutable_capabilities() = in.capabilities();
    worker.set_pid(in.pid());
    worker.set_items_completed(in.items_completed());
    worker.set_items_failed(in.items_failed());
    worker.set_status_reason(in.status_reason());
    *worker.mutable_create_time() = ToProtoTime(now);
    if (!workers.emplace(in.worker_id(), std::move(worker)).second) {
      return absl::InvalidArgumentError(absl::StrCat(name, " appears more than once"));
    }
  }
  for (const WorkItem& item : items) {
    if (item.status() != v1::ITEM_STATUS_RUNNING) continue;
    v1::RunWorker& worker = workers[item.worker_id()];
    if (worker.worker_id().empty()) {
      worker.set_worker_id(item.worker_id());
      worker.set_run_id(std::string(run_id));
      *worker.mutable_create_time() = ToProtoTime(now);
      *worker.mutable_last_heartbeat_time() = ToProtoTime(now);
      if (item.pid() != 0) worker.set_pid(item.pid());
    }
    worker.add_held_items(item.item_id());
    worker.set_current_item(item.item_id());
  }
  // Numbers as workers joining one by one would get them: those named by a free number first.
  absl::flat_hash_set<int64_t> taken;
  for (bool named_by_number : {true, false}) {
    for (auto& [id, worker] : workers) {
      if (common::WorkerIdAsNumber(id).has_value() != named_by_number) continue;
      worker.set_number(common::NewWorkerNumber(id, taken));
      taken.insert(worker.number());
    }
  }
  std::vector<v1::RunWorker> out;
  for (auto& entry : workers) {
    v1::RunWorker& worker = entry.second;
    if (!worker.held_items().empty()) {
      worker.set_status(v1::WORKER_STATUS_BUSY);
    } else if (worker.status() == v1::WORKER_STATUS_BUSY) {
      return absl::InvalidArgumentError(
          absl::StrCat("worker ", worker.worker_id(), " is busy but holds no running task"));
    }
    out.push_back(std::move(worker));
  }
  return out;
}

// The settings of a new run: its id, kind and sizes.
absl::Status ValidateRunSettings(const Run& settings, const WorkLimits& limits) {
  RETURN_IF_ERROR(common::ValidateId("run_id", settings.run_id()));
  if (settings.kind() == v1::RUN_KIND_UNSPECIFIED || !v1::RunKind_IsValid(settings.kind())) {
    return absl::InvalidArgumentError("kind must be workstreams or task graph");
  }
  RETURN_IF_ERROR(common::ValidateSize("specs_dir", settings.specs_dir(), limits.max_path_bytes));
  RETURN_IF_ERROR(
      common::ValidateSize("base_branch", settings.base_branch(), limits.max_path_bytes));
  RETURN_IF_ERROR(common::ValidateSize("feature", settings.feature(), limits.max_path_bytes));
  if (settings.metadata().ByteSizeLong() + settings.levels().ByteSizeLong() >
      limits.max_metadata_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("the run's metadata and levels are %d bytes; the limit is %d bytes",
                        settings.metadata().ByteSizeLong() + settings.levels().ByteSizeLong(),
                        limits.max_metadata_bytes));
  }
  return absl::OkStatus();
}

// A new run's counts, claims, open items by level and level states, from its items as they are
// (pending, or as imported).
void TallyItems(const std::vector<WorkItem>& items, absl::Time now, WorkRunRecord* record) {
  Run* run = record->mutable_run();
  run->mutable_counts()->set_total(static_cast<int64_t>(items.size()));
  for (const WorkItem& item : items) {
    AddCount(run->mutable_counts(), item.status(), +1);
    // Every claim is an attempt; an item that left pending was claimed at least once.
    run->set_claim_count(
        run->claim_count() +
        std::max<int64_t>(item.attempts(), item.status() != v1::ITEM_STATUS_PENDING ? 1 : 0));
    if (item.status() != v1::ITEM_STATUS_DONE) ++(*record->mutable_open_by_level())[item.level()];
    v1::LevelState* level = FindLevel(run, item.level(), /*create=*/true);
    level->set_total(level->total() + 1);
    if (item.status() == v1::ITEM_STATUS_DONE) level->set_done(level->done() + 1);
    if (item.status() == v1::ITEM_STATUS_RUNNING) level->set_running(level->running() + 1);
    if (item.has_start_time() &&
        (!level->has_start_time() ||
         FromProtoTime(item.start_time()) < FromProtoTime(level->start_time()))) {
      *level->mutable_start_time() = item.start_time();
    }
    if (item.has_complete_time() &&
        (!level->has_complete_time() ||
         FromProtoTime(item.complete_time()) > FromProtoTime(level->complete_time()))) {
      *level->mutable_complete_time() = item.complete_time();
    }
  }
  for (v1::LevelState& level : *run->mutable_level_states()) {
    // A level started before without the time being known starts with the import.
    if (!level.has_start_time() && (level.done() > 0 || level.running() > 0)) {
      *level.mutable_start_time() = ToProtoTime(now);
    }
    level.set_status(DeriveLevelStatus(level));
    if (level.status() == v1::LEVEL_STATUS_COMPLETE && !level.has_complete_time()) {
      *level.mutable_complete_time() = ToProtoTime(now);
    }
    if (level.status() != v1::LEVEL_STATUS_COMPLETE) level.clear_complete_time();
  }
}

}  // namespace

absl::StatusOr<Run> WorkStore::CreateRun(const v1::CreateRunRequest& request,
                                         const Access& access) {
  std::vector<WorkItem> items(request.items().begin(), request.items().end());
  return CreateRunFromItems(request.run(), std::move(items), access);
}

absl::StatusOr<Run> WorkStore::ImportTaskGraph(const v1::ImportTaskGraphRequest& request,
                                               const Access& access) {
  ParsedTaskGraph parsed;
  switch (request.source_case()) {
    case v1::ImportTaskGraphRequest::kGraph:
      parsed.graph = request.graph();
      break;
    case v1::ImportTaskGraphRequest::kGraphJson: {
      ASSIGN_OR_RETURN(parsed, ParseTaskGraphJson(request.graph_json(), limits_));
      break;
    }
    default:
      return absl::InvalidArgumentError("graph or graph_json is required");
  }
  Run settings;
  settings.set_run_id(request.run_id());
  settings.set_kind(v1::RUN_KIND_TASK_GRAPH);
  settings.set_feature(request.feature().empty() ? parsed.graph.feature() : request.feature());
  *settings.mutable_levels() = parsed.graph.levels();
  *settings.mutable_metadata() = std::move(parsed.metadata);
  *settings.mutable_retry_policy() = request.retry_policy();
  *settings.mutable_claimants() = request.claimants();
  return CreateRunFromItems(std::move(settings), TaskGraphToItems(parsed.graph), access);
}

absl::StatusOr<Run> WorkStore::CreateRunFromItems(Run settings, std::vector<WorkItem> items,
                                                  const Access& access) {
  ASSIGN_OR_RETURN(v1::ImportRunResponse created,
                   CreateRunWithState(std::move(settings), std::move(items), nullptr, access));
  return std::move(*created.mutable_run());
}

absl::StatusOr<v1::ImportRunResponse> WorkStore::ImportRun(const v1::ImportRunRequest& request,
                                                           const Access& access) {
  std::vector<WorkItem> items(request.items().begin(), request.items().end());
  return CreateRunWithState(request.run(), std::move(items), &request, access);
}

absl::StatusOr<v1::ImportRunResponse> WorkStore::CreateRunWithState(
    Run settings, std::vector<WorkItem> items, const v1::ImportRunRequest* state,
    const Access& access) {
  const absl::Time now = Now();
  if (settings.run_id().empty()) settings.set_run_id(GenerateRunId(now));
  RETURN_IF_ERROR(ValidateRunSettings(settings, limits_));
  ASSIGN_OR_RETURN(v1::RetryPolicy policy, ResolvePolicy(settings.retry_policy(), limits_));
  ASSIGN_OR_RETURN(std::vector<std::string> claimants,
                   ResolveClaimants(settings.claimants(), access));
  RETURN_IF_ERROR(NormalizeAndValidateItems(&items, limits_));

  LockedRun locked;
  WorkRunRecord& record = locked.record;
  record.set_layout(kCurrentLayout);
  Run& run = *record.mutable_run();
  run.set_run_id(settings.run_id());
  run.set_kind(settings.kind());
  run.set_specs_dir(settings.specs_dir());
  run.set_base_branch(settings.base_branch());
  run.set_feature(settings.feature());
  *run.mutable_retry_policy() = std::move(policy);
  *run.mutable_levels() = settings.levels();
  *run.mutable_metadata() = settings.metadata();
  for (std::string& claimant : claimants) run.add_claimants(std::move(claimant));
  *run.mutable_create_time() = ToProtoTime(now);
  *run.mutable_update_time() = ToProtoTime(now);
  for (WorkItem& item : items) {
    item.set_run_id(run.run_id());
    item.set_status(v1::ITEM_STATUS_PENDING);
    *item.mutable_create_time() = ToProtoTime(now);
  }
  std::vector<v1::RunWorker> workers;
  v1::ImportRunResponse response;
  if (state != nullptr) {
    // The items keep their order through NormalizeAndValidateItems: state->items(i) is items[i].
    ASSIGN_OR_RETURN(const absl::Duration ttl, ResolveTtl(state->lease_ttl()));
    for (size_t i = 0; i < items.size(); ++i) {
      RETURN_IF_ERROR(ApplyImportedItemState(state->items(static_cast<int>(i)), run.retry_policy(),
                                             limits_, ttl, now, &items[i]));
    }
    RETURN_IF_ERROR(CheckImportedItems(items));
  }
  TallyItems(items, now, &record);
  if (state != nullptr) {
    RETURN_IF_ERROR(ApplyImportedLevels(settings, limits_, now, &run));
    ASSIGN_OR_RETURN(workers, ImportedWorkers(*state, run.run_id(), items, limits_, now));
  }
  run.set_status(DeriveRunStatus(run));
  run.set_current_level(CurrentLevel(record));
  {
    v1::WorkEvent created;
    created.set_kind(v1::WorkEvent::KIND_RUN_CREATED);
    created.set_run_status(run.status());
    locked.Log(std::move(created), now);
  }
  for (const WorkItem& item : items) {
    locked.Log(ItemEvent(v1::WorkEvent::KIND_ITEM_CREATED, item), now);
    if (item.status() != v1::ITEM_STATUS_RUNNING) continue;
    v1::ImportedLease* lease = response.add_leases();
    lease->set_item_id(item.item_id());
    lease->set_worker_id(item.worker_id());
    lease->set_lease(EncodeLease(run.run_id(), item.item_id(), item.epoch()));
    lease->set_epoch(item.epoch());
    *lease->mutable_lease_expire_time() = item.lease_expire_time();
  }

  std::vector<v1::RunEvent> events;
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    events.clear();
    absl::StatusOr<std::string> existing = txn.GetForUpdate(kFamily, keys::RunHeader(run.run_id()));
    if (existing.ok()) {
      return absl::AlreadyExistsError(absl::StrCat("run ", run.run_id(), " already exists"));
    }
    if (!absl::IsNotFound(existing.status())) return existing.status();
    // PutRun clears the log once written; a retried transaction writes it again.
    LockedRun attempt = locked;
    RETURN_IF_ERROR(PutRun(txn, attempt));
    for (const WorkItem& input : items) {
      WorkItem item = input;
      RETURN_IF_ERROR(WriteItem(txn, WorkItem(), &item, now));
      events.push_back(ChangeEvent(item, nullptr));
    }
    for (const v1::RunWorker& input : workers) {
      v1::RunWorker worker = input;
      RETURN_IF_ERROR(PutWorker(txn, &worker, now));
    }
    return absl::OkStatus();
  }));
  // Each item came into being: a change like any other (the web console's feed learns of the
  // new run from it). The run goes with the last one (a run has at least one item).
  *events.back().mutable_run() = run;
  Publish(std::move(events));
  *response.mutable_run() = run;
  return response;
}

}  // namespace coordinator
