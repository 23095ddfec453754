#include "fuzz/fuzz_http.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "a2a/v1/a2a.pb.h"
#include "a2a_protocol/json_binding.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "coordinator/v1/agent_registry.grpc.pb.h"
#include "fuzz/fuzz_server.h"
#include "grpcpp/grpcpp.h"
#include "httplib.h"

namespace fuzzing {
namespace {

// How long a streamed answer is read, and how much of it, before the harness hangs up.
constexpr auto kStreamReadTime = std::chrono::milliseconds(500);
constexpr size_t kMaxAnswerBytes = 1 << 20;
constexpr size_t kMaxPathBytes = 4096;

// The agent requests without a tenant go to (the only one registered). Nothing listens at its
// endpoint: deliveries fail and are retried, so tasks exist and stay open to be read, listed,
// cancelled and subscribed to.
constexpr char kAgentName[] = "fuzz-agent";

// What "{task}" in an input's path or body stands for: a task sent to the agent at start, so
// inputs reach a task that exists without guessing its id.
constexpr char kTaskPlaceholder[] = "{task}";

struct Target {
  int port = 0;
  std::string task_id;
};

// Sends the first message to the agent; the id of the task it started.
std::string StartTask(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(std::chrono::seconds(30));
  httplib::Headers headers = {{"A2A-Version", "1.0"}};
  httplib::Result res = client.Post(
      "/message:send", headers,
      R"({"message":{"messageId":"fuzz-start","role":"ROLE_USER","parts":[{"text":"start"}]},)"
      R"("configuration":{"returnImmediately":true}})",
      "application/json");
  lf::a2a::v1::SendMessageResponse response;
  if (!res || res->status != 200 || !a2a_protocol::FromJson(res->body, &response).ok() ||
      response.task().id().empty()) {
    std::fprintf(stderr, "cannot start a task: %s\n",
                 res ? res->body.c_str() : httplib::to_string(res.error()).c_str());
    std::abort();
  }
  return response.task().id();
}

// Starts the coordinator with its HTTP port, registers the agent and starts a task, once per
// process.
const Target& GetTarget() {
  static const Target target = [] {
    EnableHttpPort();
    const int http_port = HttpPort();
    if (http_port == 0) {
      std::fprintf(stderr, "the coordinator serves no HTTP port\n");
      std::abort();
    }
    auto stub = coordinator::v1::AgentRegistry::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", GrpcPort()), grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    coordinator::v1::RegisterAgentRequest request;
    request.mutable_agent()->set_name(kAgentName);
    request.mutable_agent()->set_endpoint("127.0.0.1:1");
    coordinator::v1::Agent agent;
    const grpc::Status status = stub->RegisterAgent(&context, request, &agent);
    if (!status.ok()) {
      std::fprintf(stderr, "cannot register %s: %s\n", kAgentName, status.error_message().c_str());
      std::abort();
    }
    return Target{http_port, StartTask(http_port)};
  }();
  return target;
}

bool IsFinding(absl::StatusCode code) {
  return code == absl::StatusCode::kInternal || code == absl::StatusCode::kUnknown ||
         code == absl::StatusCode::kDataLoss;
}

[[noreturn]] void Report(const httplib::Request& req, int http_status, const absl::Status& status,
                         absl::string_view body) {
  std::fprintf(stderr, "%s %s answered HTTP %d, %s\nbody: %.*s\n", req.method.c_str(),
               req.path.c_str(), http_status, status.ToString().c_str(),
               static_cast<int>(std::min<size_t>(body.size(), 2000)), body.data());
  std::abort();
}

// The error one JSON document of an answer carries, OK when it carries none: a JSON-RPC
// response's "error", or an HTTP+JSON error body.
absl::Status ErrorIn(absl::string_view json, int http_status) {
  if (absl::StrContains(json, "\"jsonrpc\"")) {
    absl::StatusOr<std::string> result = a2a_protocol::JsonRpcResultOf(json);
    // A body that is no JSON-RPC response (INVALID_ARGUMENT here) is judged by its HTTP status.
    if (result.ok() || result.status().code() != absl::StatusCode::kInvalidArgument) {
      return result.status();
    }
  }
  if (http_status >= 400 || absl::StrContains(json, "\"error\"")) {
    return a2a_protocol::StatusFromHttpError(http_status >= 400 ? http_status : 400, json);
  }
  return absl::OkStatus();
}

// Appends `text` to `out`, percent-encoding what a request line cannot carry as it is.
void AppendPath(absl::string_view text, std::string* out) {
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte > 0x20 && byte < 0x7f && c != '#') {
      out->push_back(c);
    } else {
      constexpr char kHex[] = "0123456789ABCDEF";
      out->push_back('%');
      out->push_back(kHex[byte >> 4]);
      out->push_back(kHex[byte & 15]);
    }
  }
}

