// The A2A JSON-RPC and HTTP+JSON bindings with real processes: the coordinator binary, the
// echo_agent behind it, and plain HTTP clients that know only the agent's base URL. Every wait is
// bounded; no sleeps.
#include <algorithm>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "a2a/v1/a2a.pb.h"
#include "a2a_protocol/json_binding.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

namespace pb = google::protobuf;
namespace a2apb = ::lf::a2a::v1;
using a2a_protocol::FromJson;
using testing_util::BinaryPath;
using testing_util::CoordinatorProcess;
using ::testing_util::kWait;
using testing_util::Process;
using testing_util::TempDir;

// A JSON document as a google.protobuf.Value, to look into answers whatever their shape.
pb::Value Parse(const std::string& json) {
  pb::Value value;
  EXPECT_TRUE(pb::util::JsonStringToMessage(json, &value).ok()) << json;
  return value;
}

const pb::Value& At(const pb::Value& object, const std::string& name) {
  static const pb::Value kNull;
  if (!object.has_struct_value()) return kNull;
  auto it = object.struct_value().fields().find(name);
  return it == object.struct_value().fields().end() ? kNull : it->second;
}

std::string ToJson(const pb::Value& value) {
  std::string json;
  (void)pb::util::MessageToJsonString(value, &json);
  return json;
}

std::string SendParams(const std::string& text, const std::string& extra = "") {
  static int counter = 0;
  return absl::StrCat(R"({"message":{"messageId":"http-)", ++counter,
                      R"(","role":"ROLE_USER","parts":[{"text":")", text, R"("}]})", extra, "}");
}

class A2AHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<CoordinatorProcess>> coordinator = CoordinatorProcess::Start(
        dir_.Sub("data"), {"--http_listen=127.0.0.1:0", "--max_request_bytes=65536"});
    ASSERT_OK(coordinator);
    coordinator_ = *std::move(coordinator);
    absl::StatusOr<int> port = coordinator_->HttpPort();
    ASSERT_OK(port);
    http_port_ = *port;
    absl::StatusOr<std::unique_ptr<Process>> agent = Process::Start(
        BinaryPath("echo_agent"), {"--coordinator=" + coordinator_->target(), "--name=echo"});
    ASSERT_OK(agent);
    agent_ = *std::move(agent);
    ASSERT_OK(agent_->WaitForStderrLine("registered", kWait));
  }

  std::unique_ptr<httplib::Client> Client() {
    auto client = std::make_unique<httplib::Client>("127.0.0.1", http_port_);
    client->set_connection_timeout(10);
    client->set_read_timeout(30);
    return client;
  }

  // A JSON-RPC call to the echo agent's base URL: the HTTP status and the parsed answer.
  std::pair<int, pb::Value> Rpc(const std::string& method, const std::string& params,
                                const std::string& path = "/agents/echo") {
    httplib::Result res = Client()->Post(path.c_str(),
                                         absl::StrCat(R"({"jsonrpc":"2.0","id":"c1","method":")",
                                                      method, R"(","params":)", params, "}"),
                                         "application/json");
    EXPECT_TRUE(res) << method;
    if (!res) return {0, pb::Value()};
    return {res->status, Parse(res->body)};
  }

  // Posts `body` raw to `path`: the status and the body.
  std::pair<int, std::string> Post(const std::string& path, const std::string& body,
                                   const std::string& content_type = "application/json") {
    httplib::Result res = Client()->Post(path.c_str(), body, content_type.c_str());
    EXPECT_TRUE(res) << path;
    if (!res) return {0, ""};
    return {res->status, res->body};
  }

  std::pair<int, std::string> Get(const std::string& path, const httplib::Headers& headers = {}) {
    httplib::Result res = Client()->Get(path.c_str(), headers);
    EXPECT_TRUE(res) << path;
    if (!res) return {0, ""};
    return {res->status, res->body};
  }

  // POSTs `body` to `path` and reads the event stream: each event's data, until the stream ends
  // or `keep_reading` says to stop (then the client hangs up). The HTTP status and content type.
  struct StreamResult {
    int status = 0;
    std::string content_type;
    std::vector<std::string> events;
    std::string body;  // when the answer was no event stream
  };
  StreamResult Stream(
      const std::string& path, const std::string& body,
      const std::function<bool(const std::string&)>& keep_reading = [](const std::string&) {
        return true;
      }) {
    StreamResult result;
    a2a_protocol::SseParser parser(1 << 20);
    httplib::Request req;
    req.method = "POST";
    req.path = path;
    req.body = body;
    req.set_header("Content-Type", "application/json");
    req.set_header("Accept", "text/event-stream");
    bool stream = false;
    req.response_handler = [&](const httplib::Response& res) {
      result.status = res.status;
      result.content_type = res.get_header_value("Content-Type");
      stream = absl::StartsWith(result.content_type, "text/event-stream");
      return true;
    };
    req.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
      if (!stream) {
        result.body.append(data, size);
        return true;
      }
      bool keep = true;
      const absl::Status fed = parser.Feed(absl::string_view(data, size), [&](std::string event) {
        result.events.push_back(event);
        if (!keep_reading(event)) keep = false;
        return absl::OkStatus();
      });
      EXPECT_OK(fed);
      return keep;
    };
    auto client = Client();
    httplib::Response res;
    httplib::Error error = httplib::Error::Success;
    client->send(req, res, error);
    return result;
  }

  // A JSON-RPC call with request headers (A2A-Version): the HTTP status and the parsed answer.
  std::pair<int, pb::Value> RpcWith(const httplib::Headers& headers, const std::string& method,
                                    const std::string& params) {
    httplib::Result res = Client()->Post("/agents/echo", headers,
                                         absl::StrCat(R"({"jsonrpc":"2.0","id":7,"method":")",
                                                      method, R"(","params":)", params, "}"),
                                         "application/json");
    EXPECT_TRUE(res) << method;
    if (!res) return {0, pb::Value()};
    return {res->status, Parse(res->body)};
  }

  // How many tasks the echo agent has, read over JSON-RPC.
  int TaskCount() {
    auto [status, answer] = Rpc("ListTasks", R"({"pageSize":100})");
    EXPECT_EQ(status, 200);
    return At(At(answer, "result"), "tasks").list_value().values_size();
  }

  TempDir dir_;
  std::unique_ptr<CoordinatorProcess> coordinator_;
  std::unique_ptr<Process> agent_;
  int http_port_ = 0;
};

