// Domain logic of work coordination (docs/work.md): runs of workstreams or task graphs, whose
// items workers claim under leases with a fencing epoch, heartbeat, checkpoint, complete or fail,
// and which the reaper takes back when a lease expires. On the storage interface; validates its
// input and knows nothing of gRPC.
//
// Invariants, each kept by one transaction per change:
//   - the counters and open-items-per-level of a run's header match its items (every status
//     change locks the header, then the item);
//   - an item is pending exactly when its pending-index key exists, and running exactly when a
//     lease-index key for its current expiry exists;
//   - only the holder of the item's current epoch can change it (every lease call compares).
#ifndef COORDINATOR_STORE_WORK_WORK_STORE_H_
#define COORDINATOR_STORE_WORK_WORK_STORE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "coordinator/store/records/access.h"
#include "coordinator/store/records/purge.h"
#include "coordinator/store/records/tallies.h"
#include "coordinator/store/work/run_rules.h"
#include "coordinator/store/work/task_graph.h"
#include "coordinator/store/work/work_notifier.h"
#include "coordinator/v1/work.pb.h"
#include "storage/store.h"

namespace coordinator {

// The time source; tests pass a fake one to exercise expiry and backoff without sleeping.
using Clock = std::function<absl::Time()>;

// The process's monotonic clock (std::chrono::steady_clock) as an absl::Time: only differences
// between its readings mean anything.
absl::Time MonotonicNow();

// What one reaper has seen of the lease index under LeaseExpiry::kObserved: per index entry (a
// heartbeat moves an item's entry), when the reaper first saw it on its own monotonic clock, and
// the lease's length. It starts empty, so a new reaper (a restart, a failover) gives every lease
// a full length from when it first sees it: a failover only ever extends leases. Each pass
// forgets the entries that left the index, so it holds at most the live leases. Used by one
// reaper at a time (not thread-safe).
class LeaseObservations {
 public:
  // `monotonic` defaults to MonotonicNow; tests pass a fake one.
  explicit LeaseObservations(Clock monotonic = nullptr);

  // Index entries remembered (the live leases at the last pass).
  size_t size() const { return seen_.size(); }

 private:
  friend class WorkStore;
  struct Seen {
    absl::Time first_seen;  // on clock_
    absl::Duration ttl;     // the lease's length, as the item said when first seen
    int64_t epoch = 0;      // the item's epoch then (a new claim restarts the observation)
  };
  absl::Time Now() const { return clock_(); }

  const Clock clock_;
  absl::flat_hash_map<std::string, Seen> seen_;
};

// The lease token a worker passes around: base64url of a LeaseToken.
std::string EncodeLease(absl::string_view run_id, absl::string_view item_id, int64_t epoch);
// INVALID_ARGUMENT when `lease` is not a token this coordinator issued.
[[nodiscard]] absl::StatusOr<v1::LeaseToken> DecodeLease(absl::string_view lease);

class WorkStore {
 public:
  // `notifier` may be null (no watchers); `clock` (the wall clock: timestamps, backoff, and
  // expiry under kWallClock) defaults to absl::Now.
  WorkStore(storage::Store* store, WorkNotifier* notifier, WorkLimits limits, Clock clock = nullptr,
            LeaseExpiry expiry = LeaseExpiry::kWallClock);

  LeaseExpiry lease_expiry() const { return expiry_; }

  // The run's claimants are run.claimants (ImportTaskGraph: request.claimants), or
  // access.principal when that is empty (none without authentication).
  [[nodiscard]] absl::StatusOr<v1::Run> CreateRun(const v1::CreateRunRequest& request,
                                                  const Access& access = {});
  [[nodiscard]] absl::StatusOr<v1::Run> ImportTaskGraph(const v1::ImportTaskGraphRequest& request,
                                                        const Access& access = {});
  [[nodiscard]] absl::StatusOr<v1::Run> GetRun(absl::string_view run_id);
  [[nodiscard]] absl::StatusOr<v1::ListRunsResponse> ListRuns(const v1::ListRunsRequest& request);
  [[nodiscard]] absl::StatusOr<v1::ListItemsResponse> ListItems(
      const v1::ListItemsRequest& request);
  [[nodiscard]] absl::StatusOr<v1::WorkItem> GetItem(absl::string_view run_id,
                                                     absl::string_view item_id);
  // Every item of the run, in item_id order (at most limits.max_items of them).
  [[nodiscard]] absl::StatusOr<std::vector<v1::WorkItem>> AllItems(absl::string_view run_id);

