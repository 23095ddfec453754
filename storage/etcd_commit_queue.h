// Group commit on etcd (docs/storage.md, "Commits in batches"): the commits of concurrent
// transactions of one store go out together, as one etcd Txn whose success branch holds each of
// them as a nested Txn with its own compares. etcd's limit on this path is its CPU per request,
// not its fsync (it batches syncs already), so one request for many commits is what raises the
// throughput; each nested Txn still applies or fails on its own compares, and all of one batch
// share one revision.
//
// One batch is in flight per store (etcd_batch_queue.h); the commits that arrive meanwhile form
// the next one. A batch takes the queue in arrival order, but never two commits where one
// writes a key the other reads or writes: etcd evaluates every nested compare before any nested
// write, so such a pair could both apply on reads the other made stale (a lost update, or write
// skew), and etcd refuses a Txn that puts one key twice. Such a commit waits for the next batch.
// A batch keeps to the cluster's --max-txn-ops (nested Txns per batch) and --max-request-bytes.
//
// Failure is per batch: when a batch's answer is lost, every commit in it gets the client's
// UNAVAILABLE "outcome unknown", as a single Txn's caller does, never a second application.
#ifndef STORAGE_ETCD_COMMIT_QUEUE_H_
#define STORAGE_ETCD_COMMIT_QUEUE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "etcd/v3/rpc.pb.h"
#include "storage/etcd_batch_queue.h"

namespace storage {

class EtcdClient;

// One transaction's commit: its Txn (the compares of what it read, the puts and deletes of what
// it writes), the etcd keys it compares and writes, each once, and the Txn's serialized size (the
// store measured it for the cluster's limit; a batch adds sizes up rather than serialize again).
struct EtcdCommit {
  etcdserverpb::TxnRequest txn;
  std::vector<std::string> reads;
  std::vector<std::string> writes;
  int64_t bytes = 0;
};

// Which of `pending` (in arrival order) the next batch takes, as indexes in ascending order: the
// first always (a commit within the limits on its own), then each later one that touches no key
// in conflict with those taken (none writes a key another reads or writes), while the batch
// holds at most `max_commits` and its Txns' bytes add up to at most `max_bytes`.
std::vector<size_t> ChooseBatch(const std::vector<const EtcdCommit*>& pending, int64_t max_commits,
                                int64_t max_bytes);

class EtcdCommitQueue {
 public:
  EtcdCommitQueue(EtcdClient* client, int64_t max_commits, int64_t max_bytes);

  struct Outcome {
    bool committed = false;  // false: a compare failed, nothing of this commit was written
    int64_t revision = 0;    // the batch's revision (the cluster's after it)
  };
  // Commits `commit` with the next batch that can take it and returns that batch's answer for
  // it; blocks meanwhile (sending a batch itself when none is in flight).
  [[nodiscard]] absl::StatusOr<Outcome> Commit(EtcdCommit commit) {
    return queue_.Submit(std::move(commit));
  }

  // Batches sent, and the commits they carried, since the queue was made.
  uint64_t batches() const { return queue_.batches(); }
  uint64_t commits() const { return queue_.items(); }

 private:
  // Sends `batch` as one Txn (a lone commit as itself) and gives each commit its outcome.
  void Send(const std::vector<EtcdCommit*>& batch, std::vector<absl::StatusOr<Outcome>>& results);

  EtcdClient* const client_;
  EtcdBatchQueue<EtcdCommit, Outcome> queue_;
};

}  // namespace storage

#endif  // STORAGE_ETCD_COMMIT_QUEUE_H_
