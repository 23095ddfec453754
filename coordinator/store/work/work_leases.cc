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
using work_records::Backoff;
using work_records::ChangeEvent;
using work_records::CheckClaimant;
using work_records::CheckLease;
using work_records::CurrentLevel;
using work_records::IndexMicros;
using work_records::ItemEvent;
using work_records::ItemReader;
using work_records::kFamily;
using work_records::kIdleTouchInterval;
using work_records::kReapBatch;
using work_records::LockedRun;
using work_records::LockItem;
using work_records::LockRun;
using work_records::LockWorker;
using work_records::NonRetryablePattern;
using work_records::PutRun;
using work_records::PutWorker;
using work_records::ReadRun;
using work_records::RecordTransition;
using work_records::ReleaseItem;
using work_records::ResolveTtl;
using work_records::SetWorkerStatus;
using work_records::StatusWord;
using work_records::TimeText;
using work_records::ValidatePid;
using work_records::ValidateText;
using work_records::WriteItem;

namespace {

// What a claim found among the items of the run's current level.
struct Claimable {
  std::optional<std::string> chosen;   // the first claimable item
  bool any_ready = false;              // a candidate whose dependencies are done (backoff aside)
  std::optional<absl::Time> earliest;  // when the first item in backoff becomes claimable
  std::set<std::string> missing;       // capabilities of ready items the worker lacks
};

// The first pending item of the lowest open level whose dependencies are done, whose backoff
// has passed and whose capabilities `declared` covers.
absl::StatusOr<Claimable> FindClaimable(Transaction& txn, const WorkRunRecord& record,
                                        const std::string& run_id,
                                        const absl::flat_hash_set<absl::string_view>& declared,
                                        absl::Time now) {
  Claimable found;
  if (record.open_by_level().empty()) return found;
  // Only the lowest level with open items can have claimable items.
  const int64_t level = CurrentLevel(record);
  const std::string prefix = keys::RunPendingLevelPrefix(run_id, static_cast<uint64_t>(level));
  std::unique_ptr<storage::Iterator> it =
      txn.NewIterator(kFamily, prefix, storage::PrefixUpperBound(prefix));
  ItemReader items(txn, run_id);
  for (; it->Valid(); it->Next()) {
    storage::KeyReader reader(it->key().substr(prefix.size()));
    ASSIGN_OR_RETURN(std::string item_id, reader.ReadString());
    ASSIGN_OR_RETURN(WorkItem candidate, items.Read(item_id));
    bool ready = true;
    for (const std::string& dep : candidate.dependencies()) {
      ASSIGN_OR_RETURN(WorkItem dependency, items.Read(dep));
      if (dependency.status() != v1::ITEM_STATUS_DONE) {
        ready = false;
        break;
      }
    }
    if (!ready) continue;
    found.any_ready = true;
    const absl::Time not_before =
        candidate.has_not_before() ? FromProtoTime(candidate.not_before()) : absl::InfinitePast();
    if (not_before > now) {
      if (!found.earliest.has_value() || not_before < *found.earliest) found.earliest = not_before;
      continue;
    }
    bool covered = true;
    for (const std::string& capability : candidate.required_capabilities()) {
      if (!declared.contains(capability)) {
        found.missing.insert(capability);
        covered = false;
      }
    }
    if (!covered) continue;
    found.chosen = item_id;
    break;
  }
  RETURN_IF_ERROR(it->status());
  return found;
}

// The worker's registry record, as its claim leaves it: registered (numbered) by its first
// claim, its capabilities and pid refreshed by every one. `before`: the record as it was (empty
// when the worker was not registered).
absl::StatusOr<v1::RunWorker> ClaimingWorker(Transaction& txn, const v1::ClaimRequest& request,
                                             absl::Time now, std::optional<v1::RunWorker>* before) {
  ASSIGN_OR_RETURN(*before, LockWorker(txn, request.run_id(), request.worker_id()));
  const bool registered = before->has_value();
  v1::RunWorker worker = registered ? **before : v1::RunWorker();
  if (!registered) {
    worker.set_worker_id(request.worker_id());
    worker.set_run_id(request.run_id());
    *worker.mutable_create_time() = ToProtoTime(now);
    ASSIGN_OR_RETURN(const absl::flat_hash_set<int64_t> taken,
                     work_records::WorkerNumbers(txn, request.run_id()));
    worker.set_number(common::NewWorkerNumber(worker.worker_id(), taken));
  }
  *worker.mutable_capabilities() = request.capabilities();
  if (request.pid() != 0) worker.set_pid(request.pid());
  return worker;
}

// A claim that found nothing: the worker idles (its record touched when it changed or now and
// then), and the answer says whether anything can become claimable without a person.
absl::Status AnswerNothingClaimable(Transaction& txn, LockedRun& locked, const Claimable& found,
                                    const std::optional<v1::RunWorker>& before,
                                    v1::RunWorker& worker, absl::Time now,
                                    v1::ClaimResponse* response) {
  if (worker.held_items().empty())
    SetWorkerStatus(&locked, &worker, v1::WORKER_STATUS_IDLE, "", now);
  const bool changed = !before.has_value() || !locked.log.empty() ||
                       !std::equal(worker.capabilities().begin(), worker.capabilities().end(),
                                   before->capabilities().begin(), before->capabilities().end()) ||
                       worker.pid() != before->pid();
  if (changed || now - FromProtoTime(worker.last_heartbeat_time()) >= kIdleTouchInterval) {
    *worker.mutable_last_heartbeat_time() = ToProtoTime(now);
    RETURN_IF_ERROR(PutWorker(txn, &worker, now));
  }
  if (!locked.log.empty()) RETURN_IF_ERROR(PutRun(txn, locked));
  const Run& run = locked.record.run();
  *response->mutable_run() = run;
  // Nothing runs, so nothing will make a waiting item ready: a person has to act.
  response->set_stalled(locked.record.open_by_level().empty() ||
                        (run.counts().running() == 0 && !found.any_ready));
  if (found.earliest.has_value()) {
    *response->mutable_retry_after() = ToProtoDuration(*found.earliest - now);
  }
  for (const std::string& capability : found.missing)
    response->add_missing_capabilities(capability);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<v1::ClaimResponse> WorkStore::Claim(const v1::ClaimRequest& request,
                                                   const Access& access) {
  RETURN_IF_ERROR(common::ValidateId("run_id", request.run_id()));
  RETURN_IF_ERROR(common::ValidateId("worker_id", request.worker_id()));
  ASSIGN_OR_RETURN(const absl::Duration ttl, ResolveTtl(request.lease_ttl()));
  RETURN_IF_ERROR(ValidateCapabilities("capability", request.capabilities()));
  RETURN_IF_ERROR(ValidatePid(request.pid()));
  const std::string& run_id = request.run_id();
  const absl::flat_hash_set<absl::string_view> declared(request.capabilities().begin(),
                                                        request.capabilities().end());

  v1::ClaimResponse response;
  std::vector<v1::RunEvent> events;
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    response.Clear();
    events.clear();
    const absl::Time now = Now();
    ASSIGN_OR_RETURN(LockedRun locked, LockRun(txn, run_id));
    RETURN_IF_ERROR(CheckClaimant(access, locked.record.run(), "claim items of"));
    ASSIGN_OR_RETURN(const Claimable found,
                     FindClaimable(txn, locked.record, run_id, declared, now));
    std::optional<v1::RunWorker> worker_before;
    ASSIGN_OR_RETURN(v1::RunWorker worker, ClaimingWorker(txn, request, now, &worker_before));
    if (!found.chosen.has_value()) {
      return AnswerNothingClaimable(txn, locked, found, worker_before, worker, now, &response);
    }
    ASSIGN_OR_RETURN(const WorkItem before, LockItem(txn, run_id, *found.chosen));
    if (before.status() != v1::ITEM_STATUS_PENDING) {
      return absl::DataLossError(absl::StrCat("item ", *found.chosen, " of run ", run_id,
                                              " is in the pending index but is ",
                                              StatusWord(before.status())));
    }
    WorkItem item = before;
    item.set_status(v1::ITEM_STATUS_RUNNING);
    item.set_worker_id(request.worker_id());
    item.set_epoch(before.epoch() + 1);
    item.set_attempts(before.attempts() + 1);
    *item.mutable_lease_expire_time() = ToProtoTime(now + ttl);
    *item.mutable_lease_ttl() = ToProtoDuration(ttl);
    *item.mutable_start_time() = ToProtoTime(now);
    item.clear_complete_time();
    item.set_pid(request.pid());
    item.clear_not_before();
    item.clear_status_reason();
    Run& run = *locked.record.mutable_run();
    run.set_claim_count(run.claim_count() + 1);
    locked.Log(ItemEvent(v1::WorkEvent::KIND_ITEM_CLAIMED, item), now);
    RecordTransition(&locked, before, item.status(), now);
    worker.add_held_items(item.item_id());
    worker.set_current_item(item.item_id());
    SetWorkerStatus(&locked, &worker, v1::WORKER_STATUS_BUSY, "", now);
    *worker.mutable_last_heartbeat_time() = ToProtoTime(now);
    RETURN_IF_ERROR(WriteItem(txn, before, &item, now));
    RETURN_IF_ERROR(PutWorker(txn, &worker, now));
    RETURN_IF_ERROR(PutRun(txn, locked));
    response.set_lease(EncodeLease(run_id, item.item_id(), item.epoch()));
    response.set_epoch(item.epoch());
    *response.mutable_lease_expire_time() = item.lease_expire_time();
    *response.mutable_run() = run;
    *response.mutable_item() = item;
    events.push_back(ChangeEvent(item, &run));
    return absl::OkStatus();
  }));
  Publish(std::move(events));
  return response;
}

