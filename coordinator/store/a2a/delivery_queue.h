// The delivery part of the A2A store: the queue of client messages still to be carried to
// their agents, one entry per message, in key order (per task, oldest message first). Entries
// are queued by A2ATasks::AcceptMessage and dequeued by the burst that ends the agent's turn,
// each in the transaction of the task change (see records.h); here the gateway reads the
// queue, and records a delivery done or failed. Knows nothing of gRPC.
#ifndef COORDINATOR_STORE_A2A_DELIVERY_QUEUE_H_
#define COORDINATOR_STORE_A2A_DELIVERY_QUEUE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "coordinator/store/a2a/notifier.h"
#include "coordinator/store/a2a/tasks.h"
#include "coordinator/store/records/tallies.h"
#include "coordinator/v1/a2a_stored.pb.h"
#include "storage/store.h"

namespace coordinator {

// One failed attempt at a queued message, as the gateway judged it.
struct DeliveryFailure {
  // Why it failed; kept as the delivery's last_error.
  std::string error;
  // Whether the call reached the agent. One that did is counted in `attempts`; one that found
  // nothing listening in `unreached` (which the next counted one resets).
  bool reached = true;
  // When to try again.
  absl::Time next_attempt;
  // Set: the message is given up instead: its delivery removed and its task FAILED with this
  // as the status message (unless the task has ended).
  std::optional<std::string> give_up;
};

class A2ADeliveryQueue {
 public:
  // `notifier` may be null (nobody watches). A delivery given up fails its task: that change
  // is published on it.
  A2ADeliveryQueue(storage::Store* store, TaskNotifier* notifier)
      : store_(store), notifier_(notifier) {}

  // Queued deliveries in key order (per task, oldest message first), at most `max`.
  [[nodiscard]] absl::StatusOr<std::vector<v1::PendingDelivery>> PendingDeliveries(int max);
  // What the queue counts in for in the running totals (records/tallies.h): queued deliveries
  // by agent.
  static TallySource Totals();
  // Calls `visit` with every queued delivery, in key order; stops at the first error it returns.
  [[nodiscard]] static absl::Status ForEachDelivery(
      storage::Store& store, absl::FunctionRef<absl::Status(const v1::PendingDelivery&)> visit);
  // The queued delivery of history message `history_seq`; NOT_FOUND when it is not queued (any
  // more). What it returns is durable.
  [[nodiscard]] absl::StatusOr<v1::PendingDelivery> GetDelivery(absl::string_view task_id,
                                                                int64_t history_seq);
  // Removes a delivery that reached its agent. Returns the deliveries of the task still queued.
  [[nodiscard]] absl::StatusOr<int64_t> DeliveryDone(absl::string_view task_id,
                                                     int64_t history_seq);
  // Records a failed attempt (see DeliveryFailure): when to try next, or the message given up.
  [[nodiscard]] absl::StatusOr<A2ATasks::Change> DeliveryFailed(absl::string_view task_id,
                                                                int64_t history_seq,
                                                                const DeliveryFailure& failure);
  // Makes every queued delivery of `tenant` due now (its agent just registered).
  [[nodiscard]] absl::Status RetryDeliveriesNow(absl::string_view tenant);

 private:
  storage::Store* store_;   // not owned
  TaskNotifier* notifier_;  // not owned; may be null
};

}  // namespace coordinator

#endif  // COORDINATOR_STORE_A2A_DELIVERY_QUEUE_H_
