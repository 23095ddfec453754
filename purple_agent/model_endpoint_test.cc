// The openai: policy's outbound guards: the endpoint must be on --model_allow_hosts (loopback by
// default), and one model call is bounded by --policy_timeout even when the endpoint accepts the
// connection and never answers.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "purple_agent/policy.h"
#include "tests/test_util.h"

namespace purple_agent {
namespace {

using ::testing::HasSubstr;

// A TCP listener on 127.0.0.1 that never accepts: connections complete (the kernel's backlog)
// and then nothing is ever read or written.
class SilentServer {
 public:
  SilentServer() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd_, 16) != 0) {
      return;
    }
    socklen_t len = sizeof(addr);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~SilentServer() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

PolicyInput Input() {
  PolicyInput input;
  input.context_id = "ctx";
  input.task_id = "task";
  input.step = 1;
  input.attempt = 1;
  input.tier = 1;
  input.model = "codex-mini";
  input.turns.push_back({"user", "find the bug"});
  return input;
}

TEST(ModelEndpointTest, HostNotOnTheAllowListIsRefused) {
  PolicyOptions options;  // default: loopback only
  absl::StatusOr<std::unique_ptr<Policy>> policy =
      MakePolicy("openai:https://api.models.example/v1", options);
  ASSERT_FALSE(policy.ok());
  EXPECT_EQ(policy.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(policy.status().message(), HasSubstr("api.models.example:443"));
  EXPECT_THAT(policy.status().message(), HasSubstr("--model_allow_hosts"));

  absl::StatusOr<common::HostAllowList> list = common::HostAllowList::Parse("api.models.example");
  ASSERT_OK(list);
  options.model_allow = *list;
  EXPECT_OK(MakePolicy("openai:https://api.models.example/v1", options));
  // A listed host does not make loopback (or any other host) allowed.
  EXPECT_EQ(MakePolicy("openai:http://127.0.0.1:9/v1", options).status().code(),
            absl::StatusCode::kPermissionDenied);
  // Userinfo cannot smuggle another host in.
  EXPECT_EQ(MakePolicy("openai:https://api.models.example@127.0.0.1/v1", options).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MakePolicy("openai:api.models.example", options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ModelEndpointTest, EndpointThatNeverAnswersFailsWithDeadlineExceeded) {
  SilentServer silent;
  ASSERT_GT(silent.port(), 0);
  PolicyOptions options;
  options.timeout = absl::Milliseconds(300);
  absl::StatusOr<std::unique_ptr<Policy>> policy =
      MakePolicy(absl::StrCat("openai:http://127.0.0.1:", silent.port()), options);
  ASSERT_OK(policy);
  absl::StatusOr<PolicyOutput> out = (*policy)->Next(Input());
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDeadlineExceeded) << out.status();
  EXPECT_THAT(out.status().message(), HasSubstr("--policy_timeout"));
}

TEST(ModelEndpointTest, EndpointThatTricklesItsAnswerIsCutAtTheDeadline) {
  // Sends a byte of the body every 50 ms, well inside httplib's per-read timeout, for ever
  // (until the client goes away): only a deadline on the whole call ends it.
  httplib::Server server;
  server.Post("/v1/chat/completions", [](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("application/json", [](size_t, httplib::DataSink& sink) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      return sink.write(" ", 1);
    });
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread thread([&] { server.listen_after_bind(); });
  PolicyOptions options;
  options.timeout = absl::Milliseconds(500);
  absl::StatusOr<std::unique_ptr<Policy>> policy =
      MakePolicy(absl::StrCat("openai:http://127.0.0.1:", port), options);
  ASSERT_OK(policy);
  absl::StatusOr<PolicyOutput> out = (*policy)->Next(Input());
  server.stop();
  thread.join();
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDeadlineExceeded) << out.status();
}

TEST(ModelEndpointTest, AllowedEndpointThatAnswersIsUsed) {
  httplib::Server server;
  server.Post("/v1/chat/completions", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"choices":[{"message":{"content":"execute: ls"}}]})", "application/json");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread thread([&] { server.listen_after_bind(); });
  PolicyOptions options;
  options.timeout = absl::Seconds(30);
  absl::StatusOr<common::HostAllowList> list =
      common::HostAllowList::Parse(absl::StrCat("127.0.0.1:", port));
  ASSERT_OK(list);
  options.model_allow = *list;
  absl::StatusOr<std::unique_ptr<Policy>> policy =
      MakePolicy(absl::StrCat("openai:http://127.0.0.1:", port, "/"), options);
  ASSERT_OK(policy);
  absl::StatusOr<PolicyOutput> out = (*policy)->Next(Input());
  server.stop();
  thread.join();
  ASSERT_OK(out);
  EXPECT_EQ(out->action, "execute: ls");
}

}  // namespace
}  // namespace purple_agent
