#include "storage/rocks_store.h"

#include <algorithm>
#include <map>
#include <memory>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "rocksdb/cache.h"
#include "rocksdb/db.h"
#include "rocksdb/env.h"
#include "rocksdb/file_system.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/listener.h"
#include "rocksdb/options.h"
#include "rocksdb/table.h"
#include "rocksdb/utilities/checkpoint.h"
#include "rocksdb/utilities/transaction.h"
#include "rocksdb/utilities/transaction_db.h"
#include "storage/durability_scope.h"
#include "storage/group_commit.h"
#include "storage/key_codec.h"
#include "storage/wal_guard.h"

namespace storage {
namespace {

// Up to this many cores, writers do not insert into the memtable in parallel (RocksStore::Open).
constexpr unsigned kFewCores = 4;

rocksdb::Slice ToSlice(absl::string_view s) { return rocksdb::Slice(s.data(), s.size()); }
absl::string_view ToView(const rocksdb::Slice& s) { return absl::string_view(s.data(), s.size()); }

std::string EncodeSchemaVersion(uint32_t v) {
  std::string out;
  AppendUint32BigEndian(v, &out);
  return out;
}

// An Iterator over a rocksdb::Iterator that owns the bounds the ReadOptions point at.
//
// A transaction's iterator also reads the transaction's own writes (a WriteBatchWithIndex), and
// RocksDB documents that a write to the transaction invalidates such an iterator's current
// entry. So that callers may write while they scan (delete every key of a prefix, rewrite each
// record), a transaction iterator keeps a copy of its current key, serves key() from it, and
// moves on by seeking past it rather than by the invalidated rocksdb::Iterator::Next.
class RocksIterator final : public Iterator {
 public:
  // `make` builds the rocksdb iterator from read options whose bounds point into this object.
  template <typename MakeFn>
  RocksIterator(absl::string_view lower, absl::string_view upper, bool in_transaction, MakeFn make)
      : lower_(lower),
        upper_(upper),
        lower_slice_(lower_),
        upper_slice_(upper_),
        in_transaction_(in_transaction) {
    rocksdb::ReadOptions ro;
    if (!lower_.empty()) ro.iterate_lower_bound = &lower_slice_;
    if (!upper_.empty()) ro.iterate_upper_bound = &upper_slice_;
    it_.reset(make(ro));
    it_->Seek(lower_slice_);
    Remember();
  }

  void Seek(absl::string_view key) override {
    it_->Seek(ToSlice(key));
    Remember();
  }
  bool Valid() const override { return it_->Valid(); }
  void Next() override {
    if (!in_transaction_) {
      it_->Next();
      return;
    }
    // The current key may have been written (or deleted) since the last move.
    it_->Seek(ToSlice(current_));
    if (it_->Valid() && ToView(it_->key()) == current_) it_->Next();
    Remember();
  }
  absl::string_view key() const override {
    return in_transaction_ ? absl::string_view(current_) : ToView(it_->key());
  }
  absl::string_view value() const override { return ToView(it_->value()); }
  absl::Status status() const override { return FromRocksStatus(it_->status(), "scan"); }

 private:
  void Remember() {
    if (in_transaction_ && it_->Valid()) current_.assign(it_->key().data(), it_->key().size());
  }

  const std::string lower_;
  const std::string upper_;
  const rocksdb::Slice lower_slice_;
  const rocksdb::Slice upper_slice_;
  const bool in_transaction_;
  std::string current_;  // the current key, when in_transaction_
  std::unique_ptr<rocksdb::Iterator> it_;
};

// An iterator that is empty and reports why (the store could not serve the scan).
class FailedIterator final : public Iterator {
 public:
  explicit FailedIterator(absl::Status status) : status_(std::move(status)) {}
  void Seek(absl::string_view) override {}
  bool Valid() const override { return false; }
  void Next() override {}
  absl::string_view key() const override { return {}; }
  absl::string_view value() const override { return {}; }
  absl::Status status() const override { return status_; }

 private:
  absl::Status status_;
};

class RocksTransaction final : public Transaction {
 public:
  RocksTransaction(rocksdb::Transaction* txn, std::vector<rocksdb::ColumnFamilyHandle*> handles)
      : txn_(txn), handles_(std::move(handles)) {}

