// The A2A store parts publish their own committed changes on the notifier: one wake-up of the
// task's watchers per change that appended events, after it committed (a watcher reading the
// store then sees it), none for a change that was ignored or failed, and a wake-up of the push
// listener when a change queued webhook calls.
#include "coordinator/store/a2a/notifier.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "coordinator/store/a2a/store_fixture.h"
#include "gtest/gtest.h"

namespace coordinator {
namespace {

class A2ANotifierTest : public A2AStoreFixture {
 protected:
  // Watches `task_id`: each wake-up records the task's state as stored at that moment.
  void Watch(const std::string& task_id) {
    subscription_ = notifier_.Subscribe(task_id, [this, task_id] {
      absl::StatusOr<v1::StoredTask> header = tasks_->GetHeader(task_id);
      seen_.push_back(header.ok() ? header->task().status().state()
                                  : a2apb::TASK_STATE_UNSPECIFIED);
    });
  }

  uint64_t subscription_ = 0;
  std::vector<a2apb::TaskState> seen_;
};

TEST_F(A2ANotifierTest, EachCommittedChangeWakesTheTasksWatchersOnceAfterItCommitted) {
  const std::string id = NewTask("echo");
  Watch(id);
  ASSERT_OK(tasks_->ApplyAgentUpdate(id, Status(a2apb::TASK_STATE_WORKING)));
  ASSERT_EQ(seen_, std::vector<a2apb::TaskState>{a2apb::TASK_STATE_WORKING});

  // A burst is one change: one wake-up, whatever the number of events.
  a2apb::StreamResponse artifact;
  artifact.mutable_artifact_update()->mutable_artifact()->set_artifact_id("a");
  artifact.mutable_artifact_update()->mutable_artifact()->add_parts()->set_text("x");
  ASSERT_OK(tasks_->ApplyAgentBurst(id, {artifact, Status(a2apb::TASK_STATE_INPUT_REQUIRED)}, 1));
  ASSERT_EQ(seen_.size(), 2u);
  EXPECT_EQ(seen_[1], a2apb::TASK_STATE_INPUT_REQUIRED);

  // A follow-up message of the task.
  ASSERT_OK(tasks_->AcceptMessage("echo", UserText("more", id)));
  ASSERT_EQ(seen_.size(), 3u);
  EXPECT_EQ(seen_[2], a2apb::TASK_STATE_SUBMITTED);

  // Failed or refused changes wake nobody.
  std::vector<a2apb::StreamResponse> invalid = {Status(a2apb::TASK_STATE_WORKING),
                                                Status(a2apb::TASK_STATE_UNSPECIFIED)};
  EXPECT_FALSE(tasks_->ApplyAgentBurst(id, invalid, 2).ok());
  EXPECT_FALSE(tasks_->AcceptMessage("other", UserText("x", id)).ok());
  // A retry scheduled changes no event: nobody is woken either.
  ASSERT_OK(deliveries_->DeliveryFailed(id, 2, Failure("down", /*give_up=*/false)));
  EXPECT_EQ(seen_.size(), 3u);

  // A delivery given up fails the task: published by the delivery queue.
  ASSERT_OK(deliveries_->DeliveryFailed(id, 2, Failure("down", /*give_up=*/true)));
  ASSERT_EQ(seen_.size(), 4u);
  EXPECT_EQ(seen_[3], a2apb::TASK_STATE_FAILED);

  // Updates after the end are ignored: nothing to tell.
  ASSERT_OK(tasks_->ApplyAgentUpdate(id, Status(a2apb::TASK_STATE_WORKING)));
  EXPECT_EQ(seen_.size(), 4u);

  notifier_.Unsubscribe(id, subscription_);
  const std::string other = NewTask("echo");
  Watch(other);
  ASSERT_OK(tasks_->CancelLocally("echo", other, "no longer needed"));
  ASSERT_EQ(seen_.size(), 5u);
  EXPECT_EQ(seen_[4], a2apb::TASK_STATE_CANCELED);
}

TEST_F(A2ANotifierTest, StatusChangesOfATaskWithPushConfigsWakeThePushListener) {
  int woken = 0;
  notifier_.SetPushListener([&woken] { ++woken; });
  const std::string id = NewTask("echo");
  ASSERT_OK(tasks_->ApplyAgentUpdate(id, Status(a2apb::TASK_STATE_WORKING)));
  EXPECT_EQ(woken, 0);  // no config: no webhook call queued

  a2apb::TaskPushNotificationConfig config;
  config.set_task_id(id);
  config.set_url("http://127.0.0.1:9/hook");
  ASSERT_OK(push_->CreatePushConfig(config));
  a2apb::StreamResponse artifact;
  artifact.mutable_artifact_update()->mutable_artifact()->set_artifact_id("a");
  artifact.mutable_artifact_update()->mutable_artifact()->add_parts()->set_text("x");
  ASSERT_OK(tasks_->ApplyAgentUpdate(id, artifact));
  EXPECT_EQ(woken, 0);  // not a status change
  ASSERT_OK(tasks_->ApplyAgentUpdate(id, Status(a2apb::TASK_STATE_INPUT_REQUIRED)));
  EXPECT_EQ(woken, 1);

  // A message that registers a config with itself.
  a2apb::TaskPushNotificationConfig with_message;
  with_message.set_url("http://127.0.0.1:9/other");
  ASSERT_OK(tasks_->AcceptMessage("echo", UserText("again", id), &with_message));
  EXPECT_EQ(woken, 2);

  notifier_.SetPushListener(nullptr);
  ASSERT_OK(tasks_->ApplyAgentUpdate(id, Status(a2apb::TASK_STATE_COMPLETED)));
  EXPECT_EQ(woken, 2);
  absl::StatusOr<std::vector<v1::PushDelivery>> pushes = push_->PendingPushes(100);
  ASSERT_OK(pushes);
  // INPUT_REQUIRED to one config; SUBMITTED to the first one (the second is registered after
  // that status); COMPLETED to both.
  EXPECT_EQ(pushes->size(), 4u);
}

}  // namespace
}  // namespace coordinator

namespace coordinator {
namespace {

// The one observer (the web console's feed) hears every task's changes, with the task id, also
// tasks nobody watches; once cleared it hears nothing.
TEST_F(A2ANotifierTest, TheObserverHearsEveryTasksChanges) {
  std::vector<std::string> heard;
  notifier_.SetObserver([&heard](const std::string& task_id) { heard.push_back(task_id); });
  const std::string first = NewTask("echo");
  const std::string second = NewTask("echo");
  ASSERT_OK(tasks_->ApplyAgentUpdate(second, Status(a2apb::TASK_STATE_WORKING)));
  ASSERT_GE(heard.size(), 3u);
  EXPECT_EQ(heard[heard.size() - 1], second);
  EXPECT_NE(std::find(heard.begin(), heard.end(), first), heard.end());
  notifier_.SetObserver(nullptr);
  const size_t before = heard.size();
  ASSERT_OK(tasks_->ApplyAgentUpdate(first, Status(a2apb::TASK_STATE_WORKING)));
  EXPECT_EQ(heard.size(), before);
}

}  // namespace
}  // namespace coordinator