TEST_F(A2AHttpTest, AgentCardsNameEveryBindingAndAreCacheable) {
  httplib::Result res = Client()->Get("/agents/echo/.well-known/agent-card.json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  a2apb::AgentCard card;
  ASSERT_OK(FromJson(res->body, &card));
  const std::string base = absl::StrCat("http://127.0.0.1:", http_port_, "/agents/echo");
  // The 1.0 interfaces, then the 0.3 ones: gRPC too, since echo is the only agent (0.3's gRPC
  // has no tenant, and a call without one reaches echo).
  ASSERT_EQ(card.supported_interfaces_size(), 6) << res->body;
  const struct {
    const char* binding;
    std::string url;
    const char* tenant;
    const char* version;
  } expected[] = {
      {"JSONRPC", base, "", "1.0"},
      {"HTTP+JSON", base, "", "1.0"},
      {"GRPC", coordinator_->target(), "echo", "1.0"},
      {"JSONRPC", base, "", "0.3"},
      {"HTTP+JSON", base, "", "0.3"},
      {"GRPC", coordinator_->target(), "", "0.3"},
  };
  for (int i = 0; i < 6; ++i) {
    const a2apb::AgentInterface& iface = card.supported_interfaces(i);
    EXPECT_EQ(iface.protocol_binding(), expected[i].binding) << i;
    EXPECT_EQ(iface.url(), expected[i].url) << i;
    EXPECT_EQ(iface.tenant(), expected[i].tenant) << i;
    EXPECT_EQ(iface.protocol_version(), expected[i].version) << i;
  }
  EXPECT_TRUE(card.capabilities().streaming());
  EXPECT_FALSE(card.skills().empty());

  // Caching: max-age, a strong ETag, Last-Modified; If-None-Match gets 304 and no body.
  EXPECT_TRUE(absl::StrContains(res->get_header_value("Cache-Control"), "max-age="));
  const std::string etag = res->get_header_value("ETag");
  ASSERT_FALSE(etag.empty());
  EXPECT_EQ(etag.front(), '"');
  EXPECT_TRUE(absl::EndsWith(res->get_header_value("Last-Modified"), " GMT"));
  auto [status, body] = Get("/agents/echo/.well-known/agent-card.json", {{"If-None-Match", etag}});
  EXPECT_EQ(status, 304);
  EXPECT_TRUE(body.empty());
  EXPECT_EQ(Get("/agents/echo/.well-known/agent-card.json",
                {{"If-None-Match", absl::StrCat("\"other\", W/", etag)}})
                .first,
            304);
  EXPECT_EQ(Get("/agents/echo/.well-known/agent-card.json", {{"If-None-Match", "\"other\""}}).first,
            200);

  // The coordinator's card lists the agent through every binding, with the same headers.
  httplib::Result root = Client()->Get("/.well-known/agent-card.json");
  ASSERT_TRUE(root);
  a2apb::AgentCard coordinator_card;
  ASSERT_OK(FromJson(root->body, &coordinator_card));
  ASSERT_EQ(coordinator_card.supported_interfaces_size(), 6) << root->body;
  EXPECT_EQ(coordinator_card.supported_interfaces(0).url(), base);
  // Its 0.3 interfaces name no agent: the root.
  const std::string root_url = absl::StrCat("http://127.0.0.1:", http_port_);
  EXPECT_EQ(coordinator_card.supported_interfaces(3).url(), root_url);
  EXPECT_EQ(coordinator_card.supported_interfaces(3).protocol_version(), "0.3");
  EXPECT_EQ(coordinator_card.supported_interfaces(4).url(), root_url);
  EXPECT_EQ(coordinator_card.supported_interfaces(5).url(), coordinator_->target());
  EXPECT_EQ(coordinator_card.supported_interfaces(5).tenant(), "");
  EXPECT_FALSE(root->get_header_value("ETag").empty());
  EXPECT_NE(root->get_header_value("ETag"), etag);

  // An agent that is not registered has no card.
  auto [missing, error] = Get("/agents/nobody/.well-known/agent-card.json");
  EXPECT_EQ(missing, 404);
  EXPECT_EQ(At(At(Parse(error), "error"), "status").string_value(), "NOT_FOUND");
}

TEST_F(A2AHttpTest, JsonRpcSessionSendGetListStreamSubscribeCancel) {
  // A blocking send: the task comes back completed with the agent's artifact.
  auto [status, answer] = Rpc("SendMessage", SendParams("hello"));
  ASSERT_EQ(status, 200) << ToJson(answer);
  EXPECT_EQ(At(answer, "jsonrpc").string_value(), "2.0");
  EXPECT_EQ(At(answer, "id").string_value(), "c1");
  a2apb::SendMessageResponse sent;
  ASSERT_OK(FromJson(ToJson(At(answer, "result")), &sent));
  ASSERT_TRUE(sent.has_task()) << ToJson(answer);
  EXPECT_EQ(sent.task().status().state(), a2apb::TASK_STATE_COMPLETED);
  ASSERT_EQ(sent.task().artifacts_size(), 1);
  EXPECT_EQ(sent.task().artifacts(0).parts(0).text(), "hello");
  const std::string id = sent.task().id();

  auto [got_status, got] =
      Rpc("GetTask", absl::StrCat(R"({"id":")", id, R"(","historyLength":1})"));
  ASSERT_EQ(got_status, 200);
  a2apb::Task task;
  ASSERT_OK(FromJson(ToJson(At(got, "result")), &task));
  EXPECT_EQ(task.id(), id);
  EXPECT_LE(task.history_size(), 1);
  EXPECT_EQ(TaskCount(), 1);

  // A stream: the task first, then its events, the last one completing it (the first is the
  // last when the agent was done before the stream read the task).
  StreamResult stream = Stream(
      "/agents/echo", absl::StrCat(R"({"jsonrpc":"2.0","id":9,"method":"SendStreamingMessage",)",
                                   R"("params":)", SendParams("streamed"), "}"));
  EXPECT_EQ(stream.status, 200);
  ASSERT_GE(stream.events.size(), 1u) << stream.body;
  a2apb::StreamResponse first;
  ASSERT_OK(FromJson(ToJson(At(Parse(stream.events.front()), "result")), &first));
  EXPECT_TRUE(first.has_task());
  const pb::Value last = Parse(stream.events.back());
  EXPECT_EQ(At(last, "id").number_value(), 9);
  a2apb::StreamResponse final_event;
  ASSERT_OK(FromJson(ToJson(At(last, "result")), &final_event));
  const a2apb::TaskState final_state = final_event.has_task()
                                           ? final_event.task().status().state()
                                           : final_event.status_update().status().state();
  EXPECT_EQ(final_state, a2apb::TASK_STATE_COMPLETED) << stream.events.back();

  // A task that holds: subscribe, cancel it from another client, see the canceled event.
  auto [held_status, held] =
      Rpc("SendMessage", SendParams("hold", R"(,"configuration":{"returnImmediately":true})"));
  ASSERT_EQ(held_status, 200) << ToJson(held);
  const std::string held_id = At(At(At(held, "result"), "task"), "id").string_value();
  ASSERT_FALSE(held_id.empty()) << ToJson(held);
  bool canceled = false;
  StreamResult subscription = Stream(
      "/agents/echo",
      absl::StrCat(R"({"jsonrpc":"2.0","id":"s","method":"SubscribeToTask","params":{"id":")",
                   held_id, R"("}})"),
      [&](const std::string& event) {
        if (absl::StrContains(event, "holding")) {
          auto [cancel_status, cancel] =
              Rpc("CancelTask", absl::StrCat(R"({"id":")", held_id, R"("})"));
          EXPECT_EQ(cancel_status, 200) << ToJson(cancel);
        }
        canceled = canceled || absl::StrContains(event, "TASK_STATE_CANCELED");
        return true;
      });
  EXPECT_EQ(subscription.status, 200);
  EXPECT_TRUE(canceled) << subscription.events.size();

  // Subscribing to a task that has ended is UnsupportedOperationError, as a plain answer.
  StreamResult ended = Stream(
      "/agents/echo",
      absl::StrCat(R"({"jsonrpc":"2.0","id":"e","method":"SubscribeToTask","params":{"id":")", id,
                   R"("}})"));
  EXPECT_EQ(ended.status, 200);
  EXPECT_TRUE(ended.events.empty());
  EXPECT_EQ(At(At(Parse(ended.body), "error"), "code").number_value(), -32004) << ended.body;

  // Errors carry the A2A codes and the ErrorInfo reason.
  auto [missing_status, missing] = Rpc("GetTask", R"({"id":"no-such-task"})");
  EXPECT_EQ(missing_status, 200);
  EXPECT_EQ(At(At(missing, "error"), "code").number_value(), -32001) << ToJson(missing);
  EXPECT_TRUE(absl::StrContains(ToJson(missing), "TASK_NOT_FOUND"));
}

