#include "coordinator/store/work/work_store.h"

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
#include "coordinator/store/records/keys.h"
#include "coordinator/store/records/page_token.h"
#include "coordinator/store/records/record_codec.h"
#include "coordinator/store/records/tallies.h"
#include "coordinator/store/records/time_util.h"
#include "coordinator/store/work/work_records.h"
#include "storage/durability_scope.h"
#include "storage/key_codec.h"

namespace coordinator {

using storage::ColumnFamily;
using storage::Transaction;
using v1::ItemStatus;
using v1::Run;
using v1::WorkItem;
using v1::WorkRunRecord;
using work_records::ChangeEvent;
using work_records::CheckClaimant;
using work_records::DecodeRun;
using work_records::FindLevel;
using work_records::IndexMicros;
using work_records::ItemEvent;
using work_records::kDefaultEventPageSize;
using work_records::kDefaultItemPageSize;
using work_records::kDefaultRunPageSize;
using work_records::kDefaultWorkerPageSize;
using work_records::kFamily;
using work_records::kMaxLeaseBytes;
using work_records::kMaxReasonBytes;
using work_records::LevelWord;
using work_records::LockedRun;
using work_records::LockRun;
using work_records::LockWorker;
using work_records::PutRun;
using work_records::PutWorker;
using work_records::ReadItem;
using work_records::Rederive;
using work_records::RunNotFound;
using work_records::RunTally;
using work_records::SetWorkerStatus;
using work_records::TxnTallyRun;
using work_records::UpgradeForRead;
using work_records::WriteItem;

std::string EncodeLease(absl::string_view run_id, absl::string_view item_id, int64_t epoch) {
  v1::LeaseToken token;
  token.set_run_id(std::string(run_id));
  token.set_item_id(std::string(item_id));
  token.set_epoch(epoch);
  return absl::WebSafeBase64Escape(token.SerializeAsString());
}

absl::StatusOr<v1::LeaseToken> DecodeLease(absl::string_view lease) {
  if (lease.empty()) return absl::InvalidArgumentError("lease is required");
  std::string raw;
  v1::LeaseToken token;
  if (lease.size() > kMaxLeaseBytes || !absl::WebSafeBase64Unescape(lease, &raw) ||
      !token.ParseFromString(raw) || token.epoch() <= 0 ||
      !common::ValidateId("run_id", token.run_id()).ok() ||
      !common::ValidateId("item_id", token.item_id()).ok()) {
    return absl::InvalidArgumentError(
        "lease is malformed: pass the lease string exactly as Claim returned it");
  }
  return token;
}

absl::Time MonotonicNow() {
  return absl::UnixEpoch() + absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
}

LeaseObservations::LeaseObservations(Clock monotonic)
    : clock_(monotonic != nullptr ? std::move(monotonic) : Clock(MonotonicNow)) {}

WorkStore::WorkStore(storage::Store* store, WorkNotifier* notifier, WorkLimits limits, Clock clock,
                     LeaseExpiry expiry)
    : store_(store),
      notifier_(notifier),
      limits_(limits),
      clock_(clock != nullptr ? std::move(clock) : Clock([] { return absl::Now(); })),
      expiry_(expiry) {}

void WorkStore::Publish(std::vector<v1::RunEvent> events) {
  if (notifier_ == nullptr || events.empty()) return;
  // The events carry the changed items to watchers, so they go out only once the change is
  // durable: when a call defers its durability wait (storage/durability_scope.h), from its
  // completion; otherwise now, as the transaction already waited.
  storage::DurabilityScope::AfterDurable(store_,
                                         [notifier = notifier_, events = std::move(events)]() {
                                           for (const v1::RunEvent& event : events)
                                             notifier->Publish(event);
                                         });
}

absl::StatusOr<Run> WorkStore::GetRun(absl::string_view run_id) {
  RETURN_IF_ERROR(common::ValidateId("run_id", run_id));
  absl::StatusOr<std::string> raw = store_->Get(kFamily, keys::RunHeader(run_id));
  if (absl::IsNotFound(raw.status())) return RunNotFound(run_id);
  RETURN_IF_ERROR(raw.status());
  ASSIGN_OR_RETURN(WorkRunRecord record, DecodeRun(*raw));
  ASSIGN_OR_RETURN(record, UpgradeForRead(store_, std::move(record)));
  return std::move(*record.mutable_run());
}

absl::StatusOr<v1::ListRunsResponse> WorkStore::ListRuns(const v1::ListRunsRequest& request) {
  ASSIGN_OR_RETURN(const int page_size, ResolvePageSize(request.page_size(), kDefaultRunPageSize,
                                                        limits_.max_page_size));
  ASSIGN_OR_RETURN(std::string resume, DecodePageToken(request.page_token(), "runs", ""));
  const std::string all_prefix = keys::AllRunsPrefix();
  std::unique_ptr<storage::Iterator> it =
      store_->NewIterator(kFamily, all_prefix, storage::PrefixUpperBound(all_prefix));
  if (!resume.empty()) it->Seek(keys::RunPrefix(resume));
  v1::ListRunsResponse response;
  while (it->Valid()) {
    storage::KeyReader reader(it->key());
    RETURN_IF_ERROR(reader.ReadByte().status());
    ASSIGN_OR_RETURN(std::string run_id, reader.ReadString());
    ASSIGN_OR_RETURN(uint8_t kind, reader.ReadByte());
    if (kind == keys::kRunHeader) {
      if (response.runs_size() == page_size) {
        response.set_next_page_token(EncodePageToken("runs", "", run_id));
        break;
      }
      ASSIGN_OR_RETURN(WorkRunRecord record, DecodeRun(it->value()));
      ASSIGN_OR_RETURN(record, UpgradeForRead(store_, std::move(record)));
      *response.add_runs() = std::move(*record.mutable_run());
    }
    // Skip the run's items and index entries in one seek.
    it->Seek(storage::PrefixUpperBound(keys::RunPrefix(run_id)));
  }
  RETURN_IF_ERROR(it->status());
  return response;
}

absl::StatusOr<v1::ListItemsResponse> WorkStore::ListItems(const v1::ListItemsRequest& request) {
  RETURN_IF_ERROR(GetRun(request.run_id()).status());
  ASSIGN_OR_RETURN(const int page_size, ResolvePageSize(request.page_size(), kDefaultItemPageSize,
                                                        limits_.max_page_size));
  // A token names the filter it was issued for (none: the run alone, as before filters).
  const std::string filter =
      request.status() == v1::ITEM_STATUS_UNSPECIFIED
          ? request.run_id()
          : absl::StrCat(request.run_id(), "\n", static_cast<int>(request.status()));
  ASSIGN_OR_RETURN(std::string resume, DecodePageToken(request.page_token(), "items", filter));
  const std::string prefix = keys::RunItemPrefix(request.run_id());
  std::unique_ptr<storage::Iterator> it =
      store_->NewIterator(kFamily, prefix, storage::PrefixUpperBound(prefix));
  if (!resume.empty()) it->Seek(keys::RunItem(request.run_id(), resume));
  const ItemStatus wanted = request.status();
  if (!v1::ItemStatus_IsValid(wanted)) {
    return absl::InvalidArgumentError(absl::StrCat("status ", wanted, " is not an item status"));
  }
  v1::ListItemsResponse response;
  for (; it->Valid(); it->Next()) {
    WorkItem item;
    RETURN_IF_ERROR(DecodeRecord(it->value(), &item));
    if (wanted != v1::ITEM_STATUS_UNSPECIFIED && item.status() != wanted) continue;
    if (response.items_size() == page_size) {
      response.set_next_page_token(EncodePageToken("items", filter, item.item_id()));
      break;
    }
    *response.add_items() = std::move(item);
  }
  RETURN_IF_ERROR(it->status());
  return response;
}

absl::StatusOr<std::vector<WorkItem>> WorkStore::AllItems(absl::string_view run_id) {
  RETURN_IF_ERROR(GetRun(run_id).status());
  const std::string prefix = keys::RunItemPrefix(run_id);
  std::unique_ptr<storage::Iterator> it =
      store_->NewIterator(kFamily, prefix, storage::PrefixUpperBound(prefix));
  std::vector<WorkItem> items;
  for (; it->Valid() && items.size() < limits_.max_items; it->Next()) {
    RETURN_IF_ERROR(DecodeRecord(it->value(), &items.emplace_back()));
  }
  RETURN_IF_ERROR(it->status());
  return items;
}

absl::StatusOr<WorkItem> WorkStore::GetItem(absl::string_view run_id, absl::string_view item_id) {
  RETURN_IF_ERROR(common::ValidateId("run_id", run_id));
  RETURN_IF_ERROR(common::ValidateId("item_id", item_id));
  return ReadItem(store_, run_id, item_id);
}

absl::StatusOr<v1::AddItemsResponse> WorkStore::AddItems(const v1::AddItemsRequest& request) {
  RETURN_IF_ERROR(common::ValidateId("run_id", request.run_id()));
  if (request.items().empty()) return absl::InvalidArgumentError("items are required");
  if (static_cast<size_t>(request.items_size()) > limits_.max_items) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%d items are added; a run holds at most %d", request.items_size(), limits_.max_items));
  }
  const std::string& run_id = request.run_id();
  v1::AddItemsResponse response;
  std::vector<v1::RunEvent> events;
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    response.Clear();
    events.clear();
    const absl::Time now = Now();
    ASSIGN_OR_RETURN(LockedRun locked, LockRun(txn, run_id));
    Run& run = locked.run();
    if (IsTerminal(run)) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "run %s has ended (%s): items can be added only to a run that has not", run_id,
          run.status() == v1::RUN_STATUS_COMPLETED ? "completed" : "failed, nothing left to run"));
    }
    // The run's items, then the new ones: checked together, the stored ones left as they are.
    std::vector<WorkItem> all;
    const std::string prefix = keys::RunItemPrefix(run_id);
    std::unique_ptr<storage::Iterator> it =
        txn.NewIterator(kFamily, prefix, storage::PrefixUpperBound(prefix));
    for (; it->Valid(); it->Next()) RETURN_IF_ERROR(DecodeRecord(it->value(), &all.emplace_back()));
    RETURN_IF_ERROR(it->status());
    const size_t existing = all.size();
    all.insert(all.end(), request.items().begin(), request.items().end());
    RETURN_IF_ERROR(NormalizeAndValidateItems(&all, limits_, existing));
    const int64_t current = run.current_level();
    for (size_t i = existing; i < all.size(); ++i) {
      const WorkItem& item = all[i];
      if (item.level() >= current) continue;
      const v1::LevelState* level = FindLevel(&run, item.level(), /*create=*/false);
      return absl::FailedPreconditionError(absl::StrFormat(
          "task %s is at level %d, below the run's current level %d%s: add it at level %d or "
          "above",
          item.item_id(), item.level(), current,
          level != nullptr
              ? absl::StrCat(" (level ", item.level(), " is ", LevelWord(level->status()), ")")
              : std::string(),
          current));
    }
    for (size_t i = existing; i < all.size(); ++i) {
      WorkItem& item = all[i];
      item.set_run_id(run_id);
      item.set_status(v1::ITEM_STATUS_PENDING);
      *item.mutable_create_time() = ToProtoTime(now);
      RETURN_IF_ERROR(WriteItem(txn, WorkItem(), &item, now));
      run.mutable_counts()->set_total(run.counts().total() + 1);
      run.mutable_counts()->set_pending(run.counts().pending() + 1);
      ++(*locked.record.mutable_open_by_level())[item.level()];
      v1::LevelState* level = FindLevel(&run, item.level(), /*create=*/true);
      level->set_total(level->total() + 1);
      locked.Log(ItemEvent(v1::WorkEvent::KIND_ITEM_CREATED, item), now);
      *response.add_items() = item;
    }
    Rederive(&locked, now);
    RETURN_IF_ERROR(PutRun(txn, locked));
    *response.mutable_run() = run;
    for (const WorkItem& item : response.items()) events.push_back(ChangeEvent(item, &run));
    return absl::OkStatus();
  }));
  Publish(std::move(events));
  return response;
}

