// What every long-running binary (the coordinator, the agents, the load generator) calls first
// thing in main. Debian builds Abseil without NDEBUG, so by default every absl::Mutex acquisition
// (ours and gRPC's) also updates a process-wide lock-order graph to detect deadlocks: about 3% of
// the coordinator's CPU under load and 5% of an agent's (bench/analysis.md). A debugging aid: the
// tests keep it.
#ifndef COMMON_MUTEX_MODE_H_
#define COMMON_MUTEX_MODE_H_

#include "absl/synchronization/mutex.h"

namespace common {

inline void SkipMutexDeadlockGraph() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

}  // namespace common

#endif  // COMMON_MUTEX_MODE_H_
