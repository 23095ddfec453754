// Agents that speak JSON-RPC or HTTP+JSON behind the gateway, in process: a real
// CoordinatorServer on 127.0.0.1:0 and fake agents on cpp-httplib (tests/fake_http_agent.h)
// that write Server-Sent Events by hand, registered by the URL of the card they serve. Clients
// talk to the coordinator over its gRPC A2AService as always. No sleeps: every wait polls with a
// bound.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "a2a/v1/a2a.grpc.pb.h"
#include "a2a_protocol/errors.h"
#include "a2a_protocol/version.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "coordinator/a2a/test_server_options.h"
#include "coordinator/server.h"
#include "coordinator/v1/agent_registry.grpc.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "storage/testing/test_store.h"
#include "tests/fake_http_agent.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing_util::FakeHttpAgent;
using testing_util::TempDir;

std::string StatusText(const a2apb::Task& task) {
  return task.status().message().parts_size() > 0 ? task.status().message().parts(0).text() : "";
}

// A coordinator and clients of its gRPC services.
class CoordinatorFixture : public ::testing::Test {
 protected:
  void SetUp() override { StartCoordinator(); }

  // (Re)starts the coordinator on the test's data dir, with `gateway` changed by `tweak`.
  void StartCoordinator(std::function<void(GatewayOptions&)> tweak = nullptr) {
    absl::StatusOr<ServerOptions> options = GatewayTestServerOptions(dir_.Sub("data"));
    ASSERT_OK(options);
    options->worker_threads = 8;
    options->gateway.max_delivery_attempts = 1000;
    options->gateway.delivery_threads = 4;
    if (tweak) tweak(options->gateway);
    absl::StatusOr<std::unique_ptr<CoordinatorServer>> server = CoordinatorServer::Start(*options);
    ASSERT_OK(server);
    server_ = *std::move(server);
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    stub_ = a2apb::A2AService::NewStub(channel_);
    registry_ = v1::AgentRegistry::NewStub(channel_);
  }

  void StopCoordinator() {
    stub_.reset();
    registry_.reset();
    channel_.reset();
    server_->Shutdown(absl::Seconds(1));
    server_.reset();
  }

  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown(absl::Seconds(1));
  }

  static std::unique_ptr<grpc::ClientContext> Context(absl::Duration timeout = kWait) {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(timeout));
    a2a_protocol::AddVersion(context.get());
    return context;
  }

  grpc::Status RegisterByCard(const std::string& name, const std::string& card_url,
                              v1::Agent* agent) {
    v1::RegisterAgentRequest request;
    request.mutable_agent()->set_name(name);
    request.mutable_agent()->set_card_url(card_url);
    return registry_->RegisterAgent(Context().get(), request, agent);
  }

  static a2apb::SendMessageRequest Send(const std::string& text, const std::string& tenant) {
    static int counter = 0;
    a2apb::SendMessageRequest request;
    request.set_tenant(tenant);
    a2apb::Message* m = request.mutable_message();
    m->set_message_id("msg-" + std::to_string(++counter));
    m->set_role(a2apb::ROLE_USER);
    m->add_parts()->set_text(text);
    return request;
  }

  std::string SendNow(const std::string& text, const std::string& tenant) {
    a2apb::SendMessageRequest request = Send(text, tenant);
    request.mutable_configuration()->set_return_immediately(true);
    a2apb::SendMessageResponse response;
    grpc::Status s = stub_->SendMessage(Context().get(), request, &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return response.task().id();
  }

  a2apb::Task GetTask(const std::string& id) {
    a2apb::GetTaskRequest request;
    request.set_id(id);
    a2apb::Task task;
    grpc::Status s = stub_->GetTask(Context().get(), request, &task);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return task;
  }

  bool WaitForState(const std::string& id, a2apb::TaskState state) {
    return WaitFor([&] { return GetTask(id).status().state() == state; });
  }

  TempDir dir_;
  std::unique_ptr<CoordinatorServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<a2apb::A2AService::Stub> stub_;
  std::unique_ptr<v1::AgentRegistry::Stub> registry_;
};

