// The reaper: a background thread of the coordinator that takes back the items whose lease
// expired (WorkStore::ReapExpired) once per period, so a crashed worker's item is claimable
// again within its lease's length plus one period. It also runs once at start: under wall-clock
// expiry that takes back the leases that expired while the coordinator was down. Under observed
// expiry (etcd) the reaper keeps its own LeaseObservations, empty when it is created: a new
// reaper gives every lease a full length from its first pass (docs/work.md, "The reaper").
#ifndef COORDINATOR_STORE_WORK_REAPER_H_
#define COORDINATOR_STORE_WORK_REAPER_H_

#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "coordinator/store/work/work_store.h"

namespace coordinator {

class Reaper {
 public:
  // Starts the thread. `work` must outlive the reaper. `monotonic` is the clock of its
  // observations under observed expiry (default MonotonicNow; tests pass a fake one).
  Reaper(WorkStore* work, absl::Duration period, Clock monotonic = nullptr);
  // Stops and joins the thread.
  ~Reaper();

  Reaper(const Reaper&) = delete;
  Reaper& operator=(const Reaper&) = delete;

  // Stops the thread after the pass in progress, if any. Idempotent.
  void Stop();

 private:
  void Loop();

  WorkStore* const work_;
  const absl::Duration period_;
  // Only the reaper's thread touches it.
  LeaseObservations observations_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace coordinator

#endif  // COORDINATOR_STORE_WORK_REAPER_H_
