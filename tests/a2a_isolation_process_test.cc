// Isolation of A2A tasks between principals (docs/security.md, "A2A tasks"), against the real
// coordinator binary: principals {admin, reader, green, purple, mallory} × every A2A task call ×
// tasks sent by green (to purple), by purple (to green) and by nobody (an admin, to a third
// agent). An agent sees the tasks it sent and those routed to it, and changes only the ones it
// sent; a task it may not see is answered exactly as one that does not exist. The same answers
// over JSON-RPC and HTTP+JSON, which carry the same bearer token into the same service.
#include <sys/stat.h>

#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "a2a/v1/a2a.grpc.pb.h"
#include "a2a_protocol/version.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "coordinator/v1/admin.grpc.pb.h"
#include "coordinator/v1/agent_registry.grpc.pb.h"
#include "coordinator/v1/context.grpc.pb.h"
#include "coordinator/v1/conversation.grpc.pb.h"
#include "coordinator/v1/task_state.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "storage/testing/test_store.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace {

namespace v1 = ::coordinator::v1;
namespace a2apb = ::lf::a2a::v1;
using ::testing::UnorderedElementsAreArray;
using ::testing_util::CoordinatorProcess;
using ::testing_util::TempDir;

// Principal -> token.
const std::map<std::string, std::string>& Tokens() {
  static const auto* tokens = new std::map<std::string, std::string>{
      {"ops", "admin-5f1e2d3c4b5a69788796a5b4"},      {"dash", "reader-0a1b2c3d4e5f60718293a4b5"},
      {"green", "green-a1b2c3d4e5f60718293a4b5c"},    {"purple", "purple-1a2b3c4d5e6f708192a3b4c"},
      {"mallory", "mallory-9f8e7d6c5b4a39281706f5e"},
  };
  return *tokens;
}

std::string IsolationTokenFileJson() {
  std::string entries;
  for (const auto& [principal, token] : Tokens()) {
    const char* role = principal == "ops" ? "admin" : principal == "dash" ? "reader" : "agent";
    absl::StrAppend(&entries, entries.empty() ? "" : ",", R"({"token":")", token,
                    R"(","principal":")", principal, R"(","role":")", role, R"("})");
  }
  return absl::StrCat(R"({"tokens":[)", entries, "]}");
}