// The version asked by query parameter is the version asked (specification section 3.6.1): an
// HTTP+JSON call that asks 9.9 by parameter is refused as one asking it by header is.
TEST_F(A2AHttpTest, RestCallsReadTheVersionFromTheQueryParameterToo) {
  auto [header_status, by_header] = [&] {
    httplib::Result res = Client()->Post("/agents/echo/message:send", {{"A2A-Version", "9.9"}},
                                         SendParams("v"), "application/json");
    EXPECT_TRUE(res);
    return std::make_pair(res ? res->status : 0, res ? res->body : "");
  }();
  auto [param_status, by_param] =
      Post("/agents/echo/message:send?A2A-Version=9.9", SendParams("v"));
  EXPECT_NE(header_status, 200) << by_header;
  EXPECT_EQ(param_status, header_status) << by_param;
  EXPECT_TRUE(absl::StrContains(by_param, "VERSION_NOT_SUPPORTED")) << by_param;
  // The header wins over the parameter; 1.0 by parameter is served.
  httplib::Result both =
      Client()->Post("/agents/echo/message:send?A2A-Version=9.9", {{"A2A-Version", "1.0"}},
                     SendParams("v"), "application/json");
  ASSERT_TRUE(both);
  EXPECT_EQ(both->status, 200) << both->body;
  EXPECT_EQ(Post("/agents/echo/message:send?A2A-Version=1.0", SendParams("v")).first, 200);
  EXPECT_EQ(Post("/agents/echo/message:send?A2A-Version=%01", SendParams("v")).first, 400);
}

