// A fixed pool of threads that runs queued closures. The gRPC callback handlers hand blocking
// storage work (a WAL-synced write waits on fsync) to this pool so that no gRPC reactor thread
// ever waits on disk. Many threads are deliberate: concurrent writers are what lets RocksDB's
// group commit share one fsync among them.
#ifndef COMMON_THREAD_POOL_H_
#define COMMON_THREAD_POOL_H_

#include <deque>
#include <thread>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"

namespace common {

class ThreadPool {
 public:
  // Starts `num_threads` workers (at least one).
  explicit ThreadPool(int num_threads);
  // Runs every closure already queued, then joins the workers.
  ~ThreadPool();

  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Queues `fn`; it runs on some worker thread. Closures queued after the destructor started
  // still run before it returns.
  void Schedule(absl::AnyInvocable<void() &&> fn);

 private:
  void WorkLoop();
  bool HasWorkOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  std::deque<absl::AnyInvocable<void() &&>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace common

#endif  // COMMON_THREAD_POOL_H_
