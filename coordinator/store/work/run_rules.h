// What a run and its leases may be, as every part of the work store judges it: the bounds of a
// lease's length and of a run's claimants, how a lease's expiry is judged, and a run's status as
// its counts say. A leaf of coordinator/store/work/: work_store.h and work_records.h use it.
#ifndef COORDINATOR_STORE_WORK_RUN_RULES_H_
#define COORDINATOR_STORE_WORK_RUN_RULES_H_

#include "absl/time/time.h"
#include "coordinator/v1/work.pb.h"

namespace coordinator {

// How a lease's expiry is judged (docs/work.md, "Leases and fencing").
enum class LeaseExpiry {
  // By wall clock: a lease ends at its lease_expire_time, on the clock of whichever process
  // looks; CheckLease refuses an expired lease before the reaper has taken it back, and a
  // restart takes back the leases that expired while the process was down. For one process (the
  // embedded RocksDB store), the default.
  kWallClock,
  // By observation: a lease holds until the reaper takes it back, which it does once it has seen
  // the lease's index entry unchanged for the lease's length on its own monotonic clock
  // (LeaseObservations). No two processes' clocks are ever compared. For several replicas on one
  // data set (etcd); lease_expire_time is then only an estimate.
  kObserved,
};

// Default and bounds of a lease's length.
inline constexpr absl::Duration kDefaultLeaseTtl = absl::Seconds(30);
inline constexpr absl::Duration kMinLeaseTtl = absl::Milliseconds(100);
inline constexpr absl::Duration kMaxLeaseTtl = absl::Hours(24);
// Most principals a run may name as claimants.
inline constexpr int kMaxClaimants = 64;

// The run's status as its item counts and claim count say (see RunStatus in work.proto).
v1::RunStatus DeriveRunStatus(const v1::Run& run);
// COMPLETED, or FAILED with nothing pending or running: nothing more happens to the run by itself
// (WorkStore::IsTerminal).
bool IsTerminalRun(const v1::Run& run);

}  // namespace coordinator

#endif  // COORDINATOR_STORE_WORK_RUN_RULES_H_
