// Service tests: the coordinator assembled by CoordinatorServer::Start (the same code main()
// runs), on 127.0.0.1:0 and a temporary data dir, called through the generated stubs.
#include "coordinator/server.h"

#include <algorithm>
#include <atomic>
#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/barrier.h"
#include "absl/synchronization/mutex.h"
#include "coordinator/v1/context.grpc.pb.h"
#include "coordinator/v1/conversation.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "storage/testing/test_store.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing_util::TempDir;
using v1::ContextService;
using v1::ConversationService;
using v1::TaskContext;

// The status of a call, printable in assertion messages.
std::string Describe(const grpc::Status& s) {
  return absl::StrCat("code ", s.error_code(), ": ", s.error_message());
}

#define EXPECT_CODE(status_expr, expected_code)                                  \
  do {                                                                           \
    const grpc::Status expect_code_status_ = (status_expr);                      \
    EXPECT_EQ(expect_code_status_.error_code(), grpc::StatusCode::expected_code) \
        << Describe(expect_code_status_);                                        \
  } while (false)

#define ASSERT_RPC_OK(status_expr)                                              \
  do {                                                                          \
    const grpc::Status assert_rpc_ok_status_ = (status_expr);                   \
    ASSERT_TRUE(assert_rpc_ok_status_.ok()) << Describe(assert_rpc_ok_status_); \
  } while (false)

// Runs `call` with a fresh client context that has a deadline, as every client call must.
template <typename Fn>
grpc::Status WithDeadline(Fn call) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  return call(&context);
}

// Options for a server under test: an ephemeral gRPC port, and no agent-card HTTP server (its
// default port is fixed, and these tests are about the gRPC services).
ServerOptions TestServerOptions(const std::string& data_dir) {
  ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.data_dir = data_dir;
  EXPECT_OK(
      storage::testing::SetTestServerStore(options.data_dir, &options.store_url, &options.etcd));
  options.http_listen = "";
  return options;
}

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(StartServer(ServerOptions())); }

  void StartServer(ServerOptions options) {
    options.listen = "127.0.0.1:0";
    options.data_dir = dir_.Sub("data");
    ASSERT_OK(
        storage::testing::SetTestServerStore(options.data_dir, &options.store_url, &options.etcd));
    options.http_listen = "";
    absl::StatusOr<std::unique_ptr<CoordinatorServer>> server =
        CoordinatorServer::Start(std::move(options));
    ASSERT_OK(server);
    server_ = *std::move(server);
    ASSERT_GT(server_->port(), 0);
    channel_ = grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->port()),
                                   grpc::InsecureChannelCredentials());
    contexts_ = ContextService::NewStub(channel_);
    conversations_ = ConversationService::NewStub(channel_);
  }

  void StopServer() {
    contexts_.reset();
    conversations_.reset();
    channel_.reset();
    server_.reset();
  }

  grpc::Status Create(const TaskContext& context, TaskContext* out = nullptr) {
    v1::CreateContextRequest request;
    *request.mutable_context() = context;
    TaskContext ignored;
    return WithDeadline([&](grpc::ClientContext* c) {
      return contexts_->CreateContext(c, request, out != nullptr ? out : &ignored);
    });
  }
  grpc::Status Create(const std::string& id, const std::string& agent = "",
                      TaskContext* out = nullptr) {
    TaskContext context;
    context.set_context_id(id);
    context.set_agent(agent);
    return Create(context, out);
  }
  grpc::Status Get(const std::string& id, TaskContext* out) {
    v1::GetContextRequest request;
    request.set_context_id(id);
    return WithDeadline(
        [&](grpc::ClientContext* c) { return contexts_->GetContext(c, request, out); });
  }
  grpc::Status Update(const v1::UpdateContextRequest& request, TaskContext* out = nullptr) {
    TaskContext ignored;
    return WithDeadline([&](grpc::ClientContext* c) {
      return contexts_->UpdateContext(c, request, out != nullptr ? out : &ignored);
    });
  }
  grpc::Status Delete(const std::string& id, int64_t version = 0) {
    v1::DeleteContextRequest request;
    request.set_context_id(id);
    request.set_version(version);
    google::protobuf::Empty out;
    return WithDeadline(
        [&](grpc::ClientContext* c) { return contexts_->DeleteContext(c, request, &out); });
  }
  grpc::Status List(const v1::ListContextsRequest& request, v1::ListContextsResponse* out) {
    return WithDeadline(
        [&](grpc::ClientContext* c) { return contexts_->ListContexts(c, request, out); });
  }
  grpc::Status Record(const std::string& id, const std::string& command, int exit_code = 0,
                      v1::RecordCommandResponse* out = nullptr) {
    v1::RecordCommandRequest request;
    request.set_context_id(id);
    request.set_command(command);
    request.set_exit_code(exit_code);
    return Record(request, out);
  }
  grpc::Status Record(const v1::RecordCommandRequest& request,
                      v1::RecordCommandResponse* out = nullptr) {
    v1::RecordCommandResponse ignored;
    return WithDeadline([&](grpc::ClientContext* c) {
      return contexts_->RecordCommand(c, request, out != nullptr ? out : &ignored);
    });
  }
  grpc::Status ListCommands(const v1::ListCommandsRequest& request, v1::ListCommandsResponse* out) {
    return WithDeadline(
        [&](grpc::ClientContext* c) { return contexts_->ListCommands(c, request, out); });
  }
  grpc::Status Append(const v1::AppendMessageRequest& request,
                      v1::AppendMessageResponse* out = nullptr) {
    v1::AppendMessageResponse ignored;
    return WithDeadline([&](grpc::ClientContext* c) {
      return conversations_->AppendMessage(c, request, out != nullptr ? out : &ignored);
    });
  }
  grpc::Status Append(const std::string& id, const std::string& text, int64_t tokens = 0,
                      v1::AppendMessageResponse* out = nullptr) {
    v1::AppendMessageRequest request;
    request.set_context_id(id);
    request.set_role(v1::ROLE_AGENT);
    request.set_text(text);
    request.set_tokens(tokens);
    return Append(request, out);
  }
  grpc::Status Conversation(const v1::GetConversationRequest& request,
                            v1::GetConversationResponse* out) {
    return WithDeadline(
        [&](grpc::ClientContext* c) { return conversations_->GetConversation(c, request, out); });
  }

  // Every context, read through ListContexts pages.
  std::vector<TaskContext> AllContexts() {
    std::vector<TaskContext> all;
    v1::ListContextsRequest request;
    do {
      v1::ListContextsResponse page;
      grpc::Status s = List(request, &page);
      EXPECT_TRUE(s.ok()) << Describe(s);
      if (!s.ok()) break;
      all.insert(all.end(), page.contexts().begin(), page.contexts().end());
      request.set_page_token(page.next_page_token());
    } while (!request.page_token().empty());
    return all;
  }

  // Everything the database would answer about `id`, as one comparable string: its context
  // (or NOT_FOUND), commands and conversation.
  std::string Snapshot(const std::string& id) {
    std::string out;
    TaskContext context;
    grpc::Status s = Get(id, &context);
    absl::StrAppend(&out, "get:", s.error_code(), ":", context.ShortDebugString(), "\n");
    v1::ListCommandsRequest commands_request;
    commands_request.set_context_id(id);
    commands_request.set_page_size(1000);
    v1::ListCommandsResponse commands;
    s = ListCommands(commands_request, &commands);
    absl::StrAppend(&out, "commands:", s.error_code(), ":", commands.ShortDebugString(), "\n");
    v1::GetConversationRequest conversation_request;
    conversation_request.set_context_id(id);
    conversation_request.set_page_size(1000);
    v1::GetConversationResponse conversation;
    s = Conversation(conversation_request, &conversation);
    absl::StrAppend(&out, "conversation:", s.error_code(), ":", conversation.ShortDebugString());
    return out;
  }

  TempDir dir_;
  std::unique_ptr<CoordinatorServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<ContextService::Stub> contexts_;
  std::unique_ptr<ConversationService::Stub> conversations_;
};