absl::StatusOr<Run> WorkStore::MergeLevel(const v1::MergeLevelRequest& request) {
  RETURN_IF_ERROR(common::ValidateId("run_id", request.run_id()));
  RETURN_IF_ERROR(common::ValidateOptionalId("merge_commit", request.merge_commit()));
  Run result;
  std::vector<v1::RunEvent> events;
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    events.clear();
    const absl::Time now = Now();
    ASSIGN_OR_RETURN(LockedRun locked, LockRun(txn, request.run_id()));
    Run& run = locked.run();
    v1::LevelState* level = FindLevel(&run, request.level(), /*create=*/false);
    if (level == nullptr) {
      std::vector<std::string> levels;
      for (const v1::LevelState& l : run.level_states()) levels.push_back(absl::StrCat(l.level()));
      return absl::NotFoundError(absl::StrFormat("run %s has no level %d (its levels: %s)",
                                                 run.run_id(), request.level(),
                                                 absl::StrJoin(levels, ", ")));
    }
    if (level->status() != v1::LEVEL_STATUS_COMPLETE) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "level %d of run %s is %s (%d of %d items done); only a complete level can be merged",
          level->level(), run.run_id(), LevelWord(level->status()), level->done(), level->total()));
    }
    for (const v1::LevelState& lower : run.level_states()) {
      if (lower.level() >= level->level()) break;
      if (lower.status() != v1::LEVEL_STATUS_MERGED) {
        return absl::FailedPreconditionError(
            absl::StrFormat("level %d of run %s is %s: merge the levels in order, level %d first",
                            lower.level(), run.run_id(), LevelWord(lower.status()), lower.level()));
      }
    }
    level->set_status(v1::LEVEL_STATUS_MERGED);
    *level->mutable_merge_time() = ToProtoTime(now);
    level->set_merge_commit(request.merge_commit());
    v1::WorkEvent event;
    event.set_kind(v1::WorkEvent::KIND_LEVEL_CHANGED);
    event.set_level(level->level());
    event.set_level_status(v1::LEVEL_STATUS_MERGED);
    event.set_message(request.merge_commit());
    locked.Log(std::move(event), now);
    Rederive(&locked, now);
    RETURN_IF_ERROR(PutRun(txn, locked));
    result = run;
    return absl::OkStatus();
  }));
  return result;
}