  // The write stripes (RocksStore::StripeOf) of every key this transaction wrote or deleted.
  const std::vector<size_t>& written_stripes() const { return written_stripes_; }

  absl::StatusOr<std::string> GetForUpdate(ColumnFamily cf, absl::string_view key) override {
    std::string value;
    rocksdb::Status s = txn_->GetForUpdate(rocksdb::ReadOptions(), handle(cf), ToSlice(key), &value,
                                           /*exclusive=*/true);
    if (s.ok()) return value;
    if (s.IsBusy() || s.IsTimedOut() || s.IsTryAgain()) lock_failed_ = true;
    return FromRocksStatus(s, "read for update");
  }

  // Put and Delete copy their arguments first: they may point into this transaction's own
  // batch (an iterator's current value), which the write itself may reallocate.
  absl::Status Put(ColumnFamily cf, absl::string_view key, absl::string_view value) override {
    const std::string k(key);
    const std::string v(value);
    written_stripes_.push_back(RocksStore::StripeOf(cf, k));
    rocksdb::Status s = txn_->Put(handle(cf), k, v);
    if (s.IsBusy() || s.IsTimedOut() || s.IsTryAgain()) lock_failed_ = true;
    return FromRocksStatus(s, "put");
  }

  absl::Status Delete(ColumnFamily cf, absl::string_view key) override {
    const std::string k(key);
    written_stripes_.push_back(RocksStore::StripeOf(cf, k));
    rocksdb::Status s = txn_->Delete(handle(cf), k);
    if (s.IsBusy() || s.IsTimedOut() || s.IsTryAgain()) lock_failed_ = true;
    return FromRocksStatus(s, "delete");
  }

  std::unique_ptr<Iterator> NewIterator(ColumnFamily cf, absl::string_view lower,
                                        absl::string_view upper) override {
    return std::make_unique<RocksIterator>(
        lower, upper, /*in_transaction=*/true,
        [&](const rocksdb::ReadOptions& ro) { return txn_->GetIterator(ro, handle(cf)); });
  }

  // True when an operation failed because a lock could not be had (timeout or deadlock): the
  // whole transaction is worth retrying.
  bool lock_failed() const { return lock_failed_; }

 private:
  rocksdb::ColumnFamilyHandle* handle(ColumnFamily cf) const {
    return handles_[static_cast<size_t>(cf)];
  }

  rocksdb::Transaction* txn_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  bool lock_failed_ = false;
  std::vector<size_t> written_stripes_;
};

// One RocksDB snapshot, released when the last view that reads it goes.
class SnapshotHolder {
 public:
  SnapshotHolder(rocksdb::DB* db, std::vector<rocksdb::ColumnFamilyHandle*> handles)
      : db_(db), handles_(std::move(handles)), snapshot_(db->GetSnapshot()) {}
  ~SnapshotHolder() { db_->ReleaseSnapshot(snapshot_); }
  SnapshotHolder(const SnapshotHolder&) = delete;
  SnapshotHolder& operator=(const SnapshotHolder&) = delete;

  rocksdb::DB* db() const { return db_; }
  const rocksdb::Snapshot* snapshot() const { return snapshot_; }
  rocksdb::ColumnFamilyHandle* handle(ColumnFamily cf) const {
    return handles_[static_cast<size_t>(cf)];
  }

 private:
  rocksdb::DB* db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  const rocksdb::Snapshot* snapshot_;
};

// Store::NewSnapshot: reads at one RocksDB snapshot, refuses writes.
class SnapshotView final : public Store {
 public:
  explicit SnapshotView(std::shared_ptr<SnapshotHolder> holder) : holder_(std::move(holder)) {}

