// A2A 0.3 JSON over the 1.0 messages (v03_json.h): each object both ways, what 0.3 requires
// written even when empty, and each malformed or hostile input refused naming its member.
#include "a2a_protocol/v03_json.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/empty.pb.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace a2a_protocol::v03 {
namespace {

using ::testing::HasSubstr;
namespace pb = google::protobuf;

pb::Value Parse(const std::string& json) {
  pb::Value value;
  EXPECT_TRUE(pb::util::JsonStringToMessage(json, &value).ok()) << json;
  return value;
}

std::string Print(const pb::Value& value) {
  std::string json;
  EXPECT_TRUE(pb::util::MessageToJsonString(value, &json).ok());
  return json;
}

const pb::Value& At(const pb::Value& v, const std::string& name) {
  static const pb::Value kNull;
  if (!v.has_struct_value()) return kNull;
  auto it = v.struct_value().fields().find(name);
  return it == v.struct_value().fields().end() ? kNull : it->second;
}

const pb::Value& Item(const pb::Value& v, int i) {
  static const pb::Value kNull;
  if (!v.has_list_value() || i >= v.list_value().values_size()) return kNull;
  return v.list_value().values(i);
}

TEST(V03MethodsTest, EveryMethodHasItsNameAndItsServiceMethod) {
  EXPECT_EQ(MethodNamed("message/send"), Method::kMessageSend);
  EXPECT_EQ(MethodNamed("tasks/pushNotificationConfig/list"), Method::kPushConfigList);
  EXPECT_EQ(MethodNamed("SendMessage"), std::nullopt);
  EXPECT_EQ(MethodNamed("message/Send"), std::nullopt);
  EXPECT_EQ(ServiceMethodName(Method::kTasksResubscribe), "SubscribeToTask");
  EXPECT_TRUE(Streams(Method::kMessageStream));
  EXPECT_FALSE(Streams(Method::kTasksGet));
  EXPECT_EQ(V03NameOf("GetTask"), "tasks/get");
  EXPECT_EQ(V03NameOf("ListTasks"), "");
  EXPECT_EQ(ParseVersion(""), AskedVersion::kUnstated);
  EXPECT_EQ(ParseVersion("0.3"), AskedVersion::kV03);
  EXPECT_EQ(ParseVersion("0.3.0"), AskedVersion::kV03);
  EXPECT_EQ(ParseVersion(" 1.0 "), AskedVersion::kV10);
  EXPECT_EQ(ParseVersion("1"), AskedVersion::kV10);
  EXPECT_EQ(ParseVersion("0.30"), AskedVersion::kOther);
  EXPECT_EQ(ParseVersion("2.0"), AskedVersion::kOther);
}

TEST(V03JsonTest, StatesAreLowercaseWithHyphens) {
  EXPECT_EQ(StateName(a2apb::TASK_STATE_INPUT_REQUIRED), "input-required");
  EXPECT_EQ(StateName(a2apb::TASK_STATE_CANCELED), "canceled");
  EXPECT_EQ(StateName(a2apb::TASK_STATE_UNSPECIFIED), "unknown");
  for (int s = a2apb::TASK_STATE_SUBMITTED; s <= a2apb::TASK_STATE_AUTH_REQUIRED; ++s) {
    const auto state = static_cast<a2apb::TaskState>(s);
    EXPECT_EQ(StateNamed(StateName(state)), state);
  }
  EXPECT_EQ(StateNamed("unknown"), std::nullopt);
  EXPECT_EQ(StateNamed("INPUT_REQUIRED"), std::nullopt);
}

TEST(V03JsonTest, ASendReadsEveryPartKindAndTheConfiguration) {
  a2apb::SendMessageRequest request;
  ASSERT_OK(RequestFromParams(Method::kMessageSend, R"({
    "message": {"kind": "message", "messageId": "m1", "contextId": "c1", "taskId": "t1",
                "role": "user", "metadata": {"k": 1}, "referenceTaskIds": ["t0"],
                "parts": [{"kind": "text", "text": "hi"},
                          {"kind": "file", "file": {"bytes": "aGVsbG8=", "name": "a.txt",
                                                    "mimeType": "text/plain"}},
                          {"kind": "file", "file": {"uri": "http://x/y.png"}},
                          {"kind": "data", "data": {"a": [1, 2]}},
                          {"text": "no kind"}]},
    "configuration": {"acceptedOutputModes": ["text/plain"], "historyLength": 3,
                      "blocking": false,
                      "pushNotificationConfig": {"url": "http://127.0.0.1/hook", "token": "tk",
                        "authentication": {"schemes": ["Bearer", "Basic"], "credentials": "c"}}},
    "metadata": {"trace": "x"}})",
                              &request));
  const a2apb::Message& m = request.message();
  EXPECT_EQ(m.message_id(), "m1");
  EXPECT_EQ(m.context_id(), "c1");
  EXPECT_EQ(m.task_id(), "t1");
  EXPECT_EQ(m.role(), a2apb::ROLE_USER);
  ASSERT_EQ(m.parts_size(), 5);
  EXPECT_EQ(m.parts(0).text(), "hi");
  EXPECT_EQ(m.parts(1).raw(), "hello");
  EXPECT_EQ(m.parts(1).filename(), "a.txt");
  EXPECT_EQ(m.parts(1).media_type(), "text/plain");
  EXPECT_EQ(m.parts(2).url(), "http://x/y.png");
  EXPECT_TRUE(m.parts(3).data().has_struct_value());
  EXPECT_EQ(m.parts(4).text(), "no kind");
  EXPECT_EQ(m.reference_task_ids(0), "t0");
  EXPECT_TRUE(m.has_metadata());
  const a2apb::SendMessageConfiguration& c = request.configuration();
  EXPECT_EQ(c.accepted_output_modes(0), "text/plain");
  EXPECT_EQ(c.history_length(), 3);
  EXPECT_TRUE(c.return_immediately());
  EXPECT_EQ(c.task_push_notification_config().url(), "http://127.0.0.1/hook");
  EXPECT_EQ(c.task_push_notification_config().task_id(), "t1");
  EXPECT_EQ(c.task_push_notification_config().id(), "t1");
  EXPECT_EQ(c.task_push_notification_config().authentication().scheme(), "Bearer");
  EXPECT_TRUE(request.has_metadata());
}