// The same tests for both bindings, and for JSON-RPC spoken in A2A 0.3.
class HttpAgentTest : public CoordinatorFixture,
                      public ::testing::WithParamInterface<FakeHttpAgent::Binding> {
 protected:
  bool V03() const {
    return GetParam() == FakeHttpAgent::Binding::kJsonRpcV03 ||
           GetParam() == FakeHttpAgent::Binding::kRestV03;
  }
  const char* BindingName() const {
    return GetParam() == FakeHttpAgent::Binding::kRest ||
                   GetParam() == FakeHttpAgent::Binding::kRestV03
               ? "HTTP+JSON"
               : "JSONRPC";
  }
};

INSTANTIATE_TEST_SUITE_P(Bindings, HttpAgentTest,
                         ::testing::Values(FakeHttpAgent::Binding::kJsonRpc,
                                           FakeHttpAgent::Binding::kRest,
                                           FakeHttpAgent::Binding::kJsonRpcV03,
                                           FakeHttpAgent::Binding::kRestV03),
                         [](const auto& info) {
                           switch (info.param) {
                             case FakeHttpAgent::Binding::kJsonRpc:
                               return "JsonRpc";
                             case FakeHttpAgent::Binding::kRest:
                               return "Rest";
                             case FakeHttpAgent::Binding::kJsonRpcV03:
                               return "JsonRpcV03";
                             case FakeHttpAgent::Binding::kRestV03:
                               break;
                           }
                           return "RestV03";
                         });