  absl::StatusOr<std::string> Get(ColumnFamily cf, absl::string_view key) override {
    rocksdb::ReadOptions ro;
    ro.snapshot = holder_->snapshot();
    std::string value;
    rocksdb::Status s = holder_->db()->Get(ro, holder_->handle(cf), ToSlice(key), &value);
    if (!s.ok()) return FromRocksStatus(s, "get");
    return value;
  }
  std::unique_ptr<Iterator> NewIterator(ColumnFamily cf, absl::string_view lower,
                                        absl::string_view upper) override {
    return std::make_unique<RocksIterator>(
        lower, upper, /*in_transaction=*/false, [&](const rocksdb::ReadOptions& ro) {
          rocksdb::ReadOptions at = ro;
          at.snapshot = holder_->snapshot();
          return holder_->db()->NewIterator(at, holder_->handle(cf));
        });
  }
  absl::Status RunTransaction(absl::FunctionRef<absl::Status(Transaction&)>) override {
    return absl::FailedPreconditionError("a snapshot of the database is read-only");
  }
  absl::Status Checkpoint(const std::string&) override {
    return absl::FailedPreconditionError("checkpoint the store, not a snapshot of it");
  }
  absl::StatusOr<std::unique_ptr<Store>> NewSnapshot() override {
    return std::make_unique<SnapshotView>(holder_);
  }

 private:
  std::shared_ptr<SnapshotHolder> holder_;
};

rocksdb::ColumnFamilyOptions MakeColumnFamilyOptions(const StoreOptions& options) {
  rocksdb::ColumnFamilyOptions cf;
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = rocksdb::NewLRUCache(options.block_cache_bytes);
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  table.cache_index_and_filter_blocks = true;
  table.pin_l0_filter_and_index_blocks_in_cache = true;
  cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  cf.compression = rocksdb::kNoCompression;
  cf.bottommost_compression = rocksdb::kNoCompression;
  return cf;
}

}  // namespace

// How RocksDB failures reach callers:
//   NotFound                      -> NOT_FOUND (an outcome, the caller decides)
//   Busy / TimedOut / TryAgain    -> ABORTED (a lock wait or deadlock; retry the transaction)
//   IOError with no space left    -> RESOURCE_EXHAUSTED
//   other IOError                 -> UNAVAILABLE (the disk or the file system failed)
//   Corruption                    -> DATA_LOSS
//   InvalidArgument / NotSupported-> INVALID_ARGUMENT / UNIMPLEMENTED
//   anything else                 -> INTERNAL
absl::Status FromRocksStatus(const rocksdb::Status& s, absl::string_view what) {
  if (s.ok()) return absl::OkStatus();
  const std::string msg = absl::StrCat(what, ": ", s.ToString());
  if (s.IsNotFound()) return absl::NotFoundError(msg);
  if (s.IsBusy() || s.IsTimedOut() || s.IsTryAgain()) return absl::AbortedError(msg);
  if (s.IsNoSpace() || absl::StrContains(s.ToString(), "No space left")) {
    return absl::ResourceExhaustedError(msg);
  }
  if (s.IsIOError()) return absl::UnavailableError(msg);
  if (s.IsCorruption()) return absl::DataLossError(msg);
  if (s.IsInvalidArgument()) return absl::InvalidArgumentError(msg);
  if (s.IsNotSupported()) return absl::UnimplementedError(msg);
  return absl::InternalError(msg);
}

// Whether RocksDB slows or stops writes in any column family right now (a write then sleeps in
// DB::Write): RocksStore::WritesMayBlock.
class StallListener final : public rocksdb::EventListener {
 public:
  const char* Name() const override { return "CoordinatorStallListener"; }

  void OnStallConditionsChanged(const rocksdb::WriteStallInfo& info) override {
    absl::MutexLock lock(&mu_);
    if (info.condition.cur == rocksdb::WriteStallCondition::kNormal) {
      stalled_families_.erase(info.cf_name);
    } else {
      stalled_families_.insert(info.cf_name);
    }
    stalled_.store(!stalled_families_.empty(), std::memory_order_relaxed);
  }

  bool stalled() const { return stalled_.load(std::memory_order_relaxed); }