// --- Health and reflection ------------------------------------------------------------------

TEST_F(ServerTest, HealthCheckAnswersServing) {
  auto health = grpc::health::v1::Health::NewStub(channel_);
  for (const char* service :
       {"", "coordinator.v1.ContextService", "coordinator.v1.ConversationService"}) {
    grpc::health::v1::HealthCheckRequest request;
    request.set_service(service);
    grpc::health::v1::HealthCheckResponse response;
    ASSERT_RPC_OK(
        WithDeadline([&](grpc::ClientContext* c) { return health->Check(c, request, &response); }));
    EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING) << service;
  }
  grpc::health::v1::HealthCheckRequest unknown;
  unknown.set_service("no.such.Service");
  grpc::health::v1::HealthCheckResponse response;
  EXPECT_CODE(
      WithDeadline([&](grpc::ClientContext* c) { return health->Check(c, unknown, &response); }),
      NOT_FOUND);
}

TEST_F(ServerTest, ReflectionListsTheServices) {
  auto reflection = grpc::reflection::v1alpha::ServerReflection::NewStub(channel_);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  auto stream = reflection->ServerReflectionInfo(&context);
  grpc::reflection::v1alpha::ServerReflectionRequest request;
  request.set_list_services("*");
  ASSERT_TRUE(stream->Write(request));
  ASSERT_TRUE(stream->WritesDone());
  std::vector<std::string> names;
  grpc::reflection::v1alpha::ServerReflectionResponse response;
  while (stream->Read(&response)) {
    ASSERT_TRUE(response.has_list_services_response()) << response.ShortDebugString();
    for (const auto& service : response.list_services_response().service()) {
      names.push_back(service.name());
    }
  }
  ASSERT_RPC_OK(stream->Finish());
  EXPECT_THAT(names, Contains("coordinator.v1.ContextService"));
  EXPECT_THAT(names, Contains("coordinator.v1.ConversationService"));
  EXPECT_THAT(names, Contains("grpc.reflection.v1alpha.ServerReflection"));
}

// --- Contexts --------------------------------------------------------------------------------

TEST_F(ServerTest, CreateThenGet) {
  TaskContext context;
  context.set_context_id("ctx-1");
  context.set_agent("green");
  context.set_workspace_dir("/work/ctx-1");
  (*context.mutable_labels())["benchmark"] = "swe";
  // Output-only fields are ignored.
  context.set_command_count(99);
  context.set_version(42);
  TaskContext created;
  ASSERT_RPC_OK(Create(context, &created));
  EXPECT_EQ(created.status(), v1::CONTEXT_STATUS_ACTIVE);
  EXPECT_EQ(created.version(), 1);
  EXPECT_EQ(created.command_count(), 0);
  EXPECT_GT(created.create_time().seconds(), 0);

  TaskContext read;
  ASSERT_RPC_OK(Get("ctx-1", &read));
  EXPECT_EQ(read.SerializeAsString(), created.SerializeAsString());
  EXPECT_EQ(read.labels().at("benchmark"), "swe");
}

TEST_F(ServerTest, CreateTwiceIsAlreadyExistsAndChangesNothing) {
  ASSERT_RPC_OK(Create("ctx", "first"));
  const std::string before = Snapshot("ctx");
  EXPECT_CODE(Create("ctx", "second"), ALREADY_EXISTS);
  EXPECT_EQ(Snapshot("ctx"), before);
}

TEST_F(ServerTest, GetOfMissingContextIsNotFound) {
  TaskContext out;
  grpc::Status s = Get("nobody", &out);
  EXPECT_CODE(s, NOT_FOUND);
  EXPECT_THAT(s.error_message(), HasSubstr("nobody"));
}

TEST_F(ServerTest, UpdateChangesOnlyTheMaskedFields) {
  TaskContext context;
  context.set_context_id("ctx");
  context.set_workspace_dir("/a");
  context.set_shared_dir("/shared");
  TaskContext created;
  ASSERT_RPC_OK(Create(context, &created));

  v1::UpdateContextRequest request;
  request.mutable_context()->set_context_id("ctx");
  request.mutable_context()->set_version(created.version());
  request.mutable_context()->set_workspace_dir("/b");
  request.mutable_context()->set_shared_dir("ignored: not in the mask");
  request.mutable_context()->set_status(v1::CONTEXT_STATUS_COMPLETED);
  request.mutable_update_mask()->add_paths("workspace_dir");
  request.mutable_update_mask()->add_paths("status");
  TaskContext updated;
  ASSERT_RPC_OK(Update(request, &updated));
  EXPECT_EQ(updated.workspace_dir(), "/b");
  EXPECT_EQ(updated.shared_dir(), "/shared");
  EXPECT_EQ(updated.status(), v1::CONTEXT_STATUS_COMPLETED);
  EXPECT_EQ(updated.version(), created.version() + 1);

  TaskContext read;
  ASSERT_RPC_OK(Get("ctx", &read));
  EXPECT_EQ(read.SerializeAsString(), updated.SerializeAsString());
}