absl::StatusOr<v1::ListWorkersResponse> WorkStore::ListWorkers(
    const v1::ListWorkersRequest& request) {
  RETURN_IF_ERROR(GetRun(request.run_id()).status());
  ASSIGN_OR_RETURN(const int page_size, ResolvePageSize(request.page_size(), kDefaultWorkerPageSize,
                                                        limits_.max_page_size));
  ASSIGN_OR_RETURN(std::string resume,
                   DecodePageToken(request.page_token(), "workers", request.run_id()));
  const std::string prefix = keys::RunWorkerPrefix(request.run_id());
  std::unique_ptr<storage::Iterator> it =
      store_->NewIterator(kFamily, prefix, storage::PrefixUpperBound(prefix));
  if (!resume.empty()) it->Seek(keys::RunWorker(request.run_id(), resume));
  v1::ListWorkersResponse response;
  for (; it->Valid(); it->Next()) {
    v1::RunWorker worker;
    RETURN_IF_ERROR(DecodeRecord(it->value(), &worker));
    if (response.workers_size() == page_size) {
      response.set_next_page_token(
          EncodePageToken("workers", request.run_id(), worker.worker_id()));
      break;
    }
    *response.add_workers() = std::move(worker);
  }
  RETURN_IF_ERROR(it->status());
  return response;
}