 private:
  absl::Mutex mu_;
  absl::flat_hash_set<std::string> stalled_families_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> stalled_{false};
};

absl::StatusOr<std::unique_ptr<RocksStore>> RocksStore::Open(StoreOptions options) {
  if (options.path.empty()) return absl::InvalidArgumentError("data directory is empty");

  rocksdb::DBOptions db_options;
  db_options.create_if_missing = true;
  db_options.create_missing_column_families = true;
  db_options.IncreaseParallelism(2);
  db_options.max_background_jobs = 2;
  db_options.keep_log_file_num = 4;
  // Many writers share a write group; by default each follower wakes to insert its own batch
  // into the memtable, and waiters spin in sched_yield for up to 100 µs before they sleep. With
  // tens of writer threads on a few cores both cost more than they save: the group's leader
  // inserts every batch, and waiters sleep at once (W5 at 16 streams on 2 cores: 5% less CPU
  // per message, 15% fewer context switches; bench/analysis.md). Bigger machines keep RocksDB's
  // defaults.
  if (std::thread::hardware_concurrency() <= kFewCores) {
    db_options.allow_concurrent_memtable_write = false;
    db_options.enable_write_thread_adaptive_yield = false;
  }
  // WAL files report their failed writes, so that no WAL sync follows one (see wal_guard.h).
  auto wal_guard = std::make_shared<WalGuard>();
  std::unique_ptr<rocksdb::Env> env = NewWalGuardEnv(
      options.file_system ? options.file_system : rocksdb::FileSystem::Default(), wal_guard);
  db_options.env = env.get();
  auto stalls = std::make_shared<StallListener>();
  db_options.listeners.push_back(stalls);

  // Open every family the database already has, including ones this binary does not know (a
  // newer binary made them): RocksDB refuses to open otherwise, and the schema check below gives
  // the clearer message.
  std::vector<std::string> names(kColumnFamilyNames.begin(), kColumnFamilyNames.end());
  std::vector<std::string> existing;
  if (rocksdb::DB::ListColumnFamilies(db_options, options.path, &existing).ok()) {
    absl::flat_hash_set<std::string> known(names.begin(), names.end());
    for (const std::string& name : existing) {
      if (!known.contains(name)) names.push_back(name);
    }
  }
  const rocksdb::ColumnFamilyOptions cf_options = MakeColumnFamilyOptions(options);
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  for (const std::string& name : names) descriptors.emplace_back(name, cf_options);

  rocksdb::TransactionDBOptions txn_db_options;
  txn_db_options.transaction_lock_timeout = options.lock_timeout_ms;
  rocksdb::TransactionDB* db = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::Status s =
      rocksdb::TransactionDB::Open(rocksdb::Options(db_options, cf_options), txn_db_options,
                                   options.path, descriptors, &handles, &db);
  if (!s.ok()) {
    const std::string detail = s.ToString();
    if (absl::StrContains(detail, "lock file") || absl::StrContains(detail, "LOCK")) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "database %s is in use by another process (is another coordinator running on this "
          "data dir?): %s",
          options.path, detail));
    }
    if (s.IsIOError()) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "cannot use data dir %s (it must be a writable directory): %s", options.path, detail));
    }
    return FromRocksStatus(s, absl::StrCat("open database ", options.path));
  }

  std::unique_ptr<RocksStore> store(new RocksStore(std::move(options), std::move(wal_guard),
                                                   std::move(stalls), std::move(env), db,
                                                   std::move(handles)));
  RETURN_IF_ERROR(store->CheckSchema());
  return store;
}

RocksStore::RocksStore(StoreOptions options, std::shared_ptr<WalGuard> wal_guard,
                       std::shared_ptr<StallListener> stalls, std::unique_ptr<rocksdb::Env> env,
                       rocksdb::TransactionDB* db,
                       std::vector<rocksdb::ColumnFamilyHandle*> handles)
    : options_(std::move(options)),
      wal_guard_(std::move(wal_guard)),
      stalls_(std::move(stalls)),
      env_(std::move(env)),
      db_(db),
      handles_(std::move(handles)),
      stripes_(new WriteStripe[kWriteStripes]) {
  if (options_.sync_writes) {
    GroupCommit::Log log;
    log.newest = [this] { return db_->GetLatestSequenceNumber(); };
    log.sync = [this] { return SyncWal(); };
    group_commit_ = std::make_unique<GroupCommit>(std::move(log), options_.sync_threads);
  }
}