TEST_F(ServerTest, UpdateReplacesLabelsWhole) {
  TaskContext context;
  context.set_context_id("ctx");
  (*context.mutable_labels())["a"] = "1";
  (*context.mutable_labels())["b"] = "2";
  TaskContext created;
  ASSERT_RPC_OK(Create(context, &created));
  v1::UpdateContextRequest request;
  *request.mutable_context() = created;
  request.mutable_context()->mutable_labels()->clear();
  (*request.mutable_context()->mutable_labels())["c"] = "3";
  request.mutable_update_mask()->add_paths("labels");
  TaskContext updated;
  ASSERT_RPC_OK(Update(request, &updated));
  EXPECT_EQ(updated.labels().size(), 1u);
  EXPECT_EQ(updated.labels().at("c"), "3");
}

TEST_F(ServerTest, UpdateWithStaleVersionIsAbortedAndWritesNothing) {
  TaskContext created;
  ASSERT_RPC_OK(Create("ctx", "green", &created));
  ASSERT_RPC_OK(Record("ctx", "ls"));  // version 2 now
  const std::string before = Snapshot("ctx");

  v1::UpdateContextRequest request;
  *request.mutable_context() = created;  // version 1: stale
  request.mutable_context()->set_agent("purple");
  request.mutable_context()->set_workspace_dir("/elsewhere");
  grpc::Status s = Update(request);
  EXPECT_CODE(s, ABORTED);
  EXPECT_THAT(s.error_message(), HasSubstr("version"));
  EXPECT_EQ(Snapshot("ctx"), before);
  // The agent index did not move either.
  v1::ListContextsRequest by_purple;
  by_purple.set_agent("purple");
  v1::ListContextsResponse listed;
  ASSERT_RPC_OK(List(by_purple, &listed));
  EXPECT_EQ(listed.contexts_size(), 0);
}

TEST_F(ServerTest, UpdateRefusesBadRequests) {
  TaskContext created;
  ASSERT_RPC_OK(Create("ctx", "", &created));
  const std::string before = Snapshot("ctx");

  v1::UpdateContextRequest no_version;
  no_version.mutable_context()->set_context_id("ctx");
  EXPECT_CODE(Update(no_version), INVALID_ARGUMENT);

  v1::UpdateContextRequest output_only;
  *output_only.mutable_context() = created;
  output_only.mutable_update_mask()->add_paths("command_count");
  EXPECT_CODE(Update(output_only), INVALID_ARGUMENT);

  v1::UpdateContextRequest unknown_path;
  *unknown_path.mutable_context() = created;
  unknown_path.mutable_update_mask()->add_paths("no_such_field");
  EXPECT_CODE(Update(unknown_path), INVALID_ARGUMENT);

  v1::UpdateContextRequest missing;
  *missing.mutable_context() = created;
  missing.mutable_context()->set_context_id("other");
  EXPECT_CODE(Update(missing), NOT_FOUND);

  EXPECT_EQ(Snapshot("ctx"), before);
}

TEST_F(ServerTest, UpdateOfAgentMovesTheIndex) {
  TaskContext created;
  ASSERT_RPC_OK(Create("ctx", "green", &created));
  v1::UpdateContextRequest request;
  *request.mutable_context() = created;
  request.mutable_context()->set_agent("purple");
  request.mutable_update_mask()->add_paths("agent");
  ASSERT_RPC_OK(Update(request));
  for (const auto& [agent, expected] :
       std::vector<std::pair<std::string, int>>{{"green", 0}, {"purple", 1}}) {
    v1::ListContextsRequest list;
    list.set_agent(agent);
    v1::ListContextsResponse response;
    ASSERT_RPC_OK(List(list, &response));
    EXPECT_EQ(response.contexts_size(), expected) << agent;
  }
}

TEST_F(ServerTest, DeleteRemovesCommandsAndConversation) {
  ASSERT_RPC_OK(Create("ctx", "green"));
  ASSERT_RPC_OK(Create("ctx-neighbour", "green"));
  for (int i = 0; i < 300; ++i) ASSERT_RPC_OK(Record("ctx", absl::StrCat("cmd ", i), i % 3));
  for (int i = 0; i < 20; ++i) ASSERT_RPC_OK(Append("ctx", absl::StrCat("message ", i), 5));
  ASSERT_RPC_OK(Record("ctx-neighbour", "keep me"));
  ASSERT_RPC_OK(Append("ctx-neighbour", "keep me too"));
  const std::string neighbour = Snapshot("ctx-neighbour");

  ASSERT_RPC_OK(Delete("ctx"));
  TaskContext out;
  EXPECT_CODE(Get("ctx", &out), NOT_FOUND);
  v1::ListCommandsRequest commands;
  commands.set_context_id("ctx");
  v1::ListCommandsResponse listed;
  EXPECT_CODE(ListCommands(commands, &listed), NOT_FOUND);
  v1::GetConversationRequest conversation;
  conversation.set_context_id("ctx");
  v1::GetConversationResponse messages;
  EXPECT_CODE(Conversation(conversation, &messages), NOT_FOUND);
  EXPECT_CODE(Delete("ctx"), NOT_FOUND);

  // The same id starts afresh: no old commands or messages come back.
  TaskContext recreated;
  ASSERT_RPC_OK(Create("ctx", "", &recreated));
  EXPECT_EQ(recreated.command_count(), 0);
  ASSERT_RPC_OK(ListCommands(commands, &listed));
  EXPECT_EQ(listed.commands_size(), 0);
  v1::AppendMessageResponse appended;
  ASSERT_RPC_OK(Append("ctx", "first again", 1, &appended));
  EXPECT_EQ(appended.step_count(), 1);
  EXPECT_EQ(appended.total_tokens(), 1);

  // The agent index no longer lists it, and the neighbour is untouched.
  v1::ListContextsRequest by_green;
  by_green.set_agent("green");
  v1::ListContextsResponse green;
  ASSERT_RPC_OK(List(by_green, &green));
  ASSERT_EQ(green.contexts_size(), 1);
  EXPECT_EQ(green.contexts(0).context_id(), "ctx-neighbour");
  EXPECT_EQ(Snapshot("ctx-neighbour"), neighbour);
}

TEST_F(ServerTest, DeleteWithStaleVersionIsAbortedAndDeletesNothing) {
  ASSERT_RPC_OK(Create("ctx"));
  ASSERT_RPC_OK(Record("ctx", "ls"));
  ASSERT_RPC_OK(Append("ctx", "hello"));
  const std::string before = Snapshot("ctx");
  EXPECT_CODE(Delete("ctx", /*version=*/1), ABORTED);
  EXPECT_EQ(Snapshot("ctx"), before);
  EXPECT_CODE(Delete("ctx", /*version=*/-1), INVALID_ARGUMENT);
  EXPECT_EQ(Snapshot("ctx"), before);
  ASSERT_RPC_OK(Delete("ctx", /*version=*/2));
}

