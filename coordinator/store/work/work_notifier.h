// In-process fan-out of work changes to watchers (WatchRun streams). Domain code publishes an
// event after each committed change; each watcher gets the events of the run it watches. It
// lives in memory only: after a restart a watcher watches again and starts from a snapshot.
#ifndef COORDINATOR_STORE_WORK_WORK_NOTIFIER_H_
#define COORDINATOR_STORE_WORK_WORK_NOTIFIER_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "coordinator/v1/work.pb.h"

namespace coordinator {

// Receives the events of one run. Calls come from the threads that commit changes, so they
// must be quick and must not block (queue the event and return).
class WorkWatcher {
 public:
  virtual ~WorkWatcher() = default;
  virtual void OnEvent(const v1::RunEvent& event) = 0;
  // The notifier is closing (the coordinator shuts down): no event follows.
  virtual void OnClose(const absl::Status& status) = 0;
};

class WorkNotifier {
 public:
  // Not a run id (run ids are never empty).
  static constexpr absl::string_view kAllRuns = "";

  WorkNotifier() = default;
  WorkNotifier(const WorkNotifier&) = delete;
  WorkNotifier& operator=(const WorkNotifier&) = delete;

  // Starts delivering the events of `run_id` to `watcher`, of every run when `run_id` is
  // kAllRuns (the web console's feed). False when the notifier is closed.
  [[nodiscard]] bool Subscribe(absl::string_view run_id, WorkWatcher* watcher);
  // Stops delivering to `watcher`. When this returns no call to it is in progress or will
  // follow, so the watcher may be deleted.
  void Unsubscribe(WorkWatcher* watcher);
  // Delivers `event` to the watchers of event.run_id().
  void Publish(const v1::RunEvent& event);
  // Calls OnClose on every watcher, drops them, and refuses new subscriptions.
  void Close(const absl::Status& status);
  // Calls OnClose on the watchers of single runs and drops them; the watchers of every run
  // (kAllRuns) stay, and new subscriptions are taken: changes were missed (ReplicaFeed::Gap),
  // and a run's watcher must start again from a snapshot.
  void EndWatches(const absl::Status& status);

 private:
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::vector<WorkWatcher*>> watchers_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<WorkWatcher*, std::string> runs_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace coordinator

#endif  // COORDINATOR_STORE_WORK_WORK_NOTIFIER_H_