// Reads the request `data` describes (see fuzz_http.h).
httplib::Request RequestOf(const char* path_prefix, absl::string_view input) {
  httplib::Request req;
  const size_t line_end = std::min(input.find('\n'), input.size());
  absl::string_view line = input.substr(0, line_end);
  input.remove_prefix(std::min(line_end + 1, input.size()));
  const size_t space = std::min(line.find(' '), line.size());
  for (const char c : line.substr(0, std::min<size_t>(space, 16))) {
    if (absl::ascii_isalpha(static_cast<unsigned char>(c))) req.method.push_back(c);
  }
  if (req.method.empty()) req.method = "GET";
  absl::string_view path = line.substr(std::min(space + 1, line.size()));
  path = path.substr(0, kMaxPathBytes);
  req.path = path_prefix;
  if (req.path.empty() && !absl::StartsWith(path, "/")) req.path = "/";
  AppendPath(path, &req.path);

  while (!input.empty()) {
    const size_t end = std::min(input.find('\n'), input.size());
    absl::string_view header = input.substr(0, end);
    input.remove_prefix(std::min(end + 1, input.size()));
    if (header.empty()) break;
    const size_t colon = header.find(':');
    if (colon == absl::string_view::npos) continue;
    const absl::string_view name = absl::StripAsciiWhitespace(header.substr(0, colon));
    std::string value(absl::StripAsciiWhitespace(header.substr(colon + 1)));
    // A header value cannot carry a line break; httplib's client would send it as it is.
    for (char& c : value) {
      if (c == '\r' || c == '\0') c = ' ';
    }
    for (const char* allowed : {"Content-Type", "Accept", "A2A-Version", "A2A-Extensions"}) {
      if (absl::EqualsIgnoreCase(name, allowed)) req.headers.emplace(allowed, value);
    }
  }
  req.body = std::string(input);
  return req;
}

}  // namespace

int FuzzHttpRequest(const char* path_prefix, const uint8_t* data, size_t size) {
  const Target& target = GetTarget();
  const int port = target.port;
  httplib::Request req =
      RequestOf(path_prefix, absl::string_view(reinterpret_cast<const char*>(data), size));
  req.path = absl::StrReplaceAll(req.path, {{kTaskPlaceholder, target.task_id}});
  req.body = absl::StrReplaceAll(req.body, {{kTaskPlaceholder, target.task_id}});

  int http_status = 0;
  std::string content_type;
  std::string body;
  const auto started = std::chrono::steady_clock::now();
  req.response_handler = [&](const httplib::Response& res) {
    http_status = res.status;
    content_type = res.get_header_value("Content-Type");
    return true;
  };
  req.content_receiver = [&](const char* bytes, size_t length, uint64_t, uint64_t) {
    body.append(bytes, length);
    // An event stream may stay open as long as it is wanted: read it briefly.
    return body.size() < kMaxAnswerBytes &&
           (!absl::StartsWith(content_type, a2a_protocol::kEventStreamContentType) ||
            std::chrono::steady_clock::now() - started < kStreamReadTime);
  };

  httplib::Client client("127.0.0.1", port);
  client.set_url_encode(false);  // AppendPath did
  client.set_keep_alive(false);
  client.set_connection_timeout(std::chrono::seconds(5));
  // A call through the bindings ends within 1s (EnableHttpPort); a stream sends a keepalive
  // every 200ms.
  client.set_read_timeout(std::chrono::seconds(5));
  client.set_write_timeout(std::chrono::seconds(5));
  httplib::Response res;
  httplib::Error error = httplib::Error::Success;
  if (!client.send(req, res, error)) {
    // Canceled: the harness hung up on a stream. Read: the answer was cut short. Connection:
    // the port is gone, which is a finding.
    if (error == httplib::Error::Connection) {
      std::fprintf(stderr, "%s %s: the HTTP port does not answer (%s)\n", req.method.c_str(),
                   req.path.c_str(), httplib::to_string(error).c_str());
      std::abort();
    }
    if (http_status == 0) return 0;
  }

  if (absl::StartsWith(content_type, a2a_protocol::kEventStreamContentType)) {
    a2a_protocol::SseParser parser(kMaxAnswerBytes);
    (void)parser.Feed(body, [&](std::string event) {
      const absl::Status status = ErrorIn(event, http_status);
      if (IsFinding(status.code())) Report(req, http_status, status, event);
      return absl::OkStatus();
    });
    return 0;
  }
  if (absl::StartsWith(content_type, "application/")) {
    const absl::Status status = ErrorIn(body, http_status);
    if (IsFinding(status.code())) Report(req, http_status, status, body);
  } else if (http_status >= 500 && http_status != 501 && http_status != 503 && http_status != 504) {
    // No error body of ours: httplib's own answer to a handler that threw, or worse.
    Report(req, http_status, absl::InternalError("a server error without an error body"), body);
  }
  return 0;
}

}  // namespace fuzzing
