// Root-cause-analysis evaluations end to end with the real binaries: a coordinator, the green
// agent and the purple agent, each its own process. A whole evaluation with the scripted
// policy; kill -9 of each process in the middle of an evaluation (the score must equal the
// undisturbed run's and command_count must not double count); the OpenAI policy against a
// fake endpoint that fails twice; a looping policy stopped by the breaker. Every wait polls
// with a bound; nothing asserts on timing.
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "a2a/v1/a2a.grpc.pb.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "coordinator/v1/context.grpc.pb.h"
#include "coordinator/v1/conversation.grpc.pb.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "storage/testing/test_store.h"
#include "tests/evaluation_test_util.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace {

namespace a2apb = ::lf::a2a::v1;
namespace v1 = ::coordinator::v1;
using testing_util::BinaryPath;
using testing_util::CoordinatorProcess;
using ::testing_util::kPerfectScore;
using ::testing_util::kProcessWait;
using ::testing_util::kTask;
using testing_util::Process;
using ::testing_util::TasksDir;
using testing_util::TempDir;

// The slow step the restart tests kill a process in.
constexpr char kSlowAction[] = "execute: sleep 2";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The example script with a slow command inserted before the answer is written: 6 commands.
std::string SlowScript(const std::string& dir) {
  google::protobuf::Value script;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(
                  ReadAll(TasksDir() + "/" + kTask + "/purple_script.json"), &script)
                  .ok());
  google::protobuf::Value slow;
  slow.set_string_value(kSlowAction);
  auto* values = script.mutable_list_value()->mutable_values();
  values->Add()->CopyFrom(slow);
  // Move it to index 2.
  for (int i = values->size() - 1; i > 2; --i) values->SwapElements(i, i - 1);
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(script, &json);
  const std::string path = dir + "/slow_script.json";
  std::ofstream(path) << json;
  return path;
}

class EvaluationTest : public ::testing::Test {
 protected:
  void StartCoordinator(int port = 0) {
    std::vector<std::string> args = {"--http_listen=", "--a2a_retry_initial_backoff=50ms",
                                     "--a2a_retry_max_backoff=500ms",
                                     "--a2a_delivery_max_attempts=1000"};
    if (port != 0) args.push_back(absl::StrCat("--listen=127.0.0.1:", port));
    absl::StatusOr<std::unique_ptr<CoordinatorProcess>> c =
        CoordinatorProcess::Start(dir_.Sub("data"), args);
    ASSERT_OK(c);
    coordinator_ = *std::move(c);
    if (channel_ == nullptr) {
      grpc::ChannelArguments ch;
      ch.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
      ch.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
      ch.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
      channel_ =
          grpc::CreateCustomChannel(coordinator_->target(), grpc::InsecureChannelCredentials(), ch);
      a2a_ = a2apb::A2AService::NewStub(channel_);
      contexts_ = v1::ContextService::NewStub(channel_);
      conversations_ = v1::ConversationService::NewStub(channel_);
    }
  }

  std::unique_ptr<Process> StartAgent(const std::string& binary, std::vector<std::string> args) {
    if (coordinator_ == nullptr && agent_target_.empty()) {
      ADD_FAILURE() << "no coordinator to register " << binary << " with";
      return nullptr;
    }
    args.push_back(absl::StrCat("--coordinator=",
                                agent_target_.empty() ? coordinator_->target() : agent_target_));
    absl::StatusOr<std::unique_ptr<Process>> p = Process::Start(BinaryPath(binary), args);
    EXPECT_OK(p);
    if (!p.ok()) return nullptr;
    EXPECT_OK((*p)->WaitForStderrLine("registered with the coordinator", kProcessWait));
    return *std::move(p);
  }

  void StartGreen() {
    green_ = StartAgent(
        "green_agent", {"--tasks_dir=" + TasksDir(), "--workspaces_dir=" + dir_.Sub("workspaces")});
    ASSERT_NE(green_, nullptr);
  }