TEST_P(HttpAgentTest, AgentRegisteredByCardCompletesTasksSentOverGrpc) {
  FakeHttpAgent agent(GetParam(), 0, "team-a");
  ASSERT_GT(agent.port(), 0);
  v1::Agent registered;
  grpc::Status s = RegisterByCard("fake", agent.card_url(), &registered);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(registered.protocol_binding(), BindingName());
  EXPECT_EQ(registered.protocol_version(), V03() ? "0.3" : "1.0");
  EXPECT_EQ(registered.endpoint(), agent.interface_url());
  EXPECT_EQ(registered.card_url(), agent.card_url());
  // The card as fetched (its unknown field ignored; a 0.3 card as the 1.0 card it stands for).
  EXPECT_EQ(registered.card().name(), V03() ? "fake03" : "fake");

  // A blocking send: the agent's events are stored, and the finished task is the answer.
  a2apb::SendMessageResponse response;
  s = stub_->SendMessage(Context().get(), Send("hello", "fake"), &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const a2apb::Task& task = response.task();
  EXPECT_EQ(task.status().state(), a2apb::TASK_STATE_COMPLETED);
  EXPECT_EQ(StatusText(task), "done: hello");
  ASSERT_EQ(task.artifacts_size(), 1);
  EXPECT_EQ(task.artifacts(0).parts(0).text(), "hello");
  EXPECT_NE(task.id(), "agent-task-1");  // the coordinator's id, not the agent's

  // A streamed send: the client sees the agent's events, under the coordinator's task id.
  auto context = Context();
  auto reader = stub_->SendStreamingMessage(context.get(), Send("streamed", "fake"));
  std::vector<a2apb::StreamResponse> events;
  a2apb::StreamResponse event;
  while (reader->Read(&event)) events.push_back(event);
  s = reader->Finish();
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_GE(events.size(), 1u);
  const std::string id = events.front().task().id();
  if (events.size() == 1) {
    // The agent was done before the stream read the task: the snapshot holds it all.
    const a2apb::Task& done = events.front().task();
    EXPECT_EQ(done.status().state(), a2apb::TASK_STATE_COMPLETED);
    ASSERT_EQ(done.artifacts_size(), 1);
    EXPECT_EQ(done.artifacts(0).parts(0).text(), "streamed");
  } else {
    // The artifact came as an update, or was in the snapshot already.
    const a2apb::Task& first = events.front().task();
    bool saw_artifact =
        first.artifacts_size() == 1 && first.artifacts(0).parts(0).text() == "streamed";
    for (const a2apb::StreamResponse& e : events) {
      if (e.has_artifact_update()) {
        saw_artifact = true;
        EXPECT_EQ(e.artifact_update().task_id(), id);
        EXPECT_EQ(e.artifact_update().artifact().parts(0).text(), "streamed");
      }
    }
    EXPECT_TRUE(saw_artifact);
    ASSERT_TRUE(events.back().has_status_update());
    EXPECT_EQ(events.back().status_update().status().state(), a2apb::TASK_STATE_COMPLETED);
  }

  // Each message reached the agent once, with the A2A version and the card's tenant (0.3 has
  // neither a version header nor tenants).
  EXPECT_THAT(agent.texts(), ElementsAre("hello", "streamed"));
  EXPECT_THAT(agent.versions(), V03() ? ElementsAre("", "") : ElementsAre("1.0", "1.0"));
  EXPECT_THAT(agent.tenants(), V03() ? ElementsAre("", "") : ElementsAre("team-a", "team-a"));
}

TEST_P(HttpAgentTest, APlainJsonAnswerIsTheOneEvent) {
  FakeHttpAgent agent(GetParam());
  v1::Agent registered;
  ASSERT_TRUE(RegisterByCard("fake", agent.card_url(), &registered).ok());
  a2apb::SendMessageResponse response;
  grpc::Status s = stub_->SendMessage(Context().get(), Send("plain", "fake"), &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(response.task().status().state(), a2apb::TASK_STATE_COMPLETED);
  ASSERT_EQ(response.task().artifacts_size(), 1);
  EXPECT_EQ(response.task().artifacts(0).parts(0).text(), "plain");
}

// Down for longer than its attempts would last (the refused connections do not count), and back
// on its address without registering again: the retries find it.
TEST_P(HttpAgentTest, AnAgentDownGetsTheMessageOnceWhenItComesBack) {
  StopCoordinator();
  StartCoordinator([](GatewayOptions& gateway) { gateway.max_delivery_attempts = 2; });
  auto agent = std::make_unique<FakeHttpAgent>(GetParam());
  const int port = agent->port();
  v1::Agent registered;
  ASSERT_TRUE(RegisterByCard("fake", agent->card_url(), &registered).ok());
  agent->Stop();
  agent.reset();

  // Accepted and stored while the agent is away; the refused connections are retried.
  const char* const kWaits = "coordinator_a2a_delivery_waits_total";
  const uint64_t waits_before = DeliveryCounter(kWaits);
  const std::string id = SendNow("while you were out", "fake");
  EXPECT_EQ(GetTask(id).status().state(), a2apb::TASK_STATE_SUBMITTED);
  ASSERT_TRUE(WaitFor([&] { return DeliveryCounter(kWaits) >= waits_before + 6; }));
  EXPECT_EQ(GetTask(id).status().state(), a2apb::TASK_STATE_SUBMITTED);
  agent = std::make_unique<FakeHttpAgent>(GetParam(), port);
  ASSERT_EQ(agent->port(), port);
  ASSERT_TRUE(WaitForState(id, a2apb::TASK_STATE_COMPLETED));
  EXPECT_EQ(GetTask(id).artifacts(0).parts(0).text(), "while you were out");
  EXPECT_THAT(agent->texts(), ElementsAre("while you were out"));
}

TEST_P(HttpAgentTest, AnAgentErrorFailsTheTaskWithTheAgentsMessage) {
  FakeHttpAgent agent(GetParam());
  v1::Agent registered;
  ASSERT_TRUE(RegisterByCard("fake", agent.card_url(), &registered).ok());
  const std::string id = SendNow("fail", "fake");
  ASSERT_TRUE(WaitForState(id, a2apb::TASK_STATE_FAILED));
  // INTERNAL is the agent's definite answer, as over gRPC: not retried.
  EXPECT_THAT(StatusText(GetTask(id)), HasSubstr("the agent broke"));
  EXPECT_THAT(agent.texts(), ElementsAre("fail"));
}

TEST_P(HttpAgentTest, AnEventThatIsNotJsonFailsTheTaskAndNothingElse) {
  FakeHttpAgent agent(GetParam());
  v1::Agent registered;
  ASSERT_TRUE(RegisterByCard("fake", agent.card_url(), &registered).ok());
  const std::string id = SendNow("garbage", "fake");
  ASSERT_TRUE(WaitForState(id, a2apb::TASK_STATE_FAILED));
  EXPECT_THAT(StatusText(GetTask(id)), HasSubstr("this is not json"));
  EXPECT_THAT(agent.texts(), ElementsAre("garbage"));
  // The gateway goes on delivering.
  a2apb::SendMessageResponse response;
  grpc::Status s = stub_->SendMessage(Context().get(), Send("after", "fake"), &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(response.task().status().state(), a2apb::TASK_STATE_COMPLETED);
}

TEST_P(HttpAgentTest, CancelIsForwardedOverTheBindingAndSubscribersSeeIt) {
  FakeHttpAgent agent(GetParam());
  v1::Agent registered;
  ASSERT_TRUE(RegisterByCard("fake", agent.card_url(), &registered).ok());
  const std::string id = SendNow("hold", "fake");
  ASSERT_TRUE(WaitFor([&] { return StatusText(GetTask(id)) == "holding"; }));

  auto context = Context();
  a2apb::SubscribeToTaskRequest subscribe;
  subscribe.set_id(id);
  auto reader = stub_->SubscribeToTask(context.get(), subscribe);
  a2apb::StreamResponse first;
  ASSERT_TRUE(reader->Read(&first));
  EXPECT_EQ(first.task().status().state(), a2apb::TASK_STATE_WORKING);

  a2apb::CancelTaskRequest cancel;
  cancel.set_id(id);
  a2apb::Task canceled;
  grpc::Status s = stub_->CancelTask(Context().get(), cancel, &canceled);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(canceled.status().state(), a2apb::TASK_STATE_CANCELED);
  EXPECT_THAT(agent.cancels(), ElementsAre("agent-task-1"));  // the agent's own task id

  a2apb::StreamResponse event, last;
  while (reader->Read(&event)) last = event;
  ASSERT_TRUE(reader->Finish().ok());
  ASSERT_TRUE(last.has_status_update());
  EXPECT_EQ(last.status_update().status().state(), a2apb::TASK_STATE_CANCELED);
}

// Shutdown cancels the call in flight (httplib's blocked read), and the message stays queued.
// The agent had answered it, so the next coordinator on the same data does not send it again:
// it reads the agent's task back and subscribes to it, and the task's end arrives that way.
TEST_P(HttpAgentTest, ShutdownCutsAHeldStreamAndTheNextStartResumesTheAgentsTask) {
  FakeHttpAgent agent(GetParam());
  v1::Agent registered;
  ASSERT_TRUE(RegisterByCard("fake", agent.card_url(), &registered).ok());
  const std::string id = SendNow("hold", "fake");
  ASSERT_TRUE(WaitFor([&] { return StatusText(GetTask(id)) == "holding"; }));
  StopCoordinator();
  StartCoordinator();
  ASSERT_TRUE(WaitFor([&] { return agent.calls().size() == 2; }));
  EXPECT_THAT(agent.calls(), ElementsAre("GetTask agent-task-1", "SubscribeToTask agent-task-1"));
  EXPECT_THAT(agent.texts(), ElementsAre("hold"));  // sent once
  EXPECT_EQ(GetTask(id).status().state(), a2apb::TASK_STATE_WORKING);
  agent.Complete("agent-task-1");
  ASSERT_TRUE(WaitForState(id, a2apb::TASK_STATE_COMPLETED));
  const a2apb::Task done = GetTask(id);
  EXPECT_EQ(StatusText(done), "finished");
  ASSERT_EQ(done.artifacts_size(), 1);
  EXPECT_EQ(done.artifacts(0).artifact_id(), "finished");
}

// The agent finishes while the coordinator is down (its last events went to a stream nobody
// read): the restarted coordinator reads the ended task back and stores it as the outcome. The
// message is not sent again (an agent refuses a message for an ended task).
TEST_P(HttpAgentTest, AnAgentThatFinishedWhileTheCoordinatorWasDownGivesItsOutcome) {
  FakeHttpAgent agent(GetParam());
  v1::Agent registered;
  ASSERT_TRUE(RegisterByCard("fake", agent.card_url(), &registered).ok());
  const std::string id = SendNow("hold", "fake");
  ASSERT_TRUE(WaitFor([&] { return StatusText(GetTask(id)) == "holding"; }));
  StopCoordinator();
  agent.Complete("agent-task-1");
  StartCoordinator();
  ASSERT_TRUE(WaitForState(id, a2apb::TASK_STATE_COMPLETED));
  const a2apb::Task done = GetTask(id);
  EXPECT_EQ(StatusText(done), "finished");
  ASSERT_EQ(done.artifacts_size(), 1);
  EXPECT_EQ(done.artifacts(0).parts(0).text(), "finished");
  EXPECT_THAT(agent.calls(), ElementsAre("GetTask agent-task-1"));
  EXPECT_THAT(agent.texts(), ElementsAre("hold"));
}

// An agent restarted with its tasks in memory no longer knows the task: the message goes again,
// as a new task at the agent.
TEST_P(HttpAgentTest, AnAgentThatForgotTheTaskGetsTheMessageAgain) {
  FakeHttpAgent agent(GetParam());
  v1::Agent registered;
  ASSERT_TRUE(RegisterByCard("fake", agent.card_url(), &registered).ok());
  const std::string id = SendNow("hold", "fake");
  ASSERT_TRUE(WaitFor([&] { return StatusText(GetTask(id)) == "holding"; }));
  StopCoordinator();
  agent.Forget();
  StartCoordinator();
  ASSERT_TRUE(WaitFor([&] { return agent.texts().size() == 2; }));
  EXPECT_THAT(agent.texts(), ElementsAre("hold", "hold"));
  EXPECT_THAT(agent.calls(), ElementsAre("GetTask agent-task-1"));
  // The status already said "holding" before the restart: wait for the agent's answer to the
  // second delivery (its status message is named after the agent's new task), stored with the
  // agent's new task id in one write. Until then a cancel has no agent task to go to.
  ASSERT_TRUE(WaitFor([&] {
    return absl::StartsWith(GetTask(id).status().message().message_id(), "agent-task-2-");
  }));
  EXPECT_EQ(StatusText(GetTask(id)), "holding");
  a2apb::CancelTaskRequest cancel;
  cancel.set_id(id);
  a2apb::Task canceled;
  ASSERT_TRUE(stub_->CancelTask(Context().get(), cancel, &canceled).ok());
  EXPECT_THAT(agent.cancels(), ElementsAre("agent-task-2"));  // the agent's new task
}

// An agent that never ends its answer is cut at --a2a_stream_timeout, and the delivery retried
// (the second attempt resumes the agent's task: it had answered).
TEST_P(HttpAgentTest, AStreamPastItsDeadlineIsRetriedThenGivenUp) {
  StopCoordinator();
  StartCoordinator([](GatewayOptions& gateway) {
    gateway.stream_timeout = absl::Milliseconds(300);
    gateway.max_delivery_attempts = 2;
  });
  FakeHttpAgent agent(GetParam());
  v1::Agent registered;
  ASSERT_TRUE(RegisterByCard("fake", agent.card_url(), &registered).ok());
  const std::string id = SendNow("hold", "fake");
  ASSERT_TRUE(WaitForState(id, a2apb::TASK_STATE_FAILED));
  EXPECT_THAT(StatusText(GetTask(id)), HasSubstr("after 2 attempts"));
  EXPECT_THAT(agent.texts(), ElementsAre("hold"));
  EXPECT_THAT(agent.calls(), ElementsAre("GetTask agent-task-1", "SubscribeToTask agent-task-1"));
}

TEST_P(HttpAgentTest, RegisteringAgainRefreshesTheCard) {
  FakeHttpAgent agent(GetParam());
  FakeHttpAgent other(GetParam() == FakeHttpAgent::Binding::kJsonRpc
                          ? FakeHttpAgent::Binding::kRest
                          : FakeHttpAgent::Binding::kJsonRpc);
  v1::Agent registered;
  ASSERT_TRUE(RegisterByCard("fake", agent.card_url(), &registered).ok());
  agent.set_card(other.DefaultCard());  // the agent moved to the other binding
  ASSERT_TRUE(RegisterByCard("fake", agent.card_url(), &registered).ok());
  EXPECT_EQ(registered.endpoint(), other.interface_url());
  a2apb::SendMessageResponse response;
  grpc::Status s = stub_->SendMessage(Context().get(), Send("moved", "fake"), &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(response.task().status().state(), a2apb::TASK_STATE_COMPLETED);
  EXPECT_TRUE(agent.texts().empty());
  EXPECT_THAT(other.texts(), ElementsAre("moved"));
}

using CardRegistrationTest = CoordinatorFixture;
using ::testing_util::kWait;
using ::testing_util::WaitFor;

TEST_F(CardRegistrationTest, AJsonRpcAgentWithoutStreamingGetsSendMessage) {
  FakeHttpAgent agent(FakeHttpAgent::Binding::kJsonRpc);
  v1::Agent registered;
  ASSERT_TRUE(RegisterByCard("fake", agent.card_url(), &registered).ok());
  a2apb::SendMessageResponse response;
  grpc::Status s = stub_->SendMessage(Context().get(), Send("no-stream", "fake"), &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(response.task().status().state(), a2apb::TASK_STATE_COMPLETED);
  EXPECT_THAT(agent.texts(), ElementsAre("no-stream"));  // the unary send only
}

// Registration by card URL: bad input gets a clear status and stores nothing.
TEST_F(CardRegistrationTest, BadCardsAreRefusedAndNothingIsStored) {
  httplib::Server cards;
  const std::string big(300 << 10, ' ');
  cards.Get("/big", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(absl::StrCat(R"({"name":"big","description":")", big, R"("})"),
                    "application/json");
  });
  cards.Get("/html", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("<html>hello</html>", "text/html");
  });
  cards.Get("/array", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("[1, 2]", "application/json");
  });
  cards.Get("/old", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"name":"old","supportedInterfaces":[{"url":"http://127.0.0.1:1/",)"
                    R"("protocolBinding":"JSONRPC","protocolVersion":"0.2"},)"
                    R"({"url":"ws://127.0.0.1:1/","protocolBinding":"WEBSOCKET"}]})",
                    "application/json");
  });
  cards.Get("/v029", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"name":"old","protocolVersion":"0.2.9","url":"http://127.0.0.1:1/"})",
                    "application/json");
  });
  cards.Get("/v03grpc", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"name":"g","protocolVersion":"0.3.0","url":"http://127.0.0.1:1/a2a",)"
                    R"("preferredTransport":"GRPC"})",
                    "application/json");
  });
  cards.Get("/v03bad", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"name":"b","url":"http://127.0.0.1:1/","additionalInterfaces":7})",
                    "application/json");
  });
  cards.Get("/elsewhere", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"name":"far","supportedInterfaces":[{"url":"http://agent.example/rpc",)"
                    R"("protocolBinding":"JSONRPC","protocolVersion":"1.0"}]})",
                    "application/json");
  });
  cards.Get("/missing", [](const httplib::Request&, httplib::Response& res) { res.status = 404; });
  const int port = cards.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread thread([&] { cards.listen_after_bind(); });
  const std::string base = absl::StrCat("http://127.0.0.1:", port);

  struct Case {
    std::string card_url;
    grpc::StatusCode code;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"not a url", grpc::StatusCode::INVALID_ARGUMENT, "not a url"},
      {"ftp://127.0.0.1/card", grpc::StatusCode::INVALID_ARGUMENT, "ftp"},
      {"http://127.0.0.1:1/card", grpc::StatusCode::UNAVAILABLE, "cannot fetch the card"},
      {base + "/missing", grpc::StatusCode::FAILED_PRECONDITION, "HTTP 404"},
      {base + "/big", grpc::StatusCode::RESOURCE_EXHAUSTED, "larger than"},
      {base + "/html", grpc::StatusCode::INVALID_ARGUMENT, "not an A2A agent card"},
      {base + "/array", grpc::StatusCode::INVALID_ARGUMENT, "not an A2A agent card"},
      {base + "/old", grpc::StatusCode::FAILED_PRECONDITION, "no interface"},
      {base + "/v029", grpc::StatusCode::FAILED_PRECONDITION, "0.2.9"},
      {base + "/v03grpc", grpc::StatusCode::FAILED_PRECONDITION, "gRPC dials host:port"},
      {base + "/v03bad", grpc::StatusCode::INVALID_ARGUMENT, "additionalInterfaces"},
      {base + "/elsewhere", grpc::StatusCode::PERMISSION_DENIED, "outbound_allow_hosts"},
      {"http://agent.example/card", grpc::StatusCode::PERMISSION_DENIED, "outbound_allow_hosts"},
  };
  for (const Case& c : cases) {
    v1::Agent agent;
    grpc::Status s = RegisterByCard("bad", c.card_url, &agent);
    EXPECT_EQ(s.error_code(), c.code) << c.card_url << ": " << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr(c.says)) << c.card_url;
  }
  // Both an endpoint and a card URL.
  v1::RegisterAgentRequest both;
  both.mutable_agent()->set_name("bad");
  both.mutable_agent()->set_endpoint("127.0.0.1:1");
  both.mutable_agent()->set_card_url(base + "/old");
  v1::Agent agent;
  grpc::Status s = registry_->RegisterAgent(Context().get(), both, &agent);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();

  v1::GetAgentRequest get;
  get.set_name("bad");
  s = registry_->GetAgent(Context().get(), get, &agent);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
  while (!cards.is_running()) absl::SleepFor(absl::Milliseconds(1));
  cards.stop();
  thread.join();
}

