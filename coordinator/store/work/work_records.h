// The in-transaction steps over a run's records (its header, items, workers and event log),
// shared by the files of WorkStore: work_store.cc (runs, items, levels, workers, events, purge),
// work_leases.cc (claims, heartbeats, completion, failure, retry and reaping) and work_import.cc
// (creating and importing runs). Internal to coordinator/store/work/: callers use WorkStore.
#ifndef COORDINATOR_STORE_WORK_WORK_RECORDS_H_
#define COORDINATOR_STORE_WORK_WORK_RECORDS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "coordinator/store/records/access.h"
#include "coordinator/store/records/keys.h"
#include "coordinator/store/records/record_codec.h"
#include "coordinator/store/records/tallies.h"
#include "coordinator/store/records/time_util.h"
#include "coordinator/store/work/run_rules.h"
#include "coordinator/store/work/task_graph.h"
#include "coordinator/v1/stored.pb.h"
#include "coordinator/v1/work.pb.h"
#include "google/protobuf/duration.pb.h"
#include "google/protobuf/timestamp.pb.h"
#include "storage/key_codec.h"
#include "storage/store.h"

namespace coordinator::work_records {

using storage::ColumnFamily;
using storage::Transaction;
using v1::ItemStatus;
using v1::Run;
using v1::WorkItem;
using v1::WorkRunRecord;
inline constexpr ColumnFamily kFamily = ColumnFamily::kWork;
inline constexpr int kDefaultRunPageSize = 50;
inline constexpr int kDefaultItemPageSize = 100;
// Lease tokens are bounded so a hostile one cannot make the server decode megabytes.
inline constexpr size_t kMaxLeaseBytes = 2048;
// The reaper takes back at most this many leases per scan, then scans again.
inline constexpr int kReapBatch = 256;
inline constexpr int32_t kDefaultMaxAttempts = 3;
inline constexpr int32_t kMaxAttemptsLimit = 1000;
inline constexpr absl::Duration kDefaultBackoffBase = absl::Seconds(10);
inline constexpr absl::Duration kDefaultBackoffMax = absl::Minutes(5);
inline constexpr size_t kMaxNonRetryableErrors = 100;
inline constexpr int kDefaultWorkerPageSize = 100;
inline constexpr int kDefaultEventPageSize = 100;
// The header's layout (WorkRunRecord.layout): 1 since level states and the event log.
inline constexpr int32_t kCurrentLayout = 1;
// An event keeps this much of a summary, error or reason; the item keeps all of it.
inline constexpr size_t kMaxEventMessageBytes = 1024;
// An empty claim refreshes its worker's last_heartbeat_time at most this often, so idle polls
// do not each write a record.
inline constexpr absl::Duration kIdleTouchInterval = absl::Seconds(1);
// Largest process id accepted (Linux's pid_max is at most 2^22).
inline constexpr int64_t kMaxPid = (int64_t{1} << 31) - 1;
// A merge commit or a stop reason.
inline constexpr size_t kMaxReasonBytes = 4096;
std::string StatusWord(ItemStatus status);

absl::Status RunNotFound(absl::string_view run_id);

absl::Status ItemNotFound(absl::string_view run_id, absl::string_view item_id);

std::string TimeText(absl::Time t);

// Microseconds since the epoch, as the lease index orders them (never negative).
uint64_t IndexMicros(const google::protobuf::Timestamp& ts);

// A well-formed, non-negative duration.
absl::StatusOr<absl::Duration> ReadDuration(absl::string_view field,
                                            const google::protobuf::Duration& d);

absl::StatusOr<absl::Duration> ResolveTtl(const google::protobuf::Duration& requested);

// The policy with its defaults filled in, or INVALID_ARGUMENT.
absl::StatusOr<v1::RetryPolicy> ResolvePolicy(const v1::RetryPolicy& requested,
                                              const WorkLimits& limits);

absl::Status ValidatePid(int64_t pid);

// Backoff after `attempts` failed attempts: base, 2*base, 4*base, ... up to max.
absl::Duration Backoff(const v1::RetryPolicy& policy, int attempts);

// The pattern of the run's policy that makes `error` non-retryable, if any.
std::optional<std::string> NonRetryablePattern(const v1::RetryPolicy& policy,
                                               absl::string_view error);

std::string GenerateRunId(absl::Time now);

absl::StatusOr<WorkRunRecord> DecodeRun(absl::string_view raw);

std::string LevelWord(v1::LevelStatus status);

// The level's status as its counts say; MERGED stays.
v1::LevelStatus DeriveLevelStatus(const v1::LevelState& level);

// The state of `level` in `run`, added (pending, in level order) when `create` and missing.
v1::LevelState* FindLevel(Run* run, int64_t level, bool create);

// The lowest level with open items; the highest level when none is open; 0 without levels.
int64_t CurrentLevel(const WorkRunRecord& record);

// Rebuilds the level states and current level of a record stored before they existed
// (layout 0) from the run's items, read through `it` (positioned on the first item).
absl::Status RebuildLevels(storage::Iterator& it, WorkRunRecord* record);

// A record as readers see it: one of layout 0 gets its level states from the items.
absl::StatusOr<WorkRunRecord> UpgradeForRead(storage::Store* store, WorkRunRecord record);

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
absl::StatusOr<LockedRun> LockRun(Transaction& txn, absl::string_view run_id);

// What a run counts in for in the running totals (records/tallies.h), `sign` +1 (it does now) or
// -1 (it no longer does).
TallyDelta RunTally(const Run& run, int sign);

// Moves the running totals from what `before` counted in for to what `after` does, inside `txn`,
// which holds the run header's lock. Null: the run did not exist before, or does not after.
absl::Status TxnTallyRun(Transaction& txn, const Run* before, const Run* after);

// Moves the running totals (tallies.h) from what the stored header of `after`'s run counts for
// to what `after` does. The caller holds the header's lock (of its absence, for a new run); the
// read sees the transaction's own writes.
absl::Status TallyRun(Transaction& txn, const Run& after);

// Writes the header and the log entries added since it was locked.
absl::Status PutRun(Transaction& txn, LockedRun& locked);

// The first kMaxEventMessageBytes of `text`, cut at a character boundary.
std::string EventMessage(absl::string_view text);

// A log entry about `item` as it is after the change.
v1::WorkEvent ItemEvent(v1::WorkEvent::Kind kind, const WorkItem& item,
                        absl::string_view message = "");

// Recomputes the level statuses, the current level and the run's status, logging each change.
void Rederive(LockedRun* locked, absl::Time now);

// ---- The worker registry. ----

// The worker's record, locked; nullopt when it is not registered.
absl::StatusOr<std::optional<v1::RunWorker>> LockWorker(Transaction& txn, absl::string_view run_id,
                                                        absl::string_view worker_id);

absl::Status PutWorker(Transaction& txn, v1::RunWorker* worker, absl::Time now);

// The numbers the run's workers have (RunWorker.number; a worker registered before numbers
// were kept counts with its worker_id when that is a number). The caller holds the run's lock,
// so no worker joins meanwhile.
absl::StatusOr<absl::flat_hash_set<int64_t>> WorkerNumbers(Transaction& txn,
                                                           absl::string_view run_id);

// Sets the worker's status; a change is logged (the caller writes `locked`).
void SetWorkerStatus(LockedRun* locked, v1::RunWorker* worker, v1::WorkerStatus status,
                     absl::string_view reason, absl::Time now);

// Takes `item_id` off the worker's held items; the worker is `idle_status` when none is left.
void ReleaseItem(LockedRun* locked, v1::RunWorker* worker, absl::string_view item_id,
                 v1::WorkerStatus idle_status, absl::string_view reason, absl::Time now);

absl::StatusOr<WorkItem> LockItem(Transaction& txn, absl::string_view run_id,
                                  absl::string_view item_id);

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
                                  absl::string_view item_id);

