#include "coordinator/store/all_tallies.h"

#include "coordinator/store/a2a/delivery_queue.h"
#include "coordinator/store/contexts/context_store.h"
#include "coordinator/store/work/work_store.h"

namespace coordinator {

std::vector<TallySource> AllTallySources() {
  return {ContextStore::Totals(), WorkStore::Totals(), A2ADeliveryQueue::Totals()};
}

absl::Status RebuildTallies(storage::Store& store) {
  return Tallies::Rebuild(store, AllTallySources());
}

absl::StatusOr<bool> EnsureTalliesBuilt(storage::Store& store) {
  return Tallies::EnsureBuilt(store, AllTallySources());
}

}  // namespace coordinator
