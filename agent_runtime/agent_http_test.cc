// The agent's HTTP port (agent_http.h): its card in both versions' forms and the A2A bindings
// transcoded onto its gRPC service, as an evaluation platform's runner and a 0.3 SDK client reach
// an agent; and the flags that ask for it.
#include "agent_runtime/agent_http.h"

#include <memory>
#include <string>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent_runtime/agent_main.h"
#include "agent_runtime/agent_runtime.h"
#include "agent_runtime/echo_agent.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "tests/test_util.h"

ABSL_DECLARE_FLAG(int, port);
ABSL_DECLARE_FLAG(std::string, host);
ABSL_DECLARE_FLAG(std::string, card_url);

namespace agent_runtime {
namespace {

namespace pb = google::protobuf;
using ::testing::HasSubstr;

pb::Value Parse(const std::string& json) {
  pb::Value value;
  EXPECT_TRUE(pb::util::JsonStringToMessage(json, &value).ok()) << json;
  return value;
}

// The member at `path` (names and array indexes) of a JSON value; null when there is none.
const pb::Value& At(const pb::Value& value, std::initializer_list<std::string> path) {
  static const pb::Value kNull;
  const pb::Value* at = &value;
  for (const std::string& step : path) {
    if (at->has_list_value() && !step.empty() && std::isdigit(step[0])) {
      const size_t i = std::stoul(step);
      if (i >= static_cast<size_t>(at->list_value().values_size())) return kNull;
      at = &at->list_value().values(static_cast<int>(i));
      continue;
    }
    if (!at->has_struct_value()) return kNull;
    auto it = at->struct_value().fields().find(step);
    if (it == at->struct_value().fields().end()) return kNull;
    at = &it->second;
  }
  return *at;
}

class AgentHttpTest : public ::testing::Test {
 protected:
  void Start(const std::string& card_url = "") {
    RuntimeOptions options;
    options.name = "echo";
    options.card.set_name("echo");
    options.card.set_description("echoes");
    options.http_listen = "127.0.0.1:0";
    options.card_url = card_url;
    absl::StatusOr<std::unique_ptr<AgentServer>> server = AgentServer::Start(options, &agent_);
    ASSERT_OK(server);
    server_ = *std::move(server);
    ASSERT_NE(server_->http_port(), 0);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->http_port());
    client_->set_read_timeout(absl::ToInt64Seconds(testing_util::kWait), 0);
  }

  pb::Value Card(const httplib::Headers& headers = {}) {
    httplib::Result res = client_->Get("/.well-known/agent-card.json", headers);
    EXPECT_TRUE(res);
    if (!res) return pb::Value();
    EXPECT_EQ(res->status, 200) << res->body;
    return Parse(res->body);
  }

  // A JSON-RPC call at the root; the answer's body.
  pb::Value Call(const std::string& body, const httplib::Headers& headers = {}) {
    httplib::Result res = client_->Post("/", headers, body, "application/json");
    EXPECT_TRUE(res);
    if (!res) return pb::Value();
    EXPECT_EQ(res->status, 200) << res->body;
    return Parse(res->body);
  }