TEST_F(ServerTest, ListContextsPagesThroughEverythingOnce) {
  std::vector<std::string> ids;
  for (int i = 0; i < 25; ++i) {
    ids.push_back(absl::StrCat("ctx-", i < 10 ? "0" : "", i));
    ASSERT_RPC_OK(Create(ids.back(), i % 2 == 0 ? "even" : "odd"));
    ASSERT_RPC_OK(Record(ids.back(), "ls"));  // records between headers must be skipped
  }
  for (const std::string& agent : {std::string(), std::string("even")}) {
    std::vector<std::string> seen;
    v1::ListContextsRequest request;
    request.set_agent(agent);
    request.set_page_size(4);
    int pages = 0;
    do {
      v1::ListContextsResponse page;
      ASSERT_RPC_OK(List(request, &page));
      EXPECT_LE(page.contexts_size(), 4);
      for (const TaskContext& c : page.contexts()) seen.push_back(c.context_id());
      request.set_page_token(page.next_page_token());
      ASSERT_LT(++pages, 100);
    } while (!request.page_token().empty());
    std::vector<std::string> expected;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (agent.empty() || i % 2 == 0) expected.push_back(ids[i]);
    }
    EXPECT_EQ(seen, expected) << "agent=" << agent;
  }
}

TEST_F(ServerTest, ListContextsFiltersByStatus) {
  ASSERT_RPC_OK(Create("a"));
  TaskContext done;
  done.set_context_id("b");
  done.set_status(v1::CONTEXT_STATUS_COMPLETED);
  ASSERT_RPC_OK(Create(done));
  v1::ListContextsRequest request;
  request.set_status(v1::CONTEXT_STATUS_COMPLETED);
  v1::ListContextsResponse response;
  ASSERT_RPC_OK(List(request, &response));
  ASSERT_EQ(response.contexts_size(), 1);
  EXPECT_EQ(response.contexts(0).context_id(), "b");
}

TEST_F(ServerTest, PageTokensFromOtherListingsOrFiltersAreRefused) {
  for (int i = 0; i < 5; ++i) {
    ASSERT_RPC_OK(Create(absl::StrCat("ctx-", i), "alice"));
    ASSERT_RPC_OK(Record("ctx-0", absl::StrCat("cmd ", i)));
    ASSERT_RPC_OK(Append("ctx-0", absl::StrCat("msg ", i)));
    ASSERT_RPC_OK(Append("ctx-1", absl::StrCat("msg ", i)));
  }
  v1::ListContextsRequest contexts_request;
  contexts_request.set_agent("alice");
  contexts_request.set_page_size(2);
  v1::ListContextsResponse contexts_page;
  ASSERT_RPC_OK(List(contexts_request, &contexts_page));
  const std::string contexts_token = contexts_page.next_page_token();
  ASSERT_FALSE(contexts_token.empty());

  v1::ListCommandsRequest commands_request;
  commands_request.set_context_id("ctx-0");
  commands_request.set_page_size(2);
  v1::ListCommandsResponse commands_page;
  ASSERT_RPC_OK(ListCommands(commands_request, &commands_page));
  const std::string commands_token = commands_page.next_page_token();
  ASSERT_FALSE(commands_token.empty());

  v1::GetConversationRequest conversation_request;
  conversation_request.set_context_id("ctx-0");
  conversation_request.set_page_size(2);
  v1::GetConversationResponse conversation_page;
  ASSERT_RPC_OK(Conversation(conversation_request, &conversation_page));
  const std::string conversation_token = conversation_page.next_page_token();
  ASSERT_FALSE(conversation_token.empty());

  v1::ListContextsResponse contexts_out;
  v1::ListCommandsResponse commands_out;
  v1::GetConversationResponse conversation_out;
  {  // Another listing's token.
    v1::ListContextsRequest r = contexts_request;
    r.set_page_token(commands_token);
    EXPECT_CODE(List(r, &contexts_out), INVALID_ARGUMENT);
    v1::ListCommandsRequest c = commands_request;
    c.set_page_token(contexts_token);
    EXPECT_CODE(ListCommands(c, &commands_out), INVALID_ARGUMENT);
    v1::GetConversationRequest g = conversation_request;
    g.set_page_token(commands_token);
    EXPECT_CODE(Conversation(g, &conversation_out), INVALID_ARGUMENT);
  }
  {  // Other filters.
    v1::ListContextsRequest other_agent = contexts_request;
    other_agent.set_agent("bob");
    other_agent.set_page_token(contexts_token);
    EXPECT_CODE(List(other_agent, &contexts_out), INVALID_ARGUMENT);
    v1::ListContextsRequest other_status = contexts_request;
    other_status.set_status(v1::CONTEXT_STATUS_ACTIVE);
    other_status.set_page_token(contexts_token);
    EXPECT_CODE(List(other_status, &contexts_out), INVALID_ARGUMENT);
    v1::ListCommandsRequest other_context = commands_request;
    other_context.set_context_id("ctx-1");
    other_context.set_page_token(commands_token);
    EXPECT_CODE(ListCommands(other_context, &commands_out), INVALID_ARGUMENT);
    v1::GetConversationRequest other_conversation = conversation_request;
    other_conversation.set_context_id("ctx-1");
    other_conversation.set_page_token(conversation_token);
    EXPECT_CODE(Conversation(other_conversation, &conversation_out), INVALID_ARGUMENT);
    v1::GetConversationRequest other_tail = conversation_request;
    other_tail.set_tail(3);
    other_tail.set_page_token(conversation_token);
    EXPECT_CODE(Conversation(other_tail, &conversation_out), INVALID_ARGUMENT);
  }
  {  // Garbage and negative page sizes.
    v1::ListContextsRequest garbage = contexts_request;
    garbage.set_page_token("definitely not a token");
    EXPECT_CODE(List(garbage, &contexts_out), INVALID_ARGUMENT);
    v1::ListContextsRequest negative;
    negative.set_page_size(-1);
    EXPECT_CODE(List(negative, &contexts_out), INVALID_ARGUMENT);
  }
  {  // The right token with the same filters still works.
    v1::ListContextsRequest next = contexts_request;
    next.set_page_token(contexts_token);
    ASSERT_RPC_OK(List(next, &contexts_out));
    EXPECT_EQ(contexts_out.contexts(0).context_id(), "ctx-2");
  }
}

// --- Commands --------------------------------------------------------------------------------

