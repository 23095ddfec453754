// The running totals of every domain (records/tallies.h): the sources that count the contexts,
// the runs and the queued A2A deliveries, handed to Tallies::Rebuild together. The one place that
// knows which domains keep totals.
#ifndef COORDINATOR_STORE_ALL_TALLIES_H_
#define COORDINATOR_STORE_ALL_TALLIES_H_

#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/store/records/tallies.h"
#include "storage/store.h"

namespace coordinator {

// Every domain's TallySource.
std::vector<TallySource> AllTallySources();
// Tallies::Rebuild and Tallies::EnsureBuilt over AllTallySources().
[[nodiscard]] absl::Status RebuildTallies(storage::Store& store);
[[nodiscard]] absl::StatusOr<bool> EnsureTalliesBuilt(storage::Store& store);

}  // namespace coordinator

#endif  // COORDINATOR_STORE_ALL_TALLIES_H_
