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
#include "storage/durability_scope.h"
#include "storage/key_codec.h"

namespace coordinator {
namespace {

using storage::ColumnFamily;
using storage::Transaction;
using v1::ItemStatus;
using v1::Run;
using v1::WorkItem;
using v1::WorkRunRecord;

constexpr ColumnFamily kFamily = ColumnFamily::kWork;
constexpr int kDefaultRunPageSize = 50;
constexpr int kDefaultItemPageSize = 100;
// Lease tokens are bounded so a hostile one cannot make the server decode megabytes.
constexpr size_t kMaxLeaseBytes = 2048;
// The reaper takes back at most this many leases per scan, then scans again.
constexpr int kReapBatch = 256;
constexpr int32_t kDefaultMaxAttempts = 3;
constexpr int32_t kMaxAttemptsLimit = 1000;
constexpr absl::Duration kDefaultBackoffBase = absl::Seconds(10);
constexpr absl::Duration kDefaultBackoffMax = absl::Minutes(5);
constexpr size_t kMaxNonRetryableErrors = 100;
constexpr int kDefaultWorkerPageSize = 100;
constexpr int kDefaultEventPageSize = 100;
// The header's layout (WorkRunRecord.layout): 1 since level states and the event log.
constexpr int32_t kCurrentLayout = 1;
// An event keeps this much of a summary, error or reason; the item keeps all of it.
constexpr size_t kMaxEventMessageBytes = 1024;
// An empty claim refreshes its worker's last_heartbeat_time at most this often, so idle polls
// do not each write a record.
constexpr absl::Duration kIdleTouchInterval = absl::Seconds(1);
// Largest process id accepted (Linux's pid_max is at most 2^22).
constexpr int64_t kMaxPid = (int64_t{1} << 31) - 1;
// A merge commit or a stop reason.
constexpr size_t kMaxReasonBytes = 4096;

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

// Microseconds since the epoch, as the lease index orders them (never negative).
uint64_t IndexMicros(const google::protobuf::Timestamp& ts) {
  return static_cast<uint64_t>(std::max<int64_t>(0, absl::ToUnixMicros(FromProtoTime(ts))));
}

// A well-formed, non-negative duration.
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

// The policy with its defaults filled in, or INVALID_ARGUMENT.
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

// Backoff after `attempts` failed attempts: base, 2*base, 4*base, ... up to max.
absl::Duration Backoff(const v1::RetryPolicy& policy, int attempts) {
  const absl::Duration max = FromProtoDuration(policy.backoff_max());
  absl::Duration d = FromProtoDuration(policy.backoff_base());
  for (int i = 1; i < attempts && d < max; ++i) d *= 2;
  return std::min(d, max);
}

// The pattern of the run's policy that makes `error` non-retryable, if any.
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

// The level's status as its counts say; MERGED stays.
v1::LevelStatus DeriveLevelStatus(const v1::LevelState& level) {
  if (level.status() == v1::LEVEL_STATUS_MERGED) return v1::LEVEL_STATUS_MERGED;
  if (level.total() > 0 && level.done() == level.total()) return v1::LEVEL_STATUS_COMPLETE;
  if (level.has_start_time() || level.running() > 0 || level.done() > 0) {
    return v1::LEVEL_STATUS_RUNNING;
  }
  return v1::LEVEL_STATUS_PENDING;
}

// The state of `level` in `run`, added (pending, in level order) when `create` and missing.
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

// The lowest level with open items; the highest level when none is open; 0 without levels.
int64_t CurrentLevel(const WorkRunRecord& record) {
  if (!record.open_by_level().empty()) {
    int64_t lowest = INT64_MAX;
    for (const auto& [level, open] : record.open_by_level()) lowest = std::min(lowest, level);
    return lowest;
  }
  const auto& levels = record.run().level_states();
  return levels.empty() ? 0 : levels.rbegin()->level();
}

// Rebuilds the level states and current level of a record stored before they existed
// (layout 0) from the run's items, read through `it` (positioned on the first item).
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

// A record as readers see it: one of layout 0 gets its level states from the items.
absl::StatusOr<WorkRunRecord> UpgradeForRead(storage::Store* store, WorkRunRecord record) {
  if (record.layout() >= kCurrentLayout) return record;
  const std::string prefix = keys::RunItemPrefix(record.run().run_id());
  std::unique_ptr<storage::Iterator> it =
      store->NewIterator(kFamily, prefix, storage::PrefixUpperBound(prefix));
  RETURN_IF_ERROR(RebuildLevels(*it, &record));
  return record;
}

// A run's header locked in a transaction, with the entries the transaction adds to the run's
// event log. PutRun writes both.
struct LockedRun {
  WorkRunRecord record;
  std::vector<v1::WorkEvent> log;