absl::StatusOr<WorkItem> WorkStore::ChangeLeasedItem(
    const v1::LeaseToken& lease, const Access& access, LeasedChange how,
    absl::FunctionRef<void(const WorkRunRecord* record, absl::Time now, WorkItem* item)> change) {
  WorkItem result;
  std::vector<v1::RunEvent> events;
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    events.clear();
    const absl::Time now = Now();
    std::optional<LockedRun> locked;
    if (how.changes_status) {
      ASSIGN_OR_RETURN(locked, LockRun(txn, lease.run_id()));
      RETURN_IF_ERROR(CheckClaimant(access, locked->record.run(), "use a lease of"));
    } else if (access.scoped) {
      ASSIGN_OR_RETURN(const WorkRunRecord unlocked, ReadRun(txn, lease.run_id()));
      RETURN_IF_ERROR(CheckClaimant(access, unlocked.run(), "use a lease of"));
    }
    ASSIGN_OR_RETURN(const WorkItem before, LockItem(txn, lease.run_id(), lease.item_id()));
    if (how.accepts_done_repeat && before.status() == v1::ITEM_STATUS_DONE &&
        before.epoch() == lease.epoch()) {
      result = before;
      return absl::OkStatus();
    }
    RETURN_IF_ERROR(CheckLease(before, lease, now, expiry_));
    result = before;
    change(locked.has_value() ? &locked->record : nullptr, now, &result);
    const bool released = result.status() != v1::ITEM_STATUS_RUNNING;
    if (released) {
      result.clear_pid();
      result.clear_lease_expire_time();
    }
    if (result.status() == v1::ITEM_STATUS_DONE) *result.mutable_complete_time() = ToProtoTime(now);
    if (locked.has_value()) {
      if (how.event != v1::WorkEvent::KIND_UNSPECIFIED) {
        locked->Log(ItemEvent(how.event, result,
                              result.status() == v1::ITEM_STATUS_DONE ? result.summary()
                                                                      : result.last_error()),
                    now);
      }
      RecordTransition(&*locked, before, result.status(), now);
    }
    // The lease holder's registry record: a sign of life, and the item off its hands when the
    // change released it. A worker of a run stored before the registry has none; it is not
    // made up here.
    ASSIGN_OR_RETURN(std::optional<v1::RunWorker> worker,
                     LockWorker(txn, lease.run_id(), before.worker_id()));
    if (worker.has_value()) {
      *worker->mutable_last_heartbeat_time() = ToProtoTime(now);
      if (result.pid() != 0) worker->set_pid(result.pid());
      if (released && locked.has_value()) {
        if (result.status() == v1::ITEM_STATUS_DONE) {
          worker->set_items_completed(worker->items_completed() + 1);
        } else {
          worker->set_items_failed(worker->items_failed() + 1);
        }
        ReleaseItem(&*locked, &*worker, result.item_id(), v1::WORKER_STATUS_IDLE, "", now);
      }
      RETURN_IF_ERROR(PutWorker(txn, &*worker, now));
    }
    RETURN_IF_ERROR(WriteItem(txn, before, &result, now));
    if (locked.has_value()) RETURN_IF_ERROR(PutRun(txn, *locked));
    events.push_back(ChangeEvent(result, locked.has_value() ? &locked->record.run() : nullptr));
    return absl::OkStatus();
  }));
  Publish(std::move(events));
  return result;
}