absl::StatusOr<v1::RunWorker> WorkStore::StopWorker(const v1::StopWorkerRequest& request,
                                                    const Access& access) {
  RETURN_IF_ERROR(common::ValidateId("run_id", request.run_id()));
  RETURN_IF_ERROR(common::ValidateId("worker_id", request.worker_id()));
  RETURN_IF_ERROR(common::ValidateSize("reason", request.reason(), kMaxReasonBytes));
  v1::RunWorker result;
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    const absl::Time now = Now();
    ASSIGN_OR_RETURN(LockedRun locked, LockRun(txn, request.run_id()));
    RETURN_IF_ERROR(CheckClaimant(access, locked.record.run(), "stop workers of"));
    ASSIGN_OR_RETURN(std::optional<v1::RunWorker> worker,
                     LockWorker(txn, request.run_id(), request.worker_id()));
    if (!worker.has_value()) {
      return absl::NotFoundError(absl::StrCat("worker ", request.worker_id(), " of run ",
                                              request.run_id(),
                                              " not found (a worker registers by claiming)"));
    }
    if (!worker->held_items().empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "worker ", request.worker_id(), " holds item ", worker->current_item(), " of run ",
          request.run_id(), ": complete or fail it first, or let its lease expire"));
    }
    SetWorkerStatus(&locked, &*worker, v1::WORKER_STATUS_STOPPED,
                    request.reason().empty() ? "stopped by StopWorker" : request.reason(), now);
    RETURN_IF_ERROR(PutWorker(txn, &*worker, now));
    if (!locked.log.empty()) RETURN_IF_ERROR(PutRun(txn, locked));
    result = *std::move(worker);
    return absl::OkStatus();
  }));
  return result;
}