TEST(V03JsonTest, ASendWaitsUnlessToldNotToAndHistoryLengthZeroMeansAll) {
  a2apb::SendMessageRequest request;
  ASSERT_OK(RequestFromParams(
      Method::kMessageSend,
      R"({"message":{"messageId":"m","role":"agent","parts":[]},"configuration":{"historyLength":0}})",
      &request));
  EXPECT_FALSE(request.configuration().return_immediately());
  EXPECT_FALSE(request.configuration().has_history_length());
  EXPECT_EQ(request.message().role(), a2apb::ROLE_AGENT);
  EXPECT_FALSE(request.has_metadata());
}

TEST(V03JsonTest, MalformedAndHostileParamsAreRefusedNamingTheMember) {
  const struct {
    Method method;
    const char* params;
    const char* names;
  } kCases[] = {
      {Method::kMessageSend, R"([1,2])", "params must be an object"},
      {Method::kMessageSend, R"({"message": null})", "params.message is required"},
      {Method::kMessageSend, R"({"message": {"role": "user"}})", "params.message.parts"},
      {Method::kMessageSend, R"({"message": {"role": "ROLE_USER", "parts": []}})",
       "params.message.role"},
      {Method::kMessageSend, R"({"message": {"role": 1, "parts": []}})", "must be a string"},
      {Method::kMessageSend, R"({"message": {"kind": "task", "role": "user", "parts": []}})",
       "params.message.kind"},
      {Method::kMessageSend, R"({"message": {"role": "user", "parts": [{"kind": "video"}]}})",
       "params.message.parts[0].kind"},
      {Method::kMessageSend,
       R"({"message": {"role": "user", "parts": [{"text": "a", "data": {}}]}})",
       "params.message.parts[0].kind is required"},
      {Method::kMessageSend,
       R"({"message": {"role": "user", "parts": [{"kind": "file", "file": {"bytes": "aGk=", "uri": "u"}}]}})",
       "exactly one of bytes and uri"},
      {Method::kMessageSend,
       R"({"message": {"role": "user", "parts": [{"kind": "file", "file": {"bytes": "!!!"}}]}})",
       "is not base64"},
      {Method::kMessageSend,
       R"({"message": {"role": "user", "parts": [{"kind": "data", "data": [1]}]}})",
       "params.message.parts[0].data must be an object"},
      {Method::kMessageSend,
       R"({"message": {"role": "user", "parts": []}, "configuration": {"historyLength": 1.5}})",
       "historyLength must be a non-negative integer"},
      {Method::kMessageSend,
       R"({"message": {"role": "user", "parts": []}, "configuration": {"blocking": "no"}})",
       "blocking must be a boolean"},
      {Method::kMessageSend,
       R"({"message": {"role": "user", "parts": []}, "configuration": {"pushNotificationConfig": {}}})",
       "pushNotificationConfig.url is required"},
      {Method::kTasksGet, R"({})", "params.id is required"},
      {Method::kTasksGet, R"({"id": "t", "historyLength": -2})", "non-negative"},
      {Method::kTasksCancel, R"({"id": 7})", "params.id must be a string"},
      {Method::kPushConfigSet, R"({"taskId": "t"})", "params.pushNotificationConfig is required"},
      {Method::kPushConfigDelete, R"({"id": "t"})", "params.pushNotificationConfigId is required"},
  };
  for (const auto& c : kCases) {
    a2apb::SendMessageRequest send;
    a2apb::GetTaskRequest get;
    a2apb::CancelTaskRequest cancel;
    a2apb::TaskPushNotificationConfig set;
    a2apb::DeleteTaskPushNotificationConfigRequest del;
    pb::Message* request = &send;
    if (c.method == Method::kTasksGet) request = &get;
    if (c.method == Method::kTasksCancel) request = &cancel;
    if (c.method == Method::kPushConfigSet) request = &set;
    if (c.method == Method::kPushConfigDelete) request = &del;
    const absl::Status s = RequestFromParams(c.method, c.params, request);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.params;
    EXPECT_THAT(s.message(), HasSubstr(c.names)) << c.params;
  }
  a2apb::SendMessageRequest request;
  EXPECT_FALSE(RequestFromParams(Method::kMessageSend, "{not json", &request).ok());
}

