#include "coordinator/store/work/work_records.h"

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
#include "storage/durability_scope.h"
#include "storage/key_codec.h"

namespace coordinator::work_records {

std::string StatusWord(ItemStatus status) {
  switch (status) {
    case v1::ITEM_STATUS_PENDING:
      return "pending";
    case v1::ITEM_STATUS_RUNNING:
      return "running";
    case v1::ITEM_STATUS_DONE:
      return "done";
    case v1::ITEM_STATUS_FAILED:
      return "failed";
    case v1::ITEM_STATUS_BLOCKED:
      return "blocked";
    default:
      return "unknown";
  }
}

absl::Status RunNotFound(absl::string_view run_id) {
  return absl::NotFoundError(absl::StrCat("run ", run_id, " not found"));
}

absl::Status ItemNotFound(absl::string_view run_id, absl::string_view item_id) {
  return absl::NotFoundError(absl::StrCat("item ", item_id, " of run ", run_id, " not found"));
}

std::string TimeText(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", t, absl::UTCTimeZone());
}

uint64_t IndexMicros(const google::protobuf::Timestamp& ts) {
  return static_cast<uint64_t>(std::max<int64_t>(0, absl::ToUnixMicros(FromProtoTime(ts))));
}

absl::StatusOr<absl::Duration> ReadDuration(absl::string_view field,
                                            const google::protobuf::Duration& d) {
  if (d.seconds() < 0 || d.nanos() < 0 || d.nanos() >= 1000000000) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " must be a non-negative, normalized duration"));
  }
  return FromProtoDuration(d);
}

absl::StatusOr<absl::Duration> ResolveTtl(const google::protobuf::Duration& requested) {
  ASSIGN_OR_RETURN(absl::Duration ttl, ReadDuration("lease_ttl", requested));
  if (ttl == absl::ZeroDuration()) return kDefaultLeaseTtl;
  if (ttl < kMinLeaseTtl || ttl > kMaxLeaseTtl) {
    return absl::InvalidArgumentError(
        absl::StrCat("lease_ttl must be between ", absl::FormatDuration(kMinLeaseTtl), " and ",
                     absl::FormatDuration(kMaxLeaseTtl), ", not ", absl::FormatDuration(ttl)));
  }
  return ttl;
}

absl::StatusOr<v1::RetryPolicy> ResolvePolicy(const v1::RetryPolicy& requested,
                                              const WorkLimits& limits) {
  v1::RetryPolicy policy = requested;
  if (policy.max_attempts() < 0 || policy.max_attempts() > kMaxAttemptsLimit) {
    return absl::InvalidArgumentError(
        absl::StrFormat("max_attempts must be between 1 and %d", kMaxAttemptsLimit));
  }
  if (policy.max_attempts() == 0) policy.set_max_attempts(kDefaultMaxAttempts);
  ASSIGN_OR_RETURN(absl::Duration base, ReadDuration("backoff_base", policy.backoff_base()));
  ASSIGN_OR_RETURN(absl::Duration max, ReadDuration("backoff_max", policy.backoff_max()));
  if (base == absl::ZeroDuration()) base = kDefaultBackoffBase;
  if (max == absl::ZeroDuration()) max = std::max(base, kDefaultBackoffMax);
  if (base > max) {
    return absl::InvalidArgumentError(absl::StrCat("backoff_base (", absl::FormatDuration(base),
                                                   ") is longer than backoff_max (",
                                                   absl::FormatDuration(max), ")"));
  }
  *policy.mutable_backoff_base() = ToProtoDuration(base);
  *policy.mutable_backoff_max() = ToProtoDuration(max);
  if (static_cast<size_t>(policy.non_retryable_errors_size()) > kMaxNonRetryableErrors) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("the policy has %d non-retryable errors; the limit is %d",
                        policy.non_retryable_errors_size(), kMaxNonRetryableErrors));
  }
  for (const std::string& pattern : policy.non_retryable_errors()) {
    if (pattern.empty()) {
      return absl::InvalidArgumentError("a non-retryable error pattern is empty");
    }
    RETURN_IF_ERROR(
        common::ValidateSize("non-retryable error pattern", pattern, limits.max_path_bytes));
  }
  return policy;
}

