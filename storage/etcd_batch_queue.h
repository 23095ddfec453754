// The leader/follower batching that etcd's commits and reads share (docs/storage.md, "Commits
// in batches", "Reads in batches"). etcd's limit is its CPU per request, so the calls of one store
// that overlap go out as one request: while a batch is in flight, the calls that arrive queue and
// form the next one, sent by the first of their callers to find no batch in flight (the leader),
// while the others wait for its answer. One at a time: etcd's CPU per request is the limit, and
// two batches in flight carry fewer calls each (W1 at 16 and 64 streams was slower with two or
// four, and cost etcd more requests per call: docs/storage.md). What a batch may hold together
// (`Choose`) and how it goes out (`Send`) are the user's.
#ifndef STORAGE_ETCD_BATCH_QUEUE_H_
#define STORAGE_ETCD_BATCH_QUEUE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace storage {

template <typename Item, typename Result>
class EtcdBatchQueue {
 public:
  // Which of the pending items (in arrival order) the next batch takes, as indexes in ascending
  // order; the first (the oldest) always among them.
  using Choose = std::function<std::vector<size_t>(const std::vector<const Item*>& pending)>;
  // Sends one batch and sets results[i] to the answer for batch[i] (each starts as UNKNOWN).
  using Send = std::function<void(const std::vector<Item*>& batch,
                                  std::vector<absl::StatusOr<Result>>& results)>;

  EtcdBatchQueue(Choose choose, Send send) : choose_(std::move(choose)), send_(std::move(send)) {}

  // Sends `item` with the next batch that takes it and returns that batch's answer for it;
  // blocks meanwhile (sending a batch itself when none is in flight).
  absl::StatusOr<Result> Submit(Item item) {
    Waiter me(&item);
    absl::MutexLock lock(&mu_);
    pending_.push_back(&me);
    while (true) {
      const auto ready = [this, &me]()
                             ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return me.done || !sending_; };
      mu_.Await(absl::Condition(&ready));
      if (me.done) return std::move(me.result);
      // No batch in flight: this caller sends the next one, which need not hold its
      // own item (the oldest goes first); it then waits for a later batch like the others.
      std::vector<Waiter*> batch = TakeBatch();
      sending_ = true;
      ++batches_;
      items_ += batch.size();
      mu_.Unlock();
      std::vector<Item*> items;
      items.reserve(batch.size());
      for (Waiter* w : batch) items.push_back(w->item);
      std::vector<absl::StatusOr<Result>> results(batch.size(),
                                                  absl::UnknownError("the batch was not sent"));
      send_(items, results);
      mu_.Lock();
      for (size_t i = 0; i < batch.size(); ++i) {
        batch[i]->result = std::move(results[i]);
        batch[i]->done = true;
      }
      sending_ = false;
    }
  }

  // Batches sent, and the items they carried, since the queue was made.
  uint64_t batches() const {
    absl::MutexLock lock(&mu_);
    return batches_;
  }
  uint64_t items() const {
    absl::MutexLock lock(&mu_);
    return items_;
  }
  // Items waiting for a batch (not those of the batch in flight).
  size_t waiting() const {
    absl::MutexLock lock(&mu_);
    return pending_.size();
  }

 private:
  struct Waiter {
    explicit Waiter(Item* i) : item(i) {}
    Item* const item;
    bool done = false;
    absl::StatusOr<Result> result = absl::UnknownError("not sent");
  };

  // Takes the items `choose_` picks out of the queue.
  std::vector<Waiter*> TakeBatch() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::vector<const Item*> pending;
    pending.reserve(pending_.size());
    for (const Waiter* w : pending_) pending.push_back(w->item);
    const std::vector<size_t> chosen = choose_(pending);
    std::vector<Waiter*> batch;
    batch.reserve(chosen.size());
    for (size_t i : chosen) batch.push_back(pending_[i]);
    for (auto it = chosen.rbegin(); it != chosen.rend(); ++it) {
      pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(*it));
    }
    return batch;
  }

  const Choose choose_;
  const Send send_;
  mutable absl::Mutex mu_;
  std::deque<Waiter*> pending_ ABSL_GUARDED_BY(mu_);
  bool sending_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t batches_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t items_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace storage

#endif  // STORAGE_ETCD_BATCH_QUEUE_H_