  // Hands the worker one claimable item: pending, out of backoff, its dependencies done, and
  // every item of every lower level done. Claims of one run are serialized on its header.
  //
  // Claim and the lease calls below are PERMISSION_DENIED, changing nothing, for a scoped
  // `access` (an agent) whose principal is not among the run's claimants; a run without
  // claimants (stored before they existed) has none. Unscoped access (the default) may.
  [[nodiscard]] absl::StatusOr<v1::ClaimResponse> Claim(const v1::ClaimRequest& request,
                                                        const Access& access = {});
  [[nodiscard]] absl::StatusOr<v1::HeartbeatResponse> Heartbeat(const v1::HeartbeatRequest& request,
                                                                const Access& access = {});
  [[nodiscard]] absl::StatusOr<v1::WorkItem> Checkpoint(const v1::CheckpointRequest& request,
                                                        const Access& access = {});
  [[nodiscard]] absl::StatusOr<v1::WorkItem> Complete(const v1::CompleteRequest& request,
                                                      const Access& access = {});
  [[nodiscard]] absl::StatusOr<v1::WorkItem> Fail(const v1::FailRequest& request,
                                                  const Access& access = {});
  [[nodiscard]] absl::StatusOr<v1::WorkItem> Retry(const v1::RetryRequest& request);

  // Adds items to a run that has not ended, all or none: with the run's items they must pass
  // NormalizeAndValidateItems, and none may be below the run's current level (FAILED_PRECONDITION
  // naming the item). Each gets an ITEM_CREATED log entry; watchers see each as a change.
  [[nodiscard]] absl::StatusOr<v1::AddItemsResponse> AddItems(const v1::AddItemsRequest& request);
  // Marks a complete level merged, once every lower level is: NOT_FOUND for a level without
  // items, FAILED_PRECONDITION (naming the level's status) otherwise.
  [[nodiscard]] absl::StatusOr<v1::Run> MergeLevel(const v1::MergeLevelRequest& request);
  // The run's worker registry, in worker_id order.
  [[nodiscard]] absl::StatusOr<v1::ListWorkersResponse> ListWorkers(
      const v1::ListWorkersRequest& request);
  // Marks a registered worker that holds no item stopped (PERMISSION_DENIED for a scoped access
  // that is not a claimant of the run, as Claim).
  [[nodiscard]] absl::StatusOr<v1::RunWorker> StopWorker(const v1::StopWorkerRequest& request,
                                                         const Access& access = {});
  // The run's event log from after_seq (or the page token), in seq order.
  [[nodiscard]] absl::StatusOr<v1::ListEventsResponse> ListEvents(
      const v1::ListEventsRequest& request);

  // Creates a run with its items' states, levels and workers as another tool left them (a run
  // under way), all or nothing: the checks of CreateRun, and INVALID_ARGUMENT for an unknown
  // status, attempts beyond the policy's max_attempts, a running task without a worker, a
  // running or done task whose dependency is not done, a running task above a level not done, a
  // merged level that is not complete (or above one not merged), a worker listed twice, ... Each
  // running item is held by its worker under a fresh lease of request.lease_ttl (its epoch is its
  // attempts); the reaper takes it back after that like any other unless the worker heartbeats
  // with the lease returned.
  [[nodiscard]] absl::StatusOr<v1::ImportRunResponse> ImportRun(const v1::ImportRunRequest& request,
                                                                const Access& access = {});

  // Returns the items whose lease expired to pending (or blocks them when their attempts are
  // used up), counting the lost attempt. Returns how many were taken back.
  //
  // Under kWallClock a lease expired when its lease_expire_time is past on this process's wall
  // clock, and `observations` is not used. Under kObserved `observations` is required
  // (INVALID_ARGUMENT without): the pass reads the whole lease index, remembers the entries it
  // has not seen before, forgets those that left, and takes back the items whose entry it has
  // seen unchanged for at least the lease's length.
  [[nodiscard]] absl::StatusOr<int> ReapExpired(LeaseObservations* observations = nullptr);

  // How many items hold a lease now, expired ones the reaper has not taken back included (a
  // scan of the lease index; for /metrics).
  [[nodiscard]] absl::StatusOr<int64_t> CountLeases();