TEST(V03JsonTest, ATaskIsWrittenWithKindsAndEverythingTheSchemaRequires) {
  a2apb::Task task;
  task.set_id("t1");
  task.set_context_id("c1");
  task.mutable_status()->set_state(a2apb::TASK_STATE_INPUT_REQUIRED);
  task.mutable_status()->mutable_timestamp()->set_seconds(1700000000);
  a2apb::Message* said = task.mutable_status()->mutable_message();
  said->set_message_id("m2");
  said->set_role(a2apb::ROLE_AGENT);
  a2apb::Artifact* artifact = task.add_artifacts();
  artifact->set_artifact_id("a1");
  artifact->add_parts()->set_raw("\x01\x02");
  artifact->mutable_parts(0)->set_media_type("application/octet-stream");
  artifact->add_parts()->mutable_data()->set_number_value(42);
  a2apb::Message* asked = task.add_history();
  asked->set_message_id("m1");
  asked->set_role(a2apb::ROLE_USER);
  asked->add_parts()->set_text("hello");

  const pb::Value json = TaskToJson(task);
  EXPECT_EQ(At(json, "kind").string_value(), "task");
  EXPECT_EQ(At(json, "contextId").string_value(), "c1");
  EXPECT_EQ(At(At(json, "status"), "state").string_value(), "input-required");
  EXPECT_EQ(At(At(json, "status"), "timestamp").string_value(), "2023-11-14T22:13:20Z");
  const pb::Value& message = At(At(json, "status"), "message");
  EXPECT_EQ(At(message, "role").string_value(), "agent");
  EXPECT_TRUE(At(message, "parts").has_list_value()) << "parts is required, even empty";
  const pb::Value& parts = At(Item(At(json, "artifacts"), 0), "parts");
  EXPECT_EQ(At(Item(parts, 0), "kind").string_value(), "file");
  EXPECT_EQ(At(At(Item(parts, 0), "file"), "bytes").string_value(), "AQI=");
  EXPECT_EQ(At(At(Item(parts, 0), "file"), "mimeType").string_value(), "application/octet-stream");
  // 0.3 data parts are objects: another value is wrapped, and marked so it reads back as it was.
  EXPECT_EQ(At(Item(parts, 1), "kind").string_value(), "data");
  EXPECT_EQ(At(At(Item(parts, 1), "data"), "value").number_value(), 42);
  EXPECT_TRUE(At(At(Item(parts, 1), "metadata"), "data_part_compat").bool_value());
  EXPECT_EQ(At(Item(At(json, "history"), 0), "role").string_value(), "user");

  // The artifact's parts read back as they were stored.
  pb::Value as_message =
      Parse(absl::StrCat(R"({"role":"agent","messageId":"x","parts":)", Print(parts), "}"));
  a2apb::Message back;
  ASSERT_OK(MessageFromJson(as_message, "m", &back));
  EXPECT_EQ(back.parts(0).raw(), "\x01\x02");
  EXPECT_EQ(back.parts(1).data().number_value(), 42);
  EXPECT_FALSE(back.parts(1).has_metadata());
}