absl::Status ValidatePid(int64_t pid) {
  if (pid < 0 || pid > kMaxPid) {
    return absl::InvalidArgumentError(
        absl::StrFormat("pid %d is not a process id (0 for none, or 1 to %d)", pid, kMaxPid));
  }
  return absl::OkStatus();
}

absl::Duration Backoff(const v1::RetryPolicy& policy, int attempts) {
  const absl::Duration max = FromProtoDuration(policy.backoff_max());
  absl::Duration d = FromProtoDuration(policy.backoff_base());
  for (int i = 1; i < attempts && d < max; ++i) d *= 2;
  return std::min(d, max);
}

std::optional<std::string> NonRetryablePattern(const v1::RetryPolicy& policy,
                                               absl::string_view error) {
  for (const std::string& pattern : policy.non_retryable_errors()) {
    if (absl::StrContains(error, pattern)) return pattern;
  }
  return std::nullopt;
}

std::string GenerateRunId(absl::Time now) {
  thread_local std::mt19937_64 random(std::random_device{}());
  return absl::StrFormat("run-%s-%06x", absl::FormatTime("%Y%m%d-%H%M%S", now, absl::UTCTimeZone()),
                         random() & 0xffffff);
}

absl::StatusOr<WorkRunRecord> DecodeRun(absl::string_view raw) {
  WorkRunRecord record;
  RETURN_IF_ERROR(DecodeRecord(raw, &record));
  return record;
}

std::string LevelWord(v1::LevelStatus status) {
  switch (status) {
    case v1::LEVEL_STATUS_PENDING:
      return "pending";
    case v1::LEVEL_STATUS_RUNNING:
      return "running";
    case v1::LEVEL_STATUS_COMPLETE:
      return "complete";
    case v1::LEVEL_STATUS_MERGED:
      return "merged";
    default:
      return "unknown";
  }
}

v1::LevelStatus DeriveLevelStatus(const v1::LevelState& level) {
  if (level.status() == v1::LEVEL_STATUS_MERGED) return v1::LEVEL_STATUS_MERGED;
  if (level.total() > 0 && level.done() == level.total()) return v1::LEVEL_STATUS_COMPLETE;
  if (level.has_start_time() || level.running() > 0 || level.done() > 0) {
    return v1::LEVEL_STATUS_RUNNING;
  }
  return v1::LEVEL_STATUS_PENDING;
}

v1::LevelState* FindLevel(Run* run, int64_t level, bool create) {
  auto* levels = run->mutable_level_states();
  auto it = std::lower_bound(
      levels->begin(), levels->end(), level,
      [](const v1::LevelState& state, int64_t wanted) { return state.level() < wanted; });
  if (it != levels->end() && it->level() == level) return &*it;
  if (!create) return nullptr;
  const int index = static_cast<int>(it - levels->begin());
  v1::LevelState* added = levels->Add();
  added->set_level(level);
  added->set_status(v1::LEVEL_STATUS_PENDING);
  for (int i = levels->size() - 1; i > index; --i) levels->SwapElements(i, i - 1);
  return &(*levels)[index];
}

int64_t CurrentLevel(const WorkRunRecord& record) {
  if (!record.open_by_level().empty()) {
    int64_t lowest = INT64_MAX;
    for (const auto& [level, open] : record.open_by_level()) lowest = std::min(lowest, level);
    return lowest;
  }
  const auto& levels = record.run().level_states();
  return levels.empty() ? 0 : levels.rbegin()->level();
}

absl::Status RebuildLevels(storage::Iterator& it, WorkRunRecord* record) {
  Run* run = record->mutable_run();
  run->clear_level_states();
  for (; it.Valid(); it.Next()) {
    WorkItem item;
    RETURN_IF_ERROR(DecodeRecord(it.value(), &item));
    v1::LevelState* level = FindLevel(run, item.level(), /*create=*/true);
    level->set_total(level->total() + 1);
    if (item.status() == v1::ITEM_STATUS_DONE) level->set_done(level->done() + 1);
    if (item.status() == v1::ITEM_STATUS_RUNNING) level->set_running(level->running() + 1);
    // An item that ever ran started its level; when is not stored, so its last change stands in.
    const bool started = item.attempts() > 0 || item.status() != v1::ITEM_STATUS_PENDING;
    if (started && (!level->has_start_time() ||
                    FromProtoTime(item.update_time()) < FromProtoTime(level->start_time()))) {
      *level->mutable_start_time() = item.update_time();
    }
  }
  RETURN_IF_ERROR(it.status());
  for (v1::LevelState& level : *run->mutable_level_states()) {
    level.set_status(DeriveLevelStatus(level));
  }
  run->set_current_level(CurrentLevel(*record));
  record->set_layout(kCurrentLayout);
  return absl::OkStatus();
}

