// In-process fan-out of committed A2A task changes. The A2A store parts (A2ATasks,
// A2ADeliveryQueue) publish each change after it commits: the watchers of the task (streams,
// blocking sends) are woken to read it back from the store, and the gateway's webhook loop is
// woken when the change queued webhook calls. Nothing is carried but the wake-up: what changed
// is always read from the store. Lives in memory only; after a restart a watcher starts again
// from the task as stored.
#ifndef COORDINATOR_STORE_A2A_NOTIFIER_H_
#define COORDINATOR_STORE_A2A_NOTIFIER_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace coordinator {

// Listeners are called on the thread that committed the change: they must return quickly and
// only schedule work.
class TaskNotifier {
 public:
  using Listener = std::function<void()>;

  TaskNotifier() = default;
  TaskNotifier(const TaskNotifier&) = delete;
  TaskNotifier& operator=(const TaskNotifier&) = delete;

  // Calls `listener` after each change that appends events to the log of `task_id`. Returns
  // the id to unsubscribe with.
  uint64_t Subscribe(const std::string& task_id, Listener listener);
  // A listener may still be running when this returns (it was copied out before): listeners
  // hold weak references to what they wake.
  void Unsubscribe(const std::string& task_id, uint64_t id);
  // Wakes the listeners of `task_id`: events were appended to its log.
  void Notify(const std::string& task_id);
  // Wakes every listener of every task: changes may have been missed (ReplicaFeed::Gap), so
  // each reads its task again.
  void NotifyAll();

  // The one listener woken when a change queued webhook calls (the gateway's webhook loop);
  // nullptr for none. It runs under this notifier's lock, so once SetPushListener returns the
  // previous listener is not running and is not called again.
  void SetPushListener(Listener listener);
  // Wakes the push listener: a change queued webhook calls.
  void PushesQueued();

  // The one observer of every task's changes (the web console's feed), called with the task id
  // after the task's own listeners; nullptr for none. It runs under this notifier's lock, so
  // once SetObserver returns the previous observer is not running and is not called again.
  void SetObserver(std::function<void(const std::string&)> observer);

 private:
  absl::Mutex mu_;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  absl::flat_hash_map<std::string, absl::flat_hash_map<uint64_t, Listener>> listeners_
      ABSL_GUARDED_BY(mu_);
  absl::Mutex push_mu_;
  Listener push_listener_ ABSL_GUARDED_BY(push_mu_);
  absl::Mutex observer_mu_;
  std::function<void(const std::string&)> observer_ ABSL_GUARDED_BY(observer_mu_);
};

}  // namespace coordinator

#endif  // COORDINATOR_STORE_A2A_NOTIFIER_H_
