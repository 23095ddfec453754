// A fixed pool of threads that runs queued closures. The gRPC callback handlers hand blocking
// storage work (a WAL-synced write waits on fsync) to this pool so that no gRPC reactor thread
// ever waits on disk. Many threads are deliberate: concurrent writers are what lets RocksDB's
// group commit share one fsync among them.
//
// New calls enter through TrySchedule, which refuses work once `max_queued` closures wait, so a
// flood of requests gets RESOURCE_EXHAUSTED at once instead of queueing without bound (memory)
// and being answered after the client stopped waiting. Schedule is for continuations of work
// already admitted (a stream's next step): refusing those would strand a call half done.
#ifndef COMMON_THREAD_POOL_H_
#define COMMON_THREAD_POOL_H_

#include <cstdint>
#include <deque>
#include <thread>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace common {

class ThreadPool {
 public:
  // No bound on the queue for TrySchedule.
  static constexpr int64_t kUnbounded = 0;

  // Starts `num_threads` workers (at least one), each named `name` (common::SetThreadName).
  // TrySchedule refuses work while `max_queued` closures wait (kUnbounded: never).
  explicit ThreadPool(int num_threads, int64_t max_queued = kUnbounded,
                      absl::string_view name = "pool");
  // Runs every closure already queued, then joins the workers.
  ~ThreadPool();

  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Queues `fn`; it runs on some worker thread. Closures queued after the destructor started
  // still run before it returns.
  void Schedule(absl::AnyInvocable<void() &&> fn);

  // Queues `fn` unless `max_queued` closures already wait: then RESOURCE_EXHAUSTED (naming the
  // bound) and `fn` is dropped without running.
  [[nodiscard]] absl::Status TrySchedule(absl::AnyInvocable<void() &&> fn);

  // Closures waiting for a worker now.
  int64_t queued() const;

 private:
  void WorkLoop();
  bool HasWorkOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int64_t max_queued_;
  mutable absl::Mutex mu_;
  std::deque<absl::AnyInvocable<void() &&>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace common

#endif  // COMMON_THREAD_POOL_H_