absl::StatusOr<v1::HeartbeatResponse> WorkStore::Heartbeat(const v1::HeartbeatRequest& request,
                                                           const Access& access) {
  ASSIGN_OR_RETURN(const v1::LeaseToken lease, DecodeLease(request.lease()));
  RETURN_IF_ERROR(ValidateText("progress", request.progress(), limits_));
  RETURN_IF_ERROR(ValidatePid(request.pid()));
  std::optional<absl::Duration> ttl;
  if (request.has_lease_ttl() &&
      (request.lease_ttl().seconds() != 0 || request.lease_ttl().nanos() != 0)) {
    ASSIGN_OR_RETURN(ttl, ResolveTtl(request.lease_ttl()));
  }
  ASSIGN_OR_RETURN(
      WorkItem item,
      ChangeLeasedItem(
          lease, access, LeasedChange{}, [&](const WorkRunRecord*, absl::Time now, WorkItem* item) {
            const absl::Duration length = ttl.value_or(FromProtoDuration(item->lease_ttl()));
            absl::Time expire = now + length;
            // Under observed expiry a heartbeat must move the item's lease-index entry (that
            // is how the reaper sees it), even when this replica's clock gives the same
            // microsecond as the last stamp.
            if (expiry_ == LeaseExpiry::kObserved &&
                IndexMicros(ToProtoTime(expire)) == IndexMicros(item->lease_expire_time())) {
              expire += absl::Microseconds(1);
            }
            *item->mutable_lease_expire_time() = ToProtoTime(expire);
            *item->mutable_lease_ttl() = ToProtoDuration(length);
            if (!request.progress().empty()) item->set_progress(request.progress());
            if (request.pid() != 0) item->set_pid(request.pid());
          }));
  v1::HeartbeatResponse response;
  *response.mutable_lease_expire_time() = item.lease_expire_time();
  *response.mutable_item() = std::move(item);
  return response;
}