TEST_F(A2AHttpTest, RestSessionSendGetListStreamCancelAndPushConfigs) {
  auto [status, body] =
      Post("/agents/echo/message:send", SendParams("rest"), "application/a2a+json");
  ASSERT_EQ(status, 200) << body;
  a2apb::SendMessageResponse sent;
  ASSERT_OK(FromJson(body, &sent));
  ASSERT_TRUE(sent.has_task()) << body;
  EXPECT_EQ(sent.task().status().state(), a2apb::TASK_STATE_COMPLETED);
  const std::string id = sent.task().id();

  auto [got_status, got] = Get(absl::StrCat("/agents/echo/tasks/", id, "?historyLength=1"));
  ASSERT_EQ(got_status, 200) << got;
  a2apb::Task task;
  ASSERT_OK(FromJson(got, &task));
  EXPECT_EQ(task.id(), id);

  auto [list_status, list] = Get(absl::StrCat("/agents/echo/tasks?contextId=", task.context_id(),
                                              "&status=TASK_STATE_COMPLETED&pageSize=10"));
  ASSERT_EQ(list_status, 200) << list;
  a2apb::ListTasksResponse listed;
  ASSERT_OK(FromJson(list, &listed));
  ASSERT_EQ(listed.tasks_size(), 1);
  EXPECT_EQ(listed.tasks(0).id(), id);

  StreamResult stream = Stream("/agents/echo/message:stream", SendParams("rest stream"));
  EXPECT_EQ(stream.status, 200);
  EXPECT_TRUE(absl::StartsWith(stream.content_type, "text/event-stream"));
  // The task first (completed already when the agent was quick), its events up to the end.
  ASSERT_GE(stream.events.size(), 1u) << stream.body;
  a2apb::StreamResponse first;
  ASSERT_OK(FromJson(stream.events.front(), &first));
  EXPECT_TRUE(first.has_task());
  a2apb::StreamResponse last;
  ASSERT_OK(FromJson(stream.events.back(), &last));
  EXPECT_EQ(last.has_task() ? last.task().status().state() : last.status_update().status().state(),
            a2apb::TASK_STATE_COMPLETED)
      << stream.events.back();

  // Cancel a held task; cancelling a finished one is TaskNotCancelableError, HTTP 400.
  auto [held_status, held] =
      Post("/agents/echo/message:send",
           SendParams("hold", R"(,"configuration":{"returnImmediately":true})"));
  ASSERT_EQ(held_status, 200) << held;
  a2apb::SendMessageResponse held_task;
  ASSERT_OK(FromJson(held, &held_task));
  const std::string held_id = held_task.task().id();
  bool canceled = false;
  StreamResult subscription =
      Stream(absl::StrCat("/agents/echo/tasks/", held_id, ":subscribe"), "",
             [&](const std::string& event) {
               if (absl::StrContains(event, "holding")) {
                 auto [cancel_status, cancel] =
                     Post(absl::StrCat("/agents/echo/tasks/", held_id, ":cancel"), "");
                 EXPECT_EQ(cancel_status, 200) << cancel;
               }
               canceled = canceled || absl::StrContains(event, "TASK_STATE_CANCELED");
               return true;
             });
  EXPECT_TRUE(canceled);
  auto [again_status, again] = Post(absl::StrCat("/agents/echo/tasks/", id, ":cancel"), "");
  EXPECT_EQ(again_status, 400) << again;
  EXPECT_TRUE(absl::StrContains(again, "TASK_NOT_CANCELABLE")) << again;

  // Push configs: create, get, list, delete (twice: delete is idempotent).
  const std::string configs =
      absl::StrCat("/agents/echo/tasks/", held_id, "/pushNotificationConfigs");
  auto [created_status, created] =
      Post(configs, R"({"id":"hook","url":"http://127.0.0.1:9/hook","token":"t"})");
  ASSERT_EQ(created_status, 200) << created;
  a2apb::TaskPushNotificationConfig config;
  ASSERT_OK(FromJson(created, &config));
  EXPECT_EQ(config.task_id(), held_id);
  EXPECT_EQ(Get(configs + "/hook").first, 200);
  auto [listed_status, listed_configs] = Get(configs);
  EXPECT_EQ(listed_status, 200);
  EXPECT_TRUE(absl::StrContains(listed_configs, "hook")) << listed_configs;
  for (int i = 0; i < 2; ++i) {
    httplib::Result deleted = Client()->Delete((configs + "/hook").c_str());
    ASSERT_TRUE(deleted);
    EXPECT_EQ(deleted->status, 200) << i << " " << deleted->body;
  }
  EXPECT_EQ(Get(configs + "/hook").first, 404);

  // The same methods below the root with the agent as the first path segment ({tenant}/...).
  EXPECT_EQ(Get(absl::StrCat("/echo/tasks/", id)).first, 200);
  auto [missing, missing_body] = Get("/agents/echo/tasks/no-such-task");
  EXPECT_EQ(missing, 404);
  EXPECT_TRUE(absl::StrContains(missing_body, "TASK_NOT_FOUND")) << missing_body;
}

TEST_F(A2AHttpTest, TheRootEndpointsRouteATenantlessRequestToTheOnlyAgent) {
  // No agent in the URL and no tenant in the request: the only registered agent takes it.
  auto [status, answer] = Rpc("SendMessage", SendParams("rooted"), "/");
  ASSERT_EQ(status, 200) << ToJson(answer);
  EXPECT_EQ(At(At(At(At(answer, "result"), "task"), "status"), "state").string_value(),
            "TASK_STATE_COMPLETED")
      << ToJson(answer);
  auto [rest_status, rest] = Post("/message:send", SendParams("rooted too"));
  ASSERT_EQ(rest_status, 200) << rest;
  // A tenant in the body, or as the first path segment, picks the agent.
  auto [named_status, named] =
      Post("/echo/message:send", SendParams("named", R"(,"tenant":"echo")"));
  EXPECT_EQ(named_status, 200) << named;
  auto [wrong_status, wrong] = Post("/nobody/message:send", SendParams("lost"));
  EXPECT_EQ(wrong_status, 404) << wrong;
  EXPECT_EQ(TaskCount(), 3);
}

TEST_F(A2AHttpTest, JsonRpcBadInputGetsTheSpecificationsCodesAndChangesNothing) {
  ASSERT_EQ(Rpc("SendMessage", SendParams("before")).first, 200);
  const int before = TaskCount();
  const auto code = [](const std::string& body) {
    return static_cast<int>(At(At(Parse(body), "error"), "code").number_value());
  };
  struct Case {
    std::string body;
    int code;
  };
  const std::vector<Case> cases = {
      {"{not json", -32700},
      {"", -32700},
      {std::string(20000, '['), -32700},
      {R"([{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}])", -32600},
      {R"({"jsonrpc":"1.0","id":1,"method":"SendMessage","params":{}})", -32600},
      {R"({"id":1,"method":"SendMessage","params":{}})", -32600},
      {R"({"jsonrpc":"2.0","id":1,"method":"message/send","params":{}})", -32602},  // A2A 0.3
      {R"({"jsonrpc":"2.0","id":1,"method":"message/sent","params":{}})", -32601},
      {R"({"jsonrpc":"2.0","id":1,"method":"DropAllTables","params":{}})", -32601},
      {R"({"jsonrpc":"2.0","id":1,"method":"SendMessage","params":[1]})", -32602},
      {R"({"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":7}})", -32602},
      {R"({"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{}}})", -32602},
      {R"({"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"tenant":"other",)"
       R"("message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]}}})",
       -32602},
  };
  for (const Case& c : cases) {
    auto [status, body] = Post("/agents/echo", c.body);
    EXPECT_EQ(status, 200) << c.body.substr(0, 80) << " -> " << body;
    EXPECT_EQ(code(body), c.code) << c.body.substr(0, 80) << " -> " << body;
    EXPECT_EQ(At(Parse(body), "jsonrpc").string_value(), "2.0");
  }
  // Wrong content type: 415 with a JSON-RPC error.
  auto [type_status, type_body] =
      Post("/agents/echo", R"({"jsonrpc":"2.0","id":1,"method":"GetTask"})", "text/plain");
  EXPECT_EQ(type_status, 415);
  EXPECT_EQ(code(type_body), -32600);
  // A body over --max_request_bytes: 413 with a JSON-RPC error, unread.
  auto [big_status, big_body] = Post("/agents/echo", SendParams(std::string(100000, 'x')));
  EXPECT_EQ(big_status, 413);
  EXPECT_EQ(code(big_body), -32600) << big_body;
  // An agent that is not registered.
  auto [unknown_status, unknown] = Rpc("SendMessage", SendParams("x"), "/agents/nobody");
  EXPECT_EQ(unknown_status, 200);
  EXPECT_NE(At(unknown, "error").struct_value().fields().count("code"), 0u) << ToJson(unknown);
  EXPECT_EQ(TaskCount(), before);
}

TEST_F(A2AHttpTest, RestBadInputGetsHttpStatusesAndChangesNothing) {
  const int before = TaskCount();
  EXPECT_EQ(Post("/agents/echo/message:send", "{not json").first, 400);
  auto [type_status, type_body] = Post("/agents/echo/message:send", SendParams("x"), "text/plain");
  EXPECT_EQ(type_status, 415);
  // The body's code is the HTTP status it came with (specification section 11.6).
  EXPECT_EQ(At(At(Parse(type_body), "error"), "code").number_value(), 415) << type_body;
  EXPECT_EQ(Post("/agents/echo/message:send", SendParams(std::string(100000, 'x'))).first, 413);
  EXPECT_EQ(Get("/agents/echo/message:send").first, 405);
  EXPECT_EQ(Get("/agents/echo/no/such/path").first, 404);
  EXPECT_EQ(Get("/agents/echo/tasks?includeArtifacts=maybe").first, 400);
  EXPECT_EQ(Get("/agents/echo/tasks?pageSize=lots").first, 400);
  auto [status, body] = Get("/agents/echo/tasks/%00%ff");
  EXPECT_EQ(status, 400) << body;
  EXPECT_EQ(At(At(Parse(body), "error"), "status").string_value(), "INVALID_ARGUMENT") << body;
  EXPECT_EQ(TaskCount(), before);
}

TEST_F(A2AHttpTest, TheInterfaceUrlWithATrailingSlashIsTheSame) {
  auto [status, body] =
      Post("/agents/echo/", R"({"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}})");
  EXPECT_EQ(status, 200) << body;
  EXPECT_EQ(At(At(Parse(body), "error"), "code").number_value(), -32001) << body;
}

