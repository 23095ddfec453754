// Following a run for `coordctl run export --follow`: a thread watches the run (WatchRun, as
// `coordctl run watch` does) and wakes the caller on every change, coalescing bursts; the
// caller also wakes every poll interval to check the run's event log (MergeLevel and StopWorker
// log but send no watch event), and on SIGINT or SIGTERM. When the coordinator goes away the
// thread watches again with backoff, and gives up after `patience`.
#ifndef COORDCTL_RUN_FOLLOW_H_
#define COORDCTL_RUN_FOLLOW_H_

#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "coordctl/cli.h"

namespace coordctl {

struct FollowOptions {
  // How often the caller wakes without a watch event (--poll; default 1s).
  absl::Duration poll = absl::Seconds(1);
  // How long the coordinator may stay unreachable before following gives up (--patience;
  // default 5m, as `run work`).
  absl::Duration patience = absl::Minutes(5);
  // After a change, how long to wait for more before waking the caller: one write per burst.
  absl::Duration coalesce = absl::Milliseconds(200);
};

// Whether a failed call is worth repeating: the coordinator is down or restarting.
bool TransientStatus(const grpc::Status& s);

// The status to give up with after `s` kept failing `what` for `down` (at least --patience):
// `s`'s code (UNAVAILABLE for a stream the server ended), a message saying so.
grpc::Status GiveUpStatus(const grpc::Status& s, const std::string& what, absl::Duration down,
                          absl::Duration patience);

class RunFollower {
 public:
  enum class Wake {
    kChanged,  // the run changed (or may have: the watch started again)
    kPoll,     // the poll interval passed
    kStop,     // SIGINT or SIGTERM
    kFailed,   // the watch gave up: error() says why
  };

  // Installs the SIGINT and SIGTERM handlers (one follower at a time) and starts watching.
  RunFollower(const Env& env, std::string run_id, FollowOptions options);
  // Stops the watch, joins its thread and restores the signal handlers.
  ~RunFollower();
  RunFollower(const RunFollower&) = delete;
  RunFollower& operator=(const RunFollower&) = delete;

  // Blocks until something to act on. kChanged returns `coalesce` after the first change it
  // saw, with every change up to then folded into it; a stop wins over a change.
  Wake Wait();

  // Why the watch gave up (after kFailed): the last status, its message saying what was
  // being done and for how long.
  grpc::Status error() const;

 private:
  void WatchLoop();
  // Adds one byte to the wake pipe (never blocks: a full pipe already wakes the reader).
  void Poke(char what);

  const Env env_;
  const std::string run_id_;
  const FollowOptions options_;
  int wake_read_ = -1;
  int wake_write_ = -1;
  absl::Notification stopping_;
  mutable absl::Mutex mu_;
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;  // the watch call in flight
  grpc::Status error_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace coordctl

#endif  // COORDCTL_RUN_FOLLOW_H_
