// Authentication and authorization against the real coordinator binary (docs/security.md):
// every role boundary tried with no token, a malformed, unknown or expired token, the wrong
// principal's token and the right one; agents kept to their own contexts; the start-up rules
// (no token file means loopback only; a malformed token file is refused); the agent card's
// security scheme; coordctl with --auth-token-file.
#include <sys/stat.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "a2a/v1/a2a.grpc.pb.h"
#include "a2a_http/http.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/grpc_client.h"
#include "common/grpc_status.h"
#include "coordinator/v1/agent_registry.grpc.pb.h"
#include "coordinator/v1/auth.pb.h"
#include "coordinator/v1/context.grpc.pb.h"
#include "coordinator/v1/conversation.grpc.pb.h"
#include "coordinator/v1/task_state.grpc.pb.h"
#include "coordinator/v1/work.grpc.pb.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/auth_test_util.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace {

namespace v1 = ::coordinator::v1;
namespace a2apb = ::lf::a2a::v1;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing_util::BinaryPath;
using ::testing_util::CoordinatorProcess;
using ::testing_util::kAdmin;
using ::testing_util::kExpired;
using ::testing_util::kGreen;
using ::testing_util::kPurple;
using ::testing_util::kReader;
using ::testing_util::ProcessResult;
using ::testing_util::RunCoordctl;
using ::testing_util::RunProcess;
using ::testing_util::TempDir;
using ::testing_util::TokenFileJson;
using ::testing_util::WritePrivateFile;

std::string Bearer(const std::string& token) { return absl::StrCat("Bearer ", token); }

// One coordinator with the token file above; calls carry whatever authorization value a test
// gives (empty: none), on one shared channel.
class AuthProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    token_file_ = dir_.Sub("tokens.json");
    WritePrivateFile(token_file_, TokenFileJson());
    absl::StatusOr<std::unique_ptr<CoordinatorProcess>> c =
        CoordinatorProcess::Start(dir_.Sub("data"), {"--token_file=" + token_file_});
    ASSERT_OK(c);
    coordinator_ = *std::move(c);
    channel_ = grpc::CreateChannel(coordinator_->target(), grpc::InsecureChannelCredentials());
    contexts_ = v1::ContextService::NewStub(channel_);
    conversations_ = v1::ConversationService::NewStub(channel_);
    agents_ = v1::AgentRegistry::NewStub(channel_);
    tasks_ = v1::TaskStateService::NewStub(channel_);
    work_ = v1::WorkService::NewStub(channel_);
    a2a_ = a2apb::A2AService::NewStub(channel_);
  }

  std::unique_ptr<grpc::ClientContext> Ctx(const std::string& authorization) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    if (!authorization.empty()) ctx->AddMetadata("authorization", authorization);
    return ctx;
  }

  grpc::Status Create(const std::string& auth, const std::string& id, const std::string& agent,
                      const std::vector<std::string>& parties = {}) {
    v1::CreateContextRequest request;
    request.mutable_context()->set_context_id(id);
    request.mutable_context()->set_agent(agent);
    for (const std::string& p : parties) request.mutable_context()->add_parties(p);
    v1::TaskContext response;
    return contexts_->CreateContext(Ctx(auth).get(), request, &response);
  }
  absl::StatusOr<v1::TaskContext> Get(const std::string& auth, const std::string& id) {
    v1::GetContextRequest request;
    request.set_context_id(id);
    v1::TaskContext response;
    grpc::Status s = contexts_->GetContext(Ctx(auth).get(), request, &response);
    if (!s.ok()) return common::FromGrpcStatus(s);
    return response;
  }
  grpc::Status Update(const std::string& auth, const std::string& id, const std::string& agent,
                      const std::string& label) {
    absl::StatusOr<v1::TaskContext> current = Get(Bearer(kAdmin), id);
    if (!current.ok()) return grpc::Status(grpc::StatusCode::INTERNAL, "setup");
    v1::UpdateContextRequest request;
    *request.mutable_context() = *current;
    request.mutable_context()->set_agent(agent);
    (*request.mutable_context()->mutable_labels())["note"] = label;
    v1::TaskContext response;
    return contexts_->UpdateContext(Ctx(auth).get(), request, &response);
  }
  grpc::Status Delete(const std::string& auth, const std::string& id) {
    v1::DeleteContextRequest request;
    request.set_context_id(id);
    google::protobuf::Empty response;
    return contexts_->DeleteContext(Ctx(auth).get(), request, &response);
  }
  grpc::Status Record(const std::string& auth, const std::string& id, const std::string& command) {
    v1::RecordCommandRequest request;
    request.set_context_id(id);
    request.set_command(command);
    v1::RecordCommandResponse response;
    return contexts_->RecordCommand(Ctx(auth).get(), request, &response);
  }
  grpc::Status ListCommands(const std::string& auth, const std::string& id) {
    v1::ListCommandsRequest request;
    request.set_context_id(id);
    v1::ListCommandsResponse response;
    return contexts_->ListCommands(Ctx(auth).get(), request, &response);
  }
  absl::StatusOr<std::vector<std::string>> List(const std::string& auth,
                                                const std::string& agent = "") {
    v1::ListContextsRequest request;
    request.set_agent(agent);
    v1::ListContextsResponse response;
    grpc::Status s = contexts_->ListContexts(Ctx(auth).get(), request, &response);
    if (!s.ok()) return common::FromGrpcStatus(s);
    std::vector<std::string> ids;
    for (const v1::TaskContext& c : response.contexts()) ids.push_back(c.context_id());
    return ids;
  }
  grpc::Status Append(const std::string& auth, const std::string& id, const std::string& text) {
    v1::AppendMessageRequest request;
    request.set_context_id(id);
    request.set_role(v1::ROLE_AGENT);
    request.set_text(text);
    v1::AppendMessageResponse response;
    return conversations_->AppendMessage(Ctx(auth).get(), request, &response);
  }
  grpc::Status ReadConversation(const std::string& auth, const std::string& id,
                                v1::GetConversationResponse* response) {
    v1::GetConversationRequest request;
    request.set_context_id(id);
    return conversations_->GetConversation(Ctx(auth).get(), request, response);
  }
  grpc::Status Register(const std::string& auth, const std::string& name) {
    v1::RegisterAgentRequest request;
    request.mutable_agent()->set_name(name);
    request.mutable_agent()->set_endpoint("127.0.0.1:1");
    v1::Agent response;
    return agents_->RegisterAgent(Ctx(auth).get(), request, &response);
  }
  grpc::Status Unregister(const std::string& auth, const std::string& name) {
    v1::DeleteAgentRequest request;
    request.set_name(name);
    google::protobuf::Empty response;
    return agents_->DeleteAgent(Ctx(auth).get(), request, &response);
  }

  TempDir dir_;
  std::string token_file_;
  std::unique_ptr<CoordinatorProcess> coordinator_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::ContextService::Stub> contexts_;
  std::unique_ptr<v1::ConversationService::Stub> conversations_;
  std::unique_ptr<v1::AgentRegistry::Stub> agents_;
  std::unique_ptr<v1::TaskStateService::Stub> tasks_;
  std::unique_ptr<v1::WorkService::Stub> work_;
  std::unique_ptr<a2apb::A2AService::Stub> a2a_;
};