TEST_F(A2AHttpTest, NoCardOffersAnExtendedCard) {
  // Specification section 3.3.3: the card says extendedAgentCard false, so the call is
  // UnsupportedOperation on each binding; 0.3 names it AuthenticatedExtendedCardNotConfigured.
  auto [status, body] =
      Post("/agents/echo", R"({"jsonrpc":"2.0","id":1,"method":"GetExtendedAgentCard"})");
  EXPECT_EQ(At(At(Parse(body), "error"), "code").number_value(), -32004) << body;
  std::tie(status, body) = Post("/", R"({"jsonrpc":"2.0","id":1,"method":"GetExtendedAgentCard"})");
  EXPECT_EQ(At(At(Parse(body), "error"), "code").number_value(), -32004) << body;
  std::tie(status, body) = Post(
      "/agents/echo", R"({"jsonrpc":"2.0","id":1,"method":"agent/getAuthenticatedExtendedCard"})");
  EXPECT_EQ(At(At(Parse(body), "error"), "code").number_value(), -32007) << body;
  std::tie(status, body) = Get("/agents/echo/extendedAgentCard");
  EXPECT_EQ(status, 400) << body;
  EXPECT_EQ(At(At(Parse(body), "error"), "status").string_value(), "FAILED_PRECONDITION") << body;
  std::tie(status, body) = Get("/agents/nobody/extendedAgentCard");
  EXPECT_EQ(status, 404) << body;
}

TEST_F(A2AHttpTest, AnEventStreamClientThatVanishesIsLetGo) {
  auto [status, held] = Post("/agents/echo/message:send",
                             SendParams("hold", R"(,"configuration":{"returnImmediately":true})"));
  ASSERT_EQ(status, 200) << held;
  a2apb::SendMessageResponse sent;
  ASSERT_OK(FromJson(held, &sent));
  const std::string id = sent.task().id();
  // The client hangs up after the first event.
  StreamResult gone = Stream(absl::StrCat("/agents/echo/tasks/", id, ":subscribe"), "",
                             [](const std::string&) { return false; });
  ASSERT_EQ(gone.events.size(), 1u);
  // The next event finds nobody: the call ends, the server goes on serving.
  auto [cancel_status, cancel] = Post(absl::StrCat("/agents/echo/tasks/", id, ":cancel"), "");
  EXPECT_EQ(cancel_status, 200) << cancel;
  const absl::Time deadline = absl::Now() + kWait;
  bool closed = false;
  while (!closed && absl::Now() < deadline) {
    auto [metrics_status, metrics] = Get("/metrics");
    closed = metrics_status == 200 &&
             absl::StrContains(metrics,
                               "coordinator_grpc_open_streams{service=\"lf.a2a.v1.A2AService\","
                               "method=\"SubscribeToTask\"} 0");
    if (!closed) absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_TRUE(closed);
  EXPECT_EQ(Rpc("GetTask", absl::StrCat(R"({"id":")", id, R"("})")).first, 200);
}

TEST(A2AHttpAuthTest, TheJsonBindingsTakeTheBearerTokenOfTheGrpcService) {
  TempDir dir;
  const std::string tokens = dir.Sub("tokens.json");
  std::ofstream(tokens) << R"({"tokens":[{"token":"admin-0123456789abcdef","principal":"ops",)"
                        << R"("role":"admin"}]})";
  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> coordinator = CoordinatorProcess::Start(
      dir.Sub("data"), {"--http_listen=127.0.0.1:0", "--token_file=" + tokens});
  ASSERT_OK(coordinator);
  absl::StatusOr<int> port = (*coordinator)->HttpPort();
  ASSERT_OK(port);
  httplib::Client client("127.0.0.1", *port);
  const std::string get = R"({"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}})";
  httplib::Result anonymous = client.Post("/", get, "application/json");
  ASSERT_TRUE(anonymous);
  EXPECT_EQ(anonymous->status, 401);
  EXPECT_EQ(anonymous->get_header_value("WWW-Authenticate"), "Bearer");
  EXPECT_TRUE(absl::StrContains(anonymous->body, "UNAUTHENTICATED")) << anonymous->body;
  httplib::Result rest = client.Get("/tasks/t");
  ASSERT_TRUE(rest);
  EXPECT_EQ(rest->status, 401);
  httplib::Result authorized = client.Post(
      "/", {{"Authorization", "Bearer admin-0123456789abcdef"}}, get, "application/json");
  ASSERT_TRUE(authorized);
  EXPECT_EQ(authorized->status, 200);
  EXPECT_TRUE(absl::StrContains(authorized->body, "-32001")) << authorized->body;
  // The card is public, and says how to authenticate.
  httplib::Result card = client.Get("/.well-known/agent-card.json");
  ASSERT_TRUE(card);
  EXPECT_EQ(card->status, 200);
  EXPECT_TRUE(absl::StrContains(card->body, "Bearer")) << card->body;
}

// --- A2A 0.3 over JSON-RPC (docs/a2a-0.3.md): the same echo agent, the same stored task, 0.3's
// method names and JSON.

std::string V03Send(const std::string& text, const std::string& configuration = "") {
  static int counter = 0;
  return absl::StrCat(R"({"message":{"kind":"message","messageId":"v03-)", ++counter,
                      R"(","role":"user","parts":[{"kind":"text","text":")", text, R"("}]})",
                      configuration, "}");
}

const pb::Value& Item(const pb::Value& list, int i) {
  static const pb::Value kNull;
  if (!list.has_list_value() || i >= list.list_value().values_size()) return kNull;
  return list.list_value().values(i);
}

TEST_F(A2AHttpTest, V03SendAndGetAnswerInV03JsonAndSeeTheTaskThat10Sees) {
  auto [status, answer] = Rpc("message/send", V03Send("hello 0.3"));
  ASSERT_EQ(status, 200) << ToJson(answer);
  const pb::Value& task = At(answer, "result");
  ASSERT_EQ(At(task, "kind").string_value(), "task") << ToJson(answer);
  EXPECT_EQ(At(At(task, "status"), "state").string_value(), "completed");
  const pb::Value& said = At(At(task, "status"), "message");
  EXPECT_EQ(At(said, "kind").string_value(), "message");
  EXPECT_EQ(At(said, "role").string_value(), "agent");
  EXPECT_EQ(At(Item(At(said, "parts"), 0), "kind").string_value(), "text");
  EXPECT_EQ(At(Item(At(said, "parts"), 0), "text").string_value(), "echo: hello 0.3");
  const pb::Value& artifact = Item(At(task, "artifacts"), 0);
  EXPECT_EQ(At(Item(At(artifact, "parts"), 0), "kind").string_value(), "text");
  const std::string id = At(task, "id").string_value();
  ASSERT_FALSE(id.empty());

  // tasks/get: the history in 0.3 terms (the client's message has role "user").
  auto [got_status, got] = Rpc("tasks/get", absl::StrCat(R"({"id":")", id, R"("})"));
  ASSERT_EQ(got_status, 200) << ToJson(got);
  const pb::Value& history = At(At(got, "result"), "history");
  ASSERT_GE(history.list_value().values_size(), 1) << ToJson(got);
  EXPECT_EQ(At(Item(history, 0), "role").string_value(), "user");
  EXPECT_EQ(At(Item(history, 0), "kind").string_value(), "message");
  // The same task through 1.0.
  auto [v10_status, v10] = Rpc("GetTask", absl::StrCat(R"({"id":")", id, R"("})"));
  ASSERT_EQ(v10_status, 200) << ToJson(v10);
  EXPECT_EQ(At(At(At(v10, "result"), "status"), "state").string_value(), "TASK_STATE_COMPLETED");

  // A non-blocking send answers at once with the task as it then was.
  auto [quick_status, quick] =
      Rpc("message/send", V03Send("later", R"(,"configuration":{"blocking":false})"));
  ASSERT_EQ(quick_status, 200) << ToJson(quick);
  EXPECT_EQ(At(At(quick, "result"), "kind").string_value(), "task");
}