  EchoAgent agent_;
  std::unique_ptr<AgentServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(AgentHttpTest, TheCardNamesTheAddressItsReaderUsedInBothVersionsForms) {
  Start();
  const std::string url = absl::StrCat("http://127.0.0.1:", server_->http_port(), "/");
  const pb::Value v10 = Card({{"A2A-Version", "1.0"}});
  EXPECT_EQ(At(v10, {"name"}).string_value(), "echo");
  EXPECT_EQ(At(v10, {"supportedInterfaces", "0", "url"}).string_value(), url);
  EXPECT_EQ(At(v10, {"supportedInterfaces", "0", "protocolBinding"}).string_value(), "JSONRPC");
  EXPECT_EQ(At(v10, {"supportedInterfaces", "1", "protocolBinding"}).string_value(), "HTTP+JSON");
  EXPECT_EQ(At(v10, {"supportedInterfaces", "2", "protocolVersion"}).string_value(), "0.3");
  // A 0.3 reader (no A2A-Version) gets the members 0.3 reads: url and preferredTransport.
  const pb::Value v03 = Card();
  EXPECT_EQ(At(v03, {"url"}).string_value(), url);
  EXPECT_EQ(At(v03, {"preferredTransport"}).string_value(), "JSONRPC");
  // One card only: nothing below the root.
  httplib::Result below = client_->Get("/agents/echo/.well-known/agent-card.json");
  ASSERT_TRUE(below);
  EXPECT_EQ(below->status, 404);
}

TEST_F(AgentHttpTest, TheCardNamesTheCardUrlWhenOneIsGiven) {
  Start("http://purple-agent:9009/");
  EXPECT_EQ(At(Card({{"A2A-Version", "1.0"}}), {"supportedInterfaces", "0", "url"}).string_value(),
            "http://purple-agent:9009/");
  EXPECT_EQ(At(Card(), {"url"}).string_value(), "http://purple-agent:9009/");
}

TEST_F(AgentHttpTest, JsonRpcInBothVersionsReachesTheAgent) {
  Start();
  const pb::Value v10 = Call(
      R"({"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1",)"
      R"("role":"ROLE_USER","parts":[{"text":"hello"}]}}})",
      {{"A2A-Version", "1.0"}});
  EXPECT_EQ(At(v10, {"result", "task", "status", "state"}).string_value(), "TASK_STATE_COMPLETED")
      << v10.DebugString();
  EXPECT_EQ(At(v10, {"result", "task", "artifacts", "0", "parts", "0", "text"}).string_value(),
            "hello");
  // A2A 0.3's message/send, as a 0.3 SDK client (or a platform's runner) sends it.
  const pb::Value v03 = Call(
      R"({"jsonrpc":"2.0","id":"a","method":"message/send","params":{"message":{"kind":"message",)"
      R"("messageId":"m2","role":"user","parts":[{"kind":"text","text":"hi"}]}}})");
  EXPECT_EQ(At(v03, {"result", "kind"}).string_value(), "task") << v03.DebugString();
  EXPECT_EQ(At(v03, {"result", "status", "state"}).string_value(), "completed");
  EXPECT_EQ(At(v03, {"result", "artifacts", "0", "parts", "0", "text"}).string_value(), "hi");
  // And HTTP+JSON.
  httplib::Result rest = client_->Post(
      "/message:send", {{"A2A-Version", "1.0"}},
      R"({"message":{"messageId":"m3","role":"ROLE_USER","parts":[{"text":"rest"}]}})",
      "application/json");
  ASSERT_TRUE(rest);
  EXPECT_EQ(rest->status, 200) << rest->body;
  EXPECT_EQ(At(Parse(rest->body), {"task", "status", "state"}).string_value(),
            "TASK_STATE_COMPLETED");
}

// A stream carries every event to the last: the final status update, which gRPC writes in one
// batch with the stream's status, included.
TEST_F(AgentHttpTest, AStreamEndsWithTheTasksFinalStatus) {
  Start();
  httplib::Result res = client_->Post(
      "/", {{"A2A-Version", "1.0"}},
      R"({"jsonrpc":"2.0","id":7,"method":"SendStreamingMessage","params":{"message":)"
      R"({"messageId":"s1","role":"ROLE_USER","parts":[{"text":"streamed"}]}}})",
      "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  std::vector<std::string> states;
  for (absl::string_view line : absl::StrSplit(res->body, '\n')) {
    if (!absl::ConsumePrefix(&line, "data: ")) continue;
    const pb::Value event = Parse(std::string(line));
    const pb::Value& update = At(event, {"result", "statusUpdate", "status", "state"});
    if (update.has_string_value()) states.push_back(update.string_value());
  }
  EXPECT_THAT(states, ::testing::ElementsAre("TASK_STATE_WORKING", "TASK_STATE_COMPLETED"))
      << res->body;
}

TEST_F(AgentHttpTest, BadRequestsGetTheBindingsErrors) {
  Start();
  EXPECT_EQ(At(Call("{not json"), {"error", "code"}).number_value(), -32700);
  EXPECT_EQ(At(Call(R"({"jsonrpc":"2.0","id":1,"method":"NoSuchMethod","params":{}})",
                    {{"A2A-Version", "1.0"}}),
               {"error", "code"})
                .number_value(),
            -32601);
  // The agent keeps no tasks: the coordinator does.
  const pb::Value get = Call(R"({"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}})",
                             {{"A2A-Version", "1.0"}});
  EXPECT_THAT(At(get, {"error", "message"}).string_value(), HasSubstr("not kept by this agent"));
}

TEST(AgentHttpStartTest, APortInUseFailsTheStartNamingIt) {
  EchoAgent agent;
  RuntimeOptions first;
  first.http_listen = "127.0.0.1:0";
  absl::StatusOr<std::unique_ptr<AgentServer>> holder = AgentServer::Start(first, &agent);
  ASSERT_OK(holder);
  RuntimeOptions second;
  second.http_listen = absl::StrCat("127.0.0.1:", (*holder)->http_port());
  absl::StatusOr<std::unique_ptr<AgentServer>> refused = AgentServer::Start(second, &agent);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr(second.http_listen));
}

TEST(ApplyHttpFlagsTest, PortHostAndCardUrlMakeTheHttpPort) {
  absl::FlagSaver saver;
  RuntimeOptions options;
  ASSERT_OK(ApplyHttpFlags(&options));
  EXPECT_EQ(options.http_listen, "");  // no --port: no HTTP port
  absl::SetFlag(&FLAGS_port, 9009);
  absl::SetFlag(&FLAGS_host, "0.0.0.0");
  absl::SetFlag(&FLAGS_card_url, "http://green-agent:9009/");
  ASSERT_OK(ApplyHttpFlags(&options));
  EXPECT_EQ(options.http_listen, "0.0.0.0:9009");
  EXPECT_EQ(options.card_url, "http://green-agent:9009/");
  absl::SetFlag(&FLAGS_host, "::");
  ASSERT_OK(ApplyHttpFlags(&options));
  EXPECT_EQ(options.http_listen, "[::]:9009");
}

TEST(ApplyHttpFlagsTest, BadValuesAreRefusedNamingTheFlag) {
  absl::FlagSaver saver;
  RuntimeOptions options;
  absl::SetFlag(&FLAGS_card_url, "http://green-agent:9009/");
  EXPECT_THAT(ApplyHttpFlags(&options).message(), HasSubstr("--card-url needs --port"));
  absl::SetFlag(&FLAGS_port, 70000);
  EXPECT_THAT(ApplyHttpFlags(&options).message(), HasSubstr("--port 70000"));
  absl::SetFlag(&FLAGS_port, 9009);
  absl::SetFlag(&FLAGS_card_url, "ftp://green-agent/");
  EXPECT_THAT(ApplyHttpFlags(&options).message(), HasSubstr("not an http:// or https:// URL"));
  EXPECT_EQ(options.http_listen, "");
}

}  // namespace
}  // namespace agent_runtime
