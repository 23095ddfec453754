// Completion-based group commit of a write-ahead log. A writer commits without syncing (its
// locks are released at once), then asks to be told when its position in the log is durable:
// WhenDurable registers a completion and returns, and a syncer thread runs one log sync for
// every completion registered meanwhile and then runs them all. So no thread waits per call: a
// gRPC handler registers the completion that finishes its call, and a few syncer threads
// acknowledge any number of calls. WaitDurable is the blocking form, for callers that have a
// thread of their own to wait on (background jobs, the A2A gateway); when no sync is running it
// runs one itself rather than hand the turn to a syncer thread and wait to get it back.
//
// The guarantee: a completion runs with OK only after a sync that started after its position
// was written returned OK; a sync that fails fails exactly the completions it would have
// covered (later ones wait for the next sync, which may succeed). Positions are opaque,
// ordered numbers (RocksDB sequence numbers); 0 needs nothing.
#ifndef STORAGE_GROUP_COMMIT_H_
#define STORAGE_GROUP_COMMIT_H_

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace storage {

class GroupCommit {
 public:
  using Done = absl::AnyInvocable<void(absl::Status) &&>;

  struct Log {
    // The newest position written to the log. Called before each sync, by one thread at a time.
    absl::AnyInvocable<uint64_t()> newest;
    // Makes the log durable at least up to what `newest` returned before this call, and says
    // whether it did. Called by one thread at a time.
    absl::AnyInvocable<absl::Status()> sync;
  };

  // Starts `threads` syncer threads (at least one; default 2). With two, one can start the next
  // sync while the other runs the completions of the last one.
  explicit GroupCommit(Log log, int threads = 2);
  // Runs the completions still registered (syncing for them as usual), then joins the threads.
  // Nothing may be registered once this has begun.
  ~GroupCommit();

  GroupCommit(const GroupCommit&) = delete;
  GroupCommit& operator=(const GroupCommit&) = delete;

  // Calls `done` once everything up to `position` is durable, with OK, or with the error of the
  // sync that would have covered it. Runs `done` on this thread before returning when that is
  // already known, else later on a syncer thread. `done` must be quick and must not wait for
  // durability itself (it would wait for its own thread).
  void WhenDurable(uint64_t position, Done done);

  // Returns once everything up to `position` is durable, or the error of the sync that would
  // have covered it; runs that sync on this thread when none is running. Must not be called
  // from a completion (it answers INTERNAL there rather than wait for itself).
  [[nodiscard]] absl::Status WaitDurable(uint64_t position);

  // The position known durable.
  uint64_t durable() const { return durable_.load(std::memory_order_acquire); }
  // Completions registered and not yet run.
  int64_t waiting() const { return waiting_.load(std::memory_order_relaxed); }
  // Syncs run so far (failed ones included).
  uint64_t syncs() const { return syncs_.load(std::memory_order_relaxed); }

 private:
  struct Waiter {
    uint64_t position;
    Done done;
  };

  void SyncLoop();
  bool ReadyToSync() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // With no sync running: runs one (releasing mu_ meanwhile), and moves the waiters it covered
  // into `covered`. Returns the sync's status; `target` is the position it covered.
  absl::Status SyncLocked(uint64_t* target, std::vector<Waiter>* covered)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Log log_;
  std::atomic<uint64_t> durable_{0};
  std::atomic<int64_t> waiting_{0};
  std::atomic<uint64_t> syncs_{0};

  mutable absl::Mutex mu_;
  std::vector<Waiter> waiters_ ABSL_GUARDED_BY(mu_);
  bool sync_running_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace storage

#endif  // STORAGE_GROUP_COMMIT_H_