// A2A 0.3's HTTP+JSON (rest_v03.h): the ProtoJSON of the 0.3 proto under /v1.
TEST_F(A2AHttpTest, V03RestSendGetStreamAndPushConfigsInV03ProtoJson) {
  const std::string send =
      absl::StrCat(R"({"message":{"messageId":"rest03-)", TaskCount(),
                   R"(","role":"ROLE_USER","content":[{"text":"hello rest 0.3"}]},)",
                   R"("configuration":{"blocking":true}})");
  auto [status, body] = Post("/agents/echo/v1/message:send", send);
  ASSERT_EQ(status, 200) << body;
  const pb::Value answer = Parse(body);
  const pb::Value& task = At(answer, "task");
  EXPECT_EQ(At(At(task, "status"), "state").string_value(), "TASK_STATE_COMPLETED") << body;
  EXPECT_EQ(At(Item(At(At(At(task, "status"), "message"), "content"), 0), "text").string_value(),
            "echo: hello rest 0.3")
      << body;
  const std::string id = At(task, "id").string_value();
  ASSERT_FALSE(id.empty());

  // Read back with a history length, as 0.3 and as 1.0.
  std::tie(status, body) = Get(absl::StrCat("/agents/echo/v1/tasks/", id, "?historyLength=1"));
  ASSERT_EQ(status, 200) << body;
  EXPECT_EQ(At(Parse(body), "id").string_value(), id);
  EXPECT_EQ(Parse(body).struct_value().fields().at("history").list_value().values_size(), 1);
  std::tie(status, body) = Get(absl::StrCat("/agents/echo/tasks/", id));
  EXPECT_EQ(status, 200) << body;

  // Push configs: the proto's create body, then the bare config, listed and deleted.
  const std::string configs =
      absl::StrCat("/agents/echo/v1/tasks/", id, "/pushNotificationConfigs");
  std::tie(status, body) =
      Post(configs, absl::StrCat(R"({"parent":"tasks/)", id,
                                 R"(","configId":"a","config":{"pushNotificationConfig":{"url":)",
                                 R"("http://127.0.0.1:1/a"}}})"));
  ASSERT_EQ(status, 200) << body;
  EXPECT_EQ(At(Parse(body), "name").string_value(),
            absl::StrCat("tasks/", id, "/pushNotificationConfigs/a"));
  std::tie(status, body) =
      Post(configs, R"({"pushNotificationConfig":{"id":"b","url":"http://127.0.0.1:1/b"}})");
  ASSERT_EQ(status, 200) << body;
  std::tie(status, body) = Get(configs);
  ASSERT_EQ(status, 200) << body;
  EXPECT_EQ(At(Parse(body), "configs").list_value().values_size(), 2) << body;
  httplib::Result deleted = Client()->Delete((configs + "/a").c_str());
  ASSERT_TRUE(deleted);
  EXPECT_EQ(deleted->status, 200) << deleted->body;
  std::tie(status, body) = Get(configs + "/a");
  EXPECT_EQ(status, 404) << body;

  // A stream: 0.3 StreamResponses, the last a final status update.
  StreamResult streamed =
      Stream("/agents/echo/v1/message:stream",
             absl::StrCat(R"({"message":{"messageId":"rest03-stream-)", TaskCount(),
                          R"(","role":"ROLE_USER",)", R"("content":[{"text":"streamed"}]}})"));
  ASSERT_EQ(streamed.status, 200) << streamed.body;
  ASSERT_FALSE(streamed.events.empty());
  EXPECT_EQ(At(Parse(streamed.events.front()), "task").struct_value().fields().count("id"), 1u);
  if (streamed.events.size() > 1) {
    const pb::Value last = Parse(streamed.events.back());
    EXPECT_TRUE(At(At(last, "statusUpdate"), "final").bool_value()) << streamed.events.back();
  }

  // Tenant-less at the root: the task's own agent.
  std::tie(status, body) = Get(absl::StrCat("/v1/tasks/", id));
  EXPECT_EQ(status, 200) << body;
}

TEST_F(A2AHttpTest, V03RestBadInputGetsTheVersionsErrorsAndChangesNothing) {
  const int before = TaskCount();
  struct Case {
    std::string method;
    std::string path;
    std::string body;
    int status;
  };
  const std::vector<Case> cases = {
      {"POST", "/agents/echo/v1/message:send", "{not json", 400},
      // 1.0's field names are not 0.3's: a strict reader refuses them.
      {"POST", "/agents/echo/v1/message:send",
       R"({"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]}})", 400},
      {"POST", "/agents/echo/v1/message:send", R"({"message":{"messageId":"m"}})", 400},
      {"GET", "/agents/echo/v1/message:send", "", 405},
      {"GET", "/agents/echo/v1/tasks/nope", "", 404},
      {"GET", "/agents/echo/v1/tasks/nope?historyLength=-1", "", 400},
      {"GET", "/agents/echo/v1/tasks/nope?historyLength=lots", "", 400},
      {"GET", "/agents/echo/v1/no/such/path", "", 404},
      {"POST", "/agents/echo/v1/tasks/nope/pushNotificationConfigs",
       R"({"parent":"tasks/other","config":{"pushNotificationConfig":{"url":"http://h/"}}})", 400},
      {"GET", "/agents/echo/v1/card", "", 400},
      // A name that is not ASCII reaches the 0.3 service as binary metadata (found by
      // fuzz_http_bindings: ASCII metadata aborted the process); one that is not UTF-8 is 400.
      {"GET",
       "/agents/\xc3\xa9"
       "cho\xd9/v1/tasks/x",
       "", 400},
      {"POST", "/agents/nobody/v1/message:send",
       R"({"message":{"messageId":"m","role":"ROLE_USER","content":[{"text":"x"}]}})", 404},
      // Ids in the path that are not UTF-8 once percent-decoded are 400, not a 500 from
      // protobuf's serializer (found by fuzz_http_bindings).
      {"GET", "/v1/tasks/%EF%EF%EFtask?historyLength=1", "", 400},
      {"GET", "/agents/echo/v1/tasks/x/pushNotificationConfigs/%EF%EF", "", 400},
  };
  for (const Case& c : cases) {
    httplib::Result res = c.method == "GET"
                              ? Client()->Get(c.path.c_str())
                              : Client()->Post(c.path.c_str(), c.body, "application/json");
    ASSERT_TRUE(res) << c.path;
    EXPECT_EQ(res->status, c.status)
        << c.method << " " << c.path << " " << c.body << " -> " << res->body;
    // The body 0.3 clients read: an A2A JSON-RPC code and a message.
    const pb::Value error = Parse(res->body);
    EXPECT_NE(At(error, "code").number_value(), 0) << res->body;
    EXPECT_FALSE(At(error, "message").string_value().empty()) << res->body;
  }
  EXPECT_EQ(Post("/agents/echo/v1/message:send", "{}", "text/plain").first, 415);
  EXPECT_EQ(TaskCount(), before);
}

