// A2A 0.3's gRPC service (service_v03.h) on a running coordinator, in front of a 1.0 JSON-RPC
// agent: each 0.3 RPC reaches the same stored task a 1.0 client sees, the 0.3 shapes on the way
// out (CANCELLED, `final`, resource names), and bad input gets a clear status with nothing
// stored.
#include "coordinator/a2a/service_v03.h"

#include <memory>
#include <string>
#include <vector>

#include "a2a/v0_3/a2a.grpc.pb.h"
#include "a2a/v1/a2a.grpc.pb.h"
#include "a2a_protocol/version.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "coordinator/a2a/test_server_options.h"
#include "coordinator/server.h"
#include "coordinator/v1/agent_registry.grpc.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/testing/test_store.h"
#include "tests/fake_http_agent.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

namespace pb03 = ::a2a::v1;
namespace pb10 = ::lf::a2a::v1;
using ::testing::HasSubstr;
using testing_util::FakeHttpAgent;
using testing_util::TempDir;

class A2AServiceV03Test : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_GT(agent_.port(), 0);
    absl::StatusOr<ServerOptions> options = GatewayTestServerOptions(dir_.Sub("data"));
    ASSERT_OK(options);
    absl::StatusOr<std::unique_ptr<CoordinatorServer>> server = CoordinatorServer::Start(*options);
    ASSERT_OK(server);
    server_ = *std::move(server);
    auto channel = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    v03_ = pb03::A2AService::NewStub(channel);
    v10_ = pb10::A2AService::NewStub(channel);
    auto registry = v1::AgentRegistry::NewStub(channel);
    v1::RegisterAgentRequest request;
    request.mutable_agent()->set_name("fake");
    request.mutable_agent()->set_card_url(agent_.card_url());
    v1::Agent registered;
    grpc::ClientContext context;
    ASSERT_TRUE(registry->RegisterAgent(&context, request, &registered).ok());
  }

  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown(absl::Seconds(1));
  }

  // A 0.3 call: no version header (0.3 has none), the agent by coordinator-tenant.
  static std::unique_ptr<grpc::ClientContext> Context(const std::string& tenant = "fake") {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    if (!tenant.empty()) context->AddMetadata(kTenantMetadata, tenant);
    return context;
  }

  static pb03::SendMessageRequest Send(const std::string& text, bool blocking = true) {
    static int counter = 0;
    pb03::SendMessageRequest request;
    pb03::Message* message = request.mutable_request();
    message->set_message_id(absl::StrCat("v03-grpc-", ++counter));
    message->set_role(pb03::ROLE_USER);
    message->add_content()->set_text(text);
    request.mutable_configuration()->set_blocking(blocking);
    return request;
  }

  pb10::Task Get10(const std::string& id) {
    pb10::GetTaskRequest get;
    get.set_tenant("fake");
    get.set_id(id);
    pb10::Task task;
    grpc::ClientContext context;
    a2a_protocol::AddVersion(&context);
    EXPECT_TRUE(v10_->GetTask(&context, get, &task).ok());
    return task;
  }

  TempDir dir_;
  FakeHttpAgent agent_{FakeHttpAgent::Binding::kJsonRpc};
  std::unique_ptr<CoordinatorServer> server_;
  std::unique_ptr<pb03::A2AService::Stub> v03_;
  std::unique_ptr<pb10::A2AService::Stub> v10_;
};

TEST_F(A2AServiceV03Test, SendGetAndStreamSeeTheTaskA10ClientSees) {
  pb03::SendMessageResponse sent;
  grpc::Status s = v03_->SendMessage(Context().get(), Send("hello"), &sent);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(sent.has_task());
  EXPECT_EQ(sent.task().status().state(), pb03::TASK_STATE_COMPLETED);
  EXPECT_EQ(sent.task().status().update().content(0).text(), "done: hello");
  EXPECT_EQ(sent.task().artifacts(0).parts(0).text(), "hello");
  // The same task for a 1.0 client, and read back over 0.3 by its resource name.
  EXPECT_EQ(Get10(sent.task().id()).status().state(), pb10::TASK_STATE_COMPLETED);
  pb03::GetTaskRequest get;
  get.set_name(absl::StrCat("tasks/", sent.task().id()));
  pb03::Task read;
  s = v03_->GetTask(Context().get(), get, &read);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(read.id(), sent.task().id());
  ASSERT_GE(read.history_size(), 1);
  EXPECT_EQ(read.history(0).content(0).text(), "hello");

  // A stream: the task first, `final` on the status update that ends it.
  auto context = Context();
  auto reader = v03_->SendStreamingMessage(context.get(), Send("streamed"));
  std::vector<pb03::StreamResponse> events;
  pb03::StreamResponse event;
  while (reader->Read(&event)) events.push_back(event);
  s = reader->Finish();
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_FALSE(events.empty());
  EXPECT_TRUE(events.front().has_task());
  if (events.size() > 1) {
    ASSERT_TRUE(events.back().has_status_update());
    EXPECT_TRUE(events.back().status_update().final());
    EXPECT_EQ(events.back().status_update().status().state(), pb03::TASK_STATE_COMPLETED);
  }
  EXPECT_THAT(agent_.texts(), ::testing::ElementsAre("hello", "streamed"));
}