TEST_F(ServerTest, RecordCommandCountsAndListCommandsPagesInOrder) {
  ASSERT_RPC_OK(Create("ctx"));
  int failed = 0;
  for (int i = 1; i <= 250; ++i) {
    v1::RecordCommandRequest request;
    request.set_context_id("ctx");
    request.set_command(absl::StrCat("step ", i));
    request.set_exit_code(i % 7 == 0 ? 1 : 0);
    request.mutable_duration()->set_seconds(1);
    request.mutable_duration()->set_nanos(500000000);
    request.set_output_digest(absl::StrCat("sha256:", i));
    failed += i % 7 == 0;
    v1::RecordCommandResponse response;
    ASSERT_RPC_OK(Record(request, &response));
    EXPECT_EQ(response.record().seq(), i);
    EXPECT_EQ(response.context().command_count(), i);
    EXPECT_EQ(response.context().failed_commands(), failed);
  }
  TaskContext context;
  ASSERT_RPC_OK(Get("ctx", &context));
  EXPECT_EQ(context.command_count(), 250);
  EXPECT_EQ(context.failed_commands(), failed);
  EXPECT_EQ(context.version(), 251);

  v1::ListCommandsRequest request;
  request.set_context_id("ctx");
  request.set_page_size(100);
  std::vector<int64_t> seqs;
  do {
    v1::ListCommandsResponse page;
    ASSERT_RPC_OK(ListCommands(request, &page));
    for (const v1::CommandRecord& r : page.commands()) {
      seqs.push_back(r.seq());
      EXPECT_EQ(r.command(), absl::StrCat("step ", r.seq()));
      EXPECT_EQ(r.output_digest(), absl::StrCat("sha256:", r.seq()));
      EXPECT_EQ(r.duration().nanos(), 500000000);
    }
    request.set_page_token(page.next_page_token());
  } while (!request.page_token().empty());
  ASSERT_EQ(seqs.size(), 250u);
  for (size_t i = 0; i < seqs.size(); ++i) EXPECT_EQ(seqs[i], static_cast<int64_t>(i + 1));
}

TEST_F(ServerTest, RecordCommandRefusesBadRequests) {
  ASSERT_RPC_OK(Create("ctx"));
  const std::string before = Snapshot("ctx");
  EXPECT_CODE(Record("missing", "ls"), NOT_FOUND);
  EXPECT_CODE(Record("ctx", ""), INVALID_ARGUMENT);
  EXPECT_CODE(Record("ctx", std::string((64 << 10) + 1, 'x')), RESOURCE_EXHAUSTED);
  v1::RecordCommandRequest negative;
  negative.set_context_id("ctx");
  negative.set_command("ls");
  negative.mutable_duration()->set_seconds(-1);
  EXPECT_CODE(Record(negative), INVALID_ARGUMENT);
  v1::RecordCommandRequest unnormalized = negative;
  unnormalized.mutable_duration()->set_seconds(0);
  unnormalized.mutable_duration()->set_nanos(1000000000);
  EXPECT_CODE(Record(unnormalized), INVALID_ARGUMENT);
  v1::RecordCommandRequest digest = negative;
  digest.clear_duration();
  digest.set_output_digest(std::string(4097, 'd'));
  EXPECT_CODE(Record(digest), RESOURCE_EXHAUSTED);
  EXPECT_EQ(Snapshot("ctx"), before);
  EXPECT_EQ(Snapshot("missing").find("get:5:"), 0u);
}

TEST_F(ServerTest, SixtyFourClientsRecordingAtOnceLoseNothing) {
  ASSERT_RPC_OK(Create("hot"));
  constexpr int kClients = 64;
  constexpr int kCallsPerClient = 5;
  absl::Barrier start(kClients);
  std::atomic<int> failed_calls{0};
  std::vector<std::string> errors(kClients);
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      // A channel (and so a connection) of its own per client.
      grpc::ChannelArguments args;
      args.SetInt("coordtest.client", i);
      auto channel = grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", server_->port()),
                                               grpc::InsecureChannelCredentials(), args);
      auto stub = ContextService::NewStub(channel);
      start.Block();
      for (int k = 0; k < kCallsPerClient; ++k) {
        v1::RecordCommandRequest request;
        request.set_context_id("hot");
        request.set_command(absl::StrCat("client ", i, " call ", k));
        request.set_exit_code(k == 0 ? 1 : 0);
        v1::RecordCommandResponse response;
        grpc::Status s = WithDeadline(
            [&](grpc::ClientContext* c) { return stub->RecordCommand(c, request, &response); });
        if (!s.ok()) {
          ++failed_calls;
          errors[i] = Describe(s);
        }
      }
    });
  }
  for (std::thread& t : clients) t.join();
  for (const std::string& e : errors) EXPECT_EQ(e, "");
  ASSERT_EQ(failed_calls.load(), 0);

  TaskContext context;
  ASSERT_RPC_OK(Get("hot", &context));
  EXPECT_EQ(context.command_count(), kClients * kCallsPerClient);
  EXPECT_EQ(context.failed_commands(), kClients);
  EXPECT_EQ(context.version(), 1 + kClients * kCallsPerClient);

  // Every call has its own record, numbered 1..N without gaps or repeats.
  v1::ListCommandsRequest request;
  request.set_context_id("hot");
  request.set_page_size(1000);
  v1::ListCommandsResponse listed;
  ASSERT_RPC_OK(ListCommands(request, &listed));
  ASSERT_EQ(listed.commands_size(), kClients * kCallsPerClient);
  std::set<std::string> commands;
  for (int i = 0; i < listed.commands_size(); ++i) {
    EXPECT_EQ(listed.commands(i).seq(), i + 1);
    commands.insert(listed.commands(i).command());
  }
  EXPECT_EQ(commands.size(), static_cast<size_t>(kClients * kCallsPerClient));
}

// --- Conversations ---------------------------------------------------------------------------