TEST_F(A2AHttpTest, V03StreamIsAnEventStreamOfKindTaggedEventsEndingFinal) {
  const std::string body = absl::StrCat(R"({"jsonrpc":"2.0","id":"s1","method":"message/stream",)",
                                        R"("params":)", V03Send("streamed"), "}");
  StreamResult result = Stream("/agents/echo", body);
  ASSERT_EQ(result.status, 200) << result.body;
  ASSERT_TRUE(absl::StartsWith(result.content_type, "text/event-stream")) << result.body;
  ASSERT_GE(result.events.size(), 2u);
  std::vector<std::string> kinds;
  int finals = 0;
  for (const std::string& event : result.events) {
    const pb::Value parsed = Parse(event);
    EXPECT_EQ(At(parsed, "id").string_value(), "s1") << event;
    const pb::Value& r = At(parsed, "result");
    kinds.push_back(At(r, "kind").string_value());
    if (At(r, "final").bool_value()) ++finals;
  }
  EXPECT_EQ(kinds.front(), "task");
  const pb::Value last = At(Parse(result.events.back()), "result");
  EXPECT_EQ(At(last, "kind").string_value(), "status-update") << result.events.back();
  EXPECT_TRUE(At(last, "final").bool_value());
  EXPECT_EQ(At(At(last, "status"), "state").string_value(), "completed");
  EXPECT_EQ(finals, 1);
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "artifact-update"), kinds.end());
}

TEST_F(A2AHttpTest, V03BadInputAndMixedVersionsGetClearErrorsAndChangeNothing) {
  const int before = TaskCount();
  // Hostile or malformed 0.3 params: -32602 naming the member.
  for (
      const std::string& params :
      {std::string(R"({"message":{"messageId":"x","role":"robot","parts":[]}})"),
       std::string(R"({"message":{"messageId":"x","role":"user","parts":[{"kind":"image"}]}})"),
       std::string(R"({"message":{"messageId":"x","role":"user","parts":"text"}})"),
       std::string(
           R"({"message":{"messageId":"x","role":"user","parts":[{"kind":"file","file":{"bytes":"%%%"}}]}})"),
       std::string(
           R"({"message":{"messageId":"x","role":"user","parts":[{"kind":"text","text":"t"}]},"configuration":{"historyLength":-1}})"),
       std::string(R"({"message":"hello"})"), std::string(R"({})")}) {
    auto [status, answer] = Rpc("message/send", params);
    EXPECT_EQ(status, 200);
    EXPECT_EQ(At(At(answer, "error"), "code").number_value(), -32602) << params << ToJson(answer);
    EXPECT_TRUE(absl::StrContains(At(At(answer, "error"), "message").string_value(), "params"))
        << ToJson(answer);
  }
  // An unknown task: 0.3's TaskNotFound code, as 1.0's.
  auto [missing_status, missing] = Rpc("tasks/get", R"({"id":"no-such-task"})");
  EXPECT_EQ(At(At(missing, "error"), "code").number_value(), -32001) << ToJson(missing);
  // A request that asks for one version and names the other's method.
  auto [mixed_status, mixed] = RpcWith({{"A2A-Version", "1.0"}}, "message/send", V03Send("x"));
  EXPECT_EQ(At(At(mixed, "error"), "code").number_value(), -32601) << ToJson(mixed);
  EXPECT_TRUE(absl::StrContains(At(At(mixed, "error"), "message").string_value(), "SendMessage"));
  auto [mixed2_status, mixed2] = RpcWith({{"A2A-Version", "0.3"}}, "SendMessage", SendParams("x"));
  EXPECT_EQ(At(At(mixed2, "error"), "code").number_value(), -32601) << ToJson(mixed2);
  EXPECT_TRUE(absl::StrContains(At(At(mixed2, "error"), "message").string_value(), "message/send"));
  auto [other_status, other] = RpcWith({{"A2A-Version", "9.9"}}, "message/send", V03Send("x"));
  EXPECT_EQ(At(At(other, "error"), "code").number_value(), -32009) << ToJson(other);
  EXPECT_EQ(TaskCount(), before);
  // Asking for 0.3 by name works.
  auto [ok_status, ok] = RpcWith({{"A2A-Version", "0.3"}}, "message/send", V03Send("asked"));
  EXPECT_EQ(At(At(ok, "result"), "kind").string_value(), "task") << ToJson(ok);

  // A 0.3 stream that fails before its first event still answers as an event stream.
  StreamResult result = Stream(
      "/agents/echo",
      R"({"jsonrpc":"2.0","id":"r1","method":"tasks/resubscribe","params":{"id":"no-such-task"}})");
  ASSERT_TRUE(absl::StartsWith(result.content_type, "text/event-stream")) << result.body;
  ASSERT_EQ(result.events.size(), 1u);
  EXPECT_EQ(At(At(Parse(result.events[0]), "error"), "code").number_value(), -32001)
      << result.events[0];
}