absl::StatusOr<WorkItem> WorkStore::Checkpoint(const v1::CheckpointRequest& request,
                                               const Access& access) {
  ASSIGN_OR_RETURN(const v1::LeaseToken lease, DecodeLease(request.lease()));
  if (request.note().empty()) return absl::InvalidArgumentError("note is required");
  RETURN_IF_ERROR(ValidateText("note", request.note(), limits_));
  return ChangeLeasedItem(lease, access, LeasedChange{},
                          [&](const WorkRunRecord*, absl::Time now, WorkItem* item) {
                            item->set_checkpoint(request.note());
                            *item->mutable_checkpoint_time() = ToProtoTime(now);
                          });
}

absl::StatusOr<WorkItem> WorkStore::Complete(const v1::CompleteRequest& request,
                                             const Access& access) {
  ASSIGN_OR_RETURN(const v1::LeaseToken lease, DecodeLease(request.lease()));
  RETURN_IF_ERROR(ValidateText("summary", request.summary(), limits_));
  LeasedChange how;
  how.changes_status = true;
  how.accepts_done_repeat = true;
  how.event = v1::WorkEvent::KIND_ITEM_COMPLETED;
  return ChangeLeasedItem(lease, access, how,
                          [&](const WorkRunRecord*, absl::Time, WorkItem* item) {
                            item->set_status(v1::ITEM_STATUS_DONE);
                            item->set_summary(request.summary());
                            item->clear_lease_expire_time();
                            item->clear_status_reason();
                          });
}

