// Threads for work that may block for any time (an agent's executor waits on a model, or holds
// until cancelled): Run never queues behind busy work. It hands the closure to a thread that is
// idle, and starts a new thread only when none is, so a steady load reuses its threads instead
// of paying a thread's creation and exit per closure (on a VM, clone and the new stack cost tens
// of microseconds). A thread idle for `idle_exit` ends, so a burst's threads do not linger.
//
// Threads are detached and share the pool's state, not the pool: destroying the pool wakes the
// idle ones, which end; closures still running end on their own and their threads with them.
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
  explicit ElasticThreads(absl::string_view name, absl::Duration idle_exit = absl::Seconds(30));
  ~ElasticThreads();

  ElasticThreads(const ElasticThreads&) = delete;
  ElasticThreads& operator=(const ElasticThreads&) = delete;

  // Runs `fn` on an idle thread, or on a new one when none is idle. Never blocks on other
  // closures.
  void Run(absl::AnyInvocable<void() &&> fn);

  // Threads alive now, busy or idle (for tests and metrics).
  int threads() const;
  // Of them, idle now.
  int idle() const;

 private:
  struct State;
  // A thread's life: runs `fn`, then what is handed to it while idle, until it has been idle for
  // idle_exit or the pool is gone.
  static void Work(std::shared_ptr<State> state, absl::AnyInvocable<void() &&> fn);

  std::shared_ptr<State> state_;
};

}  // namespace common

#endif  // COMMON_ELASTIC_THREADS_H_