TEST_F(ServerTest, AppendCountsStepsAndTokensAndTailReadsTheEnd) {
  int64_t tokens = 0;
  for (int i = 1; i <= 10; ++i) {
    v1::AppendMessageResponse response;
    ASSERT_RPC_OK(Append("ctx", absl::StrCat("message ", i), i, &response));
    tokens += i;
    EXPECT_EQ(response.step_count(), i);  // AGENT messages: each is a step
    EXPECT_EQ(response.message_count(), i);
    EXPECT_EQ(response.total_tokens(), tokens);
    EXPECT_EQ(response.message().seq(), i);
  }
  v1::GetConversationRequest tail;
  tail.set_context_id("ctx");
  tail.set_tail(3);
  v1::GetConversationResponse response;
  ASSERT_RPC_OK(Conversation(tail, &response));
  ASSERT_EQ(response.messages_size(), 3);
  EXPECT_EQ(response.messages(0).text(), "message 8");
  EXPECT_EQ(response.messages(2).text(), "message 10");
  EXPECT_EQ(response.step_count(), 10);
  EXPECT_EQ(response.total_tokens(), tokens);

  tail.set_tail(1000);  // more than there are: everything
  ASSERT_RPC_OK(Conversation(tail, &response));
  EXPECT_EQ(response.messages_size(), 10);

  v1::GetConversationRequest paged;
  paged.set_context_id("ctx");
  paged.set_page_size(4);
  std::vector<std::string> texts;
  do {
    v1::GetConversationResponse page;
    ASSERT_RPC_OK(Conversation(paged, &page));
    for (const auto& m : page.messages()) texts.push_back(m.text());
    paged.set_page_token(page.next_page_token());
  } while (!paged.page_token().empty());
  ASSERT_EQ(texts.size(), 10u);
  EXPECT_EQ(texts.front(), "message 1");
  EXPECT_EQ(texts.back(), "message 10");
}

TEST_F(ServerTest, ConversationRefusesBadRequests) {
  ASSERT_RPC_OK(Append("ctx", "hello", 3));
  const std::string before = Snapshot("ctx");
  v1::AppendMessageRequest request;
  request.set_context_id("ctx");
  request.set_text("x");
  request.set_role(v1::ROLE_UNSPECIFIED);
  EXPECT_CODE(Append(request), INVALID_ARGUMENT);
  request.set_role(static_cast<v1::Role>(99));
  EXPECT_CODE(Append(request), INVALID_ARGUMENT);
  request.set_role(v1::ROLE_USER);
  request.set_tokens(-1);
  EXPECT_CODE(Append(request), INVALID_ARGUMENT);
  request.set_tokens(0);
  request.set_text(std::string((1 << 20) + 1, 'x'));
  EXPECT_CODE(Append(request), RESOURCE_EXHAUSTED);
  EXPECT_EQ(Snapshot("ctx"), before);

  v1::GetConversationRequest read;
  read.set_context_id("ctx");
  read.set_tail(-1);
  v1::GetConversationResponse response;
  EXPECT_CODE(Conversation(read, &response), INVALID_ARGUMENT);
  read.set_tail(0);
  read.set_page_size(-5);
  EXPECT_CODE(Conversation(read, &response), INVALID_ARGUMENT);
  read.set_page_size(0);
  read.set_context_id("never-spoke");
  EXPECT_CODE(Conversation(read, &response), NOT_FOUND);
}

// --- Pages fit a client's default 4 MiB receive limit ----------------------------------------

// Large records must not make a page (at its default size) larger than a default client can
// receive: the page ends early with a next_page_token instead.
TEST_F(ServerTest, PagesOfLargeRecordsFitTheDefaultClientLimit) {
  constexpr int kMessages = 6;
  const std::string megabyte(1 << 20, 'm');  // the largest message allowed
  for (int i = 0; i < kMessages; ++i) ASSERT_RPC_OK(Append("big", megabyte));
  v1::GetConversationRequest read;
  read.set_context_id("big");
  int messages = 0;
  int pages = 0;
  do {
    v1::GetConversationResponse page;
    ASSERT_RPC_OK(Conversation(read, &page));
    EXPECT_GT(page.messages_size(), 0);
    messages += page.messages_size();
    read.set_page_token(page.next_page_token());
    ASSERT_LT(++pages, 100);
  } while (!read.page_token().empty());
  EXPECT_EQ(messages, kMessages);

  ASSERT_RPC_OK(Create("big"));
  const std::string command(64 << 10, 'c');  // the largest command allowed
  for (int i = 0; i < 100; ++i) ASSERT_RPC_OK(Record("big", command));
  v1::ListCommandsRequest list;
  list.set_context_id("big");
  int commands = 0;
  pages = 0;
  do {
    v1::ListCommandsResponse page;
    ASSERT_RPC_OK(ListCommands(list, &page));
    EXPECT_GT(page.commands_size(), 0);
    commands += page.commands_size();
    list.set_page_token(page.next_page_token());
    ASSERT_LT(++pages, 100);
  } while (!list.page_token().empty());
  EXPECT_EQ(commands, 100);

  for (int c = 0; c < 20; ++c) {
    TaskContext context;
    context.set_context_id(absl::StrCat("labelled-", c));
    context.set_agent("labeller");
    for (int l = 0; l < 64; ++l) {
      (*context.mutable_labels())[absl::StrCat("label", l)] = std::string(4096, 'v');
    }
    ASSERT_RPC_OK(Create(context));
  }
  for (const std::string& agent : {std::string(), std::string("labeller")}) {
    v1::ListContextsRequest contexts;
    contexts.set_agent(agent);
    int listed = 0;
    pages = 0;
    do {
      v1::ListContextsResponse page;
      ASSERT_RPC_OK(List(contexts, &page));
      EXPECT_GT(page.contexts_size(), 0);
      listed += page.contexts_size();
      contexts.set_page_token(page.next_page_token());
      ASSERT_LT(++pages, 100);
    } while (!contexts.page_token().empty());
    EXPECT_EQ(listed, agent.empty() ? 21 : 20) << "agent=" << agent;
  }
}

// --- Bad input on every entry point ----------------------------------------------------------

struct BadId {
  std::string name;
  std::string id;
};

std::vector<BadId> BadIds() {
  return {{"empty", ""},
          {"257 bytes", std::string(257, 'x')},
          {"newline", "a\nb"},
          {"NUL", std::string("a\0b", 3)},
          {"escape", "\x1b[2J"}};
}