absl::StatusOr<v1::ListEventsResponse> WorkStore::ListEvents(const v1::ListEventsRequest& request) {
  ASSIGN_OR_RETURN(const Run run, GetRun(request.run_id()));
  if (request.after_seq() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("after_seq must not be negative, not ", request.after_seq()));
  }
  ASSIGN_OR_RETURN(const int page_size, ResolvePageSize(request.page_size(), kDefaultEventPageSize,
                                                        limits_.max_page_size));
  ASSIGN_OR_RETURN(std::string resume,
                   DecodePageToken(request.page_token(), "events", request.run_id()));
  uint64_t after = static_cast<uint64_t>(request.after_seq());
  if (!resume.empty() && !absl::SimpleAtoi(resume, &after)) {
    return absl::InvalidArgumentError("page_token is malformed");
  }
  const std::string prefix = keys::RunEventPrefix(request.run_id());
  std::unique_ptr<storage::Iterator> it =
      store_->NewIterator(kFamily, prefix, storage::PrefixUpperBound(prefix));
  if (after < UINT64_MAX) it->Seek(keys::RunEvent(request.run_id(), after + 1));
  v1::ListEventsResponse response;
  response.set_last_seq(run.last_event_seq());
  for (; after < UINT64_MAX && it->Valid(); it->Next()) {
    v1::WorkEvent event;
    RETURN_IF_ERROR(DecodeRecord(it->value(), &event));
    if (response.events_size() == page_size) {
      response.set_next_page_token(
          EncodePageToken("events", request.run_id(), absl::StrCat(event.seq() - 1)));
      break;
    }
    *response.add_events() = std::move(event);
  }
  RETURN_IF_ERROR(it->status());
  return response;
}

bool WorkStore::IsTerminal(const Run& run) { return IsTerminalRun(run); }

TallySource WorkStore::Totals() {
  return [](storage::Store& store, const TallySink& add) -> absl::Status {
    return ForEachRun(store, [&](const std::string&, const Run& run) -> absl::Status {
      add(RunTally(run, +1));
      return absl::OkStatus();
    });
  };
}