void AddCount(v1::ItemCounts* counts, ItemStatus status, int64_t delta);

// Records in the run's header that `before` moves to status `to` (counts, open items and the
// state of its level), re-derives the statuses and stamps the run.
void RecordTransition(LockedRun* locked, const WorkItem& before, ItemStatus to, absl::Time now);

// Writes `item`, changed from `before`, and keeps the pending and lease indexes in step.
absl::Status WriteItem(Transaction& txn, const WorkItem& before, WorkItem* item, absl::Time now);

// FAILED_PRECONDITION unless `lease` holds `item` now: the same epoch, the item running, and
// (under LeaseExpiry::kWallClock) the lease not expired on `now`. Under kObserved a lease holds
// until the reaper takes it back, so no wall time is compared.
absl::Status CheckLease(const WorkItem& item, const v1::LeaseToken& lease, absl::Time now,
                        LeaseExpiry expiry);

v1::RunEvent ChangeEvent(const WorkItem& item, const Run* run);

absl::Status ValidateText(absl::string_view field, absl::string_view value,
                          const WorkLimits& limits);

// PERMISSION_DENIED unless `access` may claim the items of `run` and use their leases.
absl::Status CheckClaimant(const Access& access, const Run& run, absl::string_view what);

// The committed header of `run_id`, read inside `txn` without locking it (claimants never
// change after the run is created).
absl::StatusOr<WorkRunRecord> ReadRun(Transaction& txn, absl::string_view run_id);

// The claimants a new run gets: `requested`, checked, or the creator when none are named.
absl::StatusOr<std::vector<std::string>> ResolveClaimants(
    const google::protobuf::RepeatedPtrField<std::string>& requested, const Access& access);

}  // namespace coordinator::work_records

#endif  // COORDINATOR_STORE_WORK_WORK_RECORDS_H_
