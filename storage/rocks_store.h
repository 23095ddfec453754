// The embedded RocksDB backend of Store: one TransactionDB with the column families of
// column_family.h. This class owns the database and the column-family handles and closes them
// in the right order, and syncs the write-ahead log for every caller (storage/group_commit.h).
// Only storage/ includes RocksDB headers.
#ifndef STORAGE_ROCKS_STORE_H_
#define STORAGE_ROCKS_STORE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "storage/store.h"

namespace rocksdb {
class ColumnFamilyHandle;
class Env;
class FileSystem;
class TransactionDB;
class Status;
}  // namespace rocksdb

namespace storage {

class GroupCommit;
class StallListener;
class WalGuard;

// The database layout this binary writes. A database records the version it was written
// with; a newer one refuses to open, an older one is migrated on open. 2: the coordinator's
// running totals are kept (coordinator/store/records/tallies.h).
inline constexpr uint32_t kSchemaVersion = 2;
// Where the version is kept, in column family default, on every backend: record type 0x01
// ("database metadata"), the version a 4-byte big-endian integer.
inline constexpr char kSchemaVersionKey[] = "\x01schema_version";

struct StoreOptions {
  // Directory of the database; created when missing.
  std::string path;
  // Acknowledge a commit only once the write-ahead log holding it is synced, and return reads
  // only once what they saw is synced (default true). Only benchmarks of the non-durable path
  // turn this off.
  bool sync_writes = true;
  // How long a transaction waits for a key another transaction holds (default 10 s).
  int64_t lock_timeout_ms = 10000;
  // How many times a transaction that timed out on a lock or deadlocked is retried (default 5).
  int max_transaction_retries = 5;
  // Block cache size in bytes (default 64 MiB).
  size_t block_cache_bytes = 64 << 20;
  // Threads that sync the write-ahead log and run the completions of the calls each sync covers
  // (default 2: one syncs while the other completes the previous sync's calls).
  int sync_threads = 2;
  // The file system under the database (default: the local one). Tests inject faults here.
  std::shared_ptr<rocksdb::FileSystem> file_system;
  // Called on the syncing thread before each WAL sync (default: nothing). Tests hold syncs here
  // or fail one: an error fails the calls that sync would have covered, and nothing is synced.
  std::function<absl::Status()> before_wal_sync;
};

class RocksStore final : public Store {
 public:
  // Opens (or creates) the database at options.path. Fails with a clear message when the
  // directory cannot be used, another process holds the database, or the database was written
  // by a newer schema version.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<RocksStore>> Open(StoreOptions options);

  ~RocksStore() override;

  absl::StatusOr<std::string> Get(ColumnFamily cf, absl::string_view key) override;
  std::unique_ptr<Iterator> NewIterator(ColumnFamily cf, absl::string_view lower,
                                        absl::string_view upper) override;
  absl::Status RunTransaction(absl::FunctionRef<absl::Status(Transaction&)> fn) override;
  absl::Status Checkpoint(const std::string& dir) override;
  absl::StatusOr<std::unique_ptr<Store>> NewSnapshot() override;
  StoreStats Stats() override;
  void WhenDurable(uint64_t position, absl::AnyInvocable<void(absl::Status) &&> done) override;
  int64_t DurabilityWaiters() const override;
  bool WritesMayBlock() const override;

  // WAL syncs run since the store opened (failed ones included); for tests.
  uint64_t wal_syncs() const;

  // The write stripe of a key: point reads wait only for the syncs of writes to their stripe.
  static size_t StripeOf(ColumnFamily cf, absl::string_view key);

  // The schema version recorded in the database.
  uint32_t schema_version() const { return schema_version_; }

 private:
  RocksStore(StoreOptions options, std::shared_ptr<WalGuard> wal_guard,
             std::shared_ptr<StallListener> stalls, std::unique_ptr<rocksdb::Env> env,
             rocksdb::TransactionDB* db, std::vector<rocksdb::ColumnFamilyHandle*> handles);

  [[nodiscard]] absl::Status CheckSchema();
  // Returns once every write up to the database's latest sequence number is durable, or, inside
  // a DurabilityScope for this store, notes that the scope needs it and returns at once.
  [[nodiscard]] absl::Status WaitDurable();
  // The same for every write up to sequence number `needed`.
  [[nodiscard]] absl::Status WaitDurableUpTo(uint64_t needed);
  // One WAL sync for the group commit: covers every write up to the sequence number read before
  // it. Fails without syncing after a failed WAL write (see WalGuard).
  [[nodiscard]] absl::Status SyncWal();
  // Sets `committed` to a sequence number covering the commit when the transaction wrote.
  [[nodiscard]] absl::Status RunTransactionOnce(absl::FunctionRef<absl::Status(Transaction&)> fn,
                                                uint64_t* committed);
  // Notes that a write failed on an I/O error: RocksDB then refuses every write (a background
  // error) until DB::Resume() succeeds.
  void NoteWriteError(const rocksdb::Status& s);
  // The status of calls refused because a WAL write failed (see WalGuard).
  absl::Status WalFailure();
  // After a write error, asks RocksDB to resume (at most every kResumeInterval), so that writes
  // succeed again once the cause (a full disk) is gone, without a restart.
  void MaybeResume();
  rocksdb::ColumnFamilyHandle* handle(ColumnFamily cf) const {
    return handles_[static_cast<size_t>(cf)];
  }

  const StoreOptions options_;
  // Declared before db_, so destroyed after it: the database uses both until it closes.
  const std::shared_ptr<WalGuard> wal_guard_;
  const std::shared_ptr<StallListener> stalls_;
  const std::unique_ptr<rocksdb::Env> env_;
  rocksdb::TransactionDB* db_;                         // owned; deleted after the handles
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;  // owned; indexed by ColumnFamily
  uint32_t schema_version_ = 0;

  // Syncs the WAL for every caller (null when options_.sync_writes is off). Stopped first when
  // the store closes, so that every registered completion has run before the database closes.
  std::unique_ptr<GroupCommit> group_commit_;

  // Per-stripe write bookkeeping for point reads (see Get): the highest sequence number of a
  // committed write to a key of the stripe, and how many commits to such keys are under way
  // (while any is, a read waits for everything, as it cannot know that commit's number yet).
  // Keys share a stripe by hash; sharing only makes a read wait for more than it needs.
  static constexpr size_t kWriteStripes = 4096;
  struct WriteStripe {
    std::atomic<int> pending{0};
    std::atomic<uint64_t> max_sequence{0};
  };
  std::unique_ptr<WriteStripe[]> stripes_;

  // Recovery from write errors (see MaybeResume). The flag is read without the lock on every
  // write; the lock serialises the Resume calls.
  std::atomic<bool> needs_resume_{false};
  // RocksDB resumed but kept the failed log (WalGuard::ReopenResult::kNoNewLog).
  std::atomic<bool> wal_stuck_{false};
  absl::Mutex resume_mu_;
  absl::Time last_resume_ ABSL_GUARDED_BY(resume_mu_) = absl::InfinitePast();
  absl::Time last_resume_warning_ ABSL_GUARDED_BY(resume_mu_) = absl::InfinitePast();
};

// Maps a RocksDB status to the absl::Status a caller can act on (see the table in the .cc).
absl::Status FromRocksStatus(const rocksdb::Status& s, absl::string_view what);

}  // namespace storage

#endif  // STORAGE_ROCKS_STORE_H_