TEST(V03JsonTest, StatusUpdatesAreFinalWhenTheirStreamEndsWithThem) {
  a2apb::StreamResponse event;
  a2apb::TaskStatusUpdateEvent* update = event.mutable_status_update();
  update->set_task_id("t");
  update->set_context_id("c");
  update->mutable_status()->set_state(a2apb::TASK_STATE_WORKING);
  EXPECT_FALSE(At(Parse(EventJson(event, true)), "final").bool_value());
  EXPECT_TRUE(At(Parse(EventJson(event, true)), "final").has_bool_value()) << "always written";
  update->mutable_status()->set_state(a2apb::TASK_STATE_INPUT_REQUIRED);
  EXPECT_TRUE(At(Parse(EventJson(event, true)), "final").bool_value());
  EXPECT_FALSE(At(Parse(EventJson(event, false)), "final").bool_value());
  update->mutable_status()->set_state(a2apb::TASK_STATE_FAILED);
  EXPECT_TRUE(At(Parse(EventJson(event, false)), "final").bool_value());
  EXPECT_EQ(At(Parse(EventJson(event, false)), "kind").string_value(), "status-update");

  a2apb::StreamResponse chunk;
  chunk.mutable_artifact_update()->set_task_id("t");
  chunk.mutable_artifact_update()->set_last_chunk(true);
  chunk.mutable_artifact_update()->mutable_artifact()->set_artifact_id("a");
  const pb::Value written = Parse(EventJson(chunk, true));
  EXPECT_EQ(At(written, "kind").string_value(), "artifact-update");
  EXPECT_TRUE(At(written, "lastChunk").bool_value());
  EXPECT_FALSE(At(written, "append").has_bool_value());
}