TEST_F(A2AHttpTest, V03PushConfigsSetGetListDelete) {
  auto [status, answer] = Rpc("message/send", V03Send("push me"));
  ASSERT_EQ(status, 200) << ToJson(answer);
  const std::string id = At(At(answer, "result"), "id").string_value();
  auto [set_status, set] = Rpc(
      "tasks/pushNotificationConfig/set",
      absl::StrCat(R"({"taskId":")", id,
                   R"(","pushNotificationConfig":{"url":"http://127.0.0.1:9/hook","token":"t",)",
                   R"("authentication":{"schemes":["Bearer"],"credentials":"c"}}})"));
  ASSERT_EQ(set_status, 200) << ToJson(set);
  const pb::Value& config = At(At(set, "result"), "pushNotificationConfig");
  EXPECT_EQ(At(At(set, "result"), "taskId").string_value(), id) << ToJson(set);
  EXPECT_EQ(At(config, "id").string_value(), id);  // no id given: the task's
  EXPECT_EQ(Item(At(At(config, "authentication"), "schemes"), 0).string_value(), "Bearer");
  auto [get_status, got] =
      Rpc("tasks/pushNotificationConfig/get", absl::StrCat(R"({"id":")", id, R"("})"));
  EXPECT_EQ(At(At(At(got, "result"), "pushNotificationConfig"), "url").string_value(),
            "http://127.0.0.1:9/hook")
      << ToJson(got);
  auto [list_status, list] =
      Rpc("tasks/pushNotificationConfig/list", absl::StrCat(R"({"id":")", id, R"("})"));
  ASSERT_TRUE(At(list, "result").has_list_value()) << ToJson(list);
  EXPECT_EQ(At(list, "result").list_value().values_size(), 1);
  auto [del_status, del] =
      Rpc("tasks/pushNotificationConfig/delete",
          absl::StrCat(R"({"id":")", id, R"(","pushNotificationConfigId":")", id, R"("})"));
  EXPECT_TRUE(At(del, "result").has_null_value()) << ToJson(del);
  auto [after_status, after] =
      Rpc("tasks/pushNotificationConfig/list", absl::StrCat(R"({"id":")", id, R"("})"));
  EXPECT_EQ(At(after, "result").list_value().values_size(), 0) << ToJson(after);

  // A config sent with the message, without an id, is the task's own: found by the task id.
  auto [with_status, with] =
      Rpc("message/send",
          V03Send("push with",
                  R"(,"configuration":{"pushNotificationConfig":{"url":"http://127.0.0.1:9/h"}})"));
  ASSERT_EQ(with_status, 200) << ToJson(with);
  const std::string task = At(At(with, "result"), "id").string_value();
  auto [own_status, own] =
      Rpc("tasks/pushNotificationConfig/get", absl::StrCat(R"({"id":")", task, R"("})"));
  EXPECT_EQ(At(At(At(own, "result"), "pushNotificationConfig"), "id").string_value(), task)
      << ToJson(own);
}

// A webhook is posted in the version of the request that created its config: a 0.3 JSON-RPC
// send's config gets the Task in 0.3's JSON, a 1.0 send's the StreamResponse.
TEST_F(A2AHttpTest, WebhooksArePostedInTheVersionTheirConfigWasCreatedIn) {
  httplib::Server hook;
  absl::Mutex mu;
  std::vector<std::pair<std::string, std::string>> posted;  // path, body
  hook.Post(R"(/(v03|v10))", [&](const httplib::Request& req, httplib::Response& res) {
    absl::MutexLock lock(&mu);
    posted.emplace_back(req.path, req.body);
    res.status = 200;
  });
  const int port = hook.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread hook_thread([&] { hook.listen_after_bind(); });
  const std::string url = absl::StrCat("http://127.0.0.1:", port);

  auto [v03_status, v03] =
      Rpc("message/send",
          V03Send("hook 0.3", absl::StrCat(R"(,"configuration":{"pushNotificationConfig":{"url":")",
                                           url, R"(/v03"}})")));
  ASSERT_EQ(v03_status, 200) << ToJson(v03);
  const std::string v03_task = At(At(v03, "result"), "id").string_value();
  auto [v10_status, v10] =
      Rpc("SendMessage",
          SendParams("hook 1.0", absl::StrCat(R"(,"configuration":{"taskPushNotificationConfig":)",
                                              R"({"url":")", url, R"(/v10"}})")));
  ASSERT_EQ(v10_status, 200) << ToJson(v10);

  auto completed = [&](const std::string& path) {
    absl::MutexLock lock(&mu);
    return std::any_of(posted.begin(), posted.end(), [&](const auto& p) {
      return p.first == path && (absl::StrContains(p.second, R"("state":"completed")") ||
                                 absl::StrContains(p.second, "TASK_STATE_COMPLETED"));
    });
  };
  const bool both =
      testing_util::WaitFor([&] { return completed("/v03") && completed("/v10"); }, kWait);
  hook.stop();
  hook_thread.join();
  ASSERT_TRUE(both);
  absl::MutexLock lock(&mu);
  for (const auto& [path, body] : posted) {
    if (path == "/v03") {
      EXPECT_TRUE(absl::StrContains(body, R"("kind":"task")")) << body;
      EXPECT_TRUE(absl::StrContains(body, v03_task)) << body;
    } else {
      EXPECT_TRUE(absl::StrContains(body, "statusUpdate")) << body;
    }
  }
}

TEST_F(A2AHttpTest, TheCardReadsAs03AndAs10UnlessA10ReaderAsksForOnlyThat) {
  auto [status, body] = Get("/agents/echo/.well-known/agent-card.json");
  ASSERT_EQ(status, 200) << body;
  const pb::Value both = Parse(body);
  const std::string base = absl::StrCat("http://127.0.0.1:", http_port_, "/agents/echo");
  EXPECT_EQ(At(both, "protocolVersion").string_value(), "0.3.0");
  EXPECT_EQ(At(both, "url").string_value(), base);
  EXPECT_EQ(At(both, "preferredTransport").string_value(), "JSONRPC");
  // The 0.3 interfaces: JSON-RPC and HTTP+JSON (below /v1) at the base URL, and gRPC, which
  // reaches echo without a tenant while it is the only agent.
  ASSERT_EQ(At(both, "additionalInterfaces").list_value().values_size(), 3) << body;
  EXPECT_EQ(At(Item(At(both, "additionalInterfaces"), 0), "transport").string_value(), "JSONRPC");
  EXPECT_EQ(At(Item(At(both, "additionalInterfaces"), 1), "transport").string_value(), "HTTP+JSON");
  EXPECT_EQ(At(Item(At(both, "additionalInterfaces"), 2), "transport").string_value(), "GRPC");
  EXPECT_EQ(At(Item(At(both, "additionalInterfaces"), 2), "url").string_value(),
            coordinator_->target());
  EXPECT_TRUE(At(Item(At(both, "skills"), 0), "tags").has_list_value()) << body;
  // A 1.0 reader of the same bytes finds its interfaces.
  a2apb::AgentCard card;
  ASSERT_OK(FromJson(body, &card));
  EXPECT_EQ(card.supported_interfaces_size(), 6);
  // The coordinator's card, as 0.3 reads it, is the root's: its `url` names no agent.
  auto [root_status, root_body] = Get("/.well-known/agent-card.json");
  ASSERT_EQ(root_status, 200) << root_body;
  EXPECT_EQ(At(Parse(root_body), "url").string_value(),
            absl::StrCat("http://127.0.0.1:", http_port_));
  auto [v10_status, v10_body] =
      Get("/agents/echo/.well-known/agent-card.json", {{"A2A-Version", "1.0"}});
  ASSERT_EQ(v10_status, 200) << v10_body;
  EXPECT_FALSE(At(Parse(v10_body), "url").has_string_value()) << v10_body;
  EXPECT_FALSE(At(Parse(v10_body), "protocolVersion").has_string_value()) << v10_body;
  // The query parameter asks the same (a browser cannot set the header); another version is
  // VersionNotSupported.
  auto [query_status, query_body] = Get("/agents/echo/.well-known/agent-card.json?A2A-Version=1.0");
  ASSERT_EQ(query_status, 200) << query_body;
  EXPECT_EQ(query_body, v10_body);
  auto [bad_status, bad_body] =
      Get("/agents/echo/.well-known/agent-card.json", {{"A2A-Version", "0.5"}});
  EXPECT_EQ(bad_status, 400) << bad_body;
  EXPECT_THAT(bad_body, ::testing::HasSubstr("VERSION_NOT_SUPPORTED"));
}

}  // namespace
}  // namespace coordinator