TEST_F(ServerTest, BadIdsAreRefusedByEveryRpcAndChangeNothing) {
  ASSERT_RPC_OK(Create("existing", "agent"));
  ASSERT_RPC_OK(Append("existing", "hi"));
  const std::string before = Snapshot("existing");
  for (const BadId& bad : BadIds()) {
    SCOPED_TRACE(bad.name);
    TaskContext context;
    context.set_context_id(bad.id);
    EXPECT_CODE(Create(context), INVALID_ARGUMENT);
    TaskContext out;
    EXPECT_CODE(Get(bad.id, &out), INVALID_ARGUMENT);
    v1::UpdateContextRequest update;
    update.mutable_context()->set_context_id(bad.id);
    update.mutable_context()->set_version(1);
    EXPECT_CODE(Update(update), INVALID_ARGUMENT);
    EXPECT_CODE(Delete(bad.id), INVALID_ARGUMENT);
    EXPECT_CODE(Record(bad.id, "ls"), INVALID_ARGUMENT);
    v1::ListCommandsRequest commands;
    commands.set_context_id(bad.id);
    v1::ListCommandsResponse commands_out;
    EXPECT_CODE(ListCommands(commands, &commands_out), INVALID_ARGUMENT);
    EXPECT_CODE(Append(bad.id, "text"), INVALID_ARGUMENT);
    v1::GetConversationRequest conversation;
    conversation.set_context_id(bad.id);
    v1::GetConversationResponse conversation_out;
    EXPECT_CODE(Conversation(conversation, &conversation_out), INVALID_ARGUMENT);

    // Ids inside other fields: agent (also a filter), external_task_id, label keys.
    if (!bad.id.empty()) {
      TaskContext bad_agent;
      bad_agent.set_context_id("fresh");
      bad_agent.set_agent(bad.id);
      EXPECT_CODE(Create(bad_agent), INVALID_ARGUMENT);
      v1::ListContextsRequest list;
      list.set_agent(bad.id);
      v1::ListContextsResponse list_out;
      EXPECT_CODE(List(list, &list_out), INVALID_ARGUMENT);
      TaskContext bad_task;
      bad_task.set_context_id("fresh");
      bad_task.set_external_task_id(bad.id);
      EXPECT_CODE(Create(bad_task), INVALID_ARGUMENT);
    }
    TaskContext bad_label;
    bad_label.set_context_id("fresh");
    (*bad_label.mutable_labels())[bad.id] = "v";
    EXPECT_CODE(Create(bad_label), INVALID_ARGUMENT);
  }
  std::vector<TaskContext> all = AllContexts();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].context_id(), "existing");
  EXPECT_EQ(Snapshot("existing"), before);
}

TEST_F(ServerTest, InvalidUtf8IsRefusedClearlyAndChangesNothing) {
  // The C++ client sends a proto3 string that is not UTF-8 (it only logs); the server must
  // answer with a clear INVALID_ARGUMENT, whichever layer notices.
  ASSERT_RPC_OK(Create("existing"));
  const std::string before = Snapshot("existing");
  const std::string bad("ctx-\xff\xfe", 6);
  TaskContext context;
  context.set_context_id(bad);
  grpc::Status s = Create(context);
  EXPECT_CODE(s, INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("UTF-8"));
  TaskContext out;
  EXPECT_CODE(Get(bad, &out), INVALID_ARGUMENT);
  EXPECT_CODE(Record(bad, "ls"), INVALID_ARGUMENT);
  EXPECT_CODE(Record("existing", bad), INVALID_ARGUMENT);
  EXPECT_CODE(Append(bad, "text"), INVALID_ARGUMENT);
  EXPECT_CODE(Append("existing", bad), INVALID_ARGUMENT);
  TaskContext label;
  label.set_context_id("fresh");
  (*label.mutable_labels())["k"] = bad;
  EXPECT_CODE(Create(label), INVALID_ARGUMENT);
  EXPECT_EQ(AllContexts().size(), 1u);
  EXPECT_EQ(Snapshot("existing"), before);
}

TEST_F(ServerTest, UnknownEnumValuesAreRefused) {
  TaskContext created;
  ASSERT_RPC_OK(Create("existing", "", &created));
  const std::string before = Snapshot("existing");
  TaskContext context;
  context.set_context_id("fresh");
  context.set_status(static_cast<v1::ContextStatus>(99));
  grpc::Status s = Create(context);
  EXPECT_CODE(s, INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("99"));

  v1::UpdateContextRequest update;
  *update.mutable_context() = created;
  update.mutable_context()->set_status(static_cast<v1::ContextStatus>(99));
  update.mutable_update_mask()->add_paths("status");
  EXPECT_CODE(Update(update), INVALID_ARGUMENT);

  v1::ListContextsRequest list;
  list.set_status(static_cast<v1::ContextStatus>(99));
  v1::ListContextsResponse listed;
  EXPECT_CODE(List(list, &listed), INVALID_ARGUMENT);

  v1::AppendMessageRequest append;
  append.set_context_id("existing");
  append.set_role(static_cast<v1::Role>(99));
  EXPECT_CODE(Append(append), INVALID_ARGUMENT);

  EXPECT_EQ(AllContexts().size(), 1u);
  EXPECT_EQ(Snapshot("existing"), before);
}

TEST_F(ServerTest, OversizedFieldsAndTooManyLabelsAreRefused) {
  TaskContext created;
  ASSERT_RPC_OK(Create("existing", "", &created));
  const std::string before = Snapshot("existing");

  TaskContext labels;
  labels.set_context_id("fresh");
  for (int i = 0; i < 65; ++i) (*labels.mutable_labels())[absl::StrCat("label", i)] = "v";
  grpc::Status s = Create(labels);
  EXPECT_CODE(s, RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(), HasSubstr("labels"));
  labels.mutable_labels()->erase("label0");
  ASSERT_RPC_OK(Create(labels));  // exactly the limit is fine
  ASSERT_RPC_OK(Delete("fresh"));

  v1::UpdateContextRequest update;
  *update.mutable_context() = created;
  for (int i = 0; i < 65; ++i) {
    (*update.mutable_context()->mutable_labels())[absl::StrCat("label", i)] = "v";
  }
  EXPECT_CODE(Update(update), RESOURCE_EXHAUSTED);

  TaskContext long_value;
  long_value.set_context_id("fresh");
  (*long_value.mutable_labels())["k"] = std::string(4097, 'v');
  EXPECT_CODE(Create(long_value), RESOURCE_EXHAUSTED);

  TaskContext long_field;
  long_field.set_context_id("fresh");
  long_field.set_workspace_dir(std::string(4097, 'w'));
  EXPECT_CODE(Create(long_field), RESOURCE_EXHAUSTED);
  long_field.clear_workspace_dir();
  long_field.set_environment_handle(std::string(4097, 'e'));
  EXPECT_CODE(Create(long_field), RESOURCE_EXHAUSTED);

  EXPECT_EQ(AllContexts().size(), 1u);
  EXPECT_EQ(Snapshot("existing"), before);
}

TEST_F(ServerTest, DataSurvivesARestartOnTheSameDirectory) {
  ASSERT_RPC_OK(Create("ctx", "green"));
  ASSERT_RPC_OK(Record("ctx", "make test", 2));
  ASSERT_RPC_OK(Append("ctx", "hello", 7));
  const std::string before = Snapshot("ctx");
  StopServer();
  ASSERT_NO_FATAL_FAILURE(StartServer(ServerOptions()));
  EXPECT_EQ(Snapshot("ctx"), before);
}