// 0.3 clients take a Message only as a stream's one event: after the opening task, an agent's
// direct answer is written as the status update that completes the task (as the store keeps it).
TEST(V03JsonTest, AMessageAfterTheOpeningTaskIsTheStatusUpdateThatCompletesIt) {
  a2apb::Task opening;
  opening.set_id("t");
  opening.set_context_id("c");
  a2apb::StreamResponse answer;
  answer.mutable_message()->set_message_id("m");
  answer.mutable_message()->set_role(a2apb::ROLE_AGENT);
  answer.mutable_message()->add_parts()->set_text("done");
  const pb::Value alone = Parse(EventJson(answer, true));
  EXPECT_EQ(At(alone, "kind").string_value(), "message");
  const pb::Value after = Parse(EventJson(answer, true, &opening));
  EXPECT_EQ(At(after, "kind").string_value(), "status-update");
  EXPECT_EQ(At(after, "taskId").string_value(), "t");
  EXPECT_EQ(At(after, "contextId").string_value(), "c");
  EXPECT_TRUE(At(after, "final").bool_value());
  EXPECT_EQ(At(At(after, "status"), "state").string_value(), "completed");
  EXPECT_EQ(At(Item(At(At(At(after, "status"), "message"), "parts"), 0), "text").string_value(),
            "done");
}

TEST(V03JsonTest, PushConfigsNestAndListsAreBareArrays) {
  a2apb::TaskPushNotificationConfig config;
  config.set_task_id("t");
  config.set_id("p");
  config.set_url("http://h/hook");
  config.mutable_authentication()->set_scheme("Bearer");
  const pb::Value json = PushConfigToJson(config);
  EXPECT_EQ(At(json, "taskId").string_value(), "t");
  EXPECT_EQ(At(At(json, "pushNotificationConfig"), "id").string_value(), "p");
  EXPECT_EQ(Item(At(At(At(json, "pushNotificationConfig"), "authentication"), "schemes"), 0)
                .string_value(),
            "Bearer");
  a2apb::ListTaskPushNotificationConfigsResponse list;
  *list.add_configs() = config;
  absl::StatusOr<std::string> listed = ResultJson(Method::kPushConfigList, list);
  ASSERT_OK(listed);
  EXPECT_TRUE(Parse(*listed).has_list_value());
  absl::StatusOr<std::string> empty =
      ResultJson(Method::kPushConfigList, a2apb::ListTaskPushNotificationConfigsResponse());
  ASSERT_OK(empty);
  EXPECT_EQ(*empty, "[]");
  absl::StatusOr<std::string> deleted = ResultJson(Method::kPushConfigDelete, pb::Empty());
  ASSERT_OK(deleted);
  EXPECT_EQ(*deleted, "null");
  a2apb::GetTaskPushNotificationConfigRequest get;
  ASSERT_OK(RequestFromParams(Method::kPushConfigGet, R"({"id":"t"})", &get));
  EXPECT_EQ(get.task_id(), "t");
  EXPECT_EQ(get.id(), "t");
}

TEST(V03JsonTest, A10CardReadsAsA03Card) {
  a2apb::AgentCard card;
  card.set_name("echo");
  card.set_version("1");
  auto* grpc = card.add_supported_interfaces();
  grpc->set_protocol_binding("GRPC");
  grpc->set_url("127.0.0.1:1");
  auto* rpc = card.add_supported_interfaces();
  rpc->set_protocol_binding("JSONRPC");
  rpc->set_url("http://h/agents/echo");
  card.add_skills()->set_id("s");
  absl::StatusOr<std::string> json = ResultJson(Method::kGetExtendedAgentCard, card);
  ASSERT_OK(json);
  const pb::Value v = Parse(*json);
  EXPECT_EQ(At(v, "url").string_value(), "http://h/agents/echo");
  EXPECT_EQ(At(v, "preferredTransport").string_value(), "JSONRPC");
  EXPECT_EQ(At(v, "protocolVersion").string_value(), "0.3.0");
  EXPECT_EQ(At(v, "additionalInterfaces").list_value().values_size(), 2);
  EXPECT_TRUE(At(Item(At(v, "skills"), 0), "tags").has_list_value());
  EXPECT_TRUE(At(v, "capabilities").has_struct_value());
}

