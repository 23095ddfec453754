// Unit tests of the delivery queue of the A2A store. Each test opens its own database.
#include "coordinator/store/a2a/delivery_queue.h"

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "a2a_protocol/errors.h"
#include "absl/time/clock.h"
#include "coordinator/store/a2a/store_fixture.h"
#include "gtest/gtest.h"

namespace coordinator {
namespace {

using A2ADeliveryQueueTest = A2AStoreFixture;

TEST_F(A2ADeliveryQueueTest, DeliveryFailuresBackOffThenFailTheTask) {
  const std::string id = NewTask("echo");
  DeliveryFailure later = Failure("agent answered UNKNOWN", /*give_up=*/false);
  later.next_attempt += absl::Seconds(1);
  absl::StatusOr<A2ATasks::Change> first = deliveries_->DeliveryFailed(id, 1, later);
  ASSERT_OK(first);
  EXPECT_TRUE(first->events.empty());
  absl::StatusOr<std::vector<v1::PendingDelivery>> pending = deliveries_->PendingDeliveries(10);
  ASSERT_OK(pending);
  ASSERT_EQ(pending->size(), 1u);
  EXPECT_EQ((*pending)[0].attempts(), 1);
  EXPECT_EQ((*pending)[0].unreached(), 0);
  EXPECT_EQ((*pending)[0].last_error(), "agent answered UNKNOWN");

  absl::StatusOr<A2ATasks::Change> given_up =
      deliveries_->DeliveryFailed(id, 1, Failure("agent answered UNKNOWN", /*give_up=*/true));
  ASSERT_OK(given_up);
  EXPECT_EQ(given_up->header.task().status().state(), a2apb::TASK_STATE_FAILED);
  EXPECT_EQ(given_up->header.task().status().message().parts(0).text(),
            "given up: agent answered UNKNOWN");
  pending = deliveries_->PendingDeliveries(10);
  ASSERT_OK(pending);
  EXPECT_TRUE(pending->empty());
}

TEST_F(A2ADeliveryQueueTest, AttemptsThatFoundNobodyAreCountedApart) {
  const std::string id = NewTask("echo");
  ASSERT_OK(
      deliveries_->DeliveryFailed(id, 1, Failure("connection refused", false, /*reached=*/false)));
  ASSERT_OK(
      deliveries_->DeliveryFailed(id, 1, Failure("connection refused", false, /*reached=*/false)));
  absl::StatusOr<v1::PendingDelivery> delivery = deliveries_->GetDelivery(id, 1);
  ASSERT_OK(delivery);
  EXPECT_EQ(delivery->attempts(), 0);
  EXPECT_EQ(delivery->unreached(), 2);
  EXPECT_EQ(delivery->last_error(), "connection refused");
  // An attempt that reached the agent counts, and ends the run of unreached ones.
  ASSERT_OK(deliveries_->DeliveryFailed(id, 1, Failure("agent broke off", false)));
  delivery = deliveries_->GetDelivery(id, 1);
  ASSERT_OK(delivery);
  EXPECT_EQ(delivery->attempts(), 1);
  EXPECT_EQ(delivery->unreached(), 0);
  // The task waits meanwhile.
  absl::StatusOr<v1::StoredTask> header = tasks_->GetHeader(id);
  ASSERT_OK(header);
  EXPECT_EQ(header->task().status().state(), a2apb::TASK_STATE_SUBMITTED);
}

}  // namespace
}  // namespace coordinator
