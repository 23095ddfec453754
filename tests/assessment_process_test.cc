// Assessment requests end to end with the real binaries (green_agent/assessment.h): a platform
// names the agent under test by the URL of its agent card only. The C++ purple agent speaks
// gRPC and serves no card of its own, so the test serves one for it (one GRPC interface at the
// purple's address). The green agent registers that card URL with the coordinator
// (AgentRegistry.RegisterAgent with Agent.card_url), the coordinator fetches the card, and the
// evaluation runs through the coordinator as with a registered purple: same score. A second
// request with the same URL reuses the registration; bad requests are refused and register
// nothing. Every wait polls with a bound; nothing asserts on timing.
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "a2a/v1/a2a.grpc.pb.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "coordinator/v1/agent_registry.grpc.pb.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "httplib.h"
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

class AssessmentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<CoordinatorProcess>> c = CoordinatorProcess::Start(
        dir_.Sub("data"), {"--a2a_retry_initial_backoff=50ms", "--a2a_retry_max_backoff=500ms"});
    ASSERT_OK(c);
    coordinator_ = *std::move(c);
    channel_ = grpc::CreateChannel(coordinator_->target(), grpc::InsecureChannelCredentials());
    a2a_ = a2apb::A2AService::NewStub(channel_);
    agents_ = v1::AgentRegistry::NewStub(channel_);
    // A participant whose card cannot be fetched is waited for 1s, not the default 30s.
    green_ = StartAgent("green_agent",
                        {"--tasks_dir=" + TasksDir(), "--workspaces_dir=" + dir_.Sub("workspaces"),
                         "--participant_wait=1s"});
    purple_ = StartAgent("purple_agent", {"--policy=script:" + TasksDir()});
    ASSERT_NE(green_, nullptr);
    ASSERT_NE(purple_, nullptr);

    // The purple agent's card: its gRPC address, where it registered itself.
    v1::GetAgentRequest get;
    get.set_name("purple");
    v1::Agent purple;
    ASSERT_TRUE(agents_->GetAgent(Ctx().get(), get, &purple).ok());
    purple_endpoint_ = purple.endpoint();
    card_json_ = absl::StrCat(
        R"({"name": "purple", "description": "the C++ purple agent, the agent under test",)",
        R"( "version": "1.0.0", "supportedInterfaces": [{"url": ")", purple_endpoint_,
        R"(", "protocolBinding": "GRPC", "protocolVersion": "1.0"}],)",
        R"( "capabilities": {"streaming": true}, "defaultInputModes": ["text/plain"],)",
        R"( "defaultOutputModes": ["text/plain"], "skills": []})");
    card_server_.Get("/.well-known/agent-card.json",
                     [this](const httplib::Request&, httplib::Response& response) {
                       if (unavailable_fetches_.fetch_sub(1) > 0) {
                         response.status = 503;  // still starting
                         return;
                       }
                       response.set_content(card_json_, "application/json");
                     });
    const int port = card_server_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port, 0);
    serving_ = std::thread([this] { card_server_.listen_after_bind(); });
    base_url_ = absl::StrCat("http://127.0.0.1:", port);
    card_url_ = base_url_ + "/.well-known/agent-card.json";
  }

  void TearDown() override { StopCardServer(); }

  // httplib 0.11 ignores a stop() that comes before its listen loop runs, and the loop then never
  // ends: wait until it runs (bounded, so a server that never starts fails here, not hangs).
  void StopCardServer() {
    if (!serving_.joinable()) return;
    for (int i = 0; i < 10000 && !card_server_.is_running(); ++i) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    card_server_.stop();
    serving_.join();
  }

  std::unique_ptr<Process> StartAgent(const std::string& binary, std::vector<std::string> args) {
    args.push_back(absl::StrCat("--coordinator=", coordinator_->target()));
    absl::StatusOr<std::unique_ptr<Process>> p = Process::Start(BinaryPath(binary), args);
    EXPECT_OK(p);
    if (!p.ok()) return nullptr;
    EXPECT_OK((*p)->WaitForStderrLine("registered with the coordinator", kProcessWait));
    return *std::move(p);
  }

  std::unique_ptr<grpc::ClientContext> Ctx() {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return c;
  }

  // Sends green a message whose one part is `part` (JSON of an lf.a2a.v1.Part).
  a2apb::Task SendGreen(const std::string& part_json) {
    a2apb::SendMessageRequest request;
    request.set_tenant("green");
    a2apb::Message* message = request.mutable_message();
    message->set_message_id(absl::StrCat("m-", ++sent_));
    message->set_role(a2apb::ROLE_USER);
    message->set_context_id(absl::StrCat(
        "assess-", ::testing::UnitTest::GetInstance()->current_test_info()->name(), "-", sent_));
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(part_json, message->add_parts()).ok())
        << part_json;
    request.mutable_configuration()->set_return_immediately(true);
    a2apb::SendMessageResponse response;
    grpc::Status s = a2a_->SendMessage(Ctx().get(), request, &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return response.task();
  }

  // An assessment request as a data part.
  a2apb::Task Assess(const std::string& participants, const std::string& config) {
    return SendGreen(absl::StrCat(R"({"data": {"participants": )", participants, R"(, "config": )",
                                  config, "}}"));
  }

  a2apb::Task WaitEnded(const std::string& task_id) {
    const absl::Time deadline = absl::Now() + kProcessWait;
    a2apb::Task task;
    while (absl::Now() < deadline) {
      a2apb::GetTaskRequest request;
      request.set_id(task_id);
      task.Clear();
      if (a2a_->GetTask(Ctx().get(), request, &task).ok()) {
        const a2apb::TaskState st = task.status().state();
        if (st == a2apb::TASK_STATE_COMPLETED || st == a2apb::TASK_STATE_FAILED ||
            st == a2apb::TASK_STATE_REJECTED || st == a2apb::TASK_STATE_CANCELED) {
          return task;
        }
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
    ADD_FAILURE() << "task " << task_id << " did not end; last: " << task.DebugString()
                  << "\ngreen: " << green_->stderr_text() << "\npurple: " << purple_->stderr_text()
                  << "\ncoordinator: " << coordinator_->process().stderr_text();
    return task;
  }

  static std::string StatusText(const a2apb::Task& task) {
    std::string text;
    for (const auto& p : task.status().message().parts()) text += p.text();
    return text;
  }

  std::vector<v1::Agent> Agents() {
    v1::ListAgentsRequest request;
    request.set_page_size(1000);
    v1::ListAgentsResponse response;
    EXPECT_TRUE(agents_->ListAgents(Ctx().get(), request, &response).ok());
    return {response.agents().begin(), response.agents().end()};
  }

  std::vector<v1::Agent> AgentsWithCard(const std::string& card_url) {
    std::vector<v1::Agent> out;
    for (v1::Agent& a : Agents()) {
      if (a.card_url() == card_url) out.push_back(a);
    }
    return out;
  }

  TempDir dir_;
  std::unique_ptr<CoordinatorProcess> coordinator_;
  std::unique_ptr<Process> green_;
  std::unique_ptr<Process> purple_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<a2apb::A2AService::Stub> a2a_;
  std::unique_ptr<v1::AgentRegistry::Stub> agents_;
  httplib::Server card_server_;
  std::thread serving_;
  std::string card_json_;
  // The card server answers 503 to this many fetches first (a participant still starting).
  std::atomic<int> unavailable_fetches_{0};
  std::string purple_endpoint_;
  std::string base_url_;
  std::string card_url_;
  int sent_ = 0;
};

TEST_F(AssessmentTest, ParticipantByCardUrlIsRegisteredEvaluatedAndReused) {
  a2apb::Task judge =
      Assess(absl::StrCat(R"({"purple": ")", card_url_, R"(", "opponent": "http://x.invalid/"})"),
             absl::StrCat(R"({"task_ids": [")", kTask, R"("]})"));
  a2apb::Task done = WaitEnded(judge.id());
  ASSERT_EQ(done.status().state(), a2apb::TASK_STATE_COMPLETED)
      << done.DebugString() << "\ngreen: " << green_->stderr_text();
  EXPECT_EQ(StatusText(done), kPerfectScore);
  ASSERT_EQ(done.artifacts_size(), 1);
  EXPECT_EQ(done.artifacts(0).parts(0).data().struct_value().fields().at("score").number_value(),
            1.0);

  // Registered once, by card URL, under <role>-<12 hex digits>; the coordinator took the
  // endpoint and the binding from the card.
  std::vector<v1::Agent> registered = AgentsWithCard(card_url_);
  ASSERT_EQ(registered.size(), 1u);
  EXPECT_TRUE(absl::StartsWith(registered[0].name(), "purple-")) << registered[0].name();
  EXPECT_EQ(registered[0].name().size(), std::string("purple-").size() + 12);
  EXPECT_EQ(registered[0].endpoint(), purple_endpoint_);
  EXPECT_EQ(registered[0].protocol_binding(), "GRPC");

  // Again, as AgentBeats sends it (the JSON as text, the agent's base URL), on the other task:
  // the registration is reused.
  a2apb::Task second =
      SendGreen(absl::StrCat(R"({"text": "{\"participants\": {\"purple\": \")", base_url_,
                             R"(\"}, \"config\": {\"task_id\": \"uaf-list-remove\"}}"})"));
  a2apb::Task second_done = WaitEnded(second.id());
  ASSERT_EQ(second_done.status().state(), a2apb::TASK_STATE_COMPLETED) << second_done.DebugString();
  EXPECT_TRUE(absl::StrContains(StatusText(second_done), "\"score\":1.0000"))
      << StatusText(second_done);
  EXPECT_EQ(AgentsWithCard(card_url_).size(), 1u);
}

// The coordinator's own URL of the registered purple agent (coordctl scenario run hands those
// out) is that agent: the green agent reaches it by its name and registers nothing, so each
// message to it passes the coordinator once: one task at purple in the evaluation's context.
TEST_F(AssessmentTest, TheCoordinatorsOwnUrlOfAnAgentIsThatAgent) {
  absl::StatusOr<int> http = coordinator_->HttpPort();
  ASSERT_OK(http);
  const size_t registered = Agents().size();
  a2apb::Task judge =
      Assess(absl::StrCat(R"({"purple": "http://127.0.0.1:)", *http, R"(/agents/purple/"})"),
             absl::StrCat(R"({"task_ids": [")", kTask, R"("]})"));
  a2apb::Task done = WaitEnded(judge.id());
  ASSERT_EQ(done.status().state(), a2apb::TASK_STATE_COMPLETED)
      << done.DebugString() << "\ngreen: " << green_->stderr_text();
  EXPECT_EQ(StatusText(done), kPerfectScore);
  EXPECT_EQ(Agents().size(), registered);
  a2apb::ListTasksRequest list;
  list.set_tenant("purple");
  list.set_context_id(judge.context_id());
  a2apb::ListTasksResponse tasks;
  ASSERT_TRUE(a2a_->ListTasks(Ctx().get(), list, &tasks).ok());
  EXPECT_EQ(tasks.tasks_size(), 1);
}

// The purple agent as an evaluation platform starts it: its own HTTP port and card (--port), no
// card served for it. The coordinator reads that card and reaches the agent over JSON-RPC, which
// the agent transcodes onto its gRPC service (agent_runtime/agent_http.h): same score.
TEST_F(AssessmentTest, APurpleServingItsOwnCardIsReachedOverItsHttpPort) {
  int port = 0;
  absl::StatusOr<std::unique_ptr<Process>> purple =
      testing_util::StartAgentWithHttp("purple_agent",
                                       {"--policy=script:" + TasksDir(), "--name=purple-http",
                                        absl::StrCat("--coordinator=", coordinator_->target())},
                                       &port);
  ASSERT_OK(purple);
  const std::string base = absl::StrCat("http://127.0.0.1:", port, "/");
  a2apb::Task judge = Assess(absl::StrCat(R"({"purple": ")", base, R"("})"),
                             absl::StrCat(R"({"task_ids": [")", kTask, R"("]})"));
  a2apb::Task done = WaitEnded(judge.id());
  ASSERT_EQ(done.status().state(), a2apb::TASK_STATE_COMPLETED)
      << done.DebugString() << "\npurple-http: " << (*purple)->stderr_text();
  EXPECT_EQ(StatusText(done), kPerfectScore);
  std::vector<v1::Agent> registered = AgentsWithCard(base + ".well-known/agent-card.json");
  ASSERT_EQ(registered.size(), 1u);
  EXPECT_EQ(registered[0].protocol_binding(), "JSONRPC");
  EXPECT_EQ(registered[0].endpoint(), base);
}

TEST_F(AssessmentTest, BadRequestsAreRefusedAndRegisterNothing) {
  const size_t before = Agents().size();
  const std::string purple = absl::StrCat(R"({"purple": ")", card_url_, R"("})");
  const std::string config = absl::StrCat(R"({"task_ids": [")", kTask, R"("]})");
  struct Case {
    std::string participants;
    std::string config;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {R"({"blue": "http://127.0.0.1:1/"})", config, "no participant plays the role \"purple\""},
      {R"({"purple": "ftp://127.0.0.1/card.json"})", config, "is not an http:// or https:// URL"},
      {R"(["http://127.0.0.1:1/"])", config, "\"participants\" must be an object"},
      {purple, R"({"task_ids": "heap-overflow-record"})", "config.task_ids must be a list"},
      {purple, R"(["heap-overflow-record"])", "\"config\" must be an object"},
      {purple, R"({"task_ids": ["no-such-task"]})", "unknown task id \"no-such-task\""},
  };
  for (const Case& c : cases) {
    a2apb::Task task = WaitEnded(Assess(c.participants, c.config).id());
    EXPECT_EQ(task.status().state(), a2apb::TASK_STATE_REJECTED) << task.DebugString();
    EXPECT_TRUE(absl::StrContains(StatusText(task), c.expected))
        << StatusText(task) << " lacks " << c.expected;
  }
  a2apb::Task missing =
      WaitEnded(SendGreen(absl::StrCat(R"({"data": {"config": )", config, "}}")).id());
  EXPECT_EQ(missing.status().state(), a2apb::TASK_STATE_REJECTED);
  EXPECT_TRUE(absl::StrContains(StatusText(missing), "\"participants\" is missing"))
      << StatusText(missing);
  EXPECT_EQ(Agents().size(), before);
}

TEST_F(AssessmentTest, AParticipantStillStartingIsWaitedFor) {
  // Platforms start the agents together: the card is not served yet when the request comes.
  unavailable_fetches_ = 2;
  a2apb::Task done = WaitEnded(Assess(absl::StrCat(R"({"purple": ")", card_url_, R"("})"),
                                      absl::StrCat(R"({"task_id": ")", kTask, R"("})"))
                                   .id());
  ASSERT_EQ(done.status().state(), a2apb::TASK_STATE_COMPLETED)
      << done.DebugString() << "\ngreen: " << green_->stderr_text();
  EXPECT_EQ(StatusText(done), kPerfectScore);
  EXPECT_LT(unavailable_fetches_.load(), 0) << "the card was fetched again after the 503s";
  EXPECT_EQ(AgentsWithCard(card_url_).size(), 1u);
}

TEST_F(AssessmentTest, ACardTheCoordinatorCannotFetchFailsTheTask) {
  const size_t before = Agents().size();
  // Nothing serves this card: the coordinator's fetch fails, and so does the registration.
  StopCardServer();
  a2apb::Task task = WaitEnded(Assess(absl::StrCat(R"({"purple": ")", card_url_, R"("})"),
                                      absl::StrCat(R"({"task_id": ")", kTask, R"("})"))
                                   .id());
  EXPECT_EQ(task.status().state(), a2apb::TASK_STATE_FAILED) << task.DebugString();
  EXPECT_TRUE(absl::StrContains(StatusText(task), "cannot register the participant \"purple\""))
      << StatusText(task);
  EXPECT_EQ(Agents().size(), before);
}

}  // namespace