TEST(V03JsonTest, AHybridCardCarriesBothVersionsSecuritySchemes) {
  a2apb::AgentCard card;
  card.set_name("echo");
  auto* rpc = card.add_supported_interfaces();
  rpc->set_protocol_binding("JSONRPC");
  rpc->set_url("http://h/agents/echo");
  (*card.mutable_security_schemes())["bearer"].mutable_http_auth_security_scheme()->set_scheme(
      "Bearer");
  (*card.add_security_requirements()->mutable_schemes())["bearer"];
  const pb::Value hybrid = Parse(HybridCardJson(card));
  const pb::Value& bearer = At(At(hybrid, "securitySchemes"), "bearer");
  // 0.3's shape (by `type`) beside 1.0's (by its one member).
  EXPECT_EQ(At(bearer, "type").string_value(), "http");
  EXPECT_EQ(At(bearer, "scheme").string_value(), "Bearer");
  EXPECT_EQ(At(At(bearer, "httpAuthSecurityScheme"), "scheme").string_value(), "Bearer");
  EXPECT_TRUE(At(Item(At(hybrid, "security"), 0), "bearer").has_list_value()) << Print(hybrid);
  // A 1.0 reader still finds its scheme.
  a2apb::AgentCard read;
  pb::util::JsonParseOptions lenient;
  lenient.ignore_unknown_fields = true;
  ASSERT_TRUE(pb::util::JsonStringToMessage(HybridCardJson(card), &read, lenient).ok());
  EXPECT_EQ(read.security_schemes().at("bearer").http_auth_security_scheme().scheme(), "Bearer");
}

// --- Calling a 0.3 agent: the params written, the answers and cards read.

TEST(V03AgentTest, ASendIsWrittenAsBlockingMessageSendParams) {
  a2apb::SendMessageRequest send;
  send.mutable_message()->set_message_id("m1");
  send.mutable_message()->set_role(a2apb::ROLE_USER);
  send.mutable_message()->set_task_id("agent-task");
  send.mutable_message()->add_parts()->set_text("hi");
  send.mutable_configuration()->set_history_length(0);
  send.mutable_configuration()->set_return_immediately(true);
  send.set_tenant("not-in-0.3");
  const pb::Value params = Parse(ParamsJson(Method::kMessageStream, send));
  EXPECT_EQ(At(At(params, "message"), "kind").string_value(), "message");
  EXPECT_EQ(At(At(params, "message"), "role").string_value(), "user");
  EXPECT_EQ(At(At(params, "message"), "taskId").string_value(), "agent-task");
  EXPECT_EQ(At(Item(At(At(params, "message"), "parts"), 0), "kind").string_value(), "text");
  // The gateway reads the whole answer; 0 ("none" in 1.0) is asked as 1 ("all" in 0.3 is 0).
  EXPECT_TRUE(At(At(params, "configuration"), "blocking").bool_value());
  EXPECT_EQ(At(At(params, "configuration"), "historyLength").number_value(), 1);
  EXPECT_THAT(Print(params), ::testing::Not(HasSubstr("not-in-0.3")));

  a2apb::GetTaskRequest get;
  get.set_id("t");
  EXPECT_EQ(ParamsJson(Method::kTasksGet, get), R"({"id":"t"})");
  get.set_history_length(0);
  EXPECT_EQ(ParamsJson(Method::kTasksGet, get), R"({"historyLength":1,"id":"t"})");
  a2apb::SubscribeToTaskRequest subscribe;
  subscribe.set_id("t");
  EXPECT_EQ(ParamsJson(Method::kTasksResubscribe, subscribe), R"({"id":"t"})");
}