class A2AIsolationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(tokens_) << IsolationTokenFileJson();
    ::chmod(tokens_.c_str(), 0600);
    absl::StatusOr<std::unique_ptr<CoordinatorProcess>> c =
        CoordinatorProcess::Start(dir_.Sub("data"), {"--token_file=" + tokens_});
    ASSERT_OK(c);
    coordinator_ = *std::move(c);
    channel_ = grpc::CreateChannel(coordinator_->target(), grpc::InsecureChannelCredentials());
    a2a_ = a2apb::A2AService::NewStub(channel_);
    // The agents tasks are routed to. Nothing listens at their endpoints: messages wait queued,
    // the tasks stay SUBMITTED, which is all these tests need.
    auto registry = v1::AgentRegistry::NewStub(channel_);
    for (const std::string name : {"green", "purple", "other"}) {
      v1::RegisterAgentRequest request;
      request.mutable_agent()->set_name(name);
      request.mutable_agent()->set_endpoint("127.0.0.1:1");
      v1::Agent agent;
      const grpc::Status s = registry->RegisterAgent(Ctx("ops").get(), request, &agent);
      ASSERT_TRUE(s.ok()) << s.error_message();
    }
  }

  std::unique_ptr<grpc::ClientContext> Ctx(const std::string& principal) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    ctx->AddMetadata("authorization", "Bearer " + Tokens().at(principal));
    a2a_protocol::AddVersion(ctx.get());
    return ctx;
  }

  // Sends a new message to `agent` as `principal` (in `context_id` when given); the task's id.
  std::string NewTask(const std::string& principal, const std::string& agent,
                      const std::string& context_id = "") {
    a2apb::SendMessageRequest request;
    request.set_tenant(agent);
    request.mutable_message()->set_context_id(context_id);
    request.mutable_message()->set_message_id(absl::StrCat("m-", ++sent_));
    request.mutable_message()->set_role(a2apb::ROLE_USER);
    request.mutable_message()->add_parts()->set_text("hello");
    request.mutable_configuration()->set_return_immediately(true);
    a2apb::SendMessageResponse response;
    const grpc::Status s = a2a_->SendMessage(Ctx(principal).get(), request, &response);
    EXPECT_TRUE(s.ok()) << principal << ": " << s.error_message();
    return response.task().id();
  }

  grpc::StatusCode GetTask(const std::string& principal, const std::string& id) {
    a2apb::GetTaskRequest request;
    request.set_id(id);
    a2apb::Task task;
    return a2a_->GetTask(Ctx(principal).get(), request, &task).error_code();
  }
  grpc::StatusCode Subscribe(const std::string& principal, const std::string& id) {
    a2apb::SubscribeToTaskRequest request;
    request.set_id(id);
    auto ctx = Ctx(principal);
    auto reader = a2a_->SubscribeToTask(ctx.get(), request);
    a2apb::StreamResponse first;
    if (reader->Read(&first)) {
      ctx->TryCancel();  // the snapshot came: it may read the task
      (void)reader->Finish();
      return grpc::StatusCode::OK;
    }
    return reader->Finish().error_code();
  }
  grpc::StatusCode FollowUp(const std::string& principal, const std::string& id) {
    a2apb::SendMessageRequest request;
    request.mutable_message()->set_message_id(absl::StrCat("m-", ++sent_));
    request.mutable_message()->set_task_id(id);
    request.mutable_message()->set_role(a2apb::ROLE_USER);
    request.mutable_message()->add_parts()->set_text("more");
    request.mutable_configuration()->set_return_immediately(true);
    a2apb::SendMessageResponse response;
    return a2a_->SendMessage(Ctx(principal).get(), request, &response).error_code();
  }
  grpc::StatusCode Cancel(const std::string& principal, const std::string& id) {
    a2apb::CancelTaskRequest request;
    request.set_id(id);
    a2apb::Task task;
    return a2a_->CancelTask(Ctx(principal).get(), request, &task).error_code();
  }
  grpc::StatusCode CreatePush(const std::string& principal, const std::string& id,
                              const std::string& config_id) {
    a2apb::TaskPushNotificationConfig request;
    request.set_task_id(id);
    request.set_id(config_id);
    request.set_url("http://127.0.0.1:1/hook");
    a2apb::TaskPushNotificationConfig config;
    return a2a_->CreateTaskPushNotificationConfig(Ctx(principal).get(), request, &config)
        .error_code();
  }
  grpc::StatusCode GetPush(const std::string& principal, const std::string& id) {
    a2apb::GetTaskPushNotificationConfigRequest request;
    request.set_task_id(id);
    request.set_id("owner-hook");
    a2apb::TaskPushNotificationConfig config;
    return a2a_->GetTaskPushNotificationConfig(Ctx(principal).get(), request, &config).error_code();
  }
  grpc::StatusCode ListPush(const std::string& principal, const std::string& id) {
    a2apb::ListTaskPushNotificationConfigsRequest request;
    request.set_task_id(id);
    a2apb::ListTaskPushNotificationConfigsResponse response;
    return a2a_->ListTaskPushNotificationConfigs(Ctx(principal).get(), request, &response)
        .error_code();
  }
  grpc::StatusCode DeletePush(const std::string& principal, const std::string& id,
                              const std::string& config_id) {
    a2apb::DeleteTaskPushNotificationConfigRequest request;
    request.set_task_id(id);
    request.set_id(config_id);
    google::protobuf::Empty empty;
    return a2a_->DeleteTaskPushNotificationConfig(Ctx(principal).get(), request, &empty)
        .error_code();
  }
  // The ids ListTasks gives `principal`, page by page (`page_size`), and the total_size of
  // every page.
  std::vector<std::string> ListIds(const std::string& principal, int page_size,
                                   std::set<int>* totals) {
    std::vector<std::string> ids;
    a2apb::ListTasksRequest request;
    request.set_page_size(page_size);
    for (int pages = 0; pages < 100; ++pages) {
      a2apb::ListTasksResponse response;
      const grpc::Status s = a2a_->ListTasks(Ctx(principal).get(), request, &response);
      EXPECT_TRUE(s.ok()) << principal << ": " << s.error_message();
      if (!s.ok()) break;
      totals->insert(response.total_size());
      for (const a2apb::Task& t : response.tasks()) ids.push_back(t.id());
      if (response.next_page_token().empty()) break;
      request.set_page_token(response.next_page_token());
    }
    return ids;
  }

  // On etcd: a second replica of the same data set (the same prefix) with the same tokens, and
  // a2a_ pointed at it.
  void CallThroughASecondReplica() {
    absl::StatusOr<std::unique_ptr<CoordinatorProcess>> c =
        CoordinatorProcess::Start(dir_.Sub("data"), {"--token_file=" + tokens_});
    ASSERT_OK(c);
    replica_ = *std::move(c);
    a2a_ = a2apb::A2AService::NewStub(
        grpc::CreateChannel(replica_->target(), grpc::InsecureChannelCredentials()));
  }

  TempDir dir_;
  const std::string tokens_ = dir_.Sub("tokens.json");
  std::unique_ptr<CoordinatorProcess> coordinator_;
  std::unique_ptr<CoordinatorProcess> replica_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<a2apb::A2AService::Stub> a2a_;
  int sent_ = 0;
};

