// The storage interface every service is written against. It is deliberately small (point
// reads, ordered scans, and a read-modify-write transaction that commits durably) so that a
// second backend, such as an etcd cluster, can implement it. RocksStore is the embedded default.
//
// Every result is durable before anyone sees it. By default each call waits for that itself; a
// call made inside a DurabilityScope (storage/durability_scope.h) returns at once and leaves the
// wait to the scope's owner, who registers a completion with WhenDurable.
#ifndef STORAGE_STORE_H_
#define STORAGE_STORE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "storage/column_family.h"

namespace storage {

// An ordered cursor over one column family, within the bounds it was created with.
class Iterator {
 public:
  virtual ~Iterator() = default;
  virtual void Seek(absl::string_view key) = 0;
  virtual bool Valid() const = 0;
  virtual void Next() = 0;
  // Only while Valid(); the views stay good until the next move.
  virtual absl::string_view key() const = 0;
  virtual absl::string_view value() const = 0;
  // Not OK when the scan stopped on an error rather than at the end.
  virtual absl::Status status() const = 0;
};

// The reads and writes of one atomic read-modify-write. Writes become visible to others only
// when the transaction commits, all together.
class Transaction {
 public:
  virtual ~Transaction() = default;
  // Reads `key` and holds it exclusively until the transaction ends, so no other transaction
  // can change it in between. NOT_FOUND when the key is absent (the absence is locked too).
  [[nodiscard]] virtual absl::StatusOr<std::string> GetForUpdate(ColumnFamily cf,
                                                                 absl::string_view key) = 0;
  [[nodiscard]] virtual absl::Status Put(ColumnFamily cf, absl::string_view key,
                                         absl::string_view value) = 0;
  [[nodiscard]] virtual absl::Status Delete(ColumnFamily cf, absl::string_view key) = 0;
  // Scans [lower, upper) as this transaction sees it (its own writes included). Scanned keys
  // are not locked: lock a key that guards them (a parent record) first. Writing to the
  // transaction while scanning is allowed (each key is still visited once, and key() stays
  // good), but a write invalidates value() until the next move.
  virtual std::unique_ptr<Iterator> NewIterator(ColumnFamily cf, absl::string_view lower,
                                                absl::string_view upper) = 0;
};

// Figures of the engine for monitoring (the coordinator's /metrics). Zero where a backend has
// no such figure.
struct StoreStats {
  // Estimated bytes of live data, all column families.
  uint64_t live_data_bytes = 0;
  // Column families with a compaction pending.
  uint64_t compactions_pending = 0;
  // Whether writes are stopped right now (a hard stall), and the rate writes are slowed to
  // (bytes per second; 0 when they are not slowed).
  bool write_stopped = false;
  uint64_t delayed_write_rate = 0;
  // Write stalls since the store opened: stops and slowdowns, all column families.
  uint64_t stall_stops = 0;
  uint64_t stall_slowdowns = 0;
  // On etcd, since the store opened: transactions' commits sent, the etcd Txns that carried them
  // (the commits of concurrent transactions share one), reads of the latest values and the etcd
  // requests that carried them (concurrent reads share one), and transactions run again after
  // another writer changed what they read.
  uint64_t commits = 0;
  uint64_t commit_requests = 0;
  uint64_t reads = 0;
  uint64_t read_requests = 0;
  uint64_t transaction_conflicts = 0;
};

class Store {
 public:
  virtual ~Store() = default;

  // Reads the latest committed value (once it is durable). NOT_FOUND is an outcome, not a
  // failure.
  [[nodiscard]] virtual absl::StatusOr<std::string> Get(ColumnFamily cf, absl::string_view key) = 0;

  // Scans committed data in [lower, upper); an empty `upper` means no upper bound.
  virtual std::unique_ptr<Iterator> NewIterator(ColumnFamily cf, absl::string_view lower,
                                                absl::string_view upper) = 0;

  // Runs `fn` in a transaction and commits its writes atomically, durably (the write-ahead log
  // is synced before this returns OK, or inside a DurabilityScope before the scope's owner is
  // told so) when `fn` returns OK. When `fn` fails nothing is written
  // and its status is returned. A transaction that loses a lock wait or a deadlock is retried
  // from the start, so `fn` must have no effects outside the transaction; after the retries
  // run out the result is ABORTED.
  [[nodiscard]] virtual absl::Status RunTransaction(
      absl::FunctionRef<absl::Status(Transaction&)> fn) = 0;

  // Writes a consistent copy of the whole database into `dir` (which must not exist) while the
  // store keeps serving. The copy opens as a store of its own.
  [[nodiscard]] virtual absl::Status Checkpoint(const std::string& dir) = 0;

  // A read-only view of every column family as of now (once what it shows is durable): Get and
  // NewIterator on it read one consistent moment whatever is written meanwhile, RunTransaction
  // fails with FAILED_PRECONDITION. Domain code runs its ordinary reads on it to export a
  // consistent picture. The view must not outlive this store.
  [[nodiscard]] virtual absl::StatusOr<std::unique_ptr<Store>> NewSnapshot() = 0;

  // The engine's figures now; cheap enough for every metrics scrape.
  virtual StoreStats Stats() { return {}; }

  // Completion-based durability (storage/durability_scope.h): calls `done` once everything up
  // to `position` (a DurabilityScope's needed()) is durable, with OK, or with the error of the
  // sync that would have covered it. `done` runs on this thread before the call returns when
  // that is already known, else later on a thread of the store's; it must be quick and must not
  // wait for durability itself. A store whose calls never defer (the default) calls it at once.
  virtual void WhenDurable(uint64_t position, absl::AnyInvocable<void(absl::Status) &&> done) {
    (void)position;
    std::move(done)(absl::OkStatus());
  }

  // Completions registered with WhenDurable and not yet run (the calls waiting for the disk).
  virtual int64_t DurabilityWaiters() const { return 0; }

  // True while a write may block for long: the store is recovering from a disk error, or the
  // engine slows or stops writes. Callers on threads that must not block (gRPC's) then take
  // their work to threads that may.
  virtual bool WritesMayBlock() const { return false; }
};

}  // namespace storage

#endif  // STORAGE_STORE_H_
