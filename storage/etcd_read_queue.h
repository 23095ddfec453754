// Reads in batches on etcd (docs/storage.md, "Reads in batches"): the point reads of the latest
// value that overlap in time go out as one read-only etcd Txn of Range operations. etcd answers
// such a Txn linearizably, as it does a lone Range, and reads all of its Ranges at one revision.
// A transaction's first read (GetForUpdate, which fixes the moment its later reads see) and a
// plain Get are such reads; reads at an older revision go out alone, since one compacted
// revision would fail the whole Txn.
#ifndef STORAGE_ETCD_READ_QUEUE_H_
#define STORAGE_ETCD_READ_QUEUE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "etcd/v3/rpc.pb.h"
#include "storage/etcd_batch_queue.h"

namespace storage {

class EtcdClient;

class EtcdReadQueue {
 public:
  // At most `max_reads` Ranges per Txn (the cluster's --max-txn-ops).
  EtcdReadQueue(EtcdClient* client, int64_t max_reads);

  // The latest committed value of `key`: kvs holds it (empty when there is none), and the
  // header's revision is the revision it was read at. Blocks until its batch is answered.
  [[nodiscard]] absl::StatusOr<etcdserverpb::RangeResponse> Read(std::string key) {
    return queue_.Submit(std::move(key));
  }

  // Requests sent, and the reads they carried, since the queue was made.
  uint64_t batches() const { return queue_.batches(); }
  uint64_t reads() const { return queue_.items(); }

 private:
  // Sends `keys` as one Txn (a lone read as a Range) and gives each its answer.
  void Send(const std::vector<std::string*>& keys,
            std::vector<absl::StatusOr<etcdserverpb::RangeResponse>>& results);

  EtcdClient* const client_;
  EtcdBatchQueue<std::string, etcdserverpb::RangeResponse> queue_;
};

}  // namespace storage

#endif  // STORAGE_ETCD_READ_QUEUE_H_