RocksStore::~RocksStore() {
  // Every completion still registered runs (after its sync) before the database closes.
  group_commit_.reset();
  if (!options_.sync_writes && wal_guard_->BeginSync().ok()) {
    db_->SyncWAL().PermitUncheckedError();
    wal_guard_->EndSync();
  }
  // Write the memtables out, so that the next open reads table files instead of replaying the
  // write-ahead log: RocksDB does not flush on close when the WAL holds the data, and replaying
  // a large WAL delays serving (bench/RESULTS.md: 1,000,000 contexts, 12.7 s without this).
  // Nothing depends on it: a failed flush leaves the WAL, replayed on open as after a crash.
  rocksdb::FlushOptions flush;
  flush.wait = true;
  db_->Flush(flush, handles_).PermitUncheckedError();
  for (rocksdb::ColumnFamilyHandle* h : handles_) db_->DestroyColumnFamilyHandle(h);
  db_->Close().PermitUncheckedError();
  delete db_;
}

absl::Status RocksStore::CheckSchema() {
  std::string stored;
  rocksdb::Status s =
      db_->Get(rocksdb::ReadOptions(), handle(ColumnFamily::kDefault), kSchemaVersionKey, &stored);
  if (s.IsNotFound()) {
    // A database without a version must be empty (just created): anything else was not
    // written by the coordinator, and guessing its layout would corrupt it.
    for (size_t i = 0; i < handles_.size(); ++i) {
      std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), handles_[i]));
      it->SeekToFirst();
      if (it->Valid()) {
        return absl::FailedPreconditionError(absl::StrFormat(
            "database %s holds data but records no schema version; it was not written by the "
            "coordinator",
            options_.path));
      }
    }
    rocksdb::WriteOptions wo;
    wo.sync = true;
    RETURN_IF_ERROR(FromRocksStatus(db_->Put(wo, handle(ColumnFamily::kDefault), kSchemaVersionKey,
                                             EncodeSchemaVersion(kSchemaVersion)),
                                    "record schema version"));
    schema_version_ = kSchemaVersion;
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(FromRocksStatus(s, "read schema version"));
  if (stored.size() != 4) {
    return absl::DataLossError(
        absl::StrFormat("database %s has a malformed schema version record", options_.path));
  }
  uint32_t version = 0;
  for (char c : stored) version = (version << 8) | static_cast<uint8_t>(c);
  if (version > kSchemaVersion) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "database %s has schema version %d, newer than this coordinator understands (%d); run "
        "the newer coordinator that wrote it, or restore a backup made before the upgrade",
        options_.path, version, kSchemaVersion));
  }
  // Older layouts are upgraded here, one version step at a time, each step one atomic batch
  // that also records the version it reaches. Version 1 is the first layout: nothing is older.
  if (version < 1) {
    return absl::DataLossError(
        absl::StrFormat("database %s has an invalid schema version %d", options_.path, version));
  }
  if (version == 1) {
    // 1 -> 2: from version 2 on, every writer of a context or a run keeps the coordinator's
    // running totals (coordinator/store/records/tallies.h) in the same transaction. Nothing of the
    // layout moves here: the coordinator builds the totals when it opens a database that has
    // none (Tallies::EnsureBuilt). The version goes up so that a binary that does not keep them
    // refuses the database instead of letting them go wrong.
    rocksdb::WriteOptions wo;
    wo.sync = true;
    RETURN_IF_ERROR(FromRocksStatus(
        db_->Put(wo, handle(ColumnFamily::kDefault), kSchemaVersionKey, EncodeSchemaVersion(2)),
        "record schema version 2"));
    version = 2;
  }
  schema_version_ = version;
  return absl::OkStatus();
}

absl::StatusOr<std::string> RocksStore::Get(ColumnFamily cf, absl::string_view key) {
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), handle(cf), ToSlice(key), &value);
  // What was read (a value or its absence) is answered only once it cannot be lost: once every
  // write to this key (and to the keys sharing its stripe) is synced. Writes to other keys need
  // not be waited for, so a read of settled data does not pay for a sync it does not need.
  const WriteStripe& stripe = stripes_[StripeOf(cf, key)];
  const uint64_t needed =
      stripe.pending.load() > 0 ? db_->GetLatestSequenceNumber() : stripe.max_sequence.load();
  RETURN_IF_ERROR(WaitDurableUpTo(needed));
  if (!s.ok()) return FromRocksStatus(s, "get");
  return value;
}

