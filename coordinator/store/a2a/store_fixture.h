// Test fixture of the A2A store parts (a2a_*_test.cc): its own database, one notifier, and the
// three parts on them, plus builders of client messages and agent status updates.
#ifndef COORDINATOR_STORE_A2A_STORE_FIXTURE_H_
#define COORDINATOR_STORE_A2A_STORE_FIXTURE_H_

#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "coordinator/store/a2a/delivery_queue.h"
#include "coordinator/store/a2a/notifier.h"
#include "coordinator/store/a2a/push.h"
#include "coordinator/store/a2a/tasks.h"
#include "gtest/gtest.h"
#include "storage/rocks_store.h"
#include "storage/testing/test_store.h"
#include "tests/test_util.h"

namespace coordinator {

class A2AStoreFixture : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }

  // (Re)opens the database in the test's directory and builds the parts on it.
  void Open() {
    tasks_.reset();
    deliveries_.reset();
    push_.reset();
    store_.reset();
    absl::StatusOr<std::unique_ptr<storage::Store>> store =
        storage::testing::OpenTestStore(dir_.Sub("db"));
    ASSERT_OK(store);
    store_ = *std::move(store);
    Limits limits;
    limits.max_message_bytes = 4096;
    tasks_ = std::make_unique<A2ATasks>(store_.get(), &notifier_, limits);
    deliveries_ = std::make_unique<A2ADeliveryQueue>(store_.get(), &notifier_);
    push_ = std::make_unique<A2APush>(store_.get(), limits);
  }

  static a2apb::Message UserText(const std::string& text, const std::string& task_id = "",
                                 const std::string& context_id = "") {
    static int counter = 0;
    a2apb::Message m;
    m.set_message_id("m" + std::to_string(++counter));
    m.set_role(a2apb::ROLE_USER);
    m.set_task_id(task_id);
    m.set_context_id(context_id);
    m.add_parts()->set_text(text);
    return m;
  }

  // A failed delivery attempt that reached the agent, retried at once or (`give_up`) given up.
  static DeliveryFailure Failure(const std::string& error, bool give_up, bool reached = true) {
    DeliveryFailure failure;
    failure.error = error;
    failure.reached = reached;
    failure.next_attempt = absl::Now();
    if (give_up) failure.give_up = "given up: " + error;
    return failure;
  }

  static a2apb::StreamResponse Status(a2apb::TaskState state, const std::string& text = "") {
    a2apb::StreamResponse r;
    r.mutable_status_update()->mutable_status()->set_state(state);
    if (!text.empty()) {
      r.mutable_status_update()->mutable_status()->mutable_message()->add_parts()->set_text(text);
    }
    return r;
  }

  std::string NewTask(const std::string& tenant, const std::string& context_id = "") {
    absl::StatusOr<A2ATasks::Change> change =
        tasks_->AcceptMessage(tenant, UserText("hi", "", context_id));
    EXPECT_OK(change);
    return change.ok() ? change->header.task().id() : "";
  }

  testing_util::TempDir dir_;
  TaskNotifier notifier_;
  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<A2ATasks> tasks_;
  std::unique_ptr<A2ADeliveryQueue> deliveries_;
  std::unique_ptr<A2APush> push_;
};

}  // namespace coordinator

#endif  // COORDINATOR_STORE_A2A_STORE_FIXTURE_H_