  Run& run() { return *record.mutable_run(); }

  // Appends `event` to the log as the run's next entry.
  void Log(v1::WorkEvent event, absl::Time now) {
    Run& r = run();
    r.set_last_event_seq(r.last_event_seq() + 1);
    event.set_seq(r.last_event_seq());
    *event.mutable_time() = ToProtoTime(now);
    event.set_run_id(r.run_id());
    log.push_back(std::move(event));
  }
};

// Reads and locks the header of `run_id`, upgraded to the current layout.
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

// What a run counts in for in the running totals (records/tallies.h), `sign` +1 (it does now) or
// -1 (it no longer does).
TallyDelta RunTally(const Run& run, int sign) {
  return TallyDelta{WorkStore::IsTerminal(run) ? Tally::kRunsEnded : Tally::kRunsActive, "", sign,
                    0};
}

// Moves the running totals from what `before` counted in for to what `after` does, inside `txn`,
// which holds the run header's lock. Null: the run did not exist before, or does not after.
absl::Status TxnTallyRun(Transaction& txn, const Run* before, const Run* after) {
  if (before != nullptr && after != nullptr &&
      WorkStore::IsTerminal(*before) == WorkStore::IsTerminal(*after)) {
    return absl::OkStatus();
  }
  std::vector<TallyDelta> deltas;
  if (before != nullptr) deltas.push_back(RunTally(*before, -1));
  if (after != nullptr) deltas.push_back(RunTally(*after, +1));
  const Run& either = after != nullptr ? *after : *before;
  return Tallies::TxnApply(txn, std::move(deltas), either.run_id());
}

// Moves the running totals (tallies.h) from what the stored header of `after`'s run counts for
// to what `after` does. The caller holds the header's lock (of its absence, for a new run); the
// read sees the transaction's own writes.
absl::Status TallyRun(Transaction& txn, const Run& after) {
  absl::StatusOr<std::string> raw = txn.GetForUpdate(kFamily, keys::RunHeader(after.run_id()));
  if (!raw.ok() && !absl::IsNotFound(raw.status())) return raw.status();
  std::optional<WorkRunRecord> before;
  if (raw.ok()) {
    ASSIGN_OR_RETURN(before, DecodeRun(*raw));
  }
  return TxnTallyRun(txn, before.has_value() ? &before->run() : nullptr, &after);
}

// Writes the header and the log entries added since it was locked.
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

// The first kMaxEventMessageBytes of `text`, cut at a character boundary.
std::string EventMessage(absl::string_view text) {
  if (text.size() <= kMaxEventMessageBytes) return std::string(text);
  size_t end = kMaxEventMessageBytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return std::string(text.substr(0, end));
}

// A log entry about `item` as it is after the change.
v1::WorkEvent ItemEvent(v1::WorkEvent::Kind kind, const WorkItem& item,
                        absl::string_view message = "") {
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

// Recomputes the level statuses, the current level and the run's status, logging each change.
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

// ---- The worker registry. ----

// The worker's record, locked; nullopt when it is not registered.
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

// Sets the worker's status; a change is logged (the caller writes `locked`).
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

// Takes `item_id` off the worker's held items; the worker is `idle_status` when none is left.
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

// Point reads of a run's items through one iterator of the transaction, without locking them.
// Claims read candidates and dependencies this way: their status changes only under the run's
// header lock, which the claim holds, and a read inside the transaction does not wait for the
// write-ahead log the way a Store read does (the commit waits once for everything).
class ItemReader {
 public:
  ItemReader(Transaction& txn, absl::string_view run_id)
      : run_id_(run_id),
        prefix_(keys::RunItemPrefix(run_id)),
        it_(txn.NewIterator(kFamily, prefix_, storage::PrefixUpperBound(prefix_))) {}

  absl::StatusOr<WorkItem> Read(absl::string_view item_id) {
    const std::string key = keys::RunItem(run_id_, item_id);
    it_->Seek(key);
    RETURN_IF_ERROR(it_->status());
    if (!it_->Valid() || it_->key() != key) return ItemNotFound(run_id_, item_id);
    WorkItem item;
    RETURN_IF_ERROR(DecodeRecord(it_->value(), &item));
    return item;
  }

 private:
  const std::string run_id_;
  const std::string prefix_;
  std::unique_ptr<storage::Iterator> it_;
};

// The committed item.
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

// Records in the run's header that `before` moves to status `to` (counts, open items and the
// state of its level), re-derives the statuses and stamps the run.
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

// Writes `item`, changed from `before`, and keeps the pending and lease indexes in step.
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

// FAILED_PRECONDITION unless `lease` holds `item` now: the same epoch, the item running, and
// (under LeaseExpiry::kWallClock) the lease not expired on `now`. Under kObserved a lease holds
// until the reaper takes it back, so no wall time is compared.
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

// PERMISSION_DENIED unless `access` may claim the items of `run` and use their leases.
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

// The committed header of `run_id`, read inside `txn` without locking it (claimants never
// change after the run is created).
absl::StatusOr<WorkRunRecord> ReadRun(Transaction& txn, absl::string_view run_id) {
  const std::string key = keys::RunHeader(run_id);
  std::unique_ptr<storage::Iterator> it =
      txn.NewIterator(kFamily, key, storage::PrefixUpperBound(key));
  it->Seek(key);
  RETURN_IF_ERROR(it->status());
  if (!it->Valid() || it->key() != key) return RunNotFound(run_id);
  return DecodeRun(it->value());
}

// The claimants a new run gets: `requested`, checked, or the creator when none are named.
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

}  // namespace

v1::RunStatus DeriveRunStatus(const Run& run) {
  const v1::ItemCounts& c = run.counts();
  if (c.total() > 0 && c.done() == c.total()) return v1::RUN_STATUS_COMPLETED;
  if (c.failed() > 0) return v1::RUN_STATUS_FAILED;
  if (c.running() > 0) return v1::RUN_STATUS_RUNNING;
  if (c.blocked() > 0) return v1::RUN_STATUS_BLOCKED;
  if (run.claim_count() == 0) return v1::RUN_STATUS_PLANNING;
  return v1::RUN_STATUS_PENDING;
}

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
  RETURN_IF_ERROR(common::ValidateId("run_id", settings.run_id()));
  if (settings.kind() == v1::RUN_KIND_UNSPECIFIED || !v1::RunKind_IsValid(settings.kind())) {
    return absl::InvalidArgumentError("kind must be workstreams or task graph");
  }
  RETURN_IF_ERROR(common::ValidateSize("specs_dir", settings.specs_dir(), limits_.max_path_bytes));
  RETURN_IF_ERROR(
      common::ValidateSize("base_branch", settings.base_branch(), limits_.max_path_bytes));
  RETURN_IF_ERROR(common::ValidateSize("feature", settings.feature(), limits_.max_path_bytes));
  if (settings.metadata().ByteSizeLong() + settings.levels().ByteSizeLong() >
      limits_.max_metadata_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("the run's metadata and levels are %d bytes; the limit is %d bytes",
                        settings.metadata().ByteSizeLong() + settings.levels().ByteSizeLong(),
                        limits_.max_metadata_bytes));
  }
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
  run.mutable_counts()->set_total(static_cast<int64_t>(items.size()));
  for (const WorkItem& item : items) {
    AddCount(run.mutable_counts(), item.status(), +1);
    // Every claim is an attempt; an item that left pending was claimed at least once.
    run.set_claim_count(
        run.claim_count() +
        std::max<int64_t>(item.attempts(), item.status() != v1::ITEM_STATUS_PENDING ? 1 : 0));
    if (item.status() != v1::ITEM_STATUS_DONE) ++(*record.mutable_open_by_level())[item.level()];
    v1::LevelState* level = FindLevel(&run, item.level(), /*create=*/true);
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
  for (v1::LevelState& level : *run.mutable_level_states()) {
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
    WorkRunRecord& record = locked.record;
    RETURN_IF_ERROR(CheckClaimant(access, record.run(), "claim items of"));
    Run& run = *record.mutable_run();
    std::optional<std::string> chosen;
    bool any_ready = false;  // a candidate whose dependencies are done (backoff aside)
    std::optional<absl::Time> earliest;
    std::set<std::string> missing;  // capabilities of ready items the worker lacks
    if (!record.open_by_level().empty()) {
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
        any_ready = true;
        const absl::Time not_before = candidate.has_not_before()
                                          ? FromProtoTime(candidate.not_before())
                                          : absl::InfinitePast();
        if (not_before > now) {
          if (!earliest.has_value() || not_before < *earliest) earliest = not_before;
          continue;
        }
        bool covered = true;
        for (const std::string& capability : candidate.required_capabilities()) {
          if (!declared.contains(capability)) {
            missing.insert(capability);
            covered = false;
          }
        }
        if (!covered) continue;
        chosen = item_id;
        break;
      }
      RETURN_IF_ERROR(it->status());
    }

    // The worker's registry record: registered by its first claim, refreshed by every one.
    ASSIGN_OR_RETURN(std::optional<v1::RunWorker> found,
                     LockWorker(txn, run_id, request.worker_id()));
    const bool registered = found.has_value();
    v1::RunWorker worker = registered ? *std::move(found) : v1::RunWorker();
    const v1::RunWorker worker_before = worker;
    if (!registered) {
      worker.set_worker_id(request.worker_id());
      worker.set_run_id(run_id);
      *worker.mutable_create_time() = ToProtoTime(now);
    }
    *worker.mutable_capabilities() = request.capabilities();
    if (request.pid() != 0) worker.set_pid(request.pid());

    if (!chosen.has_value()) {
      if (worker.held_items().empty()) {
        SetWorkerStatus(&locked, &worker, v1::WORKER_STATUS_IDLE, "", now);
      }
      const bool changed =
          !registered || !locked.log.empty() ||
          !std::equal(worker.capabilities().begin(), worker.capabilities().end(),
                      worker_before.capabilities().begin(), worker_before.capabilities().end()) ||
          worker.pid() != worker_before.pid();
      if (changed || now - FromProtoTime(worker.last_heartbeat_time()) >= kIdleTouchInterval) {
        *worker.mutable_last_heartbeat_time() = ToProtoTime(now);
        RETURN_IF_ERROR(PutWorker(txn, &worker, now));
      }
      if (!locked.log.empty()) RETURN_IF_ERROR(PutRun(txn, locked));
      *response.mutable_run() = run;
      // Nothing runs, so nothing will make a waiting item ready: a person has to act.
      response.set_stalled(record.open_by_level().empty() ||
                           (run.counts().running() == 0 && !any_ready));
      if (earliest.has_value()) *response.mutable_retry_after() = ToProtoDuration(*earliest - now);
      for (const std::string& capability : missing) response.add_missing_capabilities(capability);
      return absl::OkStatus();
    }

    ASSIGN_OR_RETURN(const WorkItem before, LockItem(txn, run_id, *chosen));
    if (before.status() != v1::ITEM_STATUS_PENDING) {
      return absl::DataLossError(absl::StrCat("item ", *chosen, " of run ", run_id,
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

bool WorkStore::IsTerminal(const Run& run) {
  if (run.status() == v1::RUN_STATUS_COMPLETED) return true;
  return run.status() == v1::RUN_STATUS_FAILED && run.counts().pending() == 0 &&
         run.counts().running() == 0;
}

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
