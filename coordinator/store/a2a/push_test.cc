// Unit tests of the push part of the A2A store: configs, the webhook queue and the push log.
// Each test opens its own database.
#include "coordinator/store/a2a/push.h"

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "a2a_protocol/errors.h"
#include "absl/time/clock.h"
#include "coordinator/store/a2a/store_fixture.h"
#include "coordinator/store/records/keys.h"
#include "coordinator/store/records/record_codec.h"
#include "gtest/gtest.h"

namespace coordinator {
namespace {

using A2APushTest = A2AStoreFixture;

TEST_F(A2APushTest, PushConfigsQueueOneCallPerStatusChange) {
  const std::string id = NewTask("echo");
  a2apb::TaskPushNotificationConfig config;
  config.set_task_id(id);
  config.set_url("http://127.0.0.1:9/hook");
  config.set_token("secret");
  absl::StatusOr<a2apb::TaskPushNotificationConfig> created = push_->CreatePushConfig(config);
  ASSERT_OK(created);
  EXPECT_FALSE(created->id().empty());
  EXPECT_EQ(created->tenant(), "echo");
  absl::StatusOr<a2apb::TaskPushNotificationConfig> read =
      push_->GetPushConfig("", id, created->id());
  ASSERT_OK(read);
  EXPECT_EQ(read->token(), "secret");

  a2apb::TaskPushNotificationConfig bad = config;
  bad.set_url("ftp://x");
  EXPECT_EQ(push_->CreatePushConfig(bad).status().code(), absl::StatusCode::kInvalidArgument);
  bad.set_url("http://x/");  // not on the default allow-list (loopback only)
  EXPECT_EQ(push_->CreatePushConfig(bad).status().code(), absl::StatusCode::kPermissionDenied);
  bad.set_task_id("missing");
  bad.set_url("http://127.0.0.1/");
  EXPECT_EQ(push_->CreatePushConfig(bad).status().code(), absl::StatusCode::kNotFound);

  ASSERT_OK(tasks_->ApplyAgentUpdate(id, Status(a2apb::TASK_STATE_WORKING)));
  absl::StatusOr<std::vector<v1::PushDelivery>> pushes = push_->PendingPushes(10);
  ASSERT_OK(pushes);
  ASSERT_EQ(pushes->size(), 1u);
  EXPECT_EQ((*pushes)[0].payload().status_update().status().state(), a2apb::TASK_STATE_WORKING);

  v1::PushAttempt attempt;
  attempt.set_http_status(200);
  ASSERT_OK(push_->RecordPushAttempt((*pushes)[0], attempt, true));
  pushes = push_->PendingPushes(10);
  ASSERT_OK(pushes);
  EXPECT_TRUE(pushes->empty());
  absl::StatusOr<std::vector<v1::PushDelivery>> log = push_->PushLog(id);
  ASSERT_OK(log);
  ASSERT_EQ(log->size(), 1u);
  EXPECT_EQ((*log)[0].state(), v1::PUSH_STATE_DELIVERED);
  EXPECT_EQ((*log)[0].attempts_size(), 1);

  a2apb::ListTaskPushNotificationConfigsRequest list;
  list.set_task_id(id);
  absl::StatusOr<a2apb::ListTaskPushNotificationConfigsResponse> configs =
      push_->ListPushConfigs(list);
  ASSERT_OK(configs);
  EXPECT_EQ(configs->configs_size(), 1);
  ASSERT_OK(push_->DeletePushConfig("", id, created->id()));
  // Gone: the next read says so, and deleting it again is still OK (idempotent).
  EXPECT_EQ(push_->GetPushConfig("", id, created->id()).status().code(),
            absl::StatusCode::kNotFound);
  ASSERT_OK(push_->DeletePushConfig("", id, created->id()));
}

TEST_F(A2APushTest, DeletingAPushConfigIsIdempotentButNeedsAnExistingTask) {
  const std::string id = NewTask("echo");
  a2apb::TaskPushNotificationConfig config;
  config.set_task_id(id);
  config.set_url("http://127.0.0.1:9/hook");
  absl::StatusOr<a2apb::TaskPushNotificationConfig> kept = push_->CreatePushConfig(config);
  ASSERT_OK(kept);

  // A config id the task never had: OK, and the task's other config is untouched.
  ASSERT_OK(push_->DeletePushConfig("", id, "never-created"));
  ASSERT_OK(push_->DeletePushConfig("echo", id, "never-created"));
  // An unknown task, or one of another tenant: TASK_NOT_FOUND (A2A 3.1.10 names that error).
  absl::Status missing = push_->DeletePushConfig("", "no-such-task", kept->id());
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(a2a_protocol::Reason(missing).value_or(""), "TASK_NOT_FOUND");
  absl::Status foreign = push_->DeletePushConfig("other", id, kept->id());
  EXPECT_EQ(foreign.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(a2a_protocol::Reason(foreign).value_or(""), "TASK_NOT_FOUND");
  // Malformed ids: INVALID_ARGUMENT.
  EXPECT_EQ(push_->DeletePushConfig("", id, "").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(push_->DeletePushConfig("", "", kept->id()).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(push_->DeletePushConfig("", id, std::string(300, 'x')).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(push_->DeletePushConfig("", id, std::string("a\0b", 3)).code(),
            absl::StatusCode::kInvalidArgument);

  // Nothing of that changed anything: the one config is still there.
  a2apb::ListTaskPushNotificationConfigsRequest list;
  list.set_task_id(id);
  absl::StatusOr<a2apb::ListTaskPushNotificationConfigsResponse> configs =
      push_->ListPushConfigs(list);
  ASSERT_OK(configs);
  ASSERT_EQ(configs->configs_size(), 1);
  EXPECT_EQ(configs->configs(0).id(), kept->id());
}

// The header counts the task's push configs, so that a status change of a task without any
// looks for none: creating, replacing and deleting configs (through the API and with a message)
// keep the count, and a status change queues one call per config whatever the count's history.
TEST_F(A2APushTest, TheHeaderCountsTheTasksPushConfigs) {
  auto count = [&](const std::string& id) -> int64_t {
    absl::StatusOr<v1::StoredTask> header = tasks_->GetHeader(id);
    EXPECT_OK(header);
    EXPECT_TRUE(header.ok() && header->has_push_config_count());
    return header.ok() ? header->push_config_count() : -1;
  };
  const std::string id = NewTask("echo");
  EXPECT_EQ(count(id), 0);
  a2apb::TaskPushNotificationConfig config;
  config.set_task_id(id);
  config.set_url("http://127.0.0.1:9/hook");
  config.set_id("first");
  ASSERT_OK(push_->CreatePushConfig(config));
  EXPECT_EQ(count(id), 1);
  ASSERT_OK(push_->CreatePushConfig(config));  // the same id again replaces it
  EXPECT_EQ(count(id), 1);
  config.set_id("second");
  ASSERT_OK(push_->CreatePushConfig(config));
  EXPECT_EQ(count(id), 2);
  ASSERT_OK(push_->DeletePushConfig("", id, "second"));
  ASSERT_OK(push_->DeletePushConfig("", id, "second"));  // idempotent, counted once
  EXPECT_EQ(count(id), 1);

  // A message that brings a config: new for a new task; on a follow-up, new only by its id.
  config.set_task_id("");
  config.set_id("with-message");
  absl::StatusOr<A2ATasks::Change> sent = tasks_->AcceptMessage("echo", UserText("hi"), &config);
  ASSERT_OK(sent);
  const std::string other = sent->header.task().id();
  EXPECT_EQ(count(other), 1);
  ASSERT_OK(tasks_->ApplyAgentUpdate(other, Status(a2apb::TASK_STATE_INPUT_REQUIRED)));
  ASSERT_OK(tasks_->AcceptMessage("echo", UserText("again", other), &config));
  EXPECT_EQ(count(other), 1);
  config.set_id("another");
  ASSERT_OK(tasks_->AcceptMessage("echo", UserText("more", other), &config));
  EXPECT_EQ(count(other), 2);

  // Each status change queues one call per config, none for a task without configs.
  const std::string none = NewTask("echo");
  ASSERT_OK(push_->PendingPushes(100));
  const size_t before = push_->PendingPushes(100)->size();
  ASSERT_OK(tasks_->ApplyAgentUpdate(id, Status(a2apb::TASK_STATE_WORKING)));
  ASSERT_OK(tasks_->ApplyAgentUpdate(other, Status(a2apb::TASK_STATE_WORKING)));
  ASSERT_OK(tasks_->ApplyAgentUpdate(none, Status(a2apb::TASK_STATE_WORKING)));
  EXPECT_EQ(push_->PendingPushes(100)->size(), before + 1 + 2);
}

// A task stored before the header counted its configs (no push_config_count) still gets its
// webhook calls: its configs are looked for at the next status change, which records the count.
TEST_F(A2APushTest, ATaskStoredBeforeTheCountIsCountedAtItsNextStatusChange) {
  const std::string id = NewTask("echo");
  a2apb::TaskPushNotificationConfig config;
  config.set_task_id(id);
  config.set_url("http://127.0.0.1:9/hook");
  ASSERT_OK(push_->CreatePushConfig(config));
  // The header as an older coordinator wrote it.
  absl::StatusOr<v1::StoredTask> header = tasks_->GetHeader(id);
  ASSERT_OK(header);
  header->clear_push_config_count();
  ASSERT_OK(store_->RunTransaction([&](storage::Transaction& txn) {
    return txn.Put(storage::ColumnFamily::kA2A, keys::A2ATaskHeader(id), EncodeRecord(*header));
  }));
  ASSERT_FALSE(tasks_->GetHeader(id)->has_push_config_count());

  ASSERT_OK(tasks_->ApplyAgentUpdate(id, Status(a2apb::TASK_STATE_WORKING)));
  absl::StatusOr<std::vector<v1::PushDelivery>> pushes = push_->PendingPushes(10);
  ASSERT_OK(pushes);
  EXPECT_EQ(pushes->size(), 1u);
  header = tasks_->GetHeader(id);
  ASSERT_OK(header);
  ASSERT_TRUE(header->has_push_config_count());
  EXPECT_EQ(header->push_config_count(), 1);
}

// A config created by a 0.3 request is kept with its version, and its webhook calls carry the
// task as the status change left it (0.3 posts the Task), without its history.
TEST_F(A2APushTest, AConfigCreatedOver03QueuesTheTaskForEachStatusChange) {
  const std::string id = NewTask("echo");
  a2apb::TaskPushNotificationConfig config;
  config.set_task_id(id);
  config.set_url("http://127.0.0.1:9/hook03");
  ASSERT_OK(push_->CreatePushConfig(config, kPushVersion03));
  config.set_id("v10");
  config.set_url("http://127.0.0.1:9/hook10");
  ASSERT_OK(push_->CreatePushConfig(config));
  // Another version: refused, nothing stored.
  config.set_id("v2");
  EXPECT_EQ(push_->CreatePushConfig(config, "2.0").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(push_->GetPushConfig("", id, "v2").status().code(), absl::StatusCode::kNotFound);

  ASSERT_OK(tasks_->ApplyAgentUpdate(id, Status(a2apb::TASK_STATE_WORKING, "busy")));
  absl::StatusOr<std::vector<v1::PushDelivery>> pushes = push_->PendingPushes(10);
  ASSERT_OK(pushes);
  ASSERT_EQ(pushes->size(), 2u);
  for (const v1::PushDelivery& push : *pushes) {
    if (push.config().url() == "http://127.0.0.1:9/hook03") {
      EXPECT_EQ(push.protocol_version(), kPushVersion03);
      ASSERT_TRUE(push.payload().has_task()) << push.DebugString();
      EXPECT_EQ(push.payload().task().id(), id);
      EXPECT_EQ(push.payload().task().status().state(), a2apb::TASK_STATE_WORKING);
      EXPECT_EQ(push.payload().task().history_size(), 0);
    } else {
      EXPECT_EQ(push.protocol_version(), kPushVersion10);
      EXPECT_EQ(push.payload().status_update().status().state(), a2apb::TASK_STATE_WORKING);
    }
  }
  // Read back, the configs are the same whatever their version.
  a2apb::ListTaskPushNotificationConfigsRequest list;
  list.set_task_id(id);
  absl::StatusOr<a2apb::ListTaskPushNotificationConfigsResponse> configs =
      push_->ListPushConfigs(list);
  ASSERT_OK(configs);
  ASSERT_EQ(configs->configs_size(), 2);
  for (const a2apb::TaskPushNotificationConfig& c : configs->configs()) {
    EXPECT_EQ(c.task_id(), id);
    EXPECT_EQ(c.tenant(), "echo");
  }
}

// A config stored before configs had versions (the bare lf.a2a.v1 config under its key) reads
// as one created over 1.0.
TEST_F(A2APushTest, AConfigStoredBeforeVersionsReadsAsA10Config) {
  const std::string id = NewTask("echo");
  a2apb::TaskPushNotificationConfig config;
  config.set_task_id(id);
  config.set_id("old");
  config.set_tenant("echo");
  config.set_url("http://127.0.0.1:9/old");
  config.set_token("kept");
  ASSERT_OK(push_->CreatePushConfig(config));  // counted in the task's header
  ASSERT_OK(store_->RunTransaction([&](storage::Transaction& txn) {
    return txn.Put(storage::ColumnFamily::kA2A, keys::A2APushConfig(id, "old"),
                   EncodeRecord(config));
  }));
  absl::StatusOr<a2apb::TaskPushNotificationConfig> read = push_->GetPushConfig("", id, "old");
  ASSERT_OK(read);
  EXPECT_EQ(read->url(), "http://127.0.0.1:9/old");
  EXPECT_EQ(read->token(), "kept");
  ASSERT_OK(tasks_->ApplyAgentUpdate(id, Status(a2apb::TASK_STATE_WORKING)));
  absl::StatusOr<std::vector<v1::PushDelivery>> pushes = push_->PendingPushes(10);
  ASSERT_OK(pushes);
  ASSERT_EQ(pushes->size(), 1u);
  EXPECT_EQ((*pushes)[0].protocol_version(), kPushVersion10);
  EXPECT_EQ((*pushes)[0].config().token(), "kept");
  EXPECT_TRUE((*pushes)[0].payload().has_status_update());
}

}  // namespace
}  // namespace coordinator