constexpr grpc::StatusCode kOk = grpc::StatusCode::OK;
constexpr grpc::StatusCode kNotFound = grpc::StatusCode::NOT_FOUND;
constexpr grpc::StatusCode kDenied = grpc::StatusCode::PERMISSION_DENIED;

TEST_F(A2AIsolationTest, EachPrincipalSeesAndChangesWhatTheMatrixSays) {
  // owner -> task, each routed to another agent.
  const std::map<std::string, std::string> tasks = {
      {"green", NewTask("green", "purple")},
      {"purple", NewTask("purple", "green")},
      {"nobody", NewTask("ops", "other")},  // an admin's task is nobody's
  };
  // A webhook on each, made by its owner (an admin for nobody's).
  for (const auto& [owner, id] : tasks) {
    ASSERT_EQ(CreatePush(owner == "nobody" ? "ops" : owner, id, "owner-hook"), kOk) << owner;
  }
  // Who sees (reads) and who may change each task, by owner. A reader reads everything and
  // changes nothing (its role has no write call at all: PERMISSION_DENIED before any lookup).
  const std::map<std::string, std::map<std::string, grpc::StatusCode>> read = {
      {"ops", {{"green", kOk}, {"purple", kOk}, {"nobody", kOk}}},
      {"dash", {{"green", kOk}, {"purple", kOk}, {"nobody", kOk}}},
      {"green", {{"green", kOk}, {"purple", kOk}, {"nobody", kNotFound}}},
      {"purple", {{"green", kOk}, {"purple", kOk}, {"nobody", kNotFound}}},
      {"mallory", {{"green", kNotFound}, {"purple", kNotFound}, {"nobody", kNotFound}}},
  };
  const std::map<std::string, std::map<std::string, grpc::StatusCode>> change = {
      {"ops", {{"green", kOk}, {"purple", kOk}, {"nobody", kOk}}},
      {"dash", {{"green", kDenied}, {"purple", kDenied}, {"nobody", kDenied}}},
      {"green", {{"green", kOk}, {"purple", kDenied}, {"nobody", kNotFound}}},
      {"purple", {{"green", kDenied}, {"purple", kOk}, {"nobody", kNotFound}}},
      {"mallory", {{"green", kNotFound}, {"purple", kNotFound}, {"nobody", kNotFound}}},
  };
  for (const auto& [principal, by_owner] : read) {
    for (const auto& [owner, id] : tasks) {
      SCOPED_TRACE(absl::StrCat(principal, " on the task of ", owner));
      const grpc::StatusCode may_read = by_owner.at(owner);
      const grpc::StatusCode may_change = change.at(principal).at(owner);
      EXPECT_EQ(GetTask(principal, id), may_read);
      EXPECT_EQ(Subscribe(principal, id), may_read);
      EXPECT_EQ(GetPush(principal, id), may_read);
      EXPECT_EQ(ListPush(principal, id), may_read);
      const std::string hook = absl::StrCat("hook-", principal);
      EXPECT_EQ(CreatePush(principal, id, hook), may_change);
      EXPECT_EQ(DeletePush(principal, id, hook), may_change);
      EXPECT_EQ(FollowUp(principal, id), may_change);
    }
  }
  // A task another may not see is answered as an unknown one, word for word but the id.
  a2apb::GetTaskRequest unknown;
  unknown.set_id("no-such-task");
  a2apb::Task ignored;
  const grpc::Status missing = a2a_->GetTask(Ctx("mallory").get(), unknown, &ignored);
  a2apb::GetTaskRequest hidden;
  hidden.set_id(tasks.at("green"));
  const grpc::Status unseen = a2a_->GetTask(Ctx("mallory").get(), hidden, &ignored);
  EXPECT_EQ(missing.error_code(), unseen.error_code());
  EXPECT_EQ(missing.error_details().empty(), unseen.error_details().empty());
  std::string expected = missing.error_message();
  const size_t at = expected.find("no-such-task");
  ASSERT_NE(at, std::string::npos) << expected;
  expected.replace(at, std::string("no-such-task").size(), tasks.at("green"));
  EXPECT_EQ(unseen.error_message(), expected);

  // Cancels last (they end the tasks): each principal on a fresh task of each owner.
  for (const auto& [principal, by_owner] : change) {
    for (const auto& [owner, unused] : tasks) {
      SCOPED_TRACE(absl::StrCat(principal, " cancels a task of ", owner));
      const std::string id = owner == "green"    ? NewTask("green", "purple")
                             : owner == "purple" ? NewTask("purple", "green")
                                                 : NewTask("ops", "other");
      EXPECT_EQ(Cancel(principal, id), by_owner.at(owner));
      // Refused: nothing changed.
      if (by_owner.at(owner) != kOk) {
        a2apb::GetTaskRequest request;
        request.set_id(id);
        a2apb::Task task;
        ASSERT_TRUE(a2a_->GetTask(Ctx("ops").get(), request, &task).ok());
        EXPECT_EQ(task.status().state(), a2apb::TASK_STATE_SUBMITTED);
      }
    }
  }
}