absl::StatusOr<WorkItem> WorkStore::Fail(const v1::FailRequest& request, const Access& access) {
  ASSIGN_OR_RETURN(const v1::LeaseToken lease, DecodeLease(request.lease()));
  if (request.error().empty()) return absl::InvalidArgumentError("error is required");
  RETURN_IF_ERROR(ValidateText("error", request.error(), limits_));
  LeasedChange how;
  how.changes_status = true;
  how.event = v1::WorkEvent::KIND_ITEM_FAILED;
  return ChangeLeasedItem(
      lease, access, how, [&](const WorkRunRecord* record, absl::Time now, WorkItem* item) {
        const v1::RetryPolicy& policy = record->run().retry_policy();
        const int32_t attempts = item->attempts();
        item->set_last_error(request.error());
        item->clear_lease_expire_time();
        const std::optional<std::string> pattern = NonRetryablePattern(policy, request.error());
        if (!request.retryable() || pattern.has_value()) {
          item->set_status(v1::ITEM_STATUS_FAILED);
          item->set_status_reason(
              pattern.has_value()
                  ? absl::StrCat("failed for good: the error matches the non-retryable pattern \"",
                                 *pattern, "\"")
                  : std::string("failed for good: the worker reported a non-retryable error"));
        } else if (attempts >= policy.max_attempts()) {
          item->set_status(v1::ITEM_STATUS_BLOCKED);
          item->set_status_reason(absl::StrFormat("blocked after %d of %d attempts; last error: %s",
                                                  attempts, policy.max_attempts(),
                                                  request.error()));
        } else {
          item->set_status(v1::ITEM_STATUS_PENDING);
          *item->mutable_not_before() = ToProtoTime(now + Backoff(policy, attempts));
        }
      });
}

absl::StatusOr<WorkItem> WorkStore::Retry(const v1::RetryRequest& request) {
  RETURN_IF_ERROR(common::ValidateId("run_id", request.run_id()));
  RETURN_IF_ERROR(common::ValidateId("item_id", request.item_id()));
  WorkItem result;
  std::vector<v1::RunEvent> events;
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    events.clear();
    const absl::Time now = Now();
    ASSIGN_OR_RETURN(LockedRun locked, LockRun(txn, request.run_id()));
    ASSIGN_OR_RETURN(const WorkItem before, LockItem(txn, request.run_id(), request.item_id()));
    if (before.status() != v1::ITEM_STATUS_BLOCKED && before.status() != v1::ITEM_STATUS_FAILED) {
      return absl::FailedPreconditionError(
          absl::StrFormat("item %s of run %s is %s; only a blocked or failed item can be retried",
                          before.item_id(), before.run_id(), StatusWord(before.status())));
    }
    result = before;
    result.set_status(v1::ITEM_STATUS_PENDING);
    result.set_attempts(0);
    result.clear_status_reason();
    result.clear_not_before();
    locked.Log(ItemEvent(v1::WorkEvent::KIND_ITEM_RETRIED, result), now);
    RecordTransition(&locked, before, result.status(), now);
    RETURN_IF_ERROR(WriteItem(txn, before, &result, now));
    RETURN_IF_ERROR(PutRun(txn, locked));
    events.push_back(ChangeEvent(result, &locked.record.run()));
    return absl::OkStatus();
  }));
  Publish(std::move(events));
  return result;
}

absl::StatusOr<int> WorkStore::ReapExpired(LeaseObservations* observations) {
  if (expiry_ == LeaseExpiry::kWallClock) return ReapByWallClock();
  if (observations == nullptr) {
    return absl::InvalidArgumentError(
        "observed lease expiry needs the reaper's observations (LeaseObservations)");
  }
  return ReapObserved(*observations);
}

