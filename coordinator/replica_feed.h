// What other coordinator replicas write, told to this replica's listeners. With several replicas
// on one etcd data set (docs/storage.md, "Several replicas"), a change committed through replica
// A must reach the WatchRun streams, A2A streams and waiting sends, the gateway's delivery and
// webhook loops and the web console's feed of replica B, as A's own in-process notifications
// reach A's. The feed is one etcd watch (storage/etcd_watch.h) over the families those listeners
// care about; each commit it hears is turned into the same calls the store parts make after
// their own commits:
//
//   key written (family, record)                 call on this replica
//   a2a: an A2A task's event log                 TaskNotifier::Notify(task)  (streams, waits,
//                                                the console's "task")
//   a2a: the delivery queue                      A2AGateway::Kick()          (the queue scan)
//   a2a: a queued webhook call                   TaskNotifier::PushesQueued()
//   a2a: the agent registry                      console "agent"
//   work: an item                                WorkNotifier::Publish(CHANGED, item, run)
//   work: a run's header, workers or log         WorkNotifier::Publish(run only)
//   contexts: a context's header or commands     console "context"
//   contexts: its conversation                   console "conversation"
//   tasks: a retry task's records, blocked       console "retry"
//
// A replica hears its own commits too; those it skips (EtcdStore::WroteRevision), since its store
// parts told their listeners already. A commit told twice is harmless: the listeners read the
// store again, and WatchRun sends an item version once. Commits reach the listeners in commit
// order, one at a time, on the watch's thread. When the watch had to skip revisions the cluster
// compacted (a member was away longer than the compaction keeps), every listener is told to
// start over: A2A listeners are woken to read again, WatchRun streams end with UNAVAILABLE
// ("watch again": a fresh snapshot follows), and the console's readers resync.
#ifndef COORDINATOR_REPLICA_FEED_H_
#define COORDINATOR_REPLICA_FEED_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/a2a/gateway.h"
#include "coordinator/console/console_feed.h"
#include "coordinator/store/a2a/notifier.h"
#include "coordinator/store/work/work_notifier.h"
#include "storage/etcd_store.h"
#include "storage/etcd_watch.h"

namespace coordinator {

// Who hears the changes; each may be null (nobody to tell). Not owned; they outlive the feed.
struct ReplicaFeedListeners {
  TaskNotifier* a2a = nullptr;
  A2AGateway* gateway = nullptr;
  WorkNotifier* work = nullptr;
  ConsoleFeed* console = nullptr;
};

class ReplicaFeed {
 public:
  // Watches `store`'s data set from its current revision on. Fails only when the cluster cannot
  // be reached at all.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ReplicaFeed>> Start(
      storage::EtcdStore* store, ReplicaFeedListeners listeners);

  // A feed without a watch, for tests: they call Apply and Gap themselves. `own` says which
  // revisions this replica committed (null: none).
  ReplicaFeed(ReplicaFeedListeners listeners, std::function<bool(int64_t)> own);

  // Stops the watch: no listener is called once this returns.
  ~ReplicaFeed();
  ReplicaFeed(const ReplicaFeed&) = delete;
  ReplicaFeed& operator=(const ReplicaFeed&) = delete;

  // One commit's changes, as the watch delivers them.
  void Apply(const std::vector<storage::EtcdChange>& changes);
  // Changes were lost for good: every listener starts over.
  void Gap(int64_t compacted_revision);

  // Commits told to the listeners, and skipped as this replica's own (for tests and /metrics).
  int64_t applied() const { return applied_.load(); }
  int64_t skipped_own() const { return skipped_own_.load(); }

 private:
  const ReplicaFeedListeners listeners_;
  const std::function<bool(int64_t)> own_;
  std::atomic<int64_t> applied_{0};
  std::atomic<int64_t> skipped_own_{0};
  // Last: destroyed first, so no callback runs into the members above.
  std::unique_ptr<storage::EtcdWatch> watch_;
};

}  // namespace coordinator

#endif  // COORDINATOR_REPLICA_FEED_H_