MATCHER_P(HasCode, code, "") {
  *result_listener << "status " << arg.error_code() << ": " << arg.error_message();
  return arg.error_code() == code;
}

TEST_F(AuthProcessTest, WithoutATokenNothingCanBeReadOrWritten) {
  ASSERT_TRUE(Create(Bearer(kAdmin), "secret", "green").ok());
  for (const std::string& auth :
       {std::string(), std::string("Bearer "), std::string(kGreen), std::string("Basic ") + kGreen,
        Bearer("not-a-token-at-all"), Bearer(kExpired), Bearer(std::string(kAdmin) + "0")}) {
    SCOPED_TRACE(auth);
    EXPECT_THAT(Create(auth, "planted", ""), HasCode(grpc::StatusCode::UNAUTHENTICATED));
    EXPECT_EQ(Get(auth, "secret").status().code(), absl::StatusCode::kUnauthenticated);
    EXPECT_EQ(List(auth).status().code(), absl::StatusCode::kUnauthenticated);
    EXPECT_THAT(Record(auth, "secret", "rm -rf /"), HasCode(grpc::StatusCode::UNAUTHENTICATED));
    EXPECT_THAT(Append(auth, "secret", "hi"), HasCode(grpc::StatusCode::UNAUTHENTICATED));
    EXPECT_THAT(Delete(auth, "secret"), HasCode(grpc::StatusCode::UNAUTHENTICATED));
    EXPECT_THAT(Register(auth, "mallory"), HasCode(grpc::StatusCode::UNAUTHENTICATED));
    // Admin-only RPCs are UNAUTHENTICATED too, not PERMISSION_DENIED, without a valid token.
    v1::CleanupTaskRequest cleanup;
    cleanup.set_task_id("abcd1234");
    v1::CleanupTaskResponse cleaned;
    EXPECT_THAT(tasks_->CleanupTask(Ctx(auth).get(), cleanup, &cleaned),
                HasCode(grpc::StatusCode::UNAUTHENTICATED));
    // The A2A gateway and the streams.
    a2apb::SendMessageRequest send;
    send.set_tenant("green");
    send.mutable_message()->set_message_id("m1");
    send.mutable_message()->set_role(a2apb::ROLE_USER);
    send.mutable_message()->add_parts()->set_text("hello");
    a2apb::SendMessageResponse sent;
    EXPECT_THAT(a2a_->SendMessage(Ctx(auth).get(), send, &sent),
                HasCode(grpc::StatusCode::UNAUTHENTICATED));
    {
      auto ctx = Ctx(auth);
      auto stream = a2a_->SendStreamingMessage(ctx.get(), send);
      a2apb::StreamResponse event;
      EXPECT_FALSE(stream->Read(&event));
      EXPECT_THAT(stream->Finish(), HasCode(grpc::StatusCode::UNAUTHENTICATED));
    }
    {
      auto ctx = Ctx(auth);
      v1::WatchRunRequest watch;
      watch.set_run_id("run-1");
      auto stream = work_->WatchRun(ctx.get(), watch);
      v1::RunEvent event;
      EXPECT_FALSE(stream->Read(&event));
      EXPECT_THAT(stream->Finish(), HasCode(grpc::StatusCode::UNAUTHENTICATED));
    }
  }
  // Clear messages, without the token.
  grpc::Status none = Create("", "planted", "");
  EXPECT_THAT(none.error_message(), HasSubstr("authorization: Bearer <token>"));
  EXPECT_THAT(Create(Bearer(kExpired), "planted", "").error_message(), HasSubstr("expired"));
  EXPECT_THAT(Create(Bearer("not-a-token-at-all"), "planted", "").error_message(),
              HasSubstr("not known"));
  EXPECT_THAT(Create(kGreen, "planted", "").error_message(), HasSubstr("Bearer <token>"));
  EXPECT_THAT(Create("Bearer ", "planted", "").error_message(), HasSubstr("empty"));

  // Nothing changed.
  EXPECT_EQ(Get(Bearer(kAdmin), "planted").status().code(), absl::StatusCode::kNotFound);
  absl::StatusOr<v1::TaskContext> secret = Get(Bearer(kAdmin), "secret");
  ASSERT_OK(secret);
  EXPECT_EQ(secret->command_count(), 0);
  EXPECT_EQ(secret->version(), 1);
  v1::GetConversationResponse conversation;
  EXPECT_THAT(ReadConversation(Bearer(kAdmin), "secret", &conversation),
              HasCode(grpc::StatusCode::NOT_FOUND));
  v1::GetAgentRequest get_agent;
  get_agent.set_name("mallory");
  v1::Agent agent;
  EXPECT_THAT(agents_->GetAgent(Ctx(Bearer(kAdmin)).get(), get_agent, &agent),
              HasCode(grpc::StatusCode::NOT_FOUND));
  // The log never shows a token.
  for (const char* token : {kAdmin, kGreen, kPurple, kReader, kExpired}) {
    EXPECT_THAT(coordinator_->process().stderr_text(), Not(HasSubstr(token)));
  }
}