  // ---- A run's life. ----

  // COMPLETED, or FAILED with nothing pending or running: nothing more happens to it by itself.
  static bool IsTerminal(const v1::Run& run);
  // What the runs count in for in the running totals (records/tallies.h): active and ended.
  static TallySource Totals();
  // Calls `visit` with every run that has a header, in run_id order; stops at the first error
  // `visit` returns.
  [[nodiscard]] static absl::Status ForEachRun(
      storage::Store& store,
      absl::FunctionRef<absl::Status(const std::string& run_id, const v1::Run& run)> visit);
  // One step of deleting the run with everything under it, inside `txn`, at most `limit` keys.
  // Locks the header and asks `eligible`; deletes the items (each running one with its lease
  // entry), then the pending entries, the event log and the worker registry, and the header
  // last, when it fits.
  [[nodiscard]] static absl::StatusOr<PurgeProgress> PurgeStep(
      storage::Transaction& txn, absl::string_view run_id, int64_t limit,
      absl::FunctionRef<bool(const v1::Run&)> eligible);
  // Keys a purge of the run deletes (what a dry run counts).
  [[nodiscard]] static absl::StatusOr<int64_t> CountPurge(storage::Store& store,
                                                          absl::string_view run_id);

 private:
  // How a change of a leased item locks, and what it accepts.
  struct LeasedChange {
    // The change moves the item's status: the run's header is locked first (its counters change
    // with it) and the published event carries the run. Otherwise only the item is locked, so
    // the change never waits on the run's claims.
    bool changes_status = false;
    // A repeat of a change that already left the item DONE under this lease (a Complete whose
    // reply was lost) returns the item as it is.
    bool accepts_done_repeat = false;
    // The event-log entry the change makes (only with changes_status); UNSPECIFIED: none.
    v1::WorkEvent::Kind event = v1::WorkEvent::KIND_UNSPECIFIED;
  };
  // The one shape of Heartbeat, Checkpoint, Complete and Fail: in one transaction, locks (the
  // run's header, then) the item `lease` names, checks that the lease holds it, lets `change`
  // edit a copy (`record` is the locked header, null unless changes_status), writes the item
  // (and the header, with the status transition), then publishes the change. Returns the item
  // as written.
  [[nodiscard]] absl::StatusOr<v1::WorkItem> ChangeLeasedItem(
      const v1::LeaseToken& lease, const Access& access, LeasedChange how,
      absl::FunctionRef<void(const v1::WorkRunRecord* record, absl::Time now, v1::WorkItem* item)>
          change);
  [[nodiscard]] absl::StatusOr<v1::Run> CreateRunFromItems(v1::Run settings,
                                                           std::vector<v1::WorkItem> items,
                                                           const Access& access);
  // CreateRunFromItems, with the imported states of `state` when not null (ImportRun).
  [[nodiscard]] absl::StatusOr<v1::ImportRunResponse> CreateRunWithState(
      v1::Run settings, std::vector<v1::WorkItem> items, const v1::ImportRunRequest* state,
      const Access& access);
  // Hands `events` to the notifier once the change they describe is durable.
  void Publish(std::vector<v1::RunEvent> events);
  absl::Time Now() const { return clock_(); }
  // ReapExpired's two ways.
  [[nodiscard]] absl::StatusOr<int> ReapByWallClock();
  [[nodiscard]] absl::StatusOr<int> ReapObserved(LeaseObservations& observations);
  // In one transaction, takes back the item of lease-index entry `index_key` if `due` says its
  // lease is over (`observed_for`: how long the reaper saw it unchanged, for the item's last
  // error; nullopt under kWallClock), or deletes the entry when it is left over. Sets
  // *taken_back and *touched (something was written).
  [[nodiscard]] absl::Status TakeBackLease(const std::string& index_key, const std::string& run_id,
                                           const std::string& item_id,
                                           absl::FunctionRef<bool(const v1::WorkItem&)> due,
                                           std::optional<absl::Duration> observed_for,
                                           bool* taken_back, bool* touched);

  storage::Store* store_;   // not owned
  WorkNotifier* notifier_;  // not owned; may be null
  const WorkLimits limits_;
  const Clock clock_;
  const LeaseExpiry expiry_;
};

}  // namespace coordinator

#endif  // COORDINATOR_STORE_WORK_WORK_STORE_H_
