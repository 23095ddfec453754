// Running totals over the stored records, kept in the same transaction as the writes that change
// them, so that a reader gets exact figures from a few point reads however many records there
// are: the web console's counts of active and ended evaluations and runs, and its leaderboard
// (count and sum of scores by task, by agent under test, and by both). Reading them never scans
// the records.
//
// Each total is split over kTallyStripes keys, the stripe picked from the changed record's id, so
// that writers of different records rarely wait for one another's lock; a reader adds the
// stripes up. A writer locks its record first and the stripes after it, in key order, so two
// writers never wait for each other in a circle.
//
// The totals are derived data. Rebuild computes them again from the records; the coordinator
// does so when it opens a database that has none yet (one written before they existed: storage
// schema 1) or whose totals are of an older kind (kTalliesVersion).
//
// This file knows no store. Each domain that keeps a total says how a change of its records
// moves it (a list of TallyDelta, applied in the change's transaction) and how to count its
// records again (a TallySource for Rebuild): contexts/context_tallies.h, WorkStore and
// A2ADeliveryQueue. coordinator/store/all_tallies.h hands every source to Rebuild.
#ifndef COORDINATOR_STORE_RECORDS_TALLIES_H_
#define COORDINATOR_STORE_RECORDS_TALLIES_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "storage/store.h"

namespace coordinator {

// The totals kept. DO NOT CHANGE THESE VALUES: they are embedded in the keys on disk. A new total
// takes a new value, and kTalliesVersion goes up so that databases without it build it.
enum class Tally : uint8_t {
  kContextsActive = 1,       // contexts (with a TaskContext) whose status is not terminal
  kContextsEnded = 2,        // contexts whose status is terminal (ContextStore::IsTerminal)
  kRunsActive = 3,           // runs that are not terminal (WorkStore::IsTerminal)
  kRunsEnded = 4,            // runs that are
  kScoreByTask = 5,          // scored evaluations by task (ScoreTask): count, sum of scores
  kScoreByAgent = 6,         // by agent under test (ScoreAgent)
  kScoreByTaskAndAgent = 7,  // by both (TaskAndAgentGroup)
  kDeliveriesQueued = 8,     // A2A messages queued for delivery, by agent (the task's tenant)
};

// The kind of totals this binary keeps. Databases whose tallies were built at an older one (or
// never) have them built again at start.
inline constexpr int64_t kTalliesVersion = 1;
// Keys one total is split over.
inline constexpr int kTallyStripes = 16;

struct TallyTotal {
  int64_t count = 0;
  double sum = 0;
};

// One change of one total: `count` records (negative: taken away) of `group` (`""` is the group
// of the counts), whose scores add up to `sum`.
struct TallyDelta {
  Tally tally;
  std::string group;
  int64_t count = 0;
  double sum = 0;
};

// What a domain's records count in for, from scratch: calls `add` with the deltas of every
// record it holds, reading what is committed in `store`.
using TallySink = std::function<void(const TallyDelta&)>;
using TallySource = std::function<absl::Status(storage::Store& store, const TallySink& add)>;

class Tallies {
 public:
  // Applies `deltas` (those of one total merged, those that cancel out dropped) to the stripe of
  // the record `record_id`, inside `txn`, which holds that record's lock.
  [[nodiscard]] static absl::Status TxnApply(storage::Transaction& txn,
                                             std::vector<TallyDelta> deltas,
                                             absl::string_view record_id);
  // Adds `count` (negative: takes away) to `tally` of `group` for a change of the record
  // `record_id` (which picks the stripe), inside `txn`, which holds that record's lock.
  [[nodiscard]] static absl::Status TxnAdd(storage::Transaction& txn, Tally tally,
                                           absl::string_view group, absl::string_view record_id,
                                           int64_t count);

  // One total ("" is the group of the counts).
  [[nodiscard]] static absl::StatusOr<TallyTotal> Read(storage::Store& store, Tally tally,
                                                       absl::string_view group = "");
  // Every group of `tally` whose count is not 0.
  [[nodiscard]] static absl::StatusOr<std::map<std::string, TallyTotal>> ReadGroups(
      storage::Store& store, Tally tally);

  // Whether the tallies hold the totals of kTalliesVersion.
  [[nodiscard]] static absl::StatusOr<bool> Built(storage::Store& store);
  // Computes every total again from what `sources` count (coordinator/store/all_tallies.h has
  // every domain's), and writes them with kTalliesVersion's marker in one transaction (on etcd it
  // must fit
  // --etcd_max_txn_ops: a key per total). It reads what is committed, so no writer may run
  // meanwhile: call it before the store serves.
  [[nodiscard]] static absl::Status Rebuild(storage::Store& store,
                                            const std::vector<TallySource>& sources);
  // Rebuild unless Built; whether it built them. When replicas of one etcd data set start at
  // once, the first to commit builds them and the others leave them be.
  [[nodiscard]] static absl::StatusOr<bool> EnsureBuilt(storage::Store& store,
                                                        const std::vector<TallySource>& sources);
};

}  // namespace coordinator

#endif  // COORDINATOR_STORE_RECORDS_TALLIES_H_
