// Outbound calls of the real coordinator and purple agent: webhook hosts are checked against
// --outbound_allow_hosts when a push config is stored and again before each POST, model
// endpoints against purple's --model_allow_hosts, and an agent that never answers fails its
// delivery by the --a2a_stream_timeout deadline (retried, then recorded) instead of hanging it.
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "a2a/v1/a2a.grpc.pb.h"
#include "a2a_protocol/version.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "coordinator/v1/agent_registry.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "tests/a2a_test_util.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace {

namespace a2apb = ::lf::a2a::v1;
using ::testing::HasSubstr;
using ::testing_util::A2ACallContext;
using ::testing_util::BinaryPath;
using ::testing_util::CoordinatorProcess;
using ::testing_util::ProcessResult;
using ::testing_util::RunProcess;
using ::testing_util::TempDir;
using ::testing_util::WaitFor;

constexpr absl::Duration kWebhookWait = absl::Seconds(60);

// A webhook receiver on 127.0.0.1 that counts the POSTs it gets.
class Hook {
 public:
  Hook() {
    server_.Post("/hook", [this](const httplib::Request& req, httplib::Response& res) {
      absl::MutexLock lock(&mu_);
      bodies_.push_back(req.body);
      res.status = 200;
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~Hook() {
    while (!server_.is_running() && port_ > 0) absl::SleepFor(absl::Milliseconds(1));
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  std::string url() const { return absl::StrCat("http://127.0.0.1:", port_, "/hook"); }
  std::vector<std::string> bodies() {
    absl::MutexLock lock(&mu_);
    return bodies_;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  absl::Mutex mu_;
  std::vector<std::string> bodies_ ABSL_GUARDED_BY(mu_);
};

// An A2A agent that takes every delivery stream and never answers on it: no event, no status,
// until the caller gives up (its deadline) and the call is cancelled.
class SilentAgent final : public a2apb::A2AService::CallbackService {
 public:
  SilentAgent() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~SilentAgent() override { server_->Shutdown(); }

  grpc::ServerWriteReactor<a2apb::StreamResponse>* SendStreamingMessage(
      grpc::CallbackServerContext* /*context*/,
      const a2apb::SendMessageRequest* /*request*/) override {
    class Silent final : public grpc::ServerWriteReactor<a2apb::StreamResponse> {
     public:
      void OnCancel() override { Finish(grpc::Status::CANCELLED); }
      void OnDone() override { delete this; }
    };
    calls_.fetch_add(1);
    return new Silent();
  }

  int port() const { return port_; }
  int calls() const { return calls_.load(); }

 private:
  int port_ = 0;
  std::atomic<int> calls_{0};
  std::unique_ptr<grpc::Server> server_;
};

class OutboundTest : public ::testing::Test {
 protected:
  void Start(const std::vector<std::string>& flags) {
    std::vector<std::string> args = {
        "--a2a_delivery_max_attempts=1000", "--a2a_retry_initial_backoff=20ms",
        "--a2a_retry_max_backoff=200ms", "--a2a_push_initial_backoff=20ms"};
    args.insert(args.end(), flags.begin(), flags.end());
    absl::StatusOr<std::unique_ptr<CoordinatorProcess>> coordinator =
        CoordinatorProcess::Start(dir_.Sub("data"), args);
    ASSERT_OK(coordinator);
    coordinator_ = *std::move(coordinator);
    auto channel = grpc::CreateChannel(coordinator_->target(), grpc::InsecureChannelCredentials());
    a2a_ = a2apb::A2AService::NewStub(channel);
    registry_ = coordinator::v1::AgentRegistry::NewStub(channel);
  }

  void Register(const std::string& name, const std::string& endpoint) {
    coordinator::v1::RegisterAgentRequest reg;
    reg.mutable_agent()->set_name(name);
    reg.mutable_agent()->set_endpoint(endpoint);
    coordinator::v1::Agent agent;
    const grpc::Status status = registry_->RegisterAgent(A2ACallContext().get(), reg, &agent);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }

  // Sends `text` to `tenant`, with a push config for `hook_url` unless it is empty.
  grpc::Status Send(const std::string& tenant, const std::string& hook_url,
                    a2apb::SendMessageResponse* response) {
    static int counter = 0;
    a2apb::SendMessageRequest request;
    request.set_tenant(tenant);
    request.mutable_message()->set_message_id(absl::StrCat("m-", ++counter));
    request.mutable_message()->set_role(a2apb::ROLE_USER);
    request.mutable_message()->add_parts()->set_text("hello");
    request.mutable_configuration()->set_return_immediately(true);  // the agent is down
    if (!hook_url.empty()) {
      request.mutable_configuration()->mutable_task_push_notification_config()->set_url(hook_url);
    }
    return a2a_->SendMessage(A2ACallContext().get(), request, response);
  }

  grpc::Status AddConfig(const std::string& task_id, const std::string& url) {
    a2apb::TaskPushNotificationConfig config;
    config.set_task_id(task_id);
    config.set_url(url);
    a2apb::TaskPushNotificationConfig created;
    return a2a_->CreateTaskPushNotificationConfig(A2ACallContext().get(), config, &created);
  }

  int ConfigCount(const std::string& task_id) {
    a2apb::ListTaskPushNotificationConfigsRequest list;
    list.set_task_id(task_id);
    a2apb::ListTaskPushNotificationConfigsResponse configs;
    const grpc::Status status =
        a2a_->ListTaskPushNotificationConfigs(A2ACallContext().get(), list, &configs);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return configs.configs_size();
  }

  grpc::Status Cancel(const std::string& task_id) {
    a2apb::CancelTaskRequest cancel;
    cancel.set_id(task_id);
    a2apb::Task task;
    return a2a_->CancelTask(A2ACallContext().get(), cancel, &task);
  }

  a2apb::Task GetTask(const std::string& task_id) {
    a2apb::GetTaskRequest get;
    get.set_id(task_id);
    a2apb::Task task;
    EXPECT_TRUE(a2a_->GetTask(A2ACallContext().get(), get, &task).ok());
    return task;
  }

  TempDir dir_;
  std::unique_ptr<CoordinatorProcess> coordinator_;
  std::unique_ptr<a2apb::A2AService::Stub> a2a_;
  std::unique_ptr<coordinator::v1::AgentRegistry::Stub> registry_;
};

TEST_F(OutboundTest, WebhookHostNotOnTheListIsRefusedWhenStoredAndNothingIsStored) {
  ASSERT_NO_FATAL_FAILURE(Start({"--outbound_allow_hosts=hooks.example.com"}));
  ASSERT_NO_FATAL_FAILURE(Register("away", "127.0.0.1:1"));  // down: tasks wait SUBMITTED

  // A new task with a refused webhook is not created at all.
  a2apb::SendMessageResponse response;
  grpc::Status refused = Send("away", "http://127.0.0.1:9/hook", &response);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::PERMISSION_DENIED) << refused.error_message();
  EXPECT_THAT(refused.error_message(), HasSubstr("127.0.0.1:9"));
  EXPECT_THAT(refused.error_message(), HasSubstr("--outbound_allow_hosts"));
  a2apb::ListTasksRequest list;
  list.set_tenant("away");
  a2apb::ListTasksResponse tasks;
  ASSERT_TRUE(a2a_->ListTasks(A2ACallContext().get(), list, &tasks).ok());
  EXPECT_EQ(tasks.tasks_size(), 0);

  ASSERT_TRUE(Send("away", "", &response).ok());
  const std::string task_id = response.task().id();
  for (const std::string url : {
           "http://evil.example/hook",
           "http://hooks.example.com.evil.example/hook",
           "http://[::1]:80/hook",
       }) {
    const grpc::Status status = AddConfig(task_id, url);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED) << url;
  }
  for (const std::string url : {
           "http://hooks.example.com@127.0.0.1/hook",
           "http://hooks.example.com:99999/hook",
           "http://hooks.example.com\\@127.0.0.1/",
       }) {
    const grpc::Status status = AddConfig(task_id, url);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << url;
  }
  EXPECT_EQ(ConfigCount(task_id), 0);
  // Case and a trailing dot do not matter; the listed host is accepted.
  const grpc::Status allowed = AddConfig(task_id, "https://HOOKS.example.com./hook");
  EXPECT_TRUE(allowed.ok()) << allowed.error_message();
  EXPECT_EQ(ConfigCount(task_id), 1);
}

TEST_F(OutboundTest, AllowedWebhookIsDelivered) {
  Hook hook;
  ASSERT_GT(hook.port(), 0);
  ASSERT_NO_FATAL_FAILURE(Start({absl::StrCat("--outbound_allow_hosts=127.0.0.1:", hook.port())}));
  ASSERT_NO_FATAL_FAILURE(Register("away", "127.0.0.1:1"));
  a2apb::SendMessageResponse response;
  const grpc::Status sent = Send("away", hook.url(), &response);
  ASSERT_TRUE(sent.ok()) << sent.error_message();
  ASSERT_TRUE(Cancel(response.task().id()).ok());
  EXPECT_TRUE(WaitFor(
      [&] {
        for (const std::string& body : hook.bodies()) {
          if (absl::StrContains(body, "TASK_STATE_CANCELED")) return true;
        }
        return false;
      },
      kWebhookWait));
}

TEST_F(OutboundTest, WebhookStoredBeforeTheListChangedIsNotCalled) {
  Hook hook;
  ASSERT_GT(hook.port(), 0);
  // First run: the default list (loopback) accepts the webhook.
  ASSERT_NO_FATAL_FAILURE(Start({}));
  ASSERT_NO_FATAL_FAILURE(Register("away", "127.0.0.1:1"));
  a2apb::SendMessageResponse response;
  ASSERT_TRUE(Send("away", "", &response).ok());
  const std::string task_id = response.task().id();
  const grpc::Status added = AddConfig(task_id, hook.url());
  ASSERT_TRUE(added.ok()) << added.error_message();
  absl::StatusOr<ProcessResult> stopped = coordinator_->Stop();
  ASSERT_OK(stopped);

  // Second run on the same data: loopback is no longer allowed.
  ASSERT_NO_FATAL_FAILURE(Start({"--outbound_allow_hosts=hooks.example.com"}));
  ASSERT_EQ(ConfigCount(task_id), 1);
  ASSERT_TRUE(Cancel(task_id).ok());  // a status change: one webhook call is due
  absl::StatusOr<std::string> line =
      coordinator_->process().WaitForStderrLine("webhook not called", kWebhookWait);
  ASSERT_OK(line);
  EXPECT_THAT(*line, HasSubstr(task_id));
  EXPECT_THAT(*line, HasSubstr(absl::StrCat("127.0.0.1:", hook.port())));
  EXPECT_THAT(*line, HasSubstr("--outbound_allow_hosts"));
  // The refusal is final: it is logged once, and the hook was never called.
  absl::StatusOr<ProcessResult> second = coordinator_->Stop();
  ASSERT_OK(second);
  size_t refusals = 0;
  for (size_t at = second->err.find("webhook not called"); at != std::string::npos;
       at = second->err.find("webhook not called", at + 1)) {
    ++refusals;
  }
  EXPECT_EQ(refusals, 1u) << second->err;
  EXPECT_TRUE(hook.bodies().empty());
}

TEST_F(OutboundTest, AgentThatNeverAnswersFailsTheDeliveryByTheDeadline) {
  SilentAgent silent;
  ASSERT_GT(silent.port(), 0);
  ASSERT_NO_FATAL_FAILURE(Start({"--a2a_stream_timeout=300ms", "--a2a_delivery_max_attempts=2"}));
  ASSERT_NO_FATAL_FAILURE(Register("silent", absl::StrCat("127.0.0.1:", silent.port())));
  a2apb::SendMessageResponse response;
  ASSERT_TRUE(Send("silent", "", &response).ok());
  const std::string task_id = response.task().id();
  a2apb::Task task;
  ASSERT_TRUE(WaitFor(
      [&] {
        task = GetTask(task_id);
        return task.status().state() == a2apb::TASK_STATE_FAILED;
      },
      kWebhookWait))
      << task.DebugString();
  // Each attempt reached the agent and was cut by the deadline; the second was the last.
  EXPECT_EQ(silent.calls(), 2);
  ASSERT_GT(task.status().message().parts_size(), 0);
  const std::string reason = task.status().message().parts(0).text();
  EXPECT_THAT(reason, HasSubstr("after 2 attempts"));
  EXPECT_THAT(absl::AsciiStrToLower(reason), HasSubstr("deadline"));
}

TEST(ModelAllowListTest, PurpleRefusesAModelEndpointNotOnItsList) {
  absl::StatusOr<ProcessResult> result =
      RunProcess(BinaryPath("purple_agent"),
                 {"--coordinator=127.0.0.1:1", "--policy=openai:https://api.models.example/v1"});
  ASSERT_OK(result);
  EXPECT_EQ(result->exit_code, 2) << result->Describe();
  EXPECT_THAT(result->err, HasSubstr("--model_allow_hosts")) << result->Describe();
  EXPECT_THAT(result->err, HasSubstr("api.models.example:443")) << result->Describe();

  result = RunProcess(BinaryPath("purple_agent"),
                      {"--coordinator=127.0.0.1:1", "--model_allow_hosts=http://bad/entry",
                       "--policy=openai:http://127.0.0.1:9"});
  ASSERT_OK(result);
  EXPECT_EQ(result->exit_code, 2) << result->Describe();
  EXPECT_THAT(result->err, HasSubstr("--model_allow_hosts")) << result->Describe();
}

TEST(OutboundFlagsTest, MalformedAllowListIsAStartError) {
  TempDir dir;
  absl::StatusOr<ProcessResult> result =
      RunProcess(BinaryPath("coordinator"),
                 {"--listen=127.0.0.1:0", "--http_listen=", "--data_dir=" + dir.Sub("data"),
                  "--outbound_allow_hosts=ok.example,user@evil.example"});
  ASSERT_OK(result);
  EXPECT_EQ(result->exit_code, 2) << result->Describe();
  EXPECT_THAT(result->err, HasSubstr("--outbound_allow_hosts")) << result->Describe();
}

}  // namespace