TEST_F(A2AIsolationTest, ListTasksCountsAndPagesOnlyWhatTheCallerSees) {
  std::vector<std::string> greens, purples, nobodys;
  for (int i = 0; i < 3; ++i) greens.push_back(NewTask("green", "purple"));
  for (int i = 0; i < 2; ++i) purples.push_back(NewTask("purple", "green"));
  for (int i = 0; i < 2; ++i) nobodys.push_back(NewTask("ops", "other"));
  std::vector<std::string> all = greens;
  all.insert(all.end(), purples.begin(), purples.end());
  std::vector<std::string> everything = all;
  everything.insert(everything.end(), nobodys.begin(), nobodys.end());

  const std::map<std::string, std::vector<std::string>> expected = {
      {"ops", everything}, {"dash", everything}, {"green", all}, {"purple", all}, {"mallory", {}},
  };
  for (const auto& [principal, ids] : expected) {
    SCOPED_TRACE(principal);
    std::set<int> totals;
    // One by one: every page token leads on within what the caller sees.
    EXPECT_THAT(ListIds(principal, 1, &totals), UnorderedElementsAreArray(ids));
    EXPECT_EQ(totals, std::set<int>{static_cast<int>(ids.size())});
  }

  // A page token is the caller's: another principal's use of it is refused.
  a2apb::ListTasksRequest request;
  request.set_page_size(1);
  a2apb::ListTasksResponse page;
  ASSERT_TRUE(a2a_->ListTasks(Ctx("green").get(), request, &page).ok());
  ASSERT_FALSE(page.next_page_token().empty());
  request.set_page_token(page.next_page_token());
  const grpc::Status stolen = a2a_->ListTasks(Ctx("mallory").get(), request, &page);
  EXPECT_EQ(stolen.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << stolen.error_message();
}

// JSON-RPC and HTTP+JSON go through the same service with the same token: the same answers.
TEST_F(A2AIsolationTest, TheJsonBindingsAnswerTheSame) {
  const std::string green_task = NewTask("green", "purple");
  absl::StatusOr<int> port = coordinator_->HttpPort();
  ASSERT_OK(port);
  httplib::Client http("127.0.0.1", *port);
  auto auth = [](const std::string& principal) {
    return httplib::Headers{{"Authorization", "Bearer " + Tokens().at(principal)},
                            {"A2A-Version", "1.0"}};
  };
  const std::string get = absl::StrCat(
      R"({"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":")", green_task, R"("}})");
  for (const std::string principal : {"green", "purple", "mallory"}) {
    SCOPED_TRACE(principal);
    httplib::Result rpc = http.Post("/", auth(principal), get, "application/json");
    ASSERT_TRUE(rpc);
    httplib::Result rest = http.Get(absl::StrCat("/tasks/", green_task), auth(principal));
    ASSERT_TRUE(rest);
    if (principal == "mallory") {
      EXPECT_TRUE(absl::StrContains(rpc->body, "-32001")) << rpc->body;
      EXPECT_EQ(rest->status, 404) << rest->body;
    } else {
      EXPECT_TRUE(absl::StrContains(rpc->body, green_task)) << rpc->body;
      EXPECT_FALSE(absl::StrContains(rpc->body, "error")) << rpc->body;
      EXPECT_EQ(rest->status, 200) << rest->body;
    }
  }
  const std::string list = R"({"jsonrpc":"2.0","id":2,"method":"ListTasks","params":{}})";
  httplib::Result mallory_list = http.Post("/", auth("mallory"), list, "application/json");
  ASSERT_TRUE(mallory_list);
  EXPECT_FALSE(absl::StrContains(mallory_list->body, green_task)) << mallory_list->body;
  httplib::Result rest_list = http.Get("/tasks", auth("purple"));
  ASSERT_TRUE(rest_list);
  EXPECT_TRUE(absl::StrContains(rest_list->body, green_task)) << rest_list->body;
}

// On etcd, every replica applies the rules to every replica's records: tasks made through one
// replica are read, changed and listed through a second, over gRPC and the JSON-RPC binding.
TEST_F(A2AIsolationTest, ASecondReplicaAppliesTheSameRules) {
  if (!storage::testing::UseEtcd()) {
    GTEST_SKIP() << "runs as etcd.A2AIsolationTest.* (two replicas of one data set)";
  }
  const std::string green_task = NewTask("green", "purple");
  const std::string nobody_task = NewTask("ops", "other");
  ASSERT_NO_FATAL_FAILURE(CallThroughASecondReplica());
  EXPECT_EQ(GetTask("green", green_task), kOk);
  EXPECT_EQ(GetTask("purple", green_task), kOk);
  EXPECT_EQ(GetTask("mallory", green_task), kNotFound);
  EXPECT_EQ(GetTask("green", nobody_task), kNotFound);
  EXPECT_EQ(GetTask("dash", nobody_task), kOk);
  EXPECT_EQ(Cancel("purple", green_task), kDenied);
  EXPECT_EQ(Cancel("mallory", green_task), kNotFound);
  EXPECT_EQ(GetPush("mallory", green_task), kNotFound);
  std::set<int> totals;
  EXPECT_TRUE(ListIds("mallory", 10, &totals).empty());
  EXPECT_THAT(ListIds("green", 10, &totals), UnorderedElementsAreArray({green_task}));
  EXPECT_THAT(ListIds("ops", 10, &totals), UnorderedElementsAreArray({green_task, nobody_task}));

  absl::StatusOr<int> port = replica_->HttpPort();
  ASSERT_OK(port);
  httplib::Client http("127.0.0.1", *port);
  const std::string get = absl::StrCat(
      R"({"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":")", green_task, R"("}})");
  for (const std::string principal : {"green", "mallory"}) {
    SCOPED_TRACE(principal);
    httplib::Result rpc =
        http.Post("/",
                  httplib::Headers{{"Authorization", "Bearer " + Tokens().at(principal)},
                                   {"A2A-Version", "1.0"}},
                  get, "application/json");
    ASSERT_TRUE(rpc);
    if (principal == "mallory") {
      EXPECT_TRUE(absl::StrContains(rpc->body, "-32001")) << rpc->body;
    } else {
      EXPECT_TRUE(absl::StrContains(rpc->body, green_task)) << rpc->body;
    }
  }
}

// ExportContext opens to a context's owner and parties (and readers), each seeing the A2A tasks
// and retry tasks it may see; anyone else is refused.
TEST_F(A2AIsolationTest, ExportContextOpensToTheOwnerAndThePartiesWithTheSameChecks) {
  auto contexts = v1::ContextService::NewStub(channel_);
  auto conversations = v1::ConversationService::NewStub(channel_);
  auto retry = v1::TaskStateService::NewStub(channel_);
  auto admin = v1::Admin::NewStub(channel_);
  v1::CreateContextRequest create;
  create.mutable_context()->set_context_id("eval-x");
  create.mutable_context()->add_parties("purple");
  v1::TaskContext created;
  ASSERT_TRUE(contexts->CreateContext(Ctx("green").get(), create, &created).ok());
  v1::RecordCommandRequest command;
  command.set_context_id("eval-x");
  command.set_command("ls");
  v1::RecordCommandResponse recorded;
  ASSERT_TRUE(contexts->RecordCommand(Ctx("green").get(), command, &recorded).ok());
  v1::AppendMessageRequest message;
  message.set_context_id("eval-x");
  message.set_role(v1::ROLE_AGENT);
  message.set_text("execute: ls");
  v1::AppendMessageResponse appended;
  ASSERT_TRUE(conversations->AppendMessage(Ctx("purple").get(), message, &appended).ok());
  // Purple's retry task for the evaluation (the export's default one), owned by purple.
  v1::InitTaskRequest init;
  init.set_description("rca-eval eval-x");
  v1::InitTaskResponse inited;
  ASSERT_TRUE(retry->InitTask(Ctx("purple").get(), init, &inited).ok());
  const std::string green_task = NewTask("green", "purple", "eval-x");
  const std::string other_task = NewTask("ops", "other", "eval-x");

  auto exported = [&](const std::string& principal, v1::ContextExport* out) {
    v1::ExportContextRequest request;
    request.set_context_id("eval-x");
    return admin->ExportContext(Ctx(principal).get(), request, out);
  };
  auto ids = [](const v1::ContextExport& out) {
    std::vector<std::string> a2a;
    for (const auto& t : out.a2a_tasks()) a2a.push_back(t.task().id());
    return a2a;
  };
  for (const std::string principal : {"ops", "dash"}) {
    v1::ContextExport out;
    const grpc::Status s = exported(principal, &out);
    ASSERT_TRUE(s.ok()) << principal << ": " << s.error_message();
    EXPECT_THAT(ids(out), UnorderedElementsAreArray({green_task, other_task})) << principal;
    EXPECT_EQ(out.retry_tasks_size(), 1) << principal;
    EXPECT_EQ(out.commands_size(), 1);
    EXPECT_EQ(out.messages_size(), 1);
  }
  v1::ContextExport green;
  ASSERT_TRUE(exported("green", &green).ok());
  EXPECT_THAT(ids(green), UnorderedElementsAreArray({green_task}));  // not the admin's task
  EXPECT_EQ(green.retry_tasks_size(), 0);                            // purple's, not green's
  EXPECT_EQ(green.commands_size(), 1);
  v1::ContextExport purple;
  ASSERT_TRUE(exported("purple", &purple).ok());
  EXPECT_THAT(ids(purple), UnorderedElementsAreArray({green_task}));  // routed to purple
  EXPECT_EQ(purple.retry_tasks_size(), 1);
  v1::ContextExport none;
  const grpc::Status mallory = exported("mallory", &none);
  EXPECT_EQ(mallory.error_code(), grpc::StatusCode::PERMISSION_DENIED) << mallory.error_message();
  EXPECT_EQ(none.ByteSizeLong(), 0u);
}

}  // namespace