absl::Status WorkStore::ForEachRun(
    storage::Store& store,
    absl::FunctionRef<absl::Status(const std::string& run_id, const Run& run)> visit) {
  const std::string all_prefix = keys::AllRunsPrefix();
  std::unique_ptr<storage::Iterator> it =
      store.NewIterator(kFamily, all_prefix, storage::PrefixUpperBound(all_prefix));
  while (it->Valid()) {
    storage::KeyReader reader(it->key());
    RETURN_IF_ERROR(reader.ReadByte().status());
    ASSIGN_OR_RETURN(std::string run_id, reader.ReadString());
    // The header sorts first; a run without one (never written that way) is passed over.
    std::optional<WorkRunRecord> record;
    if (it->key() == keys::RunHeader(run_id)) {
      ASSIGN_OR_RETURN(record, DecodeRun(it->value()));
    }
    it->Seek(storage::PrefixUpperBound(keys::RunPrefix(run_id)));
    if (record.has_value()) RETURN_IF_ERROR(visit(run_id, record->run()));
  }
  return it->status();
}

absl::StatusOr<PurgeProgress> WorkStore::PurgeStep(Transaction& txn, absl::string_view run_id,
                                                   int64_t limit,
                                                   absl::FunctionRef<bool(const Run&)> eligible) {
  PurgeProgress progress;
  absl::StatusOr<std::string> raw = txn.GetForUpdate(kFamily, keys::RunHeader(run_id));
  if (absl::IsNotFound(raw.status())) {
    progress.absent = true;
    progress.finished = true;
    return progress;
  }
  RETURN_IF_ERROR(raw.status());
  ASSIGN_OR_RETURN(const WorkRunRecord record, DecodeRun(*raw));
  if (!eligible(record.run())) {
    progress.kept = true;
    return progress;
  }
  // Items first. A running item also has a lease entry outside the run's prefix, so while the
  // header counts running items, each item is read (and locked: a heartbeat moves its lease
  // entry under the item's lock alone) to find it. A terminal run has none running.
  const bool may_hold_leases = record.run().counts().running() > 0;
  const std::string items = keys::RunItemPrefix(run_id);
  std::unique_ptr<storage::Iterator> it =
      txn.NewIterator(kFamily, items, storage::PrefixUpperBound(items));
  for (; it->Valid(); it->Next()) {
    if (progress.deleted >= limit) return progress;
    if (may_hold_leases) {
      WorkItem item;
      ASSIGN_OR_RETURN(const std::string locked, txn.GetForUpdate(kFamily, it->key()));
      RETURN_IF_ERROR(DecodeRecord(locked, &item));
      if (item.status() == v1::ITEM_STATUS_RUNNING) {
        if (progress.deleted + 2 > limit) return progress;
        RETURN_IF_ERROR(txn.Delete(kFamily, keys::WorkLease(IndexMicros(item.lease_expire_time()),
                                                            run_id, item.item_id())));
        ++progress.deleted;
      }
    }
    RETURN_IF_ERROR(txn.Delete(kFamily, it->key()));
    ++progress.deleted;
  }
  RETURN_IF_ERROR(it->status());
  for (const std::string& prefix : {keys::RunPendingPrefix(run_id), keys::RunEventPrefix(run_id),
                                    keys::RunWorkerPrefix(run_id)}) {
    ASSIGN_OR_RETURN(const bool done, DeletePrefix(txn, kFamily, prefix, limit, &progress.deleted));
    if (!done) return progress;
  }
  if (progress.deleted + 1 > limit) return progress;
  RETURN_IF_ERROR(txn.Delete(kFamily, keys::RunHeader(run_id)));
  RETURN_IF_ERROR(TxnTallyRun(txn, &record.run(), nullptr));
  ++progress.deleted;
  progress.finished = true;
  return progress;
}

absl::StatusOr<int64_t> WorkStore::CountPurge(storage::Store& store, absl::string_view run_id) {
  ASSIGN_OR_RETURN(const int64_t under_prefix,
                   CountPrefix(store, kFamily, keys::RunPrefix(run_id)));
  absl::StatusOr<std::string> raw = store.Get(kFamily, keys::RunHeader(run_id));
  if (absl::IsNotFound(raw.status())) return under_prefix;
  RETURN_IF_ERROR(raw.status());
  ASSIGN_OR_RETURN(const WorkRunRecord record, DecodeRun(*raw));
  // One lease entry per running item (the header's count matches the items).
  return under_prefix + record.run().counts().running();
}

}  // namespace coordinator