absl::StatusOr<WorkRunRecord> UpgradeForRead(storage::Store* store, WorkRunRecord record) {
  if (record.layout() >= kCurrentLayout) return record;
  const std::string prefix = keys::RunItemPrefix(record.run().run_id());
  std::unique_ptr<storage::Iterator> it =
      store->NewIterator(kFamily, prefix, storage::PrefixUpperBound(prefix));
  RETURN_IF_ERROR(RebuildLevels(*it, &record));
  return record;
}

absl::StatusOr<LockedRun> LockRun(Transaction& txn, absl::string_view run_id) {
  absl::StatusOr<std::string> raw = txn.GetForUpdate(kFamily, keys::RunHeader(run_id));
  if (absl::IsNotFound(raw.status())) return RunNotFound(run_id);
  RETURN_IF_ERROR(raw.status());
  LockedRun locked;
  ASSIGN_OR_RETURN(locked.record, DecodeRun(*raw));
  if (locked.record.layout() < kCurrentLayout) {
    const std::string prefix = keys::RunItemPrefix(run_id);
    std::unique_ptr<storage::Iterator> it =
        txn.NewIterator(kFamily, prefix, storage::PrefixUpperBound(prefix));
    RETURN_IF_ERROR(RebuildLevels(*it, &locked.record));
  }
  return locked;
}

TallyDelta RunTally(const Run& run, int sign) {
  return TallyDelta{IsTerminalRun(run) ? Tally::kRunsEnded : Tally::kRunsActive, "", sign, 0};
}

absl::Status TxnTallyRun(Transaction& txn, const Run* before, const Run* after) {
  if (before != nullptr && after != nullptr && IsTerminalRun(*before) == IsTerminalRun(*after)) {
    return absl::OkStatus();
  }
  std::vector<TallyDelta> deltas;
  if (before != nullptr) deltas.push_back(RunTally(*before, -1));
  if (after != nullptr) deltas.push_back(RunTally(*after, +1));
  const Run& either = after != nullptr ? *after : *before;
  return Tallies::TxnApply(txn, std::move(deltas), either.run_id());
}

absl::Status TallyRun(Transaction& txn, const Run& after) {
  absl::StatusOr<std::string> raw = txn.GetForUpdate(kFamily, keys::RunHeader(after.run_id()));
  if (!raw.ok() && !absl::IsNotFound(raw.status())) return raw.status();
  std::optional<WorkRunRecord> before;
  if (raw.ok()) {
    ASSIGN_OR_RETURN(before, DecodeRun(*raw));
  }
  return TxnTallyRun(txn, before.has_value() ? &before->run() : nullptr, &after);
}

absl::Status PutRun(Transaction& txn, LockedRun& locked) {
  RETURN_IF_ERROR(TallyRun(txn, locked.record.run()));
  const std::string& run_id = locked.record.run().run_id();
  for (const v1::WorkEvent& event : locked.log) {
    RETURN_IF_ERROR(txn.Put(kFamily, keys::RunEvent(run_id, static_cast<uint64_t>(event.seq())),
                            EncodeRecord(event)));
  }
  locked.log.clear();
  return txn.Put(kFamily, keys::RunHeader(run_id), EncodeRecord(locked.record));
}

std::string EventMessage(absl::string_view text) {
  if (text.size() <= kMaxEventMessageBytes) return std::string(text);
  size_t end = kMaxEventMessageBytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return std::string(text.substr(0, end));
}

