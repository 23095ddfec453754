// What the stores share to delete one entity (a context, a run, an A2A task) with every record
// under it, in steps bounded by a key budget: the outcome of one step and two range helpers. The
// store that writes a record also deletes it (ContextStore::PurgeStep, WorkStore::PurgeStep,
// PurgeA2ATaskStep); retention only decides what is old enough and spends the budget.
//
// Every purge step has the same shape: inside the caller's transaction it locks the entity's
// parent record(s), asks the caller whether the entity is still eligible, deletes children
// first and the parents (with their index entries) last, in one go, and only when they fit in
// the budget. A step that runs out of budget leaves the entity half deleted; the next step
// finishes it (the parents are still there, so it is found again).
#ifndef COORDINATOR_STORE_RECORDS_PURGE_H_
#define COORDINATOR_STORE_RECORDS_PURGE_H_

#include <cstdint>
#include <limits>
#include <string>

#include "absl/status/statusor.h"
#include "storage/store.h"

namespace coordinator {

// What one purge step did.
struct PurgeProgress {
  // Keys the step deleted.
  int64_t deleted = 0;
  // Nothing of the entity is left (also when there was nothing to begin with).
  bool finished = false;
  // The caller's check said the entity is no longer eligible: nothing was deleted.
  bool kept = false;
  // Neither parent record existed when the step began (finished is set too).
  bool absent = false;
};

// A budget that never runs out: the whole entity goes in one transaction (a user's delete).
inline constexpr int64_t kNoPurgeLimit = std::numeric_limits<int64_t>::max();

// Deletes the keys under `prefix` in `cf` until *deleted reaches `limit`, counting each in
// *deleted. True when none is left under the prefix.
[[nodiscard]] absl::StatusOr<bool> DeletePrefix(storage::Transaction& txn, storage::ColumnFamily cf,
                                                const std::string& prefix, int64_t limit,
                                                int64_t* deleted);

// The keys under `prefix` in `cf` (what a dry run would delete).
[[nodiscard]] absl::StatusOr<int64_t> CountPrefix(storage::Store& store, storage::ColumnFamily cf,
                                                  const std::string& prefix);

}  // namespace coordinator

#endif  // COORDINATOR_STORE_RECORDS_PURGE_H_