// docs/security.md, "Tokens": the file is read again when it changes (and on SIGHUP), a removed
// token is refused from then on and ends the streams opened with it, a new one (minted by
// coordctl) works at once, and a bad new file leaves the tokens in force as they were.
TEST_F(AuthProcessTest, TokensAreReadAgainWithoutARestart) {
  // Bounded polling: the coordinator checks the file every 250 ms; nothing here is timed.
  const auto eventually = [](const std::function<bool()>& done) {
    for (int i = 0; i < 400; ++i) {
      if (done()) return true;
      absl::SleepFor(absl::Milliseconds(50));
    }
    return done();
  };
  // A token minted by coordctl: refused until it is in the file.
  absl::StatusOr<ProcessResult> minted =
      RunProcess(BinaryPath("coordctl"), {"token", "new", "--principal", "newbie"});
  ASSERT_OK(minted);
  ASSERT_EQ(minted->exit_code, 0) << minted->Describe();
  v1::TokenEntry entry;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(minted->out, &entry).ok()) << minted->out;
  const std::string newbie = Bearer(entry.token());
  EXPECT_THAT(Create(newbie, "newbie-1", ""), HasCode(grpc::StatusCode::UNAUTHENTICATED));

  // Green watches a run; then green's token leaves the file and newbie's arrives.
  {
    v1::CreateRunRequest create;
    create.mutable_run()->set_run_id("watched");
    create.mutable_run()->set_kind(v1::RUN_KIND_WORKSTREAMS);
    v1::WorkItem* item = create.add_items();
    item->set_item_id("a");
    item->set_title("a");
    v1::Run run;
    const grpc::Status created = work_->CreateRun(Ctx(Bearer(kAdmin)).get(), create, &run);
    ASSERT_TRUE(created.ok()) << created.error_message();
  }
  std::unique_ptr<grpc::ClientContext> watch_ctx = Ctx(Bearer(kGreen));
  v1::WatchRunRequest watch;
  watch.set_run_id("watched");
  std::unique_ptr<grpc::ClientReader<v1::RunEvent>> watcher =
      work_->WatchRun(watch_ctx.get(), watch);
  v1::RunEvent event;
  ASSERT_TRUE(watcher->Read(&event));  // the snapshot: the stream is open

  std::string without_green = TokenFileJson();
  const std::string green_entry =
      absl::StrCat(R"({"token": ")", kGreen, R"(", "principal": "green", "role": "agent"},)");
  ASSERT_NE(without_green.find(green_entry), std::string::npos);
  without_green.replace(without_green.find(green_entry), green_entry.size(),
                        absl::StrCat(minted->out.substr(0, minted->out.find('\n')), ","));
  WritePrivateFile(token_file_ + ".new", without_green);
  ASSERT_EQ(::rename((token_file_ + ".new").c_str(), token_file_.c_str()), 0);

  while (watcher->Read(&event)) {
  }
  const grpc::Status ended = watcher->Finish();
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::UNAUTHENTICATED) << ended.error_message();
  EXPECT_THAT(ended.error_message(), HasSubstr("revoked"));
  EXPECT_TRUE(eventually([&] { return Create(newbie, "newbie-1", "").ok(); }));
  EXPECT_THAT(Create(Bearer(kGreen), "green-late", ""), HasCode(grpc::StatusCode::UNAUTHENTICATED));
  ASSERT_OK(coordinator_->process().WaitForStderrLine("reloaded", absl::Seconds(10)));

  // A malformed file is refused with a log line; the tokens in force stay.
  WritePrivateFile(token_file_, R"({"tokens": [{"token": "short"}]})");
  ASSERT_OK(coordinator_->process().WaitForStderrLine("not reloaded", absl::Seconds(30)));
  EXPECT_TRUE(Get(newbie, "newbie-1").ok());
  EXPECT_THAT(Create(Bearer(kGreen), "green-late", ""), HasCode(grpc::StatusCode::UNAUTHENTICATED));

  // SIGHUP reads the file again (and no longer ends the process): green is back.
  WritePrivateFile(token_file_, TokenFileJson());
  ASSERT_OK(coordinator_->process().Signal(SIGHUP));
  ASSERT_OK(coordinator_->process().WaitForStderrLine("SIGHUP", absl::Seconds(30)));
  EXPECT_TRUE(eventually([&] { return Create(Bearer(kGreen), "green-back", "").ok(); }));
  EXPECT_FALSE(coordinator_->process().ended());
}

TEST_F(AuthProcessTest, HealthNeedsNoToken) {
  auto health = grpc::health::v1::Health::NewStub(channel_);
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  ASSERT_TRUE(health->Check(Ctx("").get(), request, &response).ok());
  EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING);
}