TEST(V03AgentTest, EveryEventReadsBackAsItWasWritten) {
  a2apb::Task task;
  task.set_id("t1");
  task.set_context_id("c1");
  task.mutable_status()->set_state(a2apb::TASK_STATE_INPUT_REQUIRED);
  task.mutable_status()->mutable_message()->set_message_id("s1");
  task.mutable_status()->mutable_message()->set_role(a2apb::ROLE_AGENT);
  task.mutable_status()->mutable_message()->add_parts()->set_text("more?");
  *task.mutable_status()->mutable_timestamp() = pb::util::TimeUtil::SecondsToTimestamp(1700000000);
  a2apb::Artifact* artifact = task.add_artifacts();
  artifact->set_artifact_id("a1");
  artifact->set_name("report");
  artifact->add_parts()->set_raw(std::string("\0\x01\xff", 3));
  artifact->mutable_parts(0)->set_media_type("application/octet-stream");
  a2apb::Message* said = task.add_history();
  said->set_message_id("h1");
  said->set_role(a2apb::ROLE_USER);
  *said->add_parts()->mutable_data() = Parse(R"({"participants":{"purple":"http://x"}})");
  a2apb::StreamResponse event;
  *event.mutable_task() = task;

  a2apb::TaskStatusUpdateEvent status;
  status.set_task_id("t1");
  status.set_context_id("c1");
  status.mutable_status()->set_state(a2apb::TASK_STATE_COMPLETED);
  a2apb::TaskArtifactUpdateEvent chunk;
  chunk.set_task_id("t1");
  chunk.set_context_id("c1");
  *chunk.mutable_artifact() = *artifact;
  chunk.set_append(true);
  chunk.set_last_chunk(true);

  std::vector<a2apb::StreamResponse> events(4);
  *events[0].mutable_task() = task;
  *events[1].mutable_message() = *said;
  *events[2].mutable_status_update() = status;
  *events[3].mutable_artifact_update() = chunk;
  for (const a2apb::StreamResponse& e : events) {
    const std::string json = EventJson(e, /*send_stream=*/true);
    absl::StatusOr<a2apb::StreamResponse> back = EventFromJson(json);
    ASSERT_TRUE(back.ok()) << back.status() << " " << json;
    EXPECT_EQ(back->SerializeAsString(), e.SerializeAsString()) << json;
  }
}

TEST(V03AgentTest, AResultWithoutKindIsReadByItsMembers) {
  absl::StatusOr<a2apb::StreamResponse> task =
      EventFromJson(R"({"id":"t","contextId":"c","status":{"state":"working"}})");
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_EQ(task->task().status().state(), a2apb::TASK_STATE_WORKING);
  absl::StatusOr<a2apb::StreamResponse> update =
      EventFromJson(R"({"taskId":"t","status":{"state":"unknown"},"final":true})");
  ASSERT_TRUE(update.ok()) << update.status();
  EXPECT_EQ(update->status_update().status().state(), a2apb::TASK_STATE_UNSPECIFIED);
  absl::StatusOr<a2apb::StreamResponse> message =
      EventFromJson(R"({"messageId":"m","role":"agent","parts":[{"text":"hi"}]})");
  ASSERT_TRUE(message.ok()) << message.status();
  EXPECT_EQ(message->message().parts(0).text(), "hi");
}

TEST(V03AgentTest, MalformedResultsAreRefusedNamingTheMember) {
  struct Case {
    const char* json;
    const char* says;
  };
  for (const Case& c : {
           Case{"[]", "result must be an object"},
           Case{"not json", "result is not JSON"},
           Case{R"({"kind":"job"})", "\"job\" is not one of"},
           Case{R"({"x":1})", "result.kind is missing"},
           Case{R"({"kind":"task","contextId":"c","status":{"state":"working"}})", "result.id"},
           Case{R"({"kind":"task","id":"t","status":{"state":"paused"}})", "result.status.state"},
           Case{R"({"kind":"task","id":"t","status":{"state":"working","timestamp":"noon"}})",
                "result.status.timestamp"},
           Case{R"({"kind":"task","id":"t","status":{"state":"working"},"history":{}})",
                "result.history must be an array"},
           Case{R"({"kind":"task","id":"t","status":{"state":"working"},"artifacts":[{}]})",
                "result.artifacts[0].artifactId"},
           Case{R"({"kind":"artifact-update","taskId":"t","artifact":{"artifactId":"a"}})",
                "result.artifact.parts"},
           Case{R"({"kind":"status-update","taskId":"t"})", "result.status is required"},
           Case{R"({"kind":"message","messageId":"m","role":"robot","parts":[]})", "result.role"},
       }) {
    absl::StatusOr<a2apb::StreamResponse> event = EventFromJson(c.json);
    EXPECT_EQ(event.status().code(), absl::StatusCode::kInvalidArgument) << c.json;
    EXPECT_THAT(event.status().message(), HasSubstr(c.says)) << c.json;
  }
}

TEST(V03AgentTest, ACardIsReadAsTheOneZeroCardItStandsFor) {
  const pb::Value json = Parse(R"({
    "name": "purple", "description": "d", "version": "2", "protocolVersion": "0.3.0",
    "url": "http://127.0.0.1:9/rpc", "preferredTransport": "JSONRPC",
    "additionalInterfaces": [{"url": "http://127.0.0.1:9/rpc", "transport": "JSONRPC"},
                             {"url": "127.0.0.1:10", "transport": "GRPC"}],
    "capabilities": {"streaming": true, "stateTransitionHistory": true},
    "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
    "security": [{"bearer": []}], "supportsAuthenticatedExtendedCard": true,
    "defaultInputModes": ["text"], "defaultOutputModes": ["text"],
    "skills": [{"id": "s", "name": "s", "description": "d", "tags": ["x"],
                "security": [{"bearer": []}]}]})");
  ASSERT_TRUE(IsV03Card(json.struct_value()));
  absl::StatusOr<a2apb::AgentCard> card = CardFromJson(json.struct_value());
  ASSERT_TRUE(card.ok()) << card.status();
  EXPECT_EQ(card->name(), "purple");
  EXPECT_EQ(card->version(), "2");
  EXPECT_TRUE(card->capabilities().streaming());
  EXPECT_TRUE(card->capabilities().extended_agent_card());
  EXPECT_EQ(card->skills(0).tags(0), "x");
  ASSERT_EQ(card->supported_interfaces_size(), 2);  // the duplicate of `url` dropped
  EXPECT_EQ(card->supported_interfaces(0).url(), "http://127.0.0.1:9/rpc");
  EXPECT_EQ(card->supported_interfaces(0).protocol_binding(), "JSONRPC");
  EXPECT_EQ(card->supported_interfaces(0).protocol_version(), "0.3");
  EXPECT_EQ(card->supported_interfaces(1).protocol_binding(), "GRPC");
  EXPECT_TRUE(card->security_schemes().empty());

  // Not 0.3: a hybrid (supportedInterfaces beside `url`), a card without `url`.
  EXPECT_FALSE(IsV03Card(
      Parse(R"({"url":"http://x/","supportedInterfaces":[{"url":"http://x/"}]})").struct_value()));
  EXPECT_FALSE(IsV03Card(Parse(R"({"name":"n"})").struct_value()));
  // Another version, and malformed 0.3 members.
  EXPECT_EQ(CardFromJson(Parse(R"({"url":"http://x/","protocolVersion":"0.2.9"})").struct_value())
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
  for (const char* bad :
       {R"({"url":"http://x/","additionalInterfaces":[{"url":"http://y/"}]})",
        R"({"url":"http://x/","preferredTransport":5})", R"({"url":"http://x/","skills":"all"})",
        R"({"url":"http://x/","supportsAuthenticatedExtendedCard":"no"})"}) {
    EXPECT_EQ(CardFromJson(Parse(bad).struct_value()).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

}  // namespace
}  // namespace a2a_protocol::v03