std::unique_ptr<Iterator> RocksStore::NewIterator(ColumnFamily cf, absl::string_view lower,
                                                  absl::string_view upper) {
  // The iterator reads an implicit snapshot taken when it is made; everything that snapshot can
  // show was committed before the latest sequence number read after it, so wait for that.
  auto it = std::make_unique<RocksIterator>(
      lower, upper, /*in_transaction=*/false,
      [&](const rocksdb::ReadOptions& ro) { return db_->NewIterator(ro, handle(cf)); });
  absl::Status durable = WaitDurable();
  if (!durable.ok()) return std::make_unique<FailedIterator>(std::move(durable));
  return it;
}

// Durability without holding locks across I/O, and without a thread waiting per call. A
// transaction commits with sync=false, which writes its batch to the WAL file and the memtable
// and releases its key locks at once; then, before anything is acknowledged, a WAL sync covering
// its sequence number must have returned. The syncs are the group commit's (group_commit.h): it
// runs one DB::SyncWAL for every caller registered meanwhile, and tells each (a blocked caller,
// or the completion of a call that ran in a DurabilityScope) when its sync returned. With
// sync=true instead, RocksDB would keep the transaction's locks through the fsync, so a hot key
// (one counter, one conversation) could change only once per fsync whatever the concurrency,
// and the committing thread would block. This is safe because the WAL is ordered: a transaction
// that read a not-yet-synced value commits after it, and its own acknowledgement waits for a
// sync that covers both.
absl::Status RocksStore::WaitDurable() { return WaitDurableUpTo(db_->GetLatestSequenceNumber()); }

size_t RocksStore::StripeOf(ColumnFamily cf, absl::string_view key) {
  return absl::Hash<std::pair<int, absl::string_view>>()({static_cast<int>(cf), key}) %
         kWriteStripes;
}

absl::Status RocksStore::WaitDurableUpTo(uint64_t needed) {
  if (group_commit_ == nullptr || needed <= group_commit_->durable()) return absl::OkStatus();
  if (DurabilityScope::Defer(this, needed)) return absl::OkStatus();
  return group_commit_->WaitDurable(needed);
}

void RocksStore::WhenDurable(uint64_t position, absl::AnyInvocable<void(absl::Status) &&> done) {
  if (group_commit_ == nullptr) {
    std::move(done)(absl::OkStatus());
    return;
  }
  group_commit_->WhenDurable(position, std::move(done));
}

int64_t RocksStore::DurabilityWaiters() const {
  return group_commit_ == nullptr ? 0 : group_commit_->waiting();
}

uint64_t RocksStore::wal_syncs() const {
  return group_commit_ == nullptr ? 0 : group_commit_->syncs();
}

bool RocksStore::WritesMayBlock() const {
  // After a write error the next transaction asks RocksDB to resume, which flushes memtables.
  return needs_resume_.load() || wal_guard_->failed() || stalls_->stalled();
}

absl::Status RocksStore::SyncWal() {
  if (options_.before_wal_sync) RETURN_IF_ERROR(options_.before_wal_sync());
  // After a failed WAL write nothing is synced until the database resumes: what that write
  // followed cannot be confirmed durable, so the callers get the write's error.
  rocksdb::Status s = wal_guard_->BeginSync();
  if (!s.ok()) return WalFailure();
  s = db_->SyncWAL();
  wal_guard_->EndSync();
  if (!s.ok()) {
    NoteWriteError(s);
    return FromRocksStatus(s, "sync write-ahead log");
  }
  return absl::OkStatus();
}

absl::Status RocksStore::WalFailure() {
  if (wal_stuck_.load()) {
    return absl::UnavailableError(
        "the write-ahead log failed and can be replaced only by restarting the coordinator; "
        "acknowledged data is safe");
  }
  return FromRocksStatus(wal_guard_->failure(),
                         "write to the write-ahead log failed; writes resume once the database "
                         "recovers");
}

