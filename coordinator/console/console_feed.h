// The console's change feed: what the web console's event stream (Server-Sent Events) tells a
// browser. The stores' own change notifications feed it (the WorkNotifier that WatchRun uses,
// the TaskNotifier that the A2A streams use, and the context and conversation stores' change
// hooks); like them it carries only the wake-up (what kind of record changed, and which), never
// the data: the browser reads the record again through the JSON endpoints. Memory only, a bounded
// ring of recent changes; a reader that fell behind the ring is told to read everything again.
#ifndef COORDINATOR_CONSOLE_CONSOLE_FEED_H_
#define COORDINATOR_CONSOLE_CONSOLE_FEED_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "coordinator/store/work/work_notifier.h"

namespace coordinator {

// One change: `kind` is "context", "conversation", "run", "task" (A2A), "retry" (a retry task's
// state or its breaker records) or "agent" (what the gateway knows of an agent's reachability);
// `id` the record's id (context_id, run_id, A2A task id, retry task id, agent name).
struct ConsoleChange {
  int64_t seq = 0;
  std::string kind;
  std::string id;
};

class ConsoleFeed {
 public:
  // Changes kept for readers that are behind (default 1024).
  explicit ConsoleFeed(size_t capacity = 1024) : capacity_(capacity) {}
  ConsoleFeed(const ConsoleFeed&) = delete;
  ConsoleFeed& operator=(const ConsoleFeed&) = delete;

  // Records a change and wakes the readers. Quick and non-blocking beyond one short lock: it is
  // called on the threads that commit changes. Consecutive changes of one record are kept as
  // one, the newest.
  void Publish(std::string kind, std::string id);

  // What a reader gets from Wait.
  struct Batch {
    std::vector<ConsoleChange> changes;
    // The reader asked for changes older than the ring holds: it should read everything again.
    bool resync = false;
    // The feed is closed (the coordinator shuts down): nothing follows.
    bool closed = false;
  };
  // Waits until a change after `after` exists, the feed closes, `*stop` is set (when given; set
  // it, then call Wake) or `timeout` passes (then the batch is empty), and returns the changes
  // after `after`.
  Batch Wait(int64_t after, absl::Duration timeout, const std::atomic<bool>* stop = nullptr);
  // Makes the waiting readers look at their `stop` flags.
  void Wake();
  // The sequence number of the newest change (0 before the first).
  int64_t last_seq();

  // Tells every reader to read everything again (changes were missed: ReplicaFeed::Gap).
  void Resync();

  // Wakes every reader with `closed`; Publish is ignored from here on.
  void Close();

 private:
  absl::Mutex mu_;
  const size_t capacity_;
  std::deque<ConsoleChange> ring_ ABSL_GUARDED_BY(mu_);
  int64_t last_seq_ ABSL_GUARDED_BY(mu_) = 0;
  // The newest seq that left the ring for lack of room (0: none yet).
  int64_t dropped_through_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

// Feeds every run's changes (WorkNotifier::kAllRuns) into a ConsoleFeed as "run" changes.
class ConsoleRunWatcher : public WorkWatcher {
 public:
  explicit ConsoleRunWatcher(ConsoleFeed* feed) : feed_(feed) {}
  void OnEvent(const v1::RunEvent& event) override { feed_->Publish("run", event.run_id()); }
  void OnClose(const absl::Status&) override {}

 private:
  ConsoleFeed* feed_;  // not owned
};

}  // namespace coordinator

#endif  // COORDINATOR_CONSOLE_CONSOLE_FEED_H_
