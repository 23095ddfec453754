// A2A 0.3's protocol buffers over the 1.0 messages (v03_proto.h): the field numbers of the 0.3
// proto as the specification has them, each conversion both ways, and resource names refused
// when malformed.
#include "a2a_protocol/v03_proto.h"

#include "a2a/v0_3/a2a.grpc.pb.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace a2a_protocol::v03 {
namespace {

using ::testing::HasSubstr;

int Number(const google::protobuf::Descriptor* message, const char* field) {
  const google::protobuf::FieldDescriptor* f = message->FindFieldByName(field);
  return f == nullptr ? -1 : f->number();
}

TEST(V03ProtoTest, FieldNumbersAndJsonNamesAreTheSpecifications) {
  EXPECT_EQ(Number(pb03::AgentCard::descriptor(), "protocol_version"), 16);
  EXPECT_EQ(Number(pb03::AgentCard::descriptor(), "preferred_transport"), 14);
  EXPECT_EQ(Number(pb03::AgentCard::descriptor(), "signatures"), 17);
  EXPECT_EQ(Number(pb03::Artifact::descriptor(), "name"), 3);
  EXPECT_EQ(Number(pb03::Message::descriptor(), "content"), 5);
  EXPECT_EQ(Number(pb03::FilePart::descriptor(), "file_with_bytes"), 2);
  EXPECT_EQ(Number(pb03::TaskStatusUpdateEvent::descriptor(), "final"), 4);
  EXPECT_EQ(pb03::SendMessageRequest::descriptor()->FindFieldByName("request")->json_name(),
            "message");
  EXPECT_EQ(pb03::StreamResponse::descriptor()->FindFieldByName("msg")->json_name(), "message");
  EXPECT_EQ(pb03::TaskStatus::descriptor()->FindFieldByName("update")->json_name(), "message");
  EXPECT_EQ(pb03::TASK_STATE_CANCELLED, 5);
  EXPECT_EQ(static_cast<int>(pb10::TASK_STATE_CANCELED), 5);
  EXPECT_EQ(pb03::Task::descriptor()->file()->service(0)->full_name(), "a2a.v1.A2AService");
}

TEST(V03ProtoTest, ASendIsReadAsThe10Send) {
  pb03::SendMessageRequest send;
  pb03::Message* message = send.mutable_request();
  message->set_message_id("m");
  message->set_role(pb03::ROLE_USER);
  message->add_content()->set_text("hi");
  message->add_content()->mutable_file()->set_file_with_bytes(std::string("\0\1", 2));
  message->mutable_content(1)->mutable_file()->set_mime_type("application/octet-stream");
  (*message->add_content()->mutable_data()->mutable_data()->mutable_fields())["k"].set_number_value(
      1);
  send.mutable_configuration()->add_accepted_output_modes("text/plain");
  send.mutable_configuration()->mutable_push_notification()->set_url("http://h/hook");
  pb10::SendMessageRequest read = FromProto(send, "agent");
  EXPECT_EQ(read.tenant(), "agent");
  EXPECT_EQ(read.message().role(), pb10::ROLE_USER);
  EXPECT_EQ(read.message().parts(0).text(), "hi");
  EXPECT_EQ(read.message().parts(1).raw(), std::string("\0\1", 2));
  EXPECT_EQ(read.message().parts(1).media_type(), "application/octet-stream");
  EXPECT_EQ(read.message().parts(2).data().struct_value().fields().at("k").number_value(), 1);
  // Unset blocking is false on the proto: the answer comes at once. No history limit for 0.
  EXPECT_TRUE(read.configuration().return_immediately());
  EXPECT_FALSE(read.configuration().has_history_length());
  EXPECT_EQ(read.configuration().task_push_notification_config().url(), "http://h/hook");
  send.mutable_configuration()->set_blocking(true);
  send.mutable_configuration()->set_history_length(3);
  read = FromProto(send, "");
  EXPECT_FALSE(read.configuration().return_immediately());
  EXPECT_EQ(read.configuration().history_length(), 3);
}

TEST(V03ProtoTest, AnswersAreWrittenIn03Shape) {
  pb10::Task task;
  task.set_id("t");
  task.mutable_status()->set_state(pb10::TASK_STATE_CANCELED);
  task.mutable_status()->mutable_message()->add_parts()->set_url("http://x/f");
  *task.add_artifacts()->add_parts()->mutable_data() = google::protobuf::Value();
  task.mutable_artifacts(0)->mutable_parts(0)->mutable_data()->set_string_value("plain");
  const pb03::Task written = ToProto(task);
  EXPECT_EQ(written.status().state(), pb03::TASK_STATE_CANCELLED);
  EXPECT_EQ(written.status().update().content(0).file().file_with_uri(), "http://x/f");
  // A value that is not an object: wrapped, since 0.3's data is an object.
  EXPECT_EQ(written.artifacts(0).parts(0).data().data().fields().at("value").string_value(),
            "plain");
  std::string json;
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(written, &json).ok());
  EXPECT_THAT(json, HasSubstr(R"("state":"TASK_STATE_CANCELLED")"));
  EXPECT_THAT(json, HasSubstr(R"("message":{)"));

  pb10::StreamResponse update;
  update.mutable_status_update()->mutable_status()->set_state(pb10::TASK_STATE_INPUT_REQUIRED);
  EXPECT_TRUE(ToProto(update, /*send_stream=*/true).status_update().final());
  EXPECT_FALSE(ToProto(update, /*send_stream=*/false).status_update().final());

  pb10::TaskPushNotificationConfig config;
  config.set_task_id("t");
  config.set_id("c");
  config.set_url("http://h/");
  config.mutable_authentication()->set_scheme("Bearer");
  const pb03::TaskPushNotificationConfig push = ToProto(config);
  EXPECT_EQ(push.name(), "tasks/t/pushNotificationConfigs/c");
  EXPECT_EQ(push.push_notification_config().authentication().schemes(0), "Bearer");
  const pb10::TaskPushNotificationConfig back = FromProto(push.push_notification_config(), "t", "");
  EXPECT_EQ(back.id(), "c");
  EXPECT_EQ(back.authentication().scheme(), "Bearer");
  // Without an id the config is the task's own.
  EXPECT_EQ(FromProto(pb03::PushNotificationConfig(), "t", "").id(), "t");
}

TEST(V03ProtoTest, ResourceNamesAreCheckedWhole) {
  EXPECT_EQ(*TaskIdOfName("tasks/abc", "name"), "abc");
  for (const char* bad : {"", "tasks", "tasks/", "task/abc", "tasks/a/b", "/tasks/a"}) {
    EXPECT_EQ(TaskIdOfName(bad, "name").status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  absl::StatusOr<PushConfigName> name =
      PushConfigIdsOfName("tasks/t/pushNotificationConfigs/c", "name");
  ASSERT_TRUE(name.ok());
  EXPECT_EQ(name->task_id, "t");
  EXPECT_EQ(name->config_id, "c");
  for (const char* bad : {"tasks/t", "tasks/t/pushNotificationConfigs", "tasks/t/configs/c",
                          "tasks//pushNotificationConfigs/c", "tasks/t/pushNotificationConfigs/"}) {
    EXPECT_EQ(PushConfigIdsOfName(bad, "name").status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

}  // namespace
}  // namespace a2a_protocol::v03