TEST_F(A2AServiceV03Test, CancelSubscribeAndPushConfigsByResourceName) {
  pb03::SendMessageResponse sent;
  ASSERT_TRUE(v03_->SendMessage(Context().get(), Send("hold", /*blocking=*/false), &sent).ok());
  const std::string id = sent.task().id();
  const std::string name = absl::StrCat("tasks/", id);

  pb03::CreateTaskPushNotificationConfigRequest create;
  create.set_parent(name);
  create.set_config_id("hook");
  create.mutable_config()->mutable_push_notification_config()->set_url("http://127.0.0.1:1/hook");
  pb03::TaskPushNotificationConfig created;
  grpc::Status s = v03_->CreateTaskPushNotificationConfig(Context().get(), create, &created);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(created.name(), name + "/pushNotificationConfigs/hook");
  pb03::ListTaskPushNotificationConfigRequest list;
  list.set_parent(name);
  pb03::ListTaskPushNotificationConfigResponse listed;
  ASSERT_TRUE(v03_->ListTaskPushNotificationConfig(Context().get(), list, &listed).ok());
  ASSERT_EQ(listed.configs_size(), 1);
  EXPECT_EQ(listed.configs(0).push_notification_config().url(), "http://127.0.0.1:1/hook");
  pb03::DeleteTaskPushNotificationConfigRequest del;
  del.set_name(created.name());
  google::protobuf::Empty empty;
  ASSERT_TRUE(v03_->DeleteTaskPushNotificationConfig(Context().get(), del, &empty).ok());

  // A subscriber sees the cancel; the cancelled task reads CANCELLED.
  auto context = Context();
  pb03::TaskSubscriptionRequest subscribe;
  subscribe.set_name(name);
  auto reader = v03_->TaskSubscription(context.get(), subscribe);
  pb03::StreamResponse first;
  ASSERT_TRUE(reader->Read(&first));
  EXPECT_EQ(first.task().id(), id);
  pb03::CancelTaskRequest cancel;
  cancel.set_name(name);
  pb03::Task canceled;
  s = v03_->CancelTask(Context().get(), cancel, &canceled);
  ASSERT_TRUE(s.ok()) << s.error_message();
  pb03::StreamResponse event;
  pb03::TaskState last = pb03::TASK_STATE_UNSPECIFIED;
  while (reader->Read(&event)) {
    if (event.has_status_update()) last = event.status_update().status().state();
  }
  EXPECT_TRUE(reader->Finish().ok());
  EXPECT_EQ(last, pb03::TASK_STATE_CANCELLED);
  EXPECT_EQ(Get10(id).status().state(), pb10::TASK_STATE_CANCELED);

  // Cancelling again: not cancelable (FAILED_PRECONDITION, as 1.0); subscribing to the ended
  // task: UnsupportedOperation, sent by 0.3 as UNIMPLEMENTED.
  EXPECT_EQ(v03_->CancelTask(Context().get(), cancel, &canceled).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  auto again_context = Context();
  auto again = v03_->TaskSubscription(again_context.get(), subscribe);
  while (again->Read(&event)) {
  }
  EXPECT_EQ(again->Finish().error_code(), grpc::StatusCode::UNIMPLEMENTED);
}

TEST_F(A2AServiceV03Test, BadInputGetsAClearStatusAndStoresNothing) {
  pb03::Task task;
  pb03::GetTaskRequest get;
  for (const char* name : {"", "tasks/", "task/x", "tasks/x/y", "x"}) {
    get.set_name(name);
    const grpc::Status s = v03_->GetTask(Context().get(), get, &task);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << name;
    EXPECT_THAT(s.error_message(), HasSubstr("tasks/{id}")) << name;
  }
  get.set_name("tasks/no-such-task");
  EXPECT_EQ(v03_->GetTask(Context().get(), get, &task).error_code(), grpc::StatusCode::NOT_FOUND);
  get.set_history_length(-1);
  EXPECT_EQ(v03_->GetTask(Context().get(), get, &task).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  pb03::GetTaskPushNotificationConfigRequest push_get;
  push_get.set_name("tasks/x/pushNotificationConfigs/");
  pb03::TaskPushNotificationConfig config;
  EXPECT_EQ(v03_->GetTaskPushNotificationConfig(Context().get(), push_get, &config).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  // A message without an id or parts, to an unknown agent, or asking for A2A 1.0 or 0.5.
  pb03::SendMessageResponse sent;
  pb03::SendMessageRequest empty;
  EXPECT_EQ(v03_->SendMessage(Context().get(), empty, &sent).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(v03_->SendMessage(Context("nobody").get(), Send("x"), &sent).error_code(),
            grpc::StatusCode::NOT_FOUND);
  auto v10 = Context();
  v10->AddMetadata("a2a-version", "1.0");
  EXPECT_EQ(v03_->SendMessage(v10.get(), Send("x"), &sent).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
  auto other = Context();
  other->AddMetadata("a2a-version", "0.5");
  const grpc::Status refused = v03_->SendMessage(other.get(), Send("x"), &sent);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(refused.error_message(), HasSubstr("0.5"));
  // No card offers an extended card: 0.3's AuthenticatedExtendedCardNotConfigured.
  pb03::AgentCard card;
  EXPECT_EQ(v03_->GetAgentCard(Context().get(), pb03::GetAgentCardRequest(), &card).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_TRUE(agent_.texts().empty());
}

}  // namespace
}  // namespace coordinator
