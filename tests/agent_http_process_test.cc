// Our agents started as evaluation platforms start agents: `--host`, `--port` and `--card-url`,
// with hyphens, and the card served on that port naming the card URL (agent_runtime/agent_http.h).
#include <memory>
#include <string>

#include "a2a_http/http.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/evaluation_test_util.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

using ::testing::HasSubstr;
using testing_util::BinaryPath;
using testing_util::kProcessWait;

TEST(AgentHttpProcessTest, EachAgentTakesThePlatformsFlagsAndServesItsCard) {
  for (const std::string binary : {"echo_agent", "purple_agent", "green_agent"}) {
    SCOPED_TRACE(binary);
    // No coordinator (--coordinator=): nothing to register with, the card is served all the same.
    // The flags as platforms write them, with hyphens and values apart.
    int port = 0;
    std::vector<std::string> args = {"--card-url", "http://agent.example:9009/",
                                     "--coordinator=", "--name=platform"};
    if (binary == "purple_agent") args.push_back("--policy=script:" + testing_util::TasksDir());
    absl::StatusOr<std::unique_ptr<Process>> agent =
        testing_util::StartAgentWithHttp(binary, args, &port);
    ASSERT_OK(agent);
    a2a_http::HttpGetOptions get;
    get.headers = {{"A2A-Version", "1.0"}};
    absl::StatusOr<std::string> json = a2a_http::HttpGet(
        absl::StrCat("http://127.0.0.1:", port, "/.well-known/agent-card.json"), get);
    ASSERT_OK(json);
    google::protobuf::Struct card;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(*json, &card).ok()) << *json;
    EXPECT_THAT(*json, HasSubstr(R"("url":"http://agent.example:9009/")"));
    EXPECT_THAT(*json, HasSubstr(R"("name":"platform")"));
    ASSERT_OK((*agent)->Signal(SIGTERM));
    absl::StatusOr<testing_util::ProcessResult> ended = (*agent)->Wait(kProcessWait);
    ASSERT_OK(ended);
    EXPECT_EQ(ended->exit_code, 0) << ended->err;
  }
}

TEST(AgentHttpProcessTest, BadHttpFlagsStopTheStartWithTheReason) {
  for (const auto& [args, reason] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--port=70000"}, "--port 70000 is not a port"},
           {{"--card-url=http://x/"}, "--card-url needs --port"},
           {{"--port=0", "--card-url=agent.example:9009"}, "is not an http:// or https:// URL"},
       }) {
    absl::StatusOr<testing_util::ProcessResult> result =
        testing_util::RunProcess(BinaryPath("echo_agent"), args, kProcessWait);
    ASSERT_OK(result);
    EXPECT_EQ(result->exit_code, 2) << result->err;
    EXPECT_THAT(result->err, HasSubstr(reason));
  }
}

}  // namespace
}  // namespace coordinator