void RocksStore::NoteWriteError(const rocksdb::Status& s) {
  if (s.IsIOError() || s.IsNoSpace()) needs_resume_.store(true);
}

// A full disk (or another I/O error) while writing the WAL or flushing puts RocksDB into a
// background-error state in which every write fails. From a full disk RocksDB 7.8 recovers by
// itself (its SstFileManager polls until one write buffer, 64 MiB, is free; Resume answers Busy
// meanwhile); from other I/O errors nothing recovers it but DB::Resume(), which flushes the
// memtables so the WAL holding the failed write is no longer needed. So after such an error the
// next writes ask it to resume, one caller at a time and at most every kResumeInterval; until it
// works they fail with the mapped status (RESOURCE_EXHAUSTED for no space, else UNAVAILABLE).
// Nothing that failed was acknowledged, and what was acknowledged stays readable throughout.
void RocksStore::MaybeResume() {
  constexpr absl::Duration kResumeInterval = absl::Milliseconds(200);
  if (!needs_resume_.load() && !wal_guard_->failed()) return;
  absl::MutexLock lock(&resume_mu_);
  if (!needs_resume_.load() && !wal_guard_->failed()) return;  // another caller resumed meanwhile
  const absl::Time now = absl::Now();
  if (now - last_resume_ < kResumeInterval) return;
  last_resume_ = now;
  const uint64_t wal_generation = wal_guard_->generation();
  // TransactionDB (a StackableDB) does not forward Resume; the DB under it implements it.
  rocksdb::Status s = db_->GetRootDB()->Resume();
  if (s.ok()) {
    needs_resume_.store(false);
    switch (wal_guard_->Reopen(wal_generation)) {
      case WalGuard::ReopenResult::kReopened:
        wal_stuck_.store(false);
        LOG_INFO("database resumed writing after an I/O error");
        break;
      case WalGuard::ReopenResult::kFailedAgain:
        break;  // the next attempt sees the new failure
      case WalGuard::ReopenResult::kNoNewLog:
        wal_stuck_.store(true);
        if (now - last_resume_warning_ >= absl::Seconds(10)) {
          last_resume_warning_ = now;
          LOG_ERROR(
              "the write-ahead log failed before anything was written to it, and RocksDB 7.8 "
              "replaces such a log only when the database is opened again: writes fail until "
              "the coordinator is restarted (acknowledged data is safe)");
        }
        break;
    }
  } else if (now - last_resume_warning_ >= absl::Seconds(10)) {
    // Busy means RocksDB's own recovery (for a full disk, it waits for free space of one
    // write buffer) is under way; either way writes keep failing until it is done.
    last_resume_warning_ = now;
    LOG_WARN("database cannot resume writing yet: %s", s.ToString());
  }
}

absl::Status RocksStore::RunTransaction(absl::FunctionRef<absl::Status(Transaction&)> fn) {
  MaybeResume();
  // Nothing may reach RocksDB's writer of a failed log (see wal_guard.h).
  if (wal_guard_->failed()) return WalFailure();
  uint64_t committed = 0;
  absl::Status result = RunTransactionOnce(fn, &committed);
  // A transaction that wrote needs its own commit synced (what it read committed before it, so
  // that is covered too). Otherwise, also on failure, everything up to now: the outcome may rest
  // on a value another transaction has not yet made durable (an ALREADY_EXISTS, a version
  // conflict), and must not be answered before it is.
  absl::Status durable = result.ok() && committed > 0 ? WaitDurableUpTo(committed) : WaitDurable();
  return durable.ok() ? result : durable;
}

