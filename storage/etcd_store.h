// The etcd backend of Store: the coordinator's data in an etcd cluster (3.4, v3 API), so that
// several coordinator replicas can serve one data set and the loss of a machine loses nothing
// (docs/storage.md, "The etcd backend").
//
// Layout: a record of column family `cf` with key `k` is the etcd key <prefix><cf name>/<k>, its
// value the same bytes RocksStore stores; the schema version record is the same too. So a
// Checkpoint of an etcd store is a RocksDB database that the embedded backend opens as it is.
//
// Transactions are optimistic: a transaction reads at the latest revision, remembers the
// modification revision of every key it read for update (0 for an absent one), buffers its
// writes, and commits them as one etcd Txn that compares those revisions; when another writer
// got there first, the Txn does not apply and the whole transaction runs again (bounded, then
// ABORTED), which is what Store::RunTransaction promises for lost lock waits. Every acknowledged
// commit is on a quorum of members' disks (etcd syncs its log before it answers), so there is
// no deferred durability: WhenDurable completes at once.
//
// What does not map one to one, and how it is handled:
// - etcd refuses a Txn with more operations than its --max-txn-ops (default 128) or larger than
//   --max-request-bytes (default 1.5 MiB). The store checks its own limits (set them to the
//   cluster's flags) before sending and fails such a transaction with RESOURCE_EXHAUSTED, as
//   etcd would; docs/storage.md gives the flags the coordinator needs.
// - etcd's database quota (--quota-backend-bytes) and revision history: the cluster must compact
//   (--auto-compaction-mode/--auto-compaction-retention); a scan or snapshot whose revision was
//   compacted meanwhile fails with OUT_OF_RANGE instead of returning a mix.
// - Scans read in pages at the revision of their first page: one scan sees one moment.
#ifndef STORAGE_ETCD_STORE_H_
#define STORAGE_ETCD_STORE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "storage/rocks_store.h"
#include "storage/store.h"

namespace storage {

class EtcdClient;
struct EtcdClientOptions;

struct EtcdStoreOptions {
  // host:port of each member's client URL.
  std::vector<std::string> endpoints;
  // Every key of this store starts with it; two coordinators' data sets can share a cluster
  // under different prefixes. Must end with '/'.
  std::string prefix = "/coordinator/";
  // TLS (etcds:// URLs) and etcd's own user and password; see EtcdClientOptions.
  bool tls = false;
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  std::string user;
  std::string password;
  // Bound on one etcd call, retries on other members included.
  int64_t request_timeout_ms = 10000;
  // How many times a transaction that lost to a concurrent writer is run again (default 50).
  int max_transaction_retries = 50;
  // The cluster's limits (etcd flags --max-txn-ops and --max-request-bytes). The defaults are
  // the values docs/storage.md asks the cluster to run with, not etcd's own defaults.
  int64_t max_txn_ops = 10000;
  int64_t max_request_bytes = 8 << 20;
  // Keys per page of a scan.
  int64_t page_size = 256;
};

// The client options of a store's options: endpoints, TLS, credentials and request timeout.
EtcdClientOptions ClientOptionsOf(const EtcdStoreOptions& options);

// Parses a --store URL, etcd://host:port[,host:port...] or etcds:// (TLS), into
// options.endpoints and options.tls. INVALID_ARGUMENT with the reason otherwise.
[[nodiscard]] absl::Status ParseEtcdUrl(absl::string_view url, EtcdStoreOptions* options);

class EtcdStore final : public Store {
 public:
  // Connects, then checks the schema version under the prefix (records it when the prefix is
  // empty; refuses a prefix that holds data without one, or a newer version).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<EtcdStore>> Open(EtcdStoreOptions options);

  ~EtcdStore() override;

  absl::StatusOr<std::string> Get(ColumnFamily cf, absl::string_view key) override;
  std::unique_ptr<Iterator> NewIterator(ColumnFamily cf, absl::string_view lower,
                                        absl::string_view upper) override;
  absl::Status RunTransaction(absl::FunctionRef<absl::Status(Transaction&)> fn) override;
  // Copies every record, as of one revision, into a new RocksDB database at `dir`.
  absl::Status Checkpoint(const std::string& dir) override;
  absl::StatusOr<std::unique_ptr<Store>> NewSnapshot() override;
  StoreStats Stats() override;
  // Every call waits for the network: handlers run on the worker pool, not gRPC's threads.
  bool WritesMayBlock() const override { return true; }

  uint32_t schema_version() const { return schema_version_; }
  const EtcdStoreOptions& options() const { return options_; }
  // Transactions that lost to a concurrent writer and ran again, since the store opened.
  uint64_t transaction_conflicts() const;
  // Commits sent, and the etcd Txns that carried them (several commits of concurrent
  // transactions go in one: etcd_commit_queue.h), since the store opened.
  uint64_t commits_sent() const;
  uint64_t commit_requests() const;
  // Reads of the latest values, and the etcd requests that carried them (concurrent ones go in
  // one: etcd_read_queue.h), since the store opened.
  uint64_t latest_reads() const;
  uint64_t read_requests() const;
  // Whether `revision` is one this store's own transactions committed, among its most recent
  // 4096 commits: a replica hears its own writes through its watch too, and has told its own
  // listeners of them already. False for a revision not yet recorded (the watch may deliver a
  // commit before the committing thread has read its answer): telling twice is harmless to
  // every listener (they read the store again), missing one is not.
  bool WroteRevision(int64_t revision) const;
  // Which of the process's retry locks a transaction that lost holds for a key it read, by the
  // key as etcd holds it (prefix, family, key): losers of keys in one stripe take turns.
  static size_t RetryStripeOf(absl::string_view etcd_key);

  // What the store shares with its snapshots, transactions and scans (etcd_store.cc).
  class Impl;

 private:
  EtcdStore(EtcdStoreOptions options, std::shared_ptr<Impl> impl);
  [[nodiscard]] absl::Status CheckSchema();
  // Copies every record as of `revision` into a new RocksDB database.
  [[nodiscard]] absl::Status CopyInto(const StoreOptions& rocks_options, int64_t revision);

  const EtcdStoreOptions options_;
  std::shared_ptr<Impl> impl_;
  uint32_t schema_version_ = 0;
};

}  // namespace storage

#endif  // STORAGE_ETCD_STORE_H_
