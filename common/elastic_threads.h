// Threads for work that may block for any time (an agent's executor waits on a model, or holds
// until cancelled): Run never queues behind busy work. It hands the closure to a thread that is
// idle, and starts a new thread only when none is, so a steady load reuses its threads instead
// of paying a thread's creation and exit per closure (on a VM, clone and the new stack cost tens
// of microseconds). A thread idle for `idle_exit` ends, so a burst's threads do not linger.
//
// Every thread is joined, not left to end on its own: one that ended idle is joined by the next
// Run, and the destructor ends the idle ones and joins every thread that ends within `join_grace`
// (so nothing of theirs, such as a library's per-thread state, outlives the pool, where a leak
// checker at exit would report it). A closure still running after that grace keeps its thread,
// which is then detached and ends with the closure: the threads share the pool's state, not the
// pool.
#ifndef COMMON_ELASTIC_THREADS_H_
#define COMMON_ELASTIC_THREADS_H_

#include <memory>
#include <string>

#include "absl/functional/any_invocable.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace common {

class ElasticThreads {
 public:
  // Threads are named `name` (SetThreadName).
  explicit ElasticThreads(absl::string_view name, absl::Duration idle_exit = absl::Seconds(30),
                          absl::Duration join_grace = absl::Seconds(5));
  ~ElasticThreads();

  ElasticThreads(const ElasticThreads&) = delete;
  ElasticThreads& operator=(const ElasticThreads&) = delete;

  // Runs `fn` on an idle thread, or on a new one when none is idle. Never waits for other
  // closures.
  void Run(absl::AnyInvocable<void() &&> fn);

  // Threads alive now, busy or idle (for tests and metrics).
  int threads() const;
  // Of them, idle now.
  int idle() const;

 private:
  struct State;
  // A thread's life: runs `fn`, then what is handed to it while idle, until it has been idle for
  // idle_exit or the pool is going.
  static void Work(const std::shared_ptr<State>& state, absl::AnyInvocable<void() &&> fn);

  const absl::Duration join_grace_;
  std::shared_ptr<State> state_;
};

}  // namespace common

#endif  // COMMON_ELASTIC_THREADS_H_