v1::WorkEvent ItemEvent(v1::WorkEvent::Kind kind, const WorkItem& item, absl::string_view message) {
  v1::WorkEvent event;
  event.set_kind(kind);
  event.set_item_id(item.item_id());
  event.set_level(item.level());
  event.set_item_status(item.status());
  if (kind != v1::WorkEvent::KIND_ITEM_CREATED && kind != v1::WorkEvent::KIND_ITEM_RETRIED) {
    event.set_worker_id(item.worker_id());
    event.set_attempt(item.attempts());
    event.set_epoch(item.epoch());
  }
  event.set_message(EventMessage(message));
  return event;
}

void Rederive(LockedRun* locked, absl::Time now) {
  Run& run = locked->run();
  for (v1::LevelState& level : *run.mutable_level_states()) {
    const v1::LevelStatus status = DeriveLevelStatus(level);
    if (status == level.status()) continue;
    level.set_status(status);
    if (status == v1::LEVEL_STATUS_COMPLETE) *level.mutable_complete_time() = ToProtoTime(now);
    v1::WorkEvent event;
    event.set_kind(v1::WorkEvent::KIND_LEVEL_CHANGED);
    event.set_level(level.level());
    event.set_level_status(status);
    locked->Log(std::move(event), now);
  }
  run.set_current_level(CurrentLevel(locked->record));
  const v1::RunStatus status = DeriveRunStatus(run);
  if (status != run.status()) {
    run.set_status(status);
    v1::WorkEvent event;
    event.set_kind(v1::WorkEvent::KIND_RUN_STATUS_CHANGED);
    event.set_run_status(status);
    locked->Log(std::move(event), now);
  }
  *run.mutable_update_time() = ToProtoTime(now);
}

absl::StatusOr<std::optional<v1::RunWorker>> LockWorker(Transaction& txn, absl::string_view run_id,
                                                        absl::string_view worker_id) {
  absl::StatusOr<std::string> raw = txn.GetForUpdate(kFamily, keys::RunWorker(run_id, worker_id));
  if (absl::IsNotFound(raw.status())) return std::nullopt;
  RETURN_IF_ERROR(raw.status());
  v1::RunWorker worker;
  RETURN_IF_ERROR(DecodeRecord(*raw, &worker));
  return worker;
}

absl::Status PutWorker(Transaction& txn, v1::RunWorker* worker, absl::Time now) {
  *worker->mutable_update_time() = ToProtoTime(now);
  return txn.Put(kFamily, keys::RunWorker(worker->run_id(), worker->worker_id()),
                 EncodeRecord(*worker));
}

absl::StatusOr<absl::flat_hash_set<int64_t>> WorkerNumbers(Transaction& txn,
                                                           absl::string_view run_id) {
  const std::string prefix = keys::RunWorkerPrefix(run_id);
  std::unique_ptr<storage::Iterator> it =
      txn.NewIterator(kFamily, prefix, storage::PrefixUpperBound(prefix));
  absl::flat_hash_set<int64_t> taken;
  for (; it->Valid(); it->Next()) {
    v1::RunWorker worker;
    RETURN_IF_ERROR(DecodeRecord(it->value(), &worker));
    if (worker.has_number()) {
      taken.insert(worker.number());
    } else if (std::optional<int64_t> n = common::WorkerIdAsNumber(worker.worker_id());
               n.has_value()) {
      taken.insert(*n);
    }
  }
  RETURN_IF_ERROR(it->status());
  return taken;
}

void SetWorkerStatus(LockedRun* locked, v1::RunWorker* worker, v1::WorkerStatus status,
                     absl::string_view reason, absl::Time now) {
  if (worker->status() == status) return;
  worker->set_status(status);
  worker->set_status_reason(std::string(reason));
  v1::WorkEvent event;
  event.set_kind(v1::WorkEvent::KIND_WORKER_CHANGED);
  event.set_worker_id(worker->worker_id());
  event.set_worker_status(status);
  event.set_message(EventMessage(reason));
  locked->Log(std::move(event), now);
}

void ReleaseItem(LockedRun* locked, v1::RunWorker* worker, absl::string_view item_id,
                 v1::WorkerStatus idle_status, absl::string_view reason, absl::Time now) {
  auto* held = worker->mutable_held_items();
  for (int i = 0; i < held->size(); ++i) {
    if ((*held)[i] == item_id) {
      held->erase(held->begin() + i);
      break;
    }
  }
  worker->set_current_item(held->empty() ? std::string() : *held->rbegin());
  if (held->empty()) SetWorkerStatus(locked, worker, idle_status, reason, now);
}