  void StartPurple(const std::string& policy, std::vector<std::string> extra = {}) {
    extra.push_back("--policy=" + policy);
    purple_policy_ = policy;
    purple_ = StartAgent("purple_agent", extra);
    ASSERT_NE(purple_, nullptr);
  }

  std::unique_ptr<grpc::ClientContext> Ctx() {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return c;
  }

  // Sends a text to an agent through the coordinator; returns the task.
  a2apb::Task Send(const std::string& agent, const std::string& text,
                   const std::string& context_id = "") {
    a2apb::SendMessageRequest request;
    request.set_tenant(agent);
    request.mutable_message()->set_message_id(absl::StrCat("m-", ++sent_));
    request.mutable_message()->set_role(a2apb::ROLE_USER);
    request.mutable_message()->set_context_id(context_id);
    request.mutable_message()->add_parts()->set_text(text);
    request.mutable_configuration()->set_return_immediately(true);
    a2apb::SendMessageResponse response;
    grpc::Status s = a2a_->SendMessage(Ctx().get(), request, &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return response.task();
  }

  // Polls a task until it ends (terminal state); retries while the coordinator is down.
  a2apb::Task WaitEnded(const std::string& task_id, absl::Duration timeout = kProcessWait) {
    const absl::Time deadline = absl::Now() + timeout;
    a2apb::Task task;
    while (absl::Now() < deadline) {
      a2apb::GetTaskRequest request;
      request.set_id(task_id);
      task.Clear();
      grpc::Status s = a2a_->GetTask(Ctx().get(), request, &task);
      if (s.ok()) {
        const a2apb::TaskState st = task.status().state();
        if (st == a2apb::TASK_STATE_COMPLETED || st == a2apb::TASK_STATE_FAILED ||
            st == a2apb::TASK_STATE_REJECTED || st == a2apb::TASK_STATE_CANCELED) {
          return task;
        }
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
    ADD_FAILURE() << "task " << task_id << " did not end; last: " << task.DebugString()
                  << "\ngreen: " << (green_ ? green_->stderr_text() : "")
                  << "\npurple: " << (purple_ ? purple_->stderr_text() : "");
    return task;
  }

  // Waits until the context's conversation ends with `text` (an action just taken).
  bool WaitLastMessage(const std::string& context_id, const std::string& text) {
    const absl::Time deadline = absl::Now() + kProcessWait;
    while (absl::Now() < deadline) {
      v1::GetConversationRequest request;
      request.set_context_id(context_id);
      request.set_tail(1);
      v1::GetConversationResponse response;
      if (conversations_->GetConversation(Ctx().get(), request, &response).ok() &&
          response.messages_size() == 1 && response.messages(0).text() == text) {
        return true;
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
    return false;
  }

  v1::TaskContext GetContext(const std::string& context_id) {
    v1::GetContextRequest request;
    request.set_context_id(context_id);
    v1::TaskContext context;
    grpc::Status s = contexts_->GetContext(Ctx().get(), request, &context);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return context;
  }

  static std::string StatusText(const a2apb::Task& task) {
    std::string text;
    for (const auto& p : task.status().message().parts()) text += p.text();
    return text;
  }

  // Runs one evaluation of kTask; `disturb` is called once the slow step is running.
  void RunEvaluation(const std::function<void(const std::string& context_id)>& disturb) {
    const std::string context_id =
        absl::StrCat("eval-", ::testing::UnitTest::GetInstance()->current_test_info()->name());
    a2apb::Task judge = Send("green", absl::StrCat("Task ID: ", kTask), context_id);
    ASSERT_FALSE(judge.id().empty());
    if (disturb) {
      ASSERT_TRUE(WaitLastMessage(context_id, kSlowAction))
          << "green: " << green_->stderr_text() << "\npurple: " << purple_->stderr_text();
      disturb(context_id);
    }
    a2apb::Task done = WaitEnded(judge.id());
    ASSERT_EQ(done.status().state(), a2apb::TASK_STATE_COMPLETED) << done.DebugString();
    EXPECT_EQ(StatusText(done), kPerfectScore);
    ASSERT_EQ(done.artifacts_size(), 1);
    EXPECT_EQ(done.artifacts(0).name(), "score");
    EXPECT_EQ(done.artifacts(0).parts(0).data().struct_value().fields().at("score").number_value(),
              1.0);
    const v1::TaskContext context = GetContext(context_id);
    EXPECT_EQ(context.status(), v1::CONTEXT_STATUS_COMPLETED);
    EXPECT_EQ(context.command_count(), disturb ? 6 : 5) << "each command is counted once";
    EXPECT_EQ(context.failed_commands(), 0) << Commands(context_id);
    // The purple agent resumed at the stored step: every action of the script appears once,
    // in order, whatever was killed.
    v1::GetConversationRequest request;
    request.set_context_id(context_id);
    v1::GetConversationResponse conversation;
    ASSERT_TRUE(conversations_->GetConversation(Ctx().get(), request, &conversation).ok());
    std::vector<std::string> actions;
    for (const auto& m : conversation.messages()) {
      if (m.role() == v1::ROLE_AGENT) actions.push_back(m.text());
    }
    EXPECT_EQ(actions.size(), disturb ? 7u : 6u) << absl::StrJoin(actions, "\n");
    if (disturb) {
      EXPECT_EQ(actions[2], kSlowAction);
    }
    EXPECT_EQ(actions.back(), "submit");
  }

  std::string Commands(const std::string& context_id) {
    v1::ListCommandsRequest request;
    request.set_context_id(context_id);
    v1::ListCommandsResponse response;
    (void)contexts_->ListCommands(Ctx().get(), request, &response);
    return response.DebugString();
  }

  TempDir dir_;
  std::unique_ptr<CoordinatorProcess> coordinator_;
  std::unique_ptr<Process> green_;
  std::unique_ptr<Process> purple_;
  std::string purple_policy_;
  // The agents' --coordinator when not coordinator_'s address (several replicas).
  std::string agent_target_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<a2apb::A2AService::Stub> a2a_;
  std::unique_ptr<v1::ContextService::Stub> contexts_;
  std::unique_ptr<v1::ConversationService::Stub> conversations_;
  int sent_ = 0;
};

TEST_F(EvaluationTest, ScriptedEvaluationIsScored) {
  ASSERT_NO_FATAL_FAILURE(StartCoordinator());
  ASSERT_NO_FATAL_FAILURE(StartGreen());
  ASSERT_NO_FATAL_FAILURE(StartPurple("script:" + TasksDir()));
  RunEvaluation(nullptr);
}

// Structured logs (common/log.h): every stderr line of the three processes is one JSON object
// with time, level and message, and a line that names the evaluation's context carries it in
// its context_id field, so `grep <context_id>` pulls out the evaluation.
TEST_F(EvaluationTest, LogsAreJsonLinesThatCarryTheContext) {
  ASSERT_NO_FATAL_FAILURE(StartCoordinator());
  ASSERT_NO_FATAL_FAILURE(StartGreen());
  ASSERT_NO_FATAL_FAILURE(StartPurple("script:" + TasksDir()));
  RunEvaluation(nullptr);
  const std::string context_id = "eval-LogsAreJsonLinesThatCarryTheContext";
  const std::vector<std::pair<std::string, std::string>> logs = {
      {"coordinator", coordinator_->process().stderr_text()},
      {"green", green_->stderr_text()},
      {"purple", purple_->stderr_text()}};
  for (const auto& [who, text] : logs) {
    int about_context = 0;
    for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
      google::protobuf::Struct event;
      ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(std::string(line), &event).ok())
          << who << ": " << line;
      for (const char* key : {"time", "level", "message"}) {
        EXPECT_TRUE(event.fields().contains(key)) << who << ": " << key << " missing: " << line;
      }
      const auto field = event.fields().find("context_id");
      const bool tagged =
          field != event.fields().end() && field->second.string_value() == context_id;
      if (tagged) ++about_context;
      if (absl::StrContains(line, context_id)) {
        EXPECT_TRUE(tagged) << who << ": " << line;
      }
    }
    if (who != "coordinator") {
      EXPECT_GE(about_context, 2) << who << ":\n" << text;
    }
  }
}

TEST_F(EvaluationTest, BadInputGetsAClearStatus) {
  ASSERT_NO_FATAL_FAILURE(StartCoordinator());
  ASSERT_NO_FATAL_FAILURE(StartGreen());
  ASSERT_NO_FATAL_FAILURE(StartPurple("script:" + TasksDir()));
  a2apb::Task unknown = WaitEnded(Send("green", "Task ID: no-such-task").id());
  EXPECT_EQ(unknown.status().state(), a2apb::TASK_STATE_REJECTED);
  EXPECT_TRUE(absl::StrContains(StatusText(unknown), "unknown task id")) << StatusText(unknown);

  a2apb::Task traversal = WaitEnded(Send("green", "Task ID: ../heap-overflow-record").id());
  EXPECT_EQ(traversal.status().state(), a2apb::TASK_STATE_REJECTED);

  a2apb::Task command = WaitEnded(Send("green", "execute: ls", "no-such-context").id());
  EXPECT_EQ(command.status().state(), a2apb::TASK_STATE_REJECTED);
  EXPECT_TRUE(absl::StrContains(StatusText(command), "unknown context")) << StatusText(command);

  a2apb::Task gibberish = WaitEnded(Send("green", "hello").id());
  EXPECT_EQ(gibberish.status().state(), a2apb::TASK_STATE_REJECTED);

  // A submission without loc.json: the evaluation fails with a clear message.
  purple_.reset();  // purple is down, so the formatted task waits at the coordinator
  a2apb::Task judge = Send("green", absl::StrCat("Task ID: ", kTask), "ctx-no-loc");
  const absl::Time deadline = absl::Now() + kProcessWait;
  while (absl::Now() < deadline) {
    v1::GetContextRequest request;
    request.set_context_id("ctx-no-loc");
    v1::TaskContext c;
    if (contexts_->GetContext(Ctx().get(), request, &c).ok() && c.labels().count("purple_task")) {
      break;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  a2apb::Task submit = WaitEnded(Send("green", "submit", "ctx-no-loc").id());
  EXPECT_EQ(submit.status().state(), a2apb::TASK_STATE_FAILED);
  EXPECT_TRUE(absl::StrContains(StatusText(submit), "no loc.json")) << StatusText(submit);
  a2apb::Task ended = WaitEnded(judge.id());
  EXPECT_EQ(ended.status().state(), a2apb::TASK_STATE_FAILED);
  EXPECT_EQ(GetContext("ctx-no-loc").status(), v1::CONTEXT_STATUS_FAILED);
  // A command for an evaluation that has ended is refused.
  a2apb::Task late = WaitEnded(Send("green", "execute: ls", "ctx-no-loc").id());
  EXPECT_EQ(late.status().state(), a2apb::TASK_STATE_REJECTED);
}

TEST_F(EvaluationTest, GreenKilledMidEvaluation) {
  ASSERT_NO_FATAL_FAILURE(StartCoordinator());
  ASSERT_NO_FATAL_FAILURE(StartGreen());
  ASSERT_NO_FATAL_FAILURE(StartPurple("script:" + SlowScript(dir_.path())));
  RunEvaluation([this](const std::string&) {
    ASSERT_OK(green_->Kill());
    ASSERT_NO_FATAL_FAILURE(StartGreen());
  });
}

TEST_F(EvaluationTest, PurpleKilledMidLoop) {
  ASSERT_NO_FATAL_FAILURE(StartCoordinator());
  ASSERT_NO_FATAL_FAILURE(StartGreen());
  ASSERT_NO_FATAL_FAILURE(StartPurple("script:" + SlowScript(dir_.path())));
  RunEvaluation([this](const std::string&) {
    ASSERT_OK(purple_->Kill());
    ASSERT_NO_FATAL_FAILURE(StartPurple(purple_policy_));
  });
}

TEST_F(EvaluationTest, CoordinatorKilledMidEvaluation) {
  ASSERT_NO_FATAL_FAILURE(StartCoordinator());
  ASSERT_NO_FATAL_FAILURE(StartGreen());
  ASSERT_NO_FATAL_FAILURE(StartPurple("script:" + SlowScript(dir_.path())));
  RunEvaluation([this](const std::string&) {
    const int port = coordinator_->port();
    ASSERT_OK(coordinator_->Kill());
    ASSERT_NO_FATAL_FAILURE(StartCoordinator(port));
  });
}

// Issue 21's "done when": an evaluation finishes while the etcd member and the coordinator
// replica it was using are killed. The cluster is the test's own (a member dies); two replicas
// serve it, and the agents and this client are given both and use the first.
TEST_F(EvaluationTest, EtcdMemberAndReplicaKilledMidEvaluation) {
  if (!storage::testing::UseEtcd()) {
    GTEST_SKIP() << "runs as etcd.EvaluationTest.* (on an etcd cluster of its own)";
  }
  absl::StatusOr<std::unique_ptr<testing_util::EtcdCluster>> cluster =
      testing_util::EtcdCluster::Start(dir_.Sub("etcd"));
  ASSERT_OK(cluster);
  const std::vector<std::string> flags = {"--store=" + (*cluster)->url(),
                                          "--etcd_prefix=/evaluation/",
                                          "--http_listen=",
                                          "--a2a_retry_initial_backoff=50ms",
                                          "--a2a_retry_max_backoff=500ms",
                                          "--a2a_delivery_max_attempts=1000"};
  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> a =
      CoordinatorProcess::Start(dir_.Sub("a"), flags);
  ASSERT_OK(a);
  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> b =
      CoordinatorProcess::Start(dir_.Sub("b"), flags);
  ASSERT_OK(b);
  coordinator_ = *std::move(a);
  std::unique_ptr<CoordinatorProcess> survivor = *std::move(b);
  agent_target_ = absl::StrCat(coordinator_->target(), ",", survivor->target());
  grpc::ChannelArguments ch;
  ch.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  ch.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  ch.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
  channel_ =
      grpc::CreateCustomChannel("ipv4:" + agent_target_, grpc::InsecureChannelCredentials(), ch);
  a2a_ = a2apb::A2AService::NewStub(channel_);
  contexts_ = v1::ContextService::NewStub(channel_);
  conversations_ = v1::ConversationService::NewStub(channel_);
  ASSERT_NO_FATAL_FAILURE(StartGreen());
  ASSERT_NO_FATAL_FAILURE(StartPurple("script:" + SlowScript(dir_.path())));
  RunEvaluation([&](const std::string&) {
    // The replicas talk to the first member first; both it and the replica everyone uses die.
    ASSERT_OK((*cluster)->Kill(0));
    ASSERT_OK(coordinator_->Kill());
  });
  EXPECT_OK((*cluster)->Restart(0));
}

// A fake OpenAI-compatible endpoint: fails the first two calls, then answers like the script.
TEST_F(EvaluationTest, OpenAIPolicyEscalatesAndCarriesTheFailureContext) {
  ASSERT_NO_FATAL_FAILURE(StartCoordinator());
  ASSERT_NO_FATAL_FAILURE(StartGreen());
  absl::Mutex mu;
  std::vector<std::string> bodies;
  const std::vector<std::string> answers = {
      "execute: sh -c 'printf %s \"$0\" > shared/loc.json' '{\"locations\": [{\"file\": "
      "\"src/record.c\", \"function\": \"parse_record\", \"line\": 12}]}'",
      "submit"};
  httplib::Server server;
  server.Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
    int n;
    {
      absl::MutexLock lock(&mu);
      bodies.push_back(req.body);
      n = static_cast<int>(bodies.size());
    }
    if (n <= 2) {
      res.status = 500;
      res.set_content(absl::StrCat("{\"error\": \"overloaded ", n, "\"}"), "application/json");
      return;
    }
    google::protobuf::Struct reply;
    auto* choice = (*reply.mutable_fields())["choices"].mutable_list_value()->add_values();
    auto* message =
        (*choice->mutable_struct_value()->mutable_fields())["message"].mutable_struct_value();
    (*message->mutable_fields())["role"].set_string_value("assistant");
    (*message->mutable_fields())["content"].set_string_value(
        answers[std::min<size_t>(n - 3, answers.size() - 1)]);
    (*(*reply.mutable_fields())["usage"].mutable_struct_value()->mutable_fields())["total_tokens"]
        .set_number_value(100);
    std::string json;
    (void)google::protobuf::util::MessageToJsonString(reply, &json);
    res.set_content(json, "application/json");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread serving([&] { server.listen_after_bind(); });
  StartPurple(absl::StrCat("openai:http://127.0.0.1:", port), {"--policy_timeout=10s"});
  if (HasFatalFailure()) {  // the fake endpoint's thread must be joined before returning
    server.stop();
    serving.join();
    return;
  }
  const std::string context_id = "eval-openai";
  a2apb::Task done = WaitEnded(Send("green", absl::StrCat("Task ID: ", kTask), context_id).id());
  server.stop();
  serving.join();
  ASSERT_EQ(done.status().state(), a2apb::TASK_STATE_COMPLETED)
      << done.DebugString() << purple_->stderr_text();
  EXPECT_EQ(StatusText(done), kPerfectScore);

  absl::MutexLock lock(&mu);
  ASSERT_GE(bodies.size(), 4u);
  auto model_of = [](const std::string& body) {
    google::protobuf::Struct s;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(body, &s).ok()) << body;
    return s.fields().at("model").string_value();
  };
  EXPECT_EQ(model_of(bodies[0]), "codex-mini");  // tier 1 of the default ladder
  EXPECT_NE(model_of(bodies[1]), model_of(bodies[0])) << "the tier escalated after a failure";
  EXPECT_NE(model_of(bodies[2]), model_of(bodies[1])) << "and again after the second";
  EXPECT_FALSE(absl::StrContains(bodies[0], "Previous failures"));
  EXPECT_TRUE(absl::StrContains(bodies[2], "Previous failures")) << bodies[2];
  EXPECT_TRUE(absl::StrContains(bodies[2], "overloaded 1")) << bodies[2];
  EXPECT_TRUE(absl::StrContains(bodies[2], "overloaded 2")) << bodies[2];
}

TEST_F(EvaluationTest, LoopingPolicyIsStoppedByTheBreaker) {
  ASSERT_NO_FATAL_FAILURE(StartCoordinator());
  ASSERT_NO_FATAL_FAILURE(StartGreen());
  const std::string script = dir_.Sub("loop.json");
  std::ofstream(script) << "[\"execute: cat missing.txt\", \"execute: cat missing.txt\", "
                           "\"execute: cat missing.txt\"]";
  ASSERT_NO_FATAL_FAILURE(StartPurple("script:" + script, {"--max_attempts=10"}));
  const std::string context_id = "eval-loop";
  a2apb::Task done = WaitEnded(Send("green", absl::StrCat("Task ID: ", kTask), context_id).id());
  ASSERT_EQ(done.status().state(), a2apb::TASK_STATE_FAILED) << done.DebugString();
  const std::string text = StatusText(done);
  EXPECT_TRUE(absl::StrContains(text, "gave up")) << text;
  EXPECT_TRUE(absl::StrContains(text, "cat missing.txt")) << text;
  // The purple agent's own task ends FAILED with the breaker's summary.
  const v1::TaskContext context = GetContext(context_id);
  EXPECT_EQ(context.status(), v1::CONTEXT_STATUS_FAILED);
  a2apb::Task purple_task = WaitEnded(context.labels().at("purple_task"));
  EXPECT_EQ(purple_task.status().state(), a2apb::TASK_STATE_FAILED);
  EXPECT_EQ(absl::StripAsciiWhitespace(StatusText(purple_task)),
            absl::StripAsciiWhitespace(text.substr(text.find(": ") + 2)));
  // Stopped well before --max_attempts: by the breaker, not the limit.
  EXPECT_LT(context.command_count(), 20);
  EXPECT_TRUE(absl::StrContains(purple_->stderr_text(), "force-escalated"))
      << purple_->stderr_text();
}

}  // namespace
