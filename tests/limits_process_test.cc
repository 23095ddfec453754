// Every configurable limit on input (coordinator/store/records/limits.h), through the real
// coordinator started with a non-default flag value: a request exactly at the limit is accepted,
// one past it gets RESOURCE_EXHAUSTED naming the limit and its flag, and nothing is changed. Page
// sizes above
// --max_page_size are lowered to it; negative ones are INVALID_ARGUMENT.
#include <memory>
#include <string>
#include <vector>

#include "a2a/v1/a2a.grpc.pb.h"
#include "coordinator/v1/agent_registry.grpc.pb.h"
#include "coordinator/v1/context.grpc.pb.h"
#include "coordinator/v1/conversation.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/a2a_test_util.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace {

using ::coordinator::v1::ContextService;
using ::coordinator::v1::ConversationService;
using ::coordinator::v1::TaskContext;
using ::testing::HasSubstr;
using ::testing_util::BinaryPath;
using ::testing_util::CallContext;
using ::testing_util::CoordinatorProcess;
using ::testing_util::ProcessResult;
using ::testing_util::RunProcess;
using ::testing_util::TempDir;
namespace a2apb = ::lf::a2a::v1;

constexpr int kFieldBytes = 20;
constexpr int kLabels = 3;
constexpr int kLabelValueBytes = 10;
constexpr int kCommandBytes = 30;
constexpr int kMessageBytes = 200;
constexpr int kPageSize = 3;

class LimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<CoordinatorProcess>> coordinator = CoordinatorProcess::Start(
        dir_.Sub("data"), {"--max_field_bytes=" + std::to_string(kFieldBytes),
                           "--max_labels=" + std::to_string(kLabels),
                           "--max_label_value_bytes=" + std::to_string(kLabelValueBytes),
                           "--max_command_bytes=" + std::to_string(kCommandBytes),
                           "--max_message_bytes=" + std::to_string(kMessageBytes),
                           "--max_page_size=" + std::to_string(kPageSize)});
    ASSERT_OK(coordinator);
    coordinator_ = *std::move(coordinator);
    channel_ = grpc::CreateChannel(coordinator_->target(), grpc::InsecureChannelCredentials());
    contexts_ = ContextService::NewStub(channel_);
    conversations_ = ConversationService::NewStub(channel_);
  }

  TaskContext Create(const std::string& id) {
    coordinator::v1::CreateContextRequest request;
    request.mutable_context()->set_context_id(id);
    TaskContext created;
    const grpc::Status status = contexts_->CreateContext(CallContext().get(), request, &created);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return created;
  }

  TaskContext Get(const std::string& id) {
    coordinator::v1::GetContextRequest request;
    request.set_context_id(id);
    TaskContext context;
    const grpc::Status status = contexts_->GetContext(CallContext().get(), request, &context);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return context;
  }

  // Updates `context` (all mutable fields) at its version.
  grpc::Status Update(const TaskContext& context) {
    coordinator::v1::UpdateContextRequest request;
    *request.mutable_context() = context;
    TaskContext updated;
    return contexts_->UpdateContext(CallContext().get(), request, &updated);
  }

  // Expects `status` to be RESOURCE_EXHAUSTED naming `flag`.
  static void ExpectRefused(const grpc::Status& status, const std::string& flag) {
    EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr("limit is"));
    EXPECT_THAT(status.error_message(), HasSubstr("--" + flag));
  }

  TempDir dir_;
  std::unique_ptr<CoordinatorProcess> coordinator_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<ContextService::Stub> contexts_;
  std::unique_ptr<ConversationService::Stub> conversations_;
};