absl::StatusOr<WorkItem> LockItem(Transaction& txn, absl::string_view run_id,
                                  absl::string_view item_id) {
  absl::StatusOr<std::string> raw = txn.GetForUpdate(kFamily, keys::RunItem(run_id, item_id));
  if (absl::IsNotFound(raw.status())) return ItemNotFound(run_id, item_id);
  RETURN_IF_ERROR(raw.status());
  WorkItem item;
  RETURN_IF_ERROR(DecodeRecord(*raw, &item));
  return item;
}

absl::StatusOr<WorkItem> ReadItem(storage::Store* store, absl::string_view run_id,
                                  absl::string_view item_id) {
  absl::StatusOr<std::string> raw = store->Get(kFamily, keys::RunItem(run_id, item_id));
  if (absl::IsNotFound(raw.status())) return ItemNotFound(run_id, item_id);
  RETURN_IF_ERROR(raw.status());
  WorkItem item;
  RETURN_IF_ERROR(DecodeRecord(*raw, &item));
  return item;
}

void AddCount(v1::ItemCounts* counts, ItemStatus status, int64_t delta) {
  switch (status) {
    case v1::ITEM_STATUS_PENDING:
      counts->set_pending(counts->pending() + delta);
      break;
    case v1::ITEM_STATUS_RUNNING:
      counts->set_running(counts->running() + delta);
      break;
    case v1::ITEM_STATUS_DONE:
      counts->set_done(counts->done() + delta);
      break;
    case v1::ITEM_STATUS_FAILED:
      counts->set_failed(counts->failed() + delta);
      break;
    case v1::ITEM_STATUS_BLOCKED:
      counts->set_blocked(counts->blocked() + delta);
      break;
    default:
      break;
  }
}

void RecordTransition(LockedRun* locked, const WorkItem& before, ItemStatus to, absl::Time now) {
  WorkRunRecord* record = &locked->record;
  Run* run = record->mutable_run();
  if (before.status() != to) {
    AddCount(run->mutable_counts(), before.status(), -1);
    AddCount(run->mutable_counts(), to, +1);
    auto& open = *record->mutable_open_by_level();
    if (to == v1::ITEM_STATUS_DONE) {
      if (--open[before.level()] <= 0) open.erase(before.level());
    } else if (before.status() == v1::ITEM_STATUS_DONE) {
      ++open[before.level()];
    }
    v1::LevelState* level = FindLevel(run, before.level(), /*create=*/true);
    const auto count = [](ItemStatus status) { return status == v1::ITEM_STATUS_DONE ? 1 : 0; };
    const auto running = [](ItemStatus status) {
      return status == v1::ITEM_STATUS_RUNNING ? 1 : 0;
    };
    level->set_done(level->done() - count(before.status()) + count(to));
    level->set_running(level->running() - running(before.status()) + running(to));
    if (to == v1::ITEM_STATUS_RUNNING && !level->has_start_time()) {
      *level->mutable_start_time() = ToProtoTime(now);
    }
  }
  Rederive(locked, now);
}

absl::Status WriteItem(Transaction& txn, const WorkItem& before, WorkItem* item, absl::Time now) {
  item->set_version(before.version() + 1);
  *item->mutable_update_time() = ToProtoTime(now);
  const std::string& run_id = item->run_id();
  const std::string& item_id = item->item_id();
  const bool was_pending = before.status() == v1::ITEM_STATUS_PENDING;
  const bool is_pending = item->status() == v1::ITEM_STATUS_PENDING;
  if (was_pending && !is_pending) {
    RETURN_IF_ERROR(txn.Delete(
        kFamily, keys::RunPending(run_id, static_cast<uint64_t>(before.level()), item_id)));
  } else if (!was_pending && is_pending) {
    RETURN_IF_ERROR(txn.Put(
        kFamily, keys::RunPending(run_id, static_cast<uint64_t>(item->level()), item_id), ""));
  }
  const std::string old_lease =
      before.status() == v1::ITEM_STATUS_RUNNING
          ? keys::WorkLease(IndexMicros(before.lease_expire_time()), run_id, item_id)
          : "";
  const std::string new_lease =
      item->status() == v1::ITEM_STATUS_RUNNING
          ? keys::WorkLease(IndexMicros(item->lease_expire_time()), run_id, item_id)
          : "";
  if (old_lease != new_lease) {
    if (!old_lease.empty()) RETURN_IF_ERROR(txn.Delete(kFamily, old_lease));
    if (!new_lease.empty()) RETURN_IF_ERROR(txn.Put(kFamily, new_lease, ""));
  }
  return txn.Put(kFamily, keys::RunItem(run_id, item_id), EncodeRecord(*item));
}

