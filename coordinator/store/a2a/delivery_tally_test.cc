// The running total of queued deliveries per agent (tallies.h, kDeliveriesQueued) through the real
// A2A store parts: it follows every way a delivery is queued and leaves the queue, so the web
// console shows each agent's queue without reading it.
#include <memory>
#include <string>

#include "coordinator/store/a2a/store_fixture.h"
#include "coordinator/store/records/purge.h"
#include "coordinator/store/records/tallies.h"

namespace coordinator {
namespace {

class DeliveryTallyTest : public A2AStoreFixture {
 protected:
  int64_t Queued(const std::string& agent) {
    absl::StatusOr<TallyTotal> total = Tallies::Read(*store_, Tally::kDeliveriesQueued, agent);
    EXPECT_OK(total);
    return total.ok() ? total->count : -1;
  }
};

TEST_F(DeliveryTallyTest, FollowsQueueDoneGiveUpCancelAndPurge) {
  const std::string a = NewTask("echo");
  ASSERT_OK(tasks_->AcceptMessage("echo", UserText("more", a)));
  const std::string b = NewTask("echo");
  const std::string c = NewTask("other");
  EXPECT_EQ(Queued("echo"), 3);
  EXPECT_EQ(Queued("other"), 1);

  // Delivered: out of the queue.
  absl::StatusOr<std::vector<v1::PendingDelivery>> pending = deliveries_->PendingDeliveries(100);
  ASSERT_OK(pending);
  const v1::PendingDelivery* first_of_a = nullptr;
  const v1::PendingDelivery* first_of_b = nullptr;
  for (const v1::PendingDelivery& d : *pending) {
    if (d.task_id() == a && first_of_a == nullptr) first_of_a = &d;
    if (d.task_id() == b) first_of_b = &d;
  }
  ASSERT_NE(first_of_a, nullptr);
  ASSERT_NE(first_of_b, nullptr);
  ASSERT_OK(deliveries_->DeliveryDone(a, first_of_a->history_seq()));
  EXPECT_EQ(Queued("echo"), 2);
  // Failed and retried later: still queued. Given up: out.
  ASSERT_OK(deliveries_->DeliveryFailed(b, first_of_b->history_seq(), Failure("refused", false)));
  EXPECT_EQ(Queued("echo"), 2);
  ASSERT_OK(deliveries_->DeliveryFailed(b, first_of_b->history_seq(), Failure("refused", true)));
  EXPECT_EQ(Queued("echo"), 1);
  // Canceled: its queue is dropped.
  ASSERT_OK(tasks_->CancelLocally("echo", a, ""));
  EXPECT_EQ(Queued("echo"), 0);
  // Purged with a delivery still queued (retention of a task whose agent never answered).
  ASSERT_OK(store_->RunTransaction([&](storage::Transaction& txn) -> absl::Status {
    return PurgeA2ATaskStep(txn, c, kNoPurgeLimit, [](const v1::StoredTask&) { return true; })
        .status();
  }));
  EXPECT_EQ(Queued("other"), 0);

  // A rebuild from the queue agrees with the writers.
  NewTask("echo");
  ASSERT_OK(Tallies::Rebuild(*store_, {A2ADeliveryQueue::Totals()}));
  EXPECT_EQ(Queued("echo"), 1);
  EXPECT_EQ(Queued("other"), 0);
}

}  // namespace
}  // namespace coordinator