absl::Status RocksStore::RunTransactionOnce(absl::FunctionRef<absl::Status(Transaction&)> fn,
                                            uint64_t* committed) {
  rocksdb::WriteOptions write_options;
  write_options.sync = false;  // made durable by the group commit before anything is acknowledged
  rocksdb::TransactionOptions txn_options;
  txn_options.deadlock_detect = true;
  txn_options.lock_timeout = options_.lock_timeout_ms;

  absl::Status last;
  for (int attempt = 0; attempt <= options_.max_transaction_retries; ++attempt) {
    std::unique_ptr<rocksdb::Transaction> txn(db_->BeginTransaction(write_options, txn_options));
    RocksTransaction wrapped(txn.get(), handles_);
    absl::Status s = fn(wrapped);
    if (!s.ok()) {
      txn->Rollback().PermitUncheckedError();
      if (wrapped.lock_failed()) {
        last = s;
        continue;
      }
      return s;
    }
    // The stripes of the written keys count this commit as pending from before it becomes
    // visible until its sequence number is recorded, so that a point read that sees its
    // writes also waits for them to be synced (see Get).
    const std::vector<size_t>& stripes = wrapped.written_stripes();
    for (size_t i : stripes) ++stripes_[i].pending;
    rocksdb::Status c = txn->Commit();
    const uint64_t sequence = db_->GetLatestSequenceNumber();  // at least this commit's
    for (size_t i : stripes) {
      WriteStripe& stripe = stripes_[i];
      uint64_t seen = stripe.max_sequence.load();
      while (seen < sequence && !stripe.max_sequence.compare_exchange_weak(seen, sequence)) {
      }
      --stripe.pending;
    }
    if (c.ok()) {
      if (!stripes.empty()) *committed = sequence;
      return absl::OkStatus();
    }
    NoteWriteError(c);
    last = FromRocksStatus(c, "commit");
    if (!(c.IsBusy() || c.IsTimedOut() || c.IsTryAgain())) return last;
  }
  return absl::AbortedError(
      absl::StrCat("transaction gave up after ", options_.max_transaction_retries + 1,
                   " attempts on contended keys; retry the call: ", last.message()));
}

absl::Status RocksStore::Checkpoint(const std::string& dir) {
  rocksdb::Checkpoint* raw = nullptr;
  RETURN_IF_ERROR(FromRocksStatus(rocksdb::Checkpoint::Create(db_, &raw), "checkpoint"));
  std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
  return FromRocksStatus(checkpoint->CreateCheckpoint(dir), absl::StrCat("checkpoint to ", dir));
}

absl::StatusOr<std::unique_ptr<Store>> RocksStore::NewSnapshot() {
  // What the snapshot shows is served to clients: it must be durable, as for Get.
  auto holder = std::make_shared<SnapshotHolder>(db_, handles_);
  RETURN_IF_ERROR(WaitDurableUpTo(holder->snapshot()->GetSequenceNumber()));
  return std::make_unique<SnapshotView>(std::move(holder));
}

StoreStats RocksStore::Stats() {
  StoreStats stats;
  uint64_t value = 0;
  if (db_->GetAggregatedIntProperty(rocksdb::DB::Properties::kEstimateLiveDataSize, &value)) {
    stats.live_data_bytes = value;
  }
  // Per column family 0 or 1, so the sum counts the families waiting for a compaction.
  if (db_->GetAggregatedIntProperty(rocksdb::DB::Properties::kCompactionPending, &value)) {
    stats.compactions_pending = value;
  }
  if (db_->GetIntProperty(rocksdb::DB::Properties::kIsWriteStopped, &value)) {
    stats.write_stopped = value != 0;
  }
  if (db_->GetIntProperty(rocksdb::DB::Properties::kActualDelayedWriteRate, &value)) {
    stats.delayed_write_rate = value;
  }
  // Stall counts are kept per column family, in the "cfstats" map.
  for (rocksdb::ColumnFamilyHandle* h : handles_) {
    std::map<std::string, std::string> cf_stats;
    if (!db_->GetMapProperty(h, rocksdb::DB::Properties::kCFStats, &cf_stats)) continue;
    auto add = [&](const char* key, uint64_t* total) {
      auto it = cf_stats.find(key);
      uint64_t n = 0;
      if (it != cf_stats.end() && absl::SimpleAtoi(it->second, &n)) *total += n;
    };
    add("io_stalls.total_stop", &stats.stall_stops);
    add("io_stalls.total_slowdown", &stats.stall_slowdowns);
  }
  return stats;
}

}  // namespace storage