// --- Server-level limits and start-up failures -----------------------------------------------

// One worker and room for one queued call: a burst of concurrent writes overflows the queue.
// Refused calls get RESOURCE_EXHAUSTED naming the flag and write nothing; the rest are counted.
TEST_F(ServerTest, CallsPastTheQueueBoundAreResourceExhaustedAndChangeNothing) {
  StopServer();
  ServerOptions options;
  options.worker_threads = 1;
  options.max_queued_calls = 1;
  ASSERT_NO_FATAL_FAILURE(StartServer(std::move(options)));
  ASSERT_RPC_OK(Create("busy"));

  constexpr int kCalls = 400;
  absl::Mutex mu;
  int done = 0;
  int ok = 0;
  int refused = 0;
  std::vector<std::string> other;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<v1::RecordCommandRequest> requests(kCalls);
  std::vector<v1::RecordCommandResponse> responses(kCalls);
  for (int i = 0; i < kCalls; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    contexts.back()->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    requests[i].set_context_id("busy");
    requests[i].set_command(absl::StrCat("step ", i));
  }
  for (int i = 0; i < kCalls; ++i) {
    contexts_->async()->RecordCommand(
        contexts[i].get(), &requests[i], &responses[i], [&](grpc::Status status) {
          absl::MutexLock lock(&mu);
          ++done;
          if (status.ok()) {
            ++ok;
          } else if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
                     absl::StrContains(status.error_message(), "--max_queued_calls")) {
            ++refused;
          } else {
            other.push_back(Describe(status));
          }
        });
  }
  {
    absl::MutexLock lock(&mu);
    mu.Await(absl::Condition(
        +[](int* d) { return *d == kCalls; }, &done));
  }
  EXPECT_THAT(other, ::testing::IsEmpty());
  EXPECT_GT(refused, 0);
  EXPECT_GT(ok, 0);
  TaskContext after;
  ASSERT_RPC_OK(Get("busy", &after));
  EXPECT_EQ(after.command_count(), ok);
}

class SmallRequestLimitTest : public ServerTest {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.max_request_bytes = 1024;
    ASSERT_NO_FATAL_FAILURE(StartServer(std::move(options)));
  }
};

TEST_F(SmallRequestLimitTest, RequestsOverTheLimitAreResourceExhaustedAndChangeNothing) {
  ASSERT_RPC_OK(Create("small"));
  const std::string before = Snapshot("small");
  TaskContext big;
  big.set_context_id("big");
  big.set_workspace_dir(std::string(2000, 'w'));
  EXPECT_CODE(Create(big), RESOURCE_EXHAUSTED);
  EXPECT_CODE(Record("small", std::string(2000, 'c')), RESOURCE_EXHAUSTED);
  EXPECT_CODE(Append("small", std::string(2000, 't')), RESOURCE_EXHAUSTED);
  EXPECT_EQ(AllContexts().size(), 1u);
  EXPECT_EQ(Snapshot("small"), before);
  // The server is still fine.
  ASSERT_RPC_OK(Record("small", "ls"));
}

TEST(ServerStartTest, SecondServerOnTheSameDataDirIsRefused) {
  SKIP_ON_ETCD("one process per data directory (replicas share an etcd prefix by design)");
  TempDir dir;
  ServerOptions options = TestServerOptions(dir.path());
  absl::StatusOr<std::unique_ptr<CoordinatorServer>> first = CoordinatorServer::Start(options);
  ASSERT_OK(first);
  absl::StatusOr<std::unique_ptr<CoordinatorServer>> second = CoordinatorServer::Start(options);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(second.status().message()), HasSubstr("in use"));
  // Once the first has shut down, the directory can be used again.
  first->reset();
  EXPECT_OK(CoordinatorServer::Start(options));
}

TEST(ServerStartTest, PortTakenByAnotherServerIsRefused) {
  // Two coordinators on one port would split clients between two databases at random.
  TempDir dir;
  ServerOptions options = TestServerOptions(dir.Sub("first"));
  absl::StatusOr<std::unique_ptr<CoordinatorServer>> first = CoordinatorServer::Start(options);
  ASSERT_OK(first);
  options.listen = absl::StrCat("127.0.0.1:", (*first)->port());
  options.data_dir = dir.Sub("second");
  ASSERT_OK(
      storage::testing::SetTestServerStore(options.data_dir, &options.store_url, &options.etcd));
  absl::StatusOr<std::unique_ptr<CoordinatorServer>> second = CoordinatorServer::Start(options);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable) << second.status();
}

TEST(ServerStartTest, DataDirThatCannotBeCreatedIsRefused) {
  SKIP_ON_ETCD("the data directory is RocksDB's");
  TempDir dir;
  const std::string file = dir.Sub("file");
  std::ofstream(file) << "x";
  ServerOptions options = TestServerOptions(file + "/data");
  absl::StatusOr<std::unique_ptr<CoordinatorServer>> server = CoordinatorServer::Start(options);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kFailedPrecondition) << server.status();
}

TEST(ServerStartTest, UnusableListenAddressIsRefused) {
  TempDir dir;
  ServerOptions options = TestServerOptions(dir.path());
  // A loopback host (without a token file anything else is refused before the database is
  // opened), with a port that cannot be bound.
  options.listen = "127.0.0.1:notaport";
  absl::StatusOr<std::unique_ptr<CoordinatorServer>> server = CoordinatorServer::Start(options);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kUnavailable) << server.status();
  options.listen = "not an address";
  EXPECT_EQ(CoordinatorServer::Start(options).status().code(),
            absl::StatusCode::kFailedPrecondition);
  // The database it opened was closed again: another server can use the directory.
  options.listen = "127.0.0.1:0";
  EXPECT_OK(CoordinatorServer::Start(options));
}

TEST(ServerStartTest, MalformedDefaultAgentIsRefusedAndAnUnregisteredOneIsNot) {
  TempDir dir;
  ServerOptions options = TestServerOptions(dir.path());
  for (const std::string& name : {std::string(257, 'a'), std::string("a\tb")}) {
    options.default_agent = name;
    absl::StatusOr<std::unique_ptr<CoordinatorServer>> server = CoordinatorServer::Start(options);
    EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument) << server.status();
    EXPECT_THAT(std::string(server.status().message()), HasSubstr("--default_agent"));
  }
  // Whether it is registered is a question for each call: it may register later.
  options.default_agent = "registers-later";
  EXPECT_OK(CoordinatorServer::Start(options));
}

}  // namespace
}  // namespace coordinator