TEST_F(LimitsTest, FieldBytesAtTheLimitAndOnePast) {
  TaskContext context = Create("fields");
  context.set_workspace_dir(std::string(kFieldBytes, 'w'));
  context.set_shared_dir(std::string(kFieldBytes, 's'));
  context.set_environment_handle(std::string(kFieldBytes, 'e'));
  ASSERT_TRUE(Update(context).ok());
  const TaskContext stored = Get("fields");
  ASSERT_EQ(stored.workspace_dir(), std::string(kFieldBytes, 'w'));

  for (int field = 0; field < 3; ++field) {
    TaskContext over = stored;
    std::string* target = field == 0   ? over.mutable_workspace_dir()
                          : field == 1 ? over.mutable_shared_dir()
                                       : over.mutable_environment_handle();
    *target = std::string(kFieldBytes + 1, 'x');
    ExpectRefused(Update(over), "max_field_bytes");
    EXPECT_EQ(Get("fields").version(), stored.version());
    EXPECT_EQ(Get("fields").workspace_dir(), stored.workspace_dir());
  }

  // A context created over the limit is not created at all.
  coordinator::v1::CreateContextRequest create;
  create.mutable_context()->set_context_id("born-too-big");
  create.mutable_context()->set_workspace_dir(std::string(kFieldBytes + 1, 'w'));
  TaskContext ignored;
  ExpectRefused(contexts_->CreateContext(CallContext().get(), create, &ignored), "max_field_bytes");
  coordinator::v1::GetContextRequest get;
  get.set_context_id("born-too-big");
  EXPECT_EQ(contexts_->GetContext(CallContext().get(), get, &ignored).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST_F(LimitsTest, LabelCountAtTheLimitAndOnePast) {
  TaskContext context = Create("labels");
  for (int i = 0; i < kLabels; ++i) (*context.mutable_labels())["k" + std::to_string(i)] = "v";
  ASSERT_TRUE(Update(context).ok());
  const TaskContext stored = Get("labels");
  ASSERT_EQ(stored.labels_size(), kLabels);

  TaskContext over = stored;
  (*over.mutable_labels())["one-more"] = "v";
  ExpectRefused(Update(over), "max_labels");
  EXPECT_EQ(Get("labels").version(), stored.version());
  EXPECT_EQ(Get("labels").labels_size(), kLabels);
}

TEST_F(LimitsTest, LabelValueBytesAtTheLimitAndOnePast) {
  TaskContext context = Create("label-value");
  (*context.mutable_labels())["note"] = std::string(kLabelValueBytes, 'n');
  ASSERT_TRUE(Update(context).ok());
  const TaskContext stored = Get("label-value");

  TaskContext over = stored;
  (*over.mutable_labels())["note"] = std::string(kLabelValueBytes + 1, 'n');
  ExpectRefused(Update(over), "max_label_value_bytes");
  EXPECT_EQ(Get("label-value").version(), stored.version());
  EXPECT_EQ(Get("label-value").labels().at("note"), std::string(kLabelValueBytes, 'n'));
}

TEST_F(LimitsTest, CommandBytesAndDigestBytesAtTheLimitAndOnePast) {
  Create("commands");
  coordinator::v1::RecordCommandRequest request;
  request.set_context_id("commands");
  request.set_command(std::string(kCommandBytes, 'c'));
  request.set_output_digest(std::string(kFieldBytes, 'd'));
  coordinator::v1::RecordCommandResponse response;
  ASSERT_TRUE(contexts_->RecordCommand(CallContext().get(), request, &response).ok());
  ASSERT_EQ(Get("commands").command_count(), 1);

  coordinator::v1::RecordCommandRequest long_command = request;
  long_command.set_command(std::string(kCommandBytes + 1, 'c'));
  ExpectRefused(contexts_->RecordCommand(CallContext().get(), long_command, &response),
                "max_command_bytes");
  coordinator::v1::RecordCommandRequest long_digest = request;
  long_digest.set_output_digest(std::string(kFieldBytes + 1, 'd'));
  ExpectRefused(contexts_->RecordCommand(CallContext().get(), long_digest, &response),
                "max_field_bytes");
  EXPECT_EQ(Get("commands").command_count(), 1);
}

TEST_F(LimitsTest, MessageTextBytesAtTheLimitAndOnePast) {
  coordinator::v1::AppendMessageRequest request;
  request.set_context_id("convo");
  request.set_role(coordinator::v1::ROLE_USER);
  request.set_text(std::string(kMessageBytes, 't'));
  coordinator::v1::AppendMessageResponse response;
  ASSERT_TRUE(conversations_->AppendMessage(CallContext().get(), request, &response).ok());
  ASSERT_EQ(response.message_count(), 1);

  request.set_text(std::string(kMessageBytes + 1, 't'));
  ExpectRefused(conversations_->AppendMessage(CallContext().get(), request, &response),
                "max_message_bytes");
  coordinator::v1::GetConversationRequest read;
  read.set_context_id("convo");
  coordinator::v1::GetConversationResponse conversation;
  ASSERT_TRUE(conversations_->GetConversation(CallContext().get(), read, &conversation).ok());
  EXPECT_EQ(conversation.message_count(), 1);
  EXPECT_EQ(conversation.messages_size(), 1);
}

TEST_F(LimitsTest, A2AMessageBytesAtTheLimitAndOnePast) {
  // An agent that is down: an accepted message waits in the coordinator as a SUBMITTED task.
  auto registry = coordinator::v1::AgentRegistry::NewStub(channel_);
  coordinator::v1::RegisterAgentRequest reg;
  reg.mutable_agent()->set_name("away");
  reg.mutable_agent()->set_endpoint("127.0.0.1:1");
  coordinator::v1::Agent agent;
  ASSERT_TRUE(registry->RegisterAgent(CallContext().get(), reg, &agent).ok());
  auto a2a = a2apb::A2AService::NewStub(channel_);

  auto message_of_size = [](const std::string& id, size_t bytes) {
    a2apb::Message message;
    message.set_message_id(id);
    message.set_role(a2apb::ROLE_USER);
    a2apb::Part* part = message.add_parts();
    part->set_text("");
    // Grow the text until the message has the size asked for (length prefixes grow with it).
    while (message.ByteSizeLong() < bytes) part->mutable_text()->push_back('x');
    return message;
  };
  a2apb::SendMessageRequest request;
  request.set_tenant("away");
  request.mutable_configuration()->set_return_immediately(true);
  *request.mutable_message() = message_of_size("at-limit", kMessageBytes);
  ASSERT_EQ(request.message().ByteSizeLong(), static_cast<size_t>(kMessageBytes));
  a2apb::SendMessageResponse response;
  const grpc::Status accepted = a2a->SendMessage(CallContext().get(), request, &response);
  ASSERT_TRUE(accepted.ok()) << accepted.error_message();

  *request.mutable_message() = message_of_size("past-limit", kMessageBytes + 1);
  ASSERT_EQ(request.message().ByteSizeLong(), static_cast<size_t>(kMessageBytes + 1));
  ExpectRefused(a2a->SendMessage(CallContext().get(), request, &response), "max_message_bytes");

  a2apb::ListTasksRequest list;
  list.set_tenant("away");
  a2apb::ListTasksResponse tasks;
  ASSERT_TRUE(a2a->ListTasks(CallContext().get(), list, &tasks).ok());
  EXPECT_EQ(tasks.tasks_size(), 1);
}

TEST_F(LimitsTest, PageSizeAboveTheLimitIsLoweredAndNegativeIsRefused) {
  for (int i = 0; i < kPageSize + 2; ++i) Create("page-" + std::to_string(i));
  coordinator::v1::ListContextsRequest list;
  list.set_page_size(kPageSize);
  coordinator::v1::ListContextsResponse page;
  ASSERT_TRUE(contexts_->ListContexts(CallContext().get(), list, &page).ok());
  EXPECT_EQ(page.contexts_size(), kPageSize);
  list.set_page_size(kPageSize + 1);
  ASSERT_TRUE(contexts_->ListContexts(CallContext().get(), list, &page).ok());
  EXPECT_EQ(page.contexts_size(), kPageSize);
  EXPECT_FALSE(page.next_page_token().empty());
  list.set_page_size(-1);
  EXPECT_EQ(contexts_->ListContexts(CallContext().get(), list, &page).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  // The conversation history pages the same way.
  for (int i = 0; i < kPageSize + 2; ++i) {
    coordinator::v1::AppendMessageRequest append;
    append.set_context_id("history");
    append.set_role(coordinator::v1::ROLE_AGENT);
    append.set_text("step " + std::to_string(i));
    coordinator::v1::AppendMessageResponse appended;
    ASSERT_TRUE(conversations_->AppendMessage(CallContext().get(), append, &appended).ok());
  }
  coordinator::v1::GetConversationRequest read;
  read.set_context_id("history");
  read.set_page_size(kPageSize + 1);
  coordinator::v1::GetConversationResponse history;
  ASSERT_TRUE(conversations_->GetConversation(CallContext().get(), read, &history).ok());
  EXPECT_EQ(history.messages_size(), kPageSize);
  EXPECT_FALSE(history.next_page_token().empty());
  read.set_page_size(-1);
  EXPECT_EQ(conversations_->GetConversation(CallContext().get(), read, &history).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST(LimitFlagsTest, NonPositiveOrHugeLimitIsAStartError) {
  TempDir dir;
  for (const std::string flag :
       {"--max_labels=0", "--max_message_bytes=-1", "--max_page_size=0",
        "--max_field_bytes=99999999999", "--max_command_bytes=0", "--max_label_value_bytes=0"}) {
    absl::StatusOr<ProcessResult> result = RunProcess(
        BinaryPath("coordinator"),
        {"--listen=127.0.0.1:0", "--http_listen=", "--data_dir=" + dir.Sub("data"), flag},
        absl::Seconds(60));
    ASSERT_OK(result);
    EXPECT_EQ(result->exit_code, 2) << flag << ": " << result->Describe();
    EXPECT_THAT(result->err, HasSubstr(flag.substr(0, flag.find('=')))) << result->Describe();
    EXPECT_THAT(result->err, ::testing::Not(HasSubstr("listening on")));
  }
}

}  // namespace
