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
  absl::StatusOr<A2ATasks::Change> first = deliveries_->DeliveryFailed(
      id, 1, "agent unreachable", absl::Now() + absl::Seconds(1), false);
  ASSERT_OK(first);
  EXPECT_TRUE(first->events.empty());
  absl::StatusOr<std::vector<v1::PendingDelivery>> pending = deliveries_->PendingDeliveries(10);
  ASSERT_OK(pending);
  ASSERT_EQ(pending->size(), 1u);
  EXPECT_EQ((*pending)[0].attempts(), 1);
  EXPECT_EQ((*pending)[0].last_error(), "agent unreachable");

  absl::StatusOr<A2ATasks::Change> last =
      deliveries_->DeliveryFailed(id, 1, "agent unreachable", absl::Now(), true);
  ASSERT_OK(last);
  EXPECT_EQ(last->header.task().status().state(), a2apb::TASK_STATE_FAILED);
  EXPECT_NE(last->header.task().status().message().parts(0).text().find("after 2 attempts"),
            std::string::npos);
  pending = deliveries_->PendingDeliveries(10);
  ASSERT_OK(pending);
  EXPECT_TRUE(pending->empty());
}

}  // namespace
}  // namespace coordinator