TEST_F(AuthProcessTest, ReaderReadsEverythingAndWritesNothing) {
  ASSERT_TRUE(Create(Bearer(kGreen), "eval-1", "green", {"purple"}).ok());
  ASSERT_TRUE(Record(Bearer(kGreen), "eval-1", "make").ok());
  ASSERT_TRUE(Append(Bearer(kPurple), "eval-1", "execute: make").ok());

  const std::string reader = Bearer(kReader);
  ASSERT_OK(Get(reader, "eval-1"));
  absl::StatusOr<std::vector<std::string>> all = List(reader);
  ASSERT_OK(all);
  EXPECT_THAT(*all, ::testing::ElementsAre("eval-1"));
  EXPECT_TRUE(ListCommands(reader, "eval-1").ok());
  v1::GetConversationResponse conversation;
  EXPECT_TRUE(ReadConversation(reader, "eval-1", &conversation).ok());
  EXPECT_EQ(conversation.step_count(), 1);

  EXPECT_THAT(Create(reader, "dash-ctx", ""), HasCode(grpc::StatusCode::PERMISSION_DENIED));
  EXPECT_THAT(Update(reader, "eval-1", "green", "x"), HasCode(grpc::StatusCode::PERMISSION_DENIED));
  EXPECT_THAT(Record(reader, "eval-1", "ls"), HasCode(grpc::StatusCode::PERMISSION_DENIED));
  EXPECT_THAT(Append(reader, "eval-1", "hi"), HasCode(grpc::StatusCode::PERMISSION_DENIED));
  EXPECT_THAT(Delete(reader, "eval-1"), HasCode(grpc::StatusCode::PERMISSION_DENIED));
  EXPECT_THAT(Register(reader, "dash"), HasCode(grpc::StatusCode::PERMISSION_DENIED));
  grpc::Status denied = Record(reader, "eval-1", "ls");
  EXPECT_THAT(denied.error_message(), HasSubstr("dash"));

  absl::StatusOr<v1::TaskContext> after = Get(Bearer(kAdmin), "eval-1");
  ASSERT_OK(after);
  EXPECT_EQ(after->command_count(), 1);
  EXPECT_EQ(after->version(), 2);
  EXPECT_EQ(Get(Bearer(kAdmin), "dash-ctx").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(AuthProcessTest, AgentsTouchOnlyTheContextsTheyOwnOrTakePartIn) {
  const std::string green = Bearer(kGreen);
  const std::string purple = Bearer(kPurple);
  // The judge's context, with the agent under test as a party; one of each agent's own.
  ASSERT_TRUE(Create(green, "eval-1", "green", {"purple"}).ok());
  ASSERT_TRUE(Create(green, "green-only", "").ok());  // agent defaults to the principal
  ASSERT_TRUE(Create(purple, "purple-only", "purple").ok());
  absl::StatusOr<v1::TaskContext> green_only = Get(green, "green-only");
  ASSERT_OK(green_only);
  EXPECT_EQ(green_only->agent(), "green");

  // Nobody creates a context in someone else's name.
  EXPECT_THAT(Create(green, "forged", "purple"), HasCode(grpc::StatusCode::PERMISSION_DENIED));
  EXPECT_EQ(Get(Bearer(kAdmin), "forged").status().code(), absl::StatusCode::kNotFound);

  // The party reads the judge's context and writes its conversation...
  ASSERT_OK(Get(purple, "eval-1"));
  EXPECT_TRUE(ListCommands(purple, "eval-1").ok());
  EXPECT_TRUE(Append(purple, "eval-1", "execute: ls").ok());
  // ...but cannot forge the judge's command records, change or delete the context.
  EXPECT_THAT(Record(purple, "eval-1", "echo forged"),
              HasCode(grpc::StatusCode::PERMISSION_DENIED));
  EXPECT_THAT(Update(purple, "eval-1", "green", "forged"),
              HasCode(grpc::StatusCode::PERMISSION_DENIED));
  EXPECT_THAT(Update(purple, "eval-1", "purple", "taken"),
              HasCode(grpc::StatusCode::PERMISSION_DENIED));
  EXPECT_THAT(Delete(purple, "eval-1"), HasCode(grpc::StatusCode::PERMISSION_DENIED));
  // The judge records commands but cannot rewrite the conversation of the agent under test,
  // nor hand its context to someone else.
  EXPECT_TRUE(Record(green, "eval-1", "ls").ok());
  EXPECT_THAT(Append(green, "eval-1", "observation: forged"),
              HasCode(grpc::StatusCode::PERMISSION_DENIED));
  EXPECT_THAT(Update(green, "eval-1", "purple", "handed over"),
              HasCode(grpc::StatusCode::PERMISSION_DENIED));
  EXPECT_TRUE(Update(green, "eval-1", "green", "phase 2").ok());

  // Neither reaches the other's own context.
  EXPECT_EQ(Get(purple, "green-only").status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(ListCommands(purple, "green-only"), HasCode(grpc::StatusCode::PERMISSION_DENIED));
  EXPECT_THAT(Append(purple, "green-only", "hi"), HasCode(grpc::StatusCode::PERMISSION_DENIED));
  EXPECT_THAT(Record(purple, "green-only", "ls"), HasCode(grpc::StatusCode::PERMISSION_DENIED));
  EXPECT_THAT(Delete(purple, "green-only"), HasCode(grpc::StatusCode::PERMISSION_DENIED));
  EXPECT_EQ(Get(green, "purple-only").status().code(), absl::StatusCode::kPermissionDenied);
  v1::GetConversationResponse conversation;
  EXPECT_THAT(ReadConversation(green, "purple-only", &conversation),
              HasCode(grpc::StatusCode::PERMISSION_DENIED));
  // An agent writes a conversation only under a context (it creates its own first).
  EXPECT_THAT(Append(green, "no-such-context", "hi"), HasCode(grpc::StatusCode::NOT_FOUND));
  // Listings: its own contexts only.
  absl::StatusOr<std::vector<std::string>> mine = List(green);
  ASSERT_OK(mine);
  EXPECT_THAT(*mine, ::testing::ElementsAre("eval-1", "green-only"));
  EXPECT_EQ(List(green, "purple").status().code(), absl::StatusCode::kPermissionDenied);

  // Registrations: only its own name.
  EXPECT_TRUE(Register(green, "green").ok());
  EXPECT_THAT(Register(purple, "green"), HasCode(grpc::StatusCode::PERMISSION_DENIED));
  EXPECT_THAT(Unregister(purple, "green"), HasCode(grpc::StatusCode::PERMISSION_DENIED));
  EXPECT_TRUE(Register(purple, "purple").ok());
  // Admin-only RPCs stay closed to agents.
  v1::RetryRequest retry;
  retry.set_run_id("run-1");
  retry.set_item_id("item-1");
  v1::WorkItem retried;
  EXPECT_THAT(work_->Retry(Ctx(green).get(), retry, &retried),
              HasCode(grpc::StatusCode::PERMISSION_DENIED));

  // What was refused changed nothing.
  absl::StatusOr<v1::TaskContext> eval = Get(Bearer(kAdmin), "eval-1");
  ASSERT_OK(eval);
  EXPECT_EQ(eval->agent(), "green");
  EXPECT_EQ(eval->command_count(), 1);
  EXPECT_EQ(eval->labels().at("note"), "phase 2");
  ASSERT_TRUE(ReadConversation(Bearer(kAdmin), "eval-1", &conversation).ok());
  ASSERT_EQ(conversation.messages_size(), 1);
  EXPECT_EQ(conversation.messages(0).text(), "execute: ls");
  v1::ListCommandsRequest list_commands;
  list_commands.set_context_id("eval-1");
  v1::ListCommandsResponse commands;
  ASSERT_TRUE(contexts_->ListCommands(Ctx(Bearer(kAdmin)).get(), list_commands, &commands).ok());
  ASSERT_EQ(commands.commands_size(), 1);
  EXPECT_EQ(commands.commands(0).command(), "ls");
  ASSERT_OK(Get(Bearer(kAdmin), "green-only"));
  v1::GetAgentRequest get_agent;
  get_agent.set_name("green");
  v1::Agent agent;
  EXPECT_TRUE(agents_->GetAgent(Ctx(Bearer(kAdmin)).get(), get_agent, &agent).ok());
}

TEST_F(AuthProcessTest, AdminDoesEverything) {
  const std::string admin = Bearer(kAdmin);
  ASSERT_TRUE(Create(Bearer(kGreen), "eval-1", "green", {"purple"}).ok());
  EXPECT_TRUE(Create(admin, "for-purple", "purple").ok());
  EXPECT_TRUE(Record(admin, "eval-1", "make").ok());
  EXPECT_TRUE(Append(admin, "eval-1", "note from ops").ok());
  EXPECT_TRUE(Update(admin, "eval-1", "purple", "reassigned").ok());
  EXPECT_TRUE(Register(admin, "green").ok());
  EXPECT_TRUE(Unregister(admin, "green").ok());
  absl::StatusOr<std::vector<std::string>> all = List(admin);
  ASSERT_OK(all);
  EXPECT_THAT(*all, ::testing::ElementsAre("eval-1", "for-purple"));
  v1::InitTaskRequest init;
  init.set_description("admin task");
  v1::InitTaskResponse state;
  ASSERT_TRUE(tasks_->InitTask(Ctx(admin).get(), init, &state).ok());
  v1::CleanupTaskRequest cleanup;
  cleanup.set_task_id(state.task_id());
  v1::CleanupTaskResponse cleaned;
  EXPECT_TRUE(tasks_->CleanupTask(Ctx(admin).get(), cleanup, &cleaned).ok());
  EXPECT_TRUE(Delete(admin, "eval-1").ok());
  EXPECT_EQ(Get(admin, "eval-1").status().code(), absl::StatusCode::kNotFound);
  // The purple agent now owns what the admin handed it.
  EXPECT_TRUE(Record(Bearer(kPurple), "for-purple", "ls").ok());
}

TEST_F(AuthProcessTest, OneConnectionCarriesCallsOfDifferentPrincipals) {
  // The principal is decided per call, not per connection: a reader's call right after an
  // admin's on the same channel is still a reader's.
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(Create(Bearer(kAdmin), absl::StrCat("c", i), "ops").ok());
    EXPECT_THAT(Create(Bearer(kReader), absl::StrCat("r", i), ""),
                HasCode(grpc::StatusCode::PERMISSION_DENIED));
    EXPECT_THAT(Create("", absl::StrCat("n", i), ""), HasCode(grpc::StatusCode::UNAUTHENTICATED));
  }
}

TEST_F(AuthProcessTest, ClientChannelAttachesTheTokenFromAFile) {
  WritePrivateFile(dir_.Sub("green.token"), absl::StrCat("  ", kGreen, "\n"));
  absl::StatusOr<common::ClientCredentialOptions> credentials =
      common::LoadClientCredentials(dir_.Sub("green.token"), "");
  ASSERT_OK(credentials);
  auto stub =
      v1::ContextService::NewStub(common::MakeChannel(coordinator_->target(), *credentials));
  v1::CreateContextRequest request;
  request.mutable_context()->set_context_id("via-channel");
  v1::TaskContext created;
  ASSERT_TRUE(stub->CreateContext(Ctx("").get(), request, &created).ok());
  EXPECT_EQ(created.agent(), "green");

  WritePrivateFile(dir_.Sub("empty.token"), "\n");
  EXPECT_EQ(common::LoadClientCredentials(dir_.Sub("empty.token"), "").status().code(),
            absl::StatusCode::kInvalidArgument);
  WritePrivateFile(dir_.Sub("two.token"), "one two\n");
  EXPECT_EQ(common::LoadClientCredentials(dir_.Sub("two.token"), "").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(common::LoadClientCredentials(dir_.Sub("missing.token"), "").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(common::LoadClientCredentials("", dir_.Sub("green.token")).status().code(),
            absl::StatusCode::kInvalidArgument);  // not a PEM certificate
}

TEST_F(AuthProcessTest, CoordctlWithAnAuthTokenFile) {
  WritePrivateFile(dir_.Sub("admin.token"), kAdmin);
  WritePrivateFile(dir_.Sub("reader.token"), kReader);
  absl::StatusOr<ProcessResult> put =
      RunCoordctl(coordinator_->target(), {"--auth-token-file", dir_.Sub("admin.token"), "context",
                                           "put", "eval-9", "--agent", "green"});
  ASSERT_OK(put);
  EXPECT_EQ(put->exit_code, 0) << put->Describe();
  absl::StatusOr<ProcessResult> get =
      RunCoordctl(coordinator_->target(),
                  {"--auth-token-file=" + dir_.Sub("reader.token"), "context", "get", "eval-9"});
  ASSERT_OK(get);
  EXPECT_EQ(get->exit_code, 0) << get->Describe();
  EXPECT_THAT(get->out, HasSubstr("green"));
  absl::StatusOr<ProcessResult> refused =
      RunCoordctl(coordinator_->target(),
                  {"--auth-token-file", dir_.Sub("reader.token"), "context", "rm", "eval-9"});
  ASSERT_OK(refused);
  EXPECT_EQ(refused->exit_code, 3) << refused->Describe();
  EXPECT_THAT(refused->err, HasSubstr("PERMISSION_DENIED"));
  absl::StatusOr<ProcessResult> anonymous =
      RunCoordctl(coordinator_->target(), {"context", "get", "eval-9"});
  ASSERT_OK(anonymous);
  EXPECT_EQ(anonymous->exit_code, 3) << anonymous->Describe();
  EXPECT_THAT(anonymous->err, HasSubstr("UNAUTHENTICATED"));
  absl::StatusOr<ProcessResult> missing =
      RunCoordctl(coordinator_->target(), {"--auth-token-file", dir_.Sub("none.token"), "health"});
  ASSERT_OK(missing);
  EXPECT_EQ(missing->exit_code, 2) << missing->Describe();
  EXPECT_THAT(missing->err, HasSubstr("none.token"));
  // The health check works without a token.
  absl::StatusOr<ProcessResult> health = RunCoordctl(coordinator_->target(), {"health"});
  ASSERT_OK(health);
  EXPECT_EQ(health->exit_code, 0) << health->Describe();
}

TEST_F(AuthProcessTest, CoordctlNamesTheClaimantsOfARun) {
  WritePrivateFile(dir_.Sub("admin.token"), kAdmin);
  WritePrivateFile(dir_.Sub("green.token"), kGreen);
  WritePrivateFile(dir_.Sub("purple.token"), kPurple);
  WritePrivateFile(dir_.Sub("graph.json"),
                   R"({"feature": "f", "tasks": [{"id": "T-1"}, {"id": "T-2"}]})");
  auto coordctl = [&](const std::string& who, std::vector<std::string> args) {
    args.insert(args.begin(), {"--auth-token-file", dir_.Sub(who + ".token")});
    absl::StatusOr<ProcessResult> result = RunCoordctl(coordinator_->target(), args);
    EXPECT_OK(result);
    return result.ok() ? *result : ProcessResult();
  };
  ProcessResult imported = coordctl("admin", {"run", "import", dir_.Sub("graph.json"), "--run-id",
                                              "run-g", "--claimant", "green"});
  ASSERT_EQ(imported.exit_code, 0) << imported.Describe();
  ProcessResult refused = coordctl("purple", {"run", "claim", "run-g", "--worker", "p1"});
  EXPECT_EQ(refused.exit_code, 3) << refused.Describe();
  EXPECT_THAT(refused.err, HasSubstr("PERMISSION_DENIED"));
  ProcessResult claimed = coordctl("green", {"run", "claim", "run-g", "--worker", "g1"});
  EXPECT_EQ(claimed.exit_code, 0) << claimed.Describe();
  // Without --claimant the run is the creator's: here the admin's, so no agent claims it.
  ProcessResult created =
      coordctl("admin", {"run", "import", dir_.Sub("graph.json"), "--run-id", "run-ops"});
  ASSERT_EQ(created.exit_code, 0) << created.Describe();
  EXPECT_EQ(coordctl("green", {"run", "claim", "run-ops", "--worker", "g1"}).exit_code, 3);
}

TEST_F(AuthProcessTest, AgentCardDeclaresBearerAuth) {
  absl::StatusOr<std::string> line =
      coordinator_->process().WaitForStderrLine("agent card on ", absl::Seconds(30));
  ASSERT_OK(line);
  const size_t at = line->find("127.0.0.1:");
  ASSERT_NE(at, std::string::npos) << *line;
  const std::string rest = line->substr(at + strlen("127.0.0.1:"));
  int port = 0;
  ASSERT_TRUE(absl::SimpleAtoi(rest.substr(0, rest.find('/')), &port)) << *line;
  const std::string scheme = line->find("https://") != std::string::npos ? "https" : "http";
  absl::StatusOr<std::string> json =
      a2a_http::HttpGet(absl::StrCat(scheme, "://127.0.0.1:", port, "/.well-known/agent-card.json"),
                        absl::Seconds(10));
  ASSERT_OK(json);
  // Read as a 1.0 reader does, ignoring what it does not know: without an A2A-Version header
  // the card also carries A2A 0.3's members (docs/a2a.md).
  a2apb::AgentCard card;
  google::protobuf::util::JsonParseOptions lenient;
  lenient.ignore_unknown_fields = true;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(*json, &card, lenient).ok()) << *json;
  ASSERT_EQ(card.security_schemes().count("bearer"), 1u) << *json;
  EXPECT_EQ(card.security_schemes().at("bearer").http_auth_security_scheme().scheme(), "Bearer");
  ASSERT_EQ(card.security_requirements_size(), 1);
  EXPECT_EQ(card.security_requirements(0).schemes().count("bearer"), 1u);
  // ...and as a 0.3 reader does: the scheme by its `type`, and `security` (so that 0.3 clients
  // send the token).
  google::protobuf::Struct raw;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(*json, &raw).ok());
  const auto& bearer =
      raw.fields().at("securitySchemes").struct_value().fields().at("bearer").struct_value();
  EXPECT_EQ(bearer.fields().at("type").string_value(), "http") << *json;
  EXPECT_EQ(bearer.fields().at("scheme").string_value(), "Bearer") << *json;
  ASSERT_EQ(raw.fields().count("security"), 1u) << *json;
  EXPECT_EQ(
      raw.fields().at("security").list_value().values(0).struct_value().fields().count("bearer"),
      1u);
  // The card declares no extended card, and the call says so (after authentication).
  EXPECT_FALSE(card.capabilities().extended_agent_card());
  a2apb::GetExtendedAgentCardRequest request;
  a2apb::AgentCard extended;
  EXPECT_EQ(a2a_->GetExtendedAgentCard(Ctx("").get(), request, &extended).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(a2a_->GetExtendedAgentCard(Ctx(Bearer(kReader)).get(), request, &extended).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
}

TEST_F(AuthProcessTest, AnEvaluationRunsWithEveryProcessOnItsOwnToken) {
  // green and purple present their own tokens; the judge's context names purple as a party, so
  // purple writes the conversation and green records the commands.
  WritePrivateFile(dir_.Sub("green.token"), kGreen);
  WritePrivateFile(dir_.Sub("purple.token"), kPurple);
  WritePrivateFile(dir_.Sub("admin.token"), kAdmin);
  const std::string tasks = std::string(COORD_SOURCE_DIR) + "/examples/tasks";
  auto start = [&](const std::string& binary, std::vector<std::string> args) {
    args.push_back("--coordinator=" + coordinator_->target());
    absl::StatusOr<std::unique_ptr<testing_util::Process>> p =
        testing_util::Process::Start(BinaryPath(binary), args);
    EXPECT_OK(p);
    if (!p.ok()) return std::unique_ptr<testing_util::Process>();
    EXPECT_OK((*p)->WaitForStderrLine("registered with the coordinator", absl::Seconds(60)));
    return *std::move(p);
  };
  std::unique_ptr<testing_util::Process> green =
      start("green_agent", {"--auth_token_file=" + dir_.Sub("green.token"), "--tasks_dir=" + tasks,
                            "--workspaces_dir=" + dir_.Sub("ws")});
  std::unique_ptr<testing_util::Process> purple =
      start("purple_agent",
            {"--auth_token_file=" + dir_.Sub("purple.token"), "--policy=script:" + tasks});
  ASSERT_NE(green, nullptr);
  ASSERT_NE(purple, nullptr);
  absl::StatusOr<ProcessResult> sent =
      RunCoordctl(coordinator_->target(), {"--auth-token-file", dir_.Sub("admin.token"), "send",
                                           "green", "Task ID: heap-overflow-record", "--context",
                                           "eval-auth", "--wait", "--for", "120s"});
  ASSERT_OK(sent);
  ASSERT_EQ(sent->exit_code, 0) << sent->Describe() << "\ngreen: " << green->stderr_text()
                                << "\npurple: " << purple->stderr_text();
  absl::StatusOr<v1::TaskContext> context = Get(Bearer(kAdmin), "eval-auth");
  ASSERT_OK(context);
  EXPECT_EQ(context->agent(), "green");
  EXPECT_THAT(context->parties(), ::testing::ElementsAre("purple"));
  EXPECT_EQ(context->status(), v1::CONTEXT_STATUS_COMPLETED);
  EXPECT_GT(context->command_count(), 0);
  v1::GetConversationResponse conversation;
  ASSERT_TRUE(ReadConversation(Bearer(kPurple), "eval-auth", &conversation).ok());
  EXPECT_GT(conversation.step_count(), 0);
  // Neither agent was refused anything along the way.
  EXPECT_THAT(green->stderr_text(), Not(HasSubstr("PERMISSION_DENIED")));
  EXPECT_THAT(purple->stderr_text(), Not(HasSubstr("PERMISSION_DENIED")));
  EXPECT_THAT(green->stderr_text(), Not(HasSubstr("UNAUTHENTICATED")));
  EXPECT_THAT(purple->stderr_text(), Not(HasSubstr("UNAUTHENTICATED")));
}

// The client side of TLS (--tls-ca-file, --tls_ca_file) against the coordinator's TLS port,
// with tokens: the setup for a coordinator that other machines reach.
TEST(AuthTlsTest, ClientsTrustTheRootAndPresentTheirTokensOverTls) {
  TempDir dir;
  absl::StatusOr<ProcessResult> made = RunProcess(
      "/usr/bin/openssl", {"req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                           "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                           "-keyout", dir.Sub("key.pem"), "-out", dir.Sub("cert.pem")});
  ASSERT_OK(made);
  ASSERT_EQ(made->exit_code, 0) << made->Describe();
  WritePrivateFile(dir.Sub("tokens.json"), TokenFileJson());
  WritePrivateFile(dir.Sub("admin.token"), kAdmin);
  WritePrivateFile(dir.Sub("green.token"), kGreen);
  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> c = CoordinatorProcess::Start(
      dir.Sub("data"),
      {"--listen=0.0.0.0:0", "--token_file=" + dir.Sub("tokens.json"),
       "--tls_cert_file=" + dir.Sub("cert.pem"), "--tls_key_file=" + dir.Sub("key.pem")});
  ASSERT_OK(c);
  const std::string target = (*c)->target();
  const std::string ca = "--tls-ca-file=" + dir.Sub("cert.pem");

  absl::StatusOr<ProcessResult> put =
      RunCoordctl(target, {ca, "--auth-token-file", dir.Sub("admin.token"), "context", "put",
                           "over-tls", "--agent", "green"});
  ASSERT_OK(put);
  EXPECT_EQ(put->exit_code, 0) << put->Describe();
  // TLS without a token: refused by authentication.
  absl::StatusOr<ProcessResult> anonymous = RunCoordctl(target, {ca, "context", "get", "over-tls"});
  ASSERT_OK(anonymous);
  EXPECT_EQ(anonymous->exit_code, 3) << anonymous->Describe();
  EXPECT_THAT(anonymous->err, HasSubstr("UNAUTHENTICATED"));
  // A token without TLS: no answer from a TLS-only port.
  absl::StatusOr<ProcessResult> plaintext = RunCoordctl(
      target, {"--timeout", "5s", "--auth-token-file", dir.Sub("admin.token"), "health"});
  ASSERT_OK(plaintext);
  EXPECT_EQ(plaintext->exit_code, 3) << plaintext->Describe();
  absl::StatusOr<ProcessResult> bad_ca =
      RunCoordctl(target, {"--tls-ca-file", dir.Sub("admin.token"), "health"});
  ASSERT_OK(bad_ca);
  EXPECT_EQ(bad_ca->exit_code, 2) << bad_ca->Describe();
  EXPECT_THAT(bad_ca->err, HasSubstr("no PEM certificate"));

  // An agent on the runtime registers over TLS with its own token.
  absl::StatusOr<std::unique_ptr<testing_util::Process>> agent = testing_util::Process::Start(
      BinaryPath("echo_agent"),
      {"--name=green", "--coordinator=" + target, "--tls_ca_file=" + dir.Sub("cert.pem"),
       "--auth_token_file=" + dir.Sub("green.token")});
  ASSERT_OK(agent);
  EXPECT_OK((*agent)->WaitForStderrLine("registered with the coordinator", absl::Seconds(60)));
  absl::StatusOr<ProcessResult> agents =
      RunCoordctl(target, {ca, "--auth-token-file", dir.Sub("green.token"), "agent", "list"});
  ASSERT_OK(agents);
  EXPECT_EQ(agents->exit_code, 0) << agents->Describe();
  EXPECT_THAT(agents->out, HasSubstr("green"));
}

TEST(AuthStartupTest, WithoutATokenFileOnlyLoopbackIsServed) {
  TempDir dir;
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{"--listen=0.0.0.0:0", "--http_listen="},
        std::vector<std::string>{"--listen=[::]:0", "--http_listen="},
        std::vector<std::string>{"--listen=127.0.0.1:0", "--http_listen=0.0.0.0:0"}}) {
    std::vector<std::string> args = {"--data_dir=" + dir.Sub("data")};
    args.insert(args.end(), flags.begin(), flags.end());
    absl::StatusOr<ProcessResult> result =
        RunProcess(BinaryPath("coordinator"), args, absl::Seconds(60));
    ASSERT_OK(result);
    EXPECT_TRUE(result->exited()) << result->Describe();
    EXPECT_EQ(result->exit_code, 1) << result->Describe();
    EXPECT_THAT(result->err, HasSubstr("not a loopback address")) << result->Describe();
    EXPECT_THAT(result->err, HasSubstr("--token_file")) << result->Describe();
    EXPECT_THAT(result->err, Not(HasSubstr("listening on")));
  }
  // On loopback it starts, and says that authentication is off.
  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> local =
      CoordinatorProcess::Start(dir.Sub("data"));
  ASSERT_OK(local);
  absl::StatusOr<std::string> warning =
      (*local)->process().WaitForStderrLine("authentication off", absl::Seconds(30));
  EXPECT_OK(warning);
  absl::StatusOr<ProcessResult> put =
      RunCoordctl((*local)->target(), {"context", "put", "open", "--agent", "green"});
  ASSERT_OK(put);
  EXPECT_EQ(put->exit_code, 0) << put->Describe();
}

TEST(AuthStartupTest, WithATokenFileAnyAddressIsServed) {
  TempDir dir;
  WritePrivateFile(dir.Sub("tokens.json"), TokenFileJson());
  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> c = CoordinatorProcess::Start(
      dir.Sub("data"), {"--listen=0.0.0.0:0", "--token_file=" + dir.Sub("tokens.json")});
  ASSERT_OK(c);
  EXPECT_OK((*c)->process().WaitForStderrLine("authentication on", absl::Seconds(30)));
  auto stub = v1::ContextService::NewStub(
      grpc::CreateChannel((*c)->target(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext anonymous;
  v1::GetContextRequest request;
  request.set_context_id("x");
  v1::TaskContext response;
  EXPECT_THAT(stub->GetContext(&anonymous, request, &response),
              HasCode(grpc::StatusCode::UNAUTHENTICATED));
  grpc::ClientContext admin;
  admin.AddMetadata("authorization", Bearer(kAdmin));
  EXPECT_THAT(stub->GetContext(&admin, request, &response), HasCode(grpc::StatusCode::NOT_FOUND));
}

TEST(AuthStartupTest, MalformedTokenFilesAreRefusedAtStart) {
  TempDir dir;
  const std::string token = R"("token": "abcdefghijklmnopqrstuvwxyz012345")";
  const std::pair<std::string, std::string> cases[] = {
      {"not json", "not a token file"},
      {R"({"tokens": []})", "no tokens"},
      {absl::StrCat(R"({"tokens": [{)", token, R"(, "principal": "a", "role": "root"}]})"),
       "unknown role"},
      {absl::StrCat(R"({"tokens": [{)", token, R"(, "principal": "", "role": "agent"}]})"),
       "principal is empty"},
      {absl::StrCat(R"({"tokens": [{)", token, R"(, "principal": "a", "role": "agent"}, {)", token,
                    R"(, "principal": "b", "role": "agent"}]})"),
       "appears twice"},
      {R"({"tokens": [{"token": "short", "principal": "a", "role": "agent"}]})", "16 to 4096"},
  };
  int i = 0;
  for (const auto& [text, message] : cases) {
    const std::string path = dir.Sub(absl::StrCat("tokens", i++, ".json"));
    WritePrivateFile(path, text);
    absl::StatusOr<ProcessResult> result =
        RunProcess(BinaryPath("coordinator"),
                   {"--listen=127.0.0.1:0", "--http_listen=", "--data_dir=" + dir.Sub("data"),
                    "--token_file=" + path},
                   absl::Seconds(60));
    ASSERT_OK(result);
    EXPECT_EQ(result->exit_code, 1) << result->Describe();
    EXPECT_THAT(result->err, HasSubstr(path)) << result->Describe();
    EXPECT_THAT(result->err, HasSubstr(message)) << result->Describe();
    EXPECT_THAT(result->err, Not(HasSubstr("abcdefghijklmnop"))) << result->Describe();
    EXPECT_THAT(result->err, Not(HasSubstr("listening on")));
  }
  absl::StatusOr<ProcessResult> missing =
      RunProcess(BinaryPath("coordinator"),
                 {"--listen=127.0.0.1:0", "--http_listen=", "--data_dir=" + dir.Sub("data"),
                  "--token_file=" + dir.Sub("missing.json")},
                 absl::Seconds(60));
  ASSERT_OK(missing);
  EXPECT_EQ(missing->exit_code, 1) << missing->Describe();
  EXPECT_THAT(missing->err, HasSubstr("missing.json"));
}

}  // namespace