absl::Status WorkStore::TakeBackLease(const std::string& index_key, const std::string& run_id,
                                      const std::string& item_id,
                                      absl::FunctionRef<bool(const WorkItem&)> due,
                                      std::optional<absl::Duration> observed_for, bool* taken_back,
                                      bool* touched) {
  std::vector<v1::RunEvent> events;
  RETURN_IF_ERROR(store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    events.clear();
    *taken_back = false;
    *touched = false;
    const absl::Time now = Now();
    // An entry whose run or item is gone is left over (never written that way): deleted.
    absl::StatusOr<LockedRun> run = LockRun(txn, run_id);
    absl::StatusOr<WorkItem> held =
        run.ok() ? LockItem(txn, run_id, item_id) : absl::StatusOr<WorkItem>(run.status());
    if (absl::IsNotFound(held.status())) {
      absl::StatusOr<std::string> still = txn.GetForUpdate(kFamily, index_key);
      if (still.ok()) {
        RETURN_IF_ERROR(txn.Delete(kFamily, index_key));
        *touched = true;
      }
      return absl::OkStatus();
    }
    RETURN_IF_ERROR(held.status());
    LockedRun& locked = *run;
    const WorkRunRecord& record = locked.record;
    const WorkItem& before = *held;
    if (!due(before)) {
      // A heartbeat or a completion got there first and moved or removed the key; delete it
      // only if it is left over (it never is while the indexes are in step).
      if (before.status() != v1::ITEM_STATUS_RUNNING ||
          keys::WorkLease(IndexMicros(before.lease_expire_time()), run_id, item_id) != index_key) {
        absl::StatusOr<std::string> still = txn.GetForUpdate(kFamily, index_key);
        if (still.ok()) {
          RETURN_IF_ERROR(txn.Delete(kFamily, index_key));
          *touched = true;
        }
      }
      return absl::OkStatus();
    }
    const v1::RetryPolicy& policy = record.run().retry_policy();
    WorkItem item = before;
    if (observed_for.has_value()) {
      item.set_last_error(absl::StrFormat(
          "lease of worker %s expired: the reaper saw no heartbeat for %s (lease length %s; the "
          "worker stopped heartbeating, attempt %d lost)",
          before.worker_id(), absl::FormatDuration(*observed_for),
          absl::FormatDuration(FromProtoDuration(before.lease_ttl())), before.attempts()));
    } else {
      item.set_last_error(absl::StrFormat(
          "lease of worker %s expired at %s: the worker stopped heartbeating (attempt %d lost)",
          before.worker_id(), TimeText(FromProtoTime(before.lease_expire_time())),
          before.attempts()));
    }
    item.clear_lease_expire_time();
    item.clear_pid();
    if (before.attempts() >= policy.max_attempts()) {
      item.set_status(v1::ITEM_STATUS_BLOCKED);
      item.set_status_reason(absl::StrFormat("blocked after %d of %d attempts; last error: %s",
                                             before.attempts(), policy.max_attempts(),
                                             item.last_error()));
    } else {
      // Claimable again at once: a lost worker is not the item's fault, so no backoff.
      item.set_status(v1::ITEM_STATUS_PENDING);
    }
    locked.Log(ItemEvent(v1::WorkEvent::KIND_ITEM_HEARTBEAT_LOST, item, item.last_error()), now);
    RecordTransition(&locked, before, item.status(), now);
    ASSIGN_OR_RETURN(std::optional<v1::RunWorker> worker,
                     LockWorker(txn, run_id, before.worker_id()));
    if (worker.has_value()) {
      worker->set_items_failed(worker->items_failed() + 1);
      ReleaseItem(&locked, &*worker, item_id, v1::WORKER_STATUS_LOST, item.last_error(), now);
      RETURN_IF_ERROR(PutWorker(txn, &*worker, now));
    }
    RETURN_IF_ERROR(WriteItem(txn, before, &item, now));
    RETURN_IF_ERROR(PutRun(txn, locked));
    events.push_back(ChangeEvent(item, &locked.record.run()));
    *taken_back = true;
    return absl::OkStatus();
  }));
  Publish(std::move(events));
  return absl::OkStatus();
}

absl::StatusOr<int> WorkStore::ReapByWallClock() {
  const absl::Time now = Now();
  const uint64_t now_micros = static_cast<uint64_t>(std::max<int64_t>(0, absl::ToUnixMicros(now)));
  const std::string lower = keys::WorkLeasesPrefix();
  // Keys below now_micros hold leases that expired before `now` (the key rounds down).
  const std::string upper = keys::WorkLeaseBound(now_micros);
  int reaped = 0;
  while (true) {
    // Collect a batch first, then take each back in its own transaction (which locks the run
    // before the item, like every status change).
    std::vector<std::pair<std::string, std::pair<std::string, std::string>>> batch;
    std::unique_ptr<storage::Iterator> it = store_->NewIterator(kFamily, lower, upper);
    for (; it->Valid() && batch.size() < kReapBatch; it->Next()) {
      storage::KeyReader reader(it->key());
      RETURN_IF_ERROR(reader.ReadByte().status());
      RETURN_IF_ERROR(reader.ReadUint64().status());
      ASSIGN_OR_RETURN(std::string run_id, reader.ReadString());
      ASSIGN_OR_RETURN(std::string item_id, reader.ReadString());
      batch.push_back({std::string(it->key()), {std::move(run_id), std::move(item_id)}});
    }
    RETURN_IF_ERROR(it->status());
    int changed = 0;
    for (const auto& entry : batch) {
      bool taken_back = false;
      bool touched = false;
      RETURN_IF_ERROR(TakeBackLease(
          entry.first, entry.second.first, entry.second.second,
          [now](const WorkItem& item) {
            return item.status() == v1::ITEM_STATUS_RUNNING &&
                   FromProtoTime(item.lease_expire_time()) <= now;
          },
          std::nullopt, &taken_back, &touched));
      if (taken_back) ++reaped;
      if (taken_back || touched) ++changed;
    }
    // A full batch that changed nothing would be scanned again forever.
    if (batch.size() < kReapBatch || changed == 0) break;
  }
  return reaped;
}