// A2A 0.3 agents (docs/a2a-0.3.md section 7): what goes on the wire.
TEST_F(CardRegistrationTest, AV03AgentGetsZeroThreeCallsWithoutAVersionHeader) {
  FakeHttpAgent agent(FakeHttpAgent::Binding::kJsonRpcV03);
  v1::Agent registered;
  ASSERT_TRUE(RegisterByCard("old", agent.card_url(), &registered).ok());
  EXPECT_EQ(registered.protocol_version(), "0.3");
  ASSERT_EQ(registered.card().supported_interfaces_size(), 1);
  EXPECT_EQ(registered.card().supported_interfaces(0).protocol_version(), "0.3");
  EXPECT_EQ(registered.card().skills(0).id(), "echo");  // 0.3's security members left out
  a2apb::SendMessageResponse response;
  grpc::Status s = stub_->SendMessage(Context().get(), Send("hello", "old"), &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(response.task().status().state(), a2apb::TASK_STATE_COMPLETED);
  EXPECT_EQ(StatusText(response.task()), "done: hello");
  const std::vector<std::string> calls = agent.v03_params();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_THAT(calls[0], HasSubstr("message/stream "));
  EXPECT_THAT(calls[0], HasSubstr(R"("blocking":true)"));
  EXPECT_THAT(calls[0], HasSubstr(R"("kind":"message")"));
  EXPECT_THAT(calls[0], HasSubstr(R"("role":"user")"));
  EXPECT_THAT(agent.versions(), ElementsAre(""));

  // The task read back and cancelled over 0.3 as well.
  a2apb::SendMessageRequest held = Send("hold", "old");
  held.mutable_configuration()->set_return_immediately(true);
  s = stub_->SendMessage(Context().get(), held, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const std::string id = response.task().id();
  ASSERT_TRUE(WaitFor([&] { return StatusText(GetTask(id)) == "holding"; }));
  a2apb::CancelTaskRequest cancel;
  cancel.set_tenant("old");
  cancel.set_id(id);
  a2apb::Task canceled;
  s = stub_->CancelTask(Context().get(), cancel, &canceled);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(WaitForState(id, a2apb::TASK_STATE_CANCELED));
  EXPECT_THAT(agent.cancels(), ElementsAre("agent-task-2"));
  EXPECT_THAT(agent.v03_params().back(), ::testing::StartsWith("tasks/cancel {"));
  EXPECT_THAT(agent.v03_params().back(), HasSubstr(R"("id":"agent-task-2")"));
}

TEST_F(CardRegistrationTest, AV03RestAgentGetsProtoJsonOnItsV1Paths) {
  FakeHttpAgent agent(FakeHttpAgent::Binding::kRestV03);
  v1::Agent registered;
  ASSERT_TRUE(RegisterByCard("old", agent.card_url(), &registered).ok());
  EXPECT_EQ(registered.protocol_binding(), "HTTP+JSON");
  EXPECT_EQ(registered.protocol_version(), "0.3");
  a2apb::SendMessageResponse response;
  grpc::Status s = stub_->SendMessage(Context().get(), Send("hello", "old"), &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(StatusText(response.task()), "done: hello");
  // "no-stream": 501 for :stream, then :send.
  s = stub_->SendMessage(Context().get(), Send("no-stream", "old"), &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(response.task().status().state(), a2apb::TASK_STATE_COMPLETED);
  const std::vector<std::string> calls = agent.v03_params();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_THAT(calls[0], ::testing::StartsWith("/rest03/v1/message:stream {"));
  EXPECT_THAT(calls[0], HasSubstr(R"("content":[{"text":"hello"}])"));
  EXPECT_THAT(calls[0], HasSubstr(R"("blocking":true)"));
  EXPECT_THAT(calls[1], ::testing::StartsWith("/rest03/v1/message:stream {"));
  EXPECT_THAT(calls[2], ::testing::StartsWith("/rest03/v1/message:send {"));
  EXPECT_THAT(agent.versions(), ElementsAre("", ""));
}

TEST_F(CardRegistrationTest, AV03AgentWithoutStreamingGetsMessageSend) {
  FakeHttpAgent agent(FakeHttpAgent::Binding::kJsonRpcV03);
  v1::Agent registered;
  ASSERT_TRUE(RegisterByCard("old", agent.card_url(), &registered).ok());
  a2apb::SendMessageResponse response;
  // message/stream answered UnsupportedOperation (-32004): message/send instead.
  grpc::Status s = stub_->SendMessage(Context().get(), Send("no-stream", "old"), &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(response.task().status().state(), a2apb::TASK_STATE_COMPLETED);
  EXPECT_THAT(agent.texts(), ElementsAre("no-stream"));
  std::vector<std::string> calls = agent.v03_params();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_THAT(calls[0], HasSubstr("message/stream "));
  EXPECT_THAT(calls[1], HasSubstr("message/send "));

  // A card without the streaming capability: message/send from the start.
  std::string card = agent.DefaultCard();
  const std::string streaming = R"("streaming":true)";
  card.replace(card.find(streaming), streaming.size(), R"("streaming":false)");
  agent.set_card(card);
  ASSERT_TRUE(RegisterByCard("old", agent.card_url(), &registered).ok());
  s = stub_->SendMessage(Context().get(), Send("hello", "old"), &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(StatusText(response.task()), "done: hello");
  calls = agent.v03_params();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_THAT(calls[2], HasSubstr("message/send "));
}

TEST_F(CardRegistrationTest, AHybridCardIsReadAsOneZero) {
  FakeHttpAgent v10(FakeHttpAgent::Binding::kJsonRpc);
  FakeHttpAgent v03(FakeHttpAgent::Binding::kJsonRpcV03);
  // Both versions' members (as the JavaScript SDK's compatibility layer serves): 1.0 wins.
  std::string hybrid = v10.DefaultCard();
  hybrid.insert(1, absl::StrCat(R"("protocolVersion":"0.3.0","url":")", v03.interface_url(),
                                R"(","preferredTransport":"JSONRPC",)"));
  v10.set_card(hybrid);
  v1::Agent registered;
  ASSERT_TRUE(RegisterByCard("both", v10.card_url(), &registered).ok());
  EXPECT_EQ(registered.protocol_version(), "1.0");
  EXPECT_EQ(registered.endpoint(), v10.interface_url());
}

TEST_F(CardRegistrationTest, AgentsRegisteredByEndpointStayGrpc) {
  v1::RegisterAgentRequest request;
  request.mutable_agent()->set_name("grpc-agent");
  request.mutable_agent()->set_endpoint("127.0.0.1:7001");
  request.mutable_agent()->set_protocol_binding("JSONRPC");  // output only: ignored
  v1::Agent agent;
  grpc::Status s = registry_->RegisterAgent(Context().get(), request, &agent);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(agent.protocol_binding(), "GRPC");
  EXPECT_EQ(agent.endpoint(), "127.0.0.1:7001");
  EXPECT_TRUE(agent.card_url().empty());
}

}  // namespace
}  // namespace coordinator
