// Keeps RocksStore from syncing a write-ahead log after a write to it failed, and keeps RocksDB's
// info log from aborting the process on a full disk (see NewWalGuardEnv).
//
// RocksDB 7.8 refuses every write after a WAL write error until DB::Resume() (or its own
// recovery) switches to a new log. A DB::SyncWAL() in that window reaches the failed log's
// writer; RocksDB then answers an error, except in builds that keep its debug assertions
// (Debian's librocksdb does), where WritableFileWriter asserts that no sync follows a failed
// write and the process aborts (the assertion is gone from RocksDB 9.4 on, facebook/rocksdb#12556).
//
// So WAL files are opened through a FileSystem wrapper that reports a failed write to this
// guard before RocksDB sees it. The first failure closes the guard: from then on BeginSync()
// refuses until Reopen() after a successful resume. A sync already under way has passed
// RocksDB's check, so the failing write waits for it to end before returning its error;
// otherwise a sync that passed BeginSync just before the failure could reach the writer just
// after it. (The wait cannot deadlock: RocksDB writes the WAL without holding a lock SyncWAL
// takes, and nothing syncs while the guard is closed.)
#ifndef STORAGE_WAL_GUARD_H_
#define STORAGE_WAL_GUARD_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "rocksdb/env.h"
#include "rocksdb/file_system.h"

namespace storage {

class WalGuard {
 public:
  // Starts a WAL sync. Returns OK, and the caller must call EndSync after DB::SyncWAL returns;
  // or, once a WAL write has failed and until Reopen, the error of that write (no sync runs).
  rocksdb::IOStatus BeginSync() ABSL_LOCKS_EXCLUDED(mu_);
  void EndSync() ABSL_LOCKS_EXCLUDED(mu_);

  // Whether a WAL write failed since the last Reopen, and a token naming that state: Reopen
  // clears only the failure the token saw, not one that happened while the database resumed.
  bool failed() const { return failed_flag_.load(std::memory_order_acquire); }
  uint64_t generation() const ABSL_LOCKS_EXCLUDED(mu_);
  // Called after DB::Resume() succeeded. RocksDB writes to a new log only if its recovery
  // had something to flush: a log that failed before any write to it succeeded (every memtable
  // empty, say just after opening) stays the current log in RocksDB 7.8, and a write to it
  // would reach the failed writer. So the guard opens again only if a WAL file was created
  // since the failure (kReopened); otherwise it stays closed (kNoNewLog), and only reopening
  // the database (a restart) replaces that log.
  enum class ReopenResult { kReopened, kFailedAgain, kNoNewLog };
  ReopenResult Reopen(uint64_t generation) ABSL_LOCKS_EXCLUDED(mu_);
  // The error of the first failed write since the last reopening.
  rocksdb::IOStatus failure() const ABSL_LOCKS_EXCLUDED(mu_);

  // Called by the file system when it creates a WAL file.
  void LogCreated() ABSL_LOCKS_EXCLUDED(mu_);

  // Called by a WAL file whose operation failed, before the error goes back to RocksDB.
  void WriteFailed(const rocksdb::IOStatus& s) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  bool syncing_ ABSL_GUARDED_BY(mu_) = false;
  bool failed_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t logs_created_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t logs_at_failure_ ABSL_GUARDED_BY(mu_) = 0;
  rocksdb::IOStatus failure_ ABSL_GUARDED_BY(mu_);
  // failed_, for the check every write makes without taking the lock.
  std::atomic<bool> failed_flag_{false};
};

// Whether `fname` names a write-ahead log file (RocksDB's <number>.log in the WAL directory).
bool IsWalFileName(absl::string_view fname);

// Whether `fname` names RocksDB's info log (LOG in the database directory).
bool IsInfoLogFileName(absl::string_view fname);

// An environment (Env::Default's threads and clock) whose file system forwards everything to
// `base`, opens WAL files so that their failed writes are reported to `guard`, and opens the
// info log so that a line that cannot be written (a full disk) is dropped: RocksDB's writer of
// that file asserts after a failed write too.
std::unique_ptr<rocksdb::Env> NewWalGuardEnv(std::shared_ptr<rocksdb::FileSystem> base,
                                             std::shared_ptr<WalGuard> guard);

}  // namespace storage

#endif  // STORAGE_WAL_GUARD_H_
