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
#ifndef COORDINATOR_STORE_TALLIES_H_
#define COORDINATOR_STORE_TALLIES_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "coordinator/v1/context.pb.h"
#include "coordinator/v1/work.pb.h"
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

// The overall score of an evaluation: the "score" label the green agent stores, JSON whose
// "score" field is a number (green_agent/evaluation.cc, ScoreJson); nullopt when there is none.
std::optional<double> EvaluationScore(const v1::TaskContext& context);
// The leaderboard's groups of a context: its external task id ("(none)" without one) and its
// agent under test, the purple_agent label ("(unknown)" without one).
std::string ScoreTask(const v1::TaskContext& context);
std::string ScoreAgent(const v1::TaskContext& context);
// The group of kScoreByTaskAndAgent, and back. A task id has no control character, so the NUL
// between the two is unambiguous.
std::string TaskAndAgentGroup(absl::string_view task, absl::string_view agent);
std::pair<std::string, std::string> SplitTaskAndAgentGroup(absl::string_view group);

class Tallies {
 public:
  // Moves the totals from what `before` counted in to what `after` does, inside `txn`, which
  // holds the context header's lock. Null: the context did not exist before, or does not after.
  // Writes nothing when both count in the same way (most changes: a command recorded, a label
  // other than score or purple_agent set).
  [[nodiscard]] static absl::Status TxnContextChanged(storage::Transaction& txn,
                                                      const v1::TaskContext* before,
                                                      const v1::TaskContext* after);
  // The same for a run, inside `txn`, which holds the run header's lock.
  [[nodiscard]] static absl::Status TxnRunChanged(storage::Transaction& txn, const v1::Run* before,
                                                  const v1::Run* after);
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
  // Computes every total again from the context and run headers and the delivery queue, and
  // writes them with kTalliesVersion's marker in one transaction (on etcd it must fit
  // --etcd_max_txn_ops: a key per total). It reads what is committed, so no writer may run
  // meanwhile: call it before the store serves.
  [[nodiscard]] static absl::Status Rebuild(storage::Store& store);
  // Rebuild unless Built; whether it built them. When replicas of one etcd data set start at
  // once, the first to commit builds them and the others leave them be.
  [[nodiscard]] static absl::StatusOr<bool> EnsureBuilt(storage::Store& store);
};

}  // namespace coordinator

#endif  // COORDINATOR_STORE_TALLIES_H_