absl::Status CheckLease(const WorkItem& item, const v1::LeaseToken& lease, absl::Time now,
                        LeaseExpiry expiry) {
  if (lease.epoch() < item.epoch()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "lease on item %s of run %s is stale: it is for epoch %d, but the item was claimed again "
        "(epoch %d, worker %s)",
        item.item_id(), item.run_id(), lease.epoch(), item.epoch(), item.worker_id()));
  }
  if (lease.epoch() > item.epoch()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "lease on item %s of run %s is for epoch %d, which was never issued (the item is at "
        "epoch %d)",
        item.item_id(), item.run_id(), lease.epoch(), item.epoch()));
  }
  if (item.status() != v1::ITEM_STATUS_RUNNING) {
    return absl::FailedPreconditionError(
        absl::StrFormat("item %s of run %s is %s: the lease of epoch %d no longer holds it",
                        item.item_id(), item.run_id(), StatusWord(item.status()), lease.epoch()));
  }
  if (expiry == LeaseExpiry::kObserved) return absl::OkStatus();
  const absl::Time expire = FromProtoTime(item.lease_expire_time());
  if (now >= expire) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "lease on item %s of run %s expired at %s; the item goes back to another worker",
        item.item_id(), item.run_id(), TimeText(expire)));
  }
  return absl::OkStatus();
}

v1::RunEvent ChangeEvent(const WorkItem& item, const Run* run) {
  v1::RunEvent event;
  event.set_type(v1::RunEvent::TYPE_CHANGED);
  event.set_run_id(item.run_id());
  *event.mutable_item() = item;
  if (run != nullptr) *event.mutable_run() = *run;
  return event;
}

absl::Status ValidateText(absl::string_view field, absl::string_view value,
                          const WorkLimits& limits) {
  return common::ValidateSize(field, value, limits.max_text_bytes);
}

absl::Status CheckClaimant(const Access& access, const Run& run, absl::string_view what) {
  if (!access.scoped) return absl::OkStatus();
  for (const std::string& claimant : run.claimants()) {
    if (claimant == access.principal) return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat(access.principal, " may not ", what, " run ", run.run_id(),
                   ": it is not one of the run's claimants (an admin names them when the run "
                   "is created)"));
}

absl::StatusOr<WorkRunRecord> ReadRun(Transaction& txn, absl::string_view run_id) {
  const std::string key = keys::RunHeader(run_id);
  std::unique_ptr<storage::Iterator> it =
      txn.NewIterator(kFamily, key, storage::PrefixUpperBound(key));
  it->Seek(key);
  RETURN_IF_ERROR(it->status());
  if (!it->Valid() || it->key() != key) return RunNotFound(run_id);
  return DecodeRun(it->value());
}

absl::StatusOr<std::vector<std::string>> ResolveClaimants(
    const google::protobuf::RepeatedPtrField<std::string>& requested, const Access& access) {
  if (requested.size() > kMaxClaimants) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the run names %d claimants; the limit is %d", requested.size(), kMaxClaimants));
  }
  std::vector<std::string> claimants;
  for (const std::string& claimant : requested) {
    RETURN_IF_ERROR(common::ValidateId("claimant", claimant));
    if (std::find(claimants.begin(), claimants.end(), claimant) != claimants.end()) {
      return absl::InvalidArgumentError(absl::StrCat("claimant ", claimant, " is named twice"));
    }
    claimants.push_back(claimant);
  }
  if (claimants.empty() && !access.principal.empty()) claimants.push_back(access.principal);
  return claimants;
}

}  // namespace coordinator::work_records