absl::StatusOr<int> WorkStore::ReapObserved(LeaseObservations& observations) {
  using Seen = LeaseObservations::Seen;
  struct Due {
    std::string index_key;
    std::string run_id;
    std::string item_id;
    Seen seen;
  };
  // One read of the whole index (one revision on etcd): what is in it now is remembered, from
  // its first sighting; what left it is forgotten.
  const absl::Time seen_now = observations.Now();
  absl::flat_hash_map<std::string, Seen> next;
  std::vector<Due> due;
  const std::string prefix = keys::WorkLeasesPrefix();
  std::unique_ptr<storage::Iterator> it =
      store_->NewIterator(kFamily, prefix, storage::PrefixUpperBound(prefix));
  for (; it->Valid(); it->Next()) {
    std::string index_key(it->key());
    storage::KeyReader reader(index_key);
    RETURN_IF_ERROR(reader.ReadByte().status());
    RETURN_IF_ERROR(reader.ReadUint64().status());
    ASSIGN_OR_RETURN(std::string run_id, reader.ReadString());
    ASSIGN_OR_RETURN(std::string item_id, reader.ReadString());
    Seen seen;
    auto known = observations.seen_.find(index_key);
    if (known != observations.seen_.end()) {
      seen = known->second;
    } else {
      // First sighting: the lease's length and epoch come from the item (a duration the
      // granting replica stored, never compared with a time). An entry without its running
      // item is left over: due at once, so the pass deletes it.
      seen.first_seen = seen_now;
      seen.ttl = absl::ZeroDuration();
      absl::StatusOr<std::string> value = store_->Get(kFamily, keys::RunItem(run_id, item_id));
      if (value.ok()) {
        WorkItem item;
        RETURN_IF_ERROR(DecodeRecord(*value, &item));
        if (item.status() == v1::ITEM_STATUS_RUNNING) {
          seen.ttl = item.has_lease_ttl() ? FromProtoDuration(item.lease_ttl()) : kDefaultLeaseTtl;
          seen.epoch = item.epoch();
        }
      } else if (!absl::IsNotFound(value.status())) {
        return value.status();
      }
    }
    if (seen_now - seen.first_seen >= seen.ttl) {
      due.push_back(Due{index_key, std::move(run_id), std::move(item_id), seen});
    }
    next.emplace(std::move(index_key), seen);
  }
  RETURN_IF_ERROR(it->status());
  observations.seen_ = std::move(next);

  int reaped = 0;
  for (const Due& entry : due) {
    const Seen& seen = entry.seen;
    const std::string& index_key = entry.index_key;
    const std::string& run_id = entry.run_id;
    const std::string& item_id = entry.item_id;
    bool taken_back = false;
    bool touched = false;
    bool restart = false;
    RETURN_IF_ERROR(TakeBackLease(
        index_key, run_id, item_id,
        [&](const WorkItem& item) {
          restart = false;
          if (item.status() != v1::ITEM_STATUS_RUNNING ||
              keys::WorkLease(IndexMicros(item.lease_expire_time()), run_id, item_id) !=
                  index_key) {
            return false;  // moved by a heartbeat or released since the scan
          }
          // The same entry under a new claim (possible only when two stamps fall on the same
          // microsecond): a new lease, observed from now.
          restart = item.epoch() != seen.epoch;
          return !restart;
        },
        seen_now - seen.first_seen, &taken_back, &touched));
    if (taken_back) ++reaped;
    // Gone from the index, or (restart) a new lease under the same entry, seen afresh next pass.
    if (taken_back || touched || restart) observations.seen_.erase(index_key);
  }
  return reaped;
}

absl::StatusOr<int64_t> WorkStore::CountLeases() {
  const std::string prefix = keys::WorkLeasesPrefix();
  std::unique_ptr<storage::Iterator> it =
      store_->NewIterator(kFamily, prefix, storage::PrefixUpperBound(prefix));
  int64_t count = 0;
  for (; it->Valid(); it->Next()) ++count;
  RETURN_IF_ERROR(it->status());
  return count;
}

}  // namespace coordinator
