// The JSON-RPC and HTTP+JSON bindings: HTTP in, the A2AService call on the coordinator's own gRPC
// server (loopback TCP, or in-process with TLS), ProtoJSON out (see http_bindings.h).
#include "a2a_http/bindings.h"

#include <optional>
#include <utility>
#include <vector>

#include "a2a/v1/a2a.pb.h"
#include "a2a_http/generic_stream_call.h"
#include "a2a_http/rest_v03.h"
#include "a2a_protocol/errors.h"
#include "a2a_protocol/json_binding.h"
#include "a2a_protocol/v03_json.h"
#include "a2a_protocol/version.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/grpc_status.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/status_macros.h"
#include "common/utf8.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/dynamic_message.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/support/client_callback.h"
#include "httplib.h"

namespace a2a_http {
namespace {

namespace pb = google::protobuf;
namespace a2apb = ::lf::a2a::v1;
using a2a_protocol::FromJson;
using a2a_protocol::ToJson;

constexpr char kServiceName[] = "lf.a2a.v1.A2AService";
constexpr char kCardPath[] = "/.well-known/agent-card.json";
constexpr char kAgentsPrefix[] = "/agents/";

// Request headers that travel to the gRPC service as metadata (the A2A service parameters and
// the credentials).
constexpr std::pair<const char*, const char*> kForwardedHeaders[] = {
    {"Authorization", "authorization"},
    {"A2A-Version", "a2a-version"},
    {"A2A-Extensions", "a2a-extensions"},
    // A2A 0.3's name of the extensions header.
    {"X-A2A-Extensions", "a2a-extensions"},
};
constexpr char kVersionHeader[] = "A2A-Version";

const pb::ServiceDescriptor* A2AService() {
  static const pb::ServiceDescriptor* service =
      pb::DescriptorPool::generated_pool()->FindServiceByName(kServiceName);
  return service;
}

// Sets string field `name` of `message` to `value` (a path parameter or the URL's agent) unless
// the body already set it to something else: then the request contradicts its URL.
absl::Status SetFromUrl(pb::Message* message, const char* name, const std::string& value) {
  if (value.empty()) return absl::OkStatus();
  const pb::FieldDescriptor* field = message->GetDescriptor()->FindFieldByName(name);
  if (field == nullptr || field->type() != pb::FieldDescriptor::TYPE_STRING) {
    return absl::OkStatus();
  }
  for (absl::string_view rest = value; !rest.empty();) {
    const size_t length = common::Utf8SequenceLength(rest);
    if (length == 0 || rest[0] == '\0') {
      return absl::InvalidArgumentError(
          absl::StrCat("the URL's ", field->json_name(), " is not valid UTF-8 text"));
    }
    rest.remove_prefix(length);
  }
  const pb::Reflection* reflection = message->GetReflection();
  const std::string given = reflection->GetString(*message, field);
  if (!given.empty() && given != value) {
    return absl::InvalidArgumentError(absl::StrCat("the request's ", field->json_name(), " \"",
                                                   given, "\" contradicts the URL's \"", value,
                                                   "\""));
  }
  reflection->SetString(message, field, value);
  return absl::OkStatus();
}

bool IsJsonContentType(const httplib::Request& req) {
  if (!req.has_header("Content-Type")) return true;  // no type at all: take it as JSON
  const std::string header = req.get_header_value("Content-Type");
  const absl::string_view type =
      absl::StripAsciiWhitespace(absl::string_view(header).substr(0, header.find(';')));
  return absl::EqualsIgnoreCase(type, a2a_protocol::kJsonContentType) ||
         absl::EqualsIgnoreCase(type, a2a_protocol::kA2AJsonContentType);
}

// Query parameters as a JSON object of `type`'s fields (HTTP+JSON GET and DELETE): names in
// camelCase (or the proto name), repeated fields by repeating the name or comma-separated,
// booleans as true/false; numbers and enums go as strings, which ProtoJSON accepts. Unknown names
// are ignored, as unknown JSON fields are.
absl::StatusOr<std::string> QueryToJson(const pb::Descriptor* type, const httplib::Params& params) {
  std::vector<std::pair<const pb::FieldDescriptor*, std::vector<std::string>>> fields;
  for (const auto& [name, value] : params) {
    const pb::FieldDescriptor* field = type->FindFieldByName(name);
    for (int i = 0; field == nullptr && i < type->field_count(); ++i) {
      if (type->field(i)->json_name() == name) field = type->field(i);
    }
    if (field == nullptr) continue;
    if (field->type() == pb::FieldDescriptor::TYPE_MESSAGE &&
        field->message_type()->full_name() != "google.protobuf.Timestamp") {
      return absl::InvalidArgumentError(
          absl::StrCat("query parameter ", name, " names an object; send it in a POST body"));
    }
    std::vector<std::string> values;
    if (field->is_repeated()) {
      values = absl::StrSplit(value, ',', absl::SkipEmpty());
    } else {
      values.push_back(value);
    }
    auto it = std::find_if(fields.begin(), fields.end(),
                           [field](const auto& entry) { return entry.first == field; });
    if (it == fields.end()) {
      fields.emplace_back(field, std::move(values));
    } else if (field->is_repeated()) {
      it->second.insert(it->second.end(), values.begin(), values.end());
    } else {
      return absl::InvalidArgumentError(absl::StrCat("query parameter ", name, " is repeated"));
    }
  }
  std::string json = "{";
  for (const auto& [field, values] : fields) {
    std::vector<std::string> rendered;
    for (const std::string& value : values) {
      if (field->type() == pb::FieldDescriptor::TYPE_BOOL) {
        if (value != "true" && value != "false") {
          return absl::InvalidArgumentError(
              absl::StrCat("query parameter ", field->json_name(), " must be true or false"));
        }
        rendered.push_back(value);
      } else {
        rendered.push_back(common::JsonQuote(value));
      }
    }
    absl::StrAppend(&json, json.size() > 1 ? "," : "", common::JsonQuote(field->json_name()), ":",
                    field->is_repeated() ? absl::StrCat("[", absl::StrJoin(rendered, ","), "]")
                                         : rendered.front());
  }
  json += "}";
  return json;
}

// Whether `path` is an agent's base URL, /agents/<name>, where its JSON-RPC calls go.
bool IsAgentBase(absl::string_view path) {
  return absl::ConsumePrefix(&path, kAgentsPrefix) && !path.empty() &&
         !absl::StrContains(path, '/');
}

// A header value that gRPC metadata can carry (printable ASCII).
bool IsPrintableAscii(const std::string& value) {
  return std::all_of(value.begin(), value.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
}

// How a stream's events are written: 1.0 JSON-RPC, 1.0 HTTP+JSON, or 0.3 JSON-RPC (message/stream
// and tasks/resubscribe, whose `final` flags differ).
// kRestV03: 0.3's HTTP+JSON, transcoded onto the 0.3 gRPC service (rest_v03.h).
enum class Binding { kJsonRpc, kRest, kJsonRpcV03Send, kJsonRpcV03Subscribe, kRestV03 };

bool IsV03(Binding binding) {
  return binding == Binding::kJsonRpcV03Send || binding == Binding::kJsonRpcV03Subscribe;
}

// A REST path below an agent's base URL (or the root), matched to its method.
struct RestRoute {
  const char* method = nullptr;
  std::string id;         // the task id ("id", or "task_id" of the push-config methods)
  std::string config_id;  // a push config's id
  bool takes_body = false;
};

// What the path names whatever the HTTP method: "" when it names nothing here; otherwise the
// route for `verb` (method null when the verb does not fit: 405).
std::optional<RestRoute> MatchRest(const std::string& verb, absl::string_view path) {
  const bool get = verb == "GET" || verb == "HEAD";
  const bool post = verb == "POST";
  RestRoute route;
  if (path == "/message:send" || path == "/message:stream") {
    if (post) route.method = path == "/message:send" ? "SendMessage" : "SendStreamingMessage";
    route.takes_body = true;
    return route;
  }
  if (path == "/extendedAgentCard") {
    if (get) route.method = "GetExtendedAgentCard";
    return route;
  }
  if (path == "/tasks") {
    if (get) route.method = "ListTasks";
    return route;
  }
  if (!absl::ConsumePrefix(&path, "/tasks/") || path.empty()) return std::nullopt;
  const std::vector<absl::string_view> parts = absl::StrSplit(path, '/');
  if (parts.size() == 1) {
    absl::string_view id = parts[0];
    if (absl::ConsumeSuffix(&id, ":cancel")) {
      if (post) route.method = "CancelTask";
      route.takes_body = true;
    } else if (absl::ConsumeSuffix(&id, ":subscribe")) {
      // POST in the specification's table, GET in the proto's HTTP rule: both.
      if (post || get) route.method = "SubscribeToTask";
      route.takes_body = post;
    } else if (get) {
      route.method = "GetTask";
    }
    if (id.empty()) return std::nullopt;
    route.id = std::string(id);
    return route;
  }
  if (parts[1] != "pushNotificationConfigs" || parts[0].empty() || parts.size() > 3) {
    return std::nullopt;
  }
  route.id = std::string(parts[0]);
  if (parts.size() == 2) {
    if (post) route.method = "CreateTaskPushNotificationConfig";
    if (get) route.method = "ListTaskPushNotificationConfigs";
    route.takes_body = post;
    return route;
  }
  if (parts[2].empty()) return std::nullopt;
  route.config_id = std::string(parts[2]);
  if (get) route.method = "GetTaskPushNotificationConfig";
  if (verb == "DELETE") route.method = "DeleteTaskPushNotificationConfig";
  return route;
}

// Whether an If-None-Match header value matches `etag` ("*", or a list of tags, weak or strong,
// compared weakly as RFC 9110 asks for GET).
bool IfNoneMatchMatches(const std::string& header, const std::string& etag) {
  for (absl::string_view tag : absl::StrSplit(header, ',')) {
    tag = absl::StripAsciiWhitespace(tag);
    if (tag == "*") return true;
    absl::ConsumePrefix(&tag, "W/");
    if (tag == etag) return true;
  }
  return false;
}

}  // namespace

// HTTP validators of a card's JSON: a strong ETag (a digest of the bytes) and the time this
// process first served those bytes at that path (Last-Modified: never earlier than the change).
// (Outside the anonymous namespace: Impl holds one.)
class CardValidators {
 public:
  struct Validators {
    std::string etag;  // quoted, as the header carries it
    absl::Time last_modified;
  };
  Validators For(const std::string& path, const std::string& json) {
    // 128 bits are plenty to tell two cards apart.
    const std::string etag = absl::StrCat("\"", common::Sha256Hex(json).substr(0, 32), "\"");
    absl::MutexLock lock(&mu_);
    Validators& seen = seen_[path];
    if (seen.etag != etag) {
      seen.etag = etag;
      // HTTP dates have whole seconds: a change within the second of the last one still gets a
      // later date than a client may hold.
      seen.last_modified = absl::FromUnixSeconds(absl::ToUnixSeconds(absl::Now()));
    }
    return seen;
  }

 private:
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Validators> seen_ ABSL_GUARDED_BY(mu_);
};

class A2AHttpBindings::Impl {
 public:
  Impl(std::shared_ptr<grpc::Channel> channel, CardSource* cards, HttpBindingOptions options)
      : stub_(std::move(channel)), cards_(cards), options_(options) {}

  void Install(httplib::Server& server, const std::string& scheme) {
    scheme_ = scheme;
    // What httplib answers by itself (no route, a body over the limit, a request it cannot read)
    // gets a body in the binding's error format too.
    server.set_error_handler(httplib::Server::HandlerWithResponse(
        [](const httplib::Request& req, httplib::Response& res) {
          if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
          absl::Status status;
          switch (res.status) {
            case 413:
              status = absl::ResourceExhaustedError(
                  "the request body is larger than this server takes (--max_request_bytes)");
              break;
            case 404:
              status = absl::NotFoundError(absl::StrCat("nothing at ", req.path));
              break;
            case 405:
              status = absl::InvalidArgumentError(absl::StrCat(req.method, " is not allowed here"));
              break;
            default:
              status = absl::InvalidArgumentError(absl::StrCat("HTTP ", res.status));
          }
          if (req.method == "POST" && (req.path == "/" || IsAgentBase(req.path))) {
            res.set_content(
                a2a_protocol::JsonRpcError("null", status, a2a_protocol::kJsonRpcInvalidRequest),
                a2a_protocol::kJsonContentType);
          } else {
            res.set_content(a2a_protocol::HttpErrorBody(status), a2a_protocol::kA2AJsonContentType);
          }
          return httplib::Server::HandlerResponse::Handled;
        }));
    server.Get(kCardPath, [this](const httplib::Request& req, httplib::Response& res) {
      ServeCard(req, res, std::nullopt);
    });
    server.Post("/", [this](const httplib::Request& req, httplib::Response& res) {
      JsonRpc(req, res, "");
    });
    // The interface URL, with or without a trailing slash.
    server.Post(R"(/agents/([^/]+)/?)",
                [this](const httplib::Request& req, httplib::Response& res) {
                  JsonRpc(req, res, req.matches[1]);
                });
    const auto agent_route = [this](const httplib::Request& req, httplib::Response& res) {
      const std::string agent = req.matches[1];
      const std::string rest = req.matches[2];
      if (rest == kCardPath) {
        if (req.method == "GET" || req.method == "HEAD") return ServeCard(req, res, agent);
        return RestError(res, 405, absl::InvalidArgumentError("the agent card is read with GET"));
      }
      if (absl::StartsWith(rest, "/v1/")) return RestV03(req, res, agent, rest.substr(3));
      Rest(req, res, agent, rest);
    };
    const auto root_route = [this](const httplib::Request& req, httplib::Response& res) {
      RootRest(req, res);
    };
    for (const char* pattern : {R"(/agents/([^/]+)(/.+))"}) {
      server.Get(pattern, agent_route);
      server.Post(pattern, agent_route);
      server.Delete(pattern, agent_route);
    }
    // Everything else below the root is HTTP+JSON without an agent in the URL, optionally
    // /{tenant}/... as the proto's HTTP rules have it.
    for (const char* pattern : {R"((/(?!agents/|metrics$|\.well-known/).+))"}) {
      server.Get(pattern, root_route);
      server.Post(pattern, root_route);
      server.Delete(pattern, root_route);
    }
  }

 private:
  // --- Cards.

  // scheme://host:port as the reader reached this port.
  std::string BaseUrl(const httplib::Request& req) const {
    std::string host = req.get_header_value("Host");
    if (host.empty() || !IsPrintableAscii(host) || absl::StrContains(host, '/')) {
      host = absl::StrCat(req.local_addr, ":", req.local_port);
    }
    return absl::StrCat(scheme_, "://", host);
  }

  void ServeCard(const httplib::Request& req, httplib::Response& res,
                 const std::optional<std::string>& agent_name) {
    const absl::StatusOr<a2apb::AgentCard> card = cards_->Card(agent_name, BaseUrl(req));
    if (!card.ok())
      return RestError(res, a2a_protocol::HttpStatusCode(card.status()), card.status());
    // A reader that asks for 1.0 gets the 1.0 card; any other (0.3 clients send no version) the
    // card both versions read, whose 0.3 members name only what is served in 0.3 (JSON-RPC and
    // HTTP+JSON at the same base URL).
    const a2a_protocol::v03::AskedVersion asked = AskedVersionOf(req);
    if (asked == a2a_protocol::v03::AskedVersion::kOther) {
      return RestError(
          res, 400,
          a2a_protocol::VersionNotSupported(AskedVersionValue(req).substr(0, 32), "server"));
    }
    const bool v10 = asked == a2a_protocol::v03::AskedVersion::kV10;
    const std::string json =
        v10 ? ToJson(*card) : a2a_protocol::v03::HybridCardJson(*card, &ServedInV03);
    const CardValidators::Validators validators =
        validators_.For(v10 ? req.path : absl::StrCat(req.path, "#0.3"), json);
    res.set_header("Vary", "A2A-Version");
    res.set_header("Cache-Control",
                   absl::StrCat("public, max-age=", absl::ToInt64Seconds(options_.card_max_age)));
    res.set_header("ETag", validators.etag);
    res.set_header("Last-Modified",
                   absl::FormatTime("%a, %d %b %Y %H:%M:%S GMT", validators.last_modified,
                                    absl::UTCTimeZone()));
    if (req.has_header("If-None-Match") &&
        IfNoneMatchMatches(req.get_header_value("If-None-Match"), validators.etag)) {
      res.status = 304;
      return;
    }
    res.set_content(json, a2a_protocol::kJsonContentType);
  }

  // --- JSON-RPC.

  void JsonRpc(const httplib::Request& req, httplib::Response& res, const std::string& agent) {
    if (!IsJsonContentType(req)) {
      return JsonRpcFailure(
          res, "null",
          absl::InvalidArgumentError("a JSON-RPC request's Content-Type is application/json"),
          a2a_protocol::kJsonRpcInvalidRequest, 415);
    }
    int code = 0;
    std::string id = "null";
    absl::StatusOr<a2a_protocol::JsonRpcRequest> request =
        a2a_protocol::ParseJsonRpcRequest(req.body, &code, &id);
    if (!request.ok()) return JsonRpcFailure(res, id, request.status(), code);
    // The version: what the request asks for (A2A-Version; absent means 0.3) and what its
    // method names; a request naming one version's method while asking for the other is
    // answered as that version would answer an unknown method (docs/a2a-0.3.md, section 1).
    const a2a_protocol::v03::AskedVersion asked = AskedVersionOf(req);
    if (asked == a2a_protocol::v03::AskedVersion::kOther) {
      return JsonRpcFailure(
          res, id,
          a2a_protocol::VersionNotSupported(AskedVersionValue(req).substr(0, 32), "server"),
          std::nullopt);
    }
    if (std::optional<a2a_protocol::v03::Method> v03 =
            a2a_protocol::v03::MethodNamed(request->method)) {
      if (asked == a2a_protocol::v03::AskedVersion::kV10) {
        return JsonRpcFailure(
            res, id,
            absl::UnimplementedError(absl::StrCat("method \"", request->method,
                                                  "\" is A2A 0.3; this request says A2A-Version ",
                                                  AskedVersionValue(req), " (its 1.0 method is ",
                                                  a2a_protocol::v03::ServiceMethodName(*v03), ")")),
            a2a_protocol::kJsonRpcMethodNotFound);
      }
      return JsonRpcV03(req, res, agent, *request, *v03);
    }
    const pb::MethodDescriptor* method = A2AService()->FindMethodByName(request->method);
    if (method != nullptr && asked == a2a_protocol::v03::AskedVersion::kV03) {
      const absl::string_view v03_name = a2a_protocol::v03::V03NameOf(request->method);
      return JsonRpcFailure(
          res, id,
          absl::UnimplementedError(
              absl::StrCat("method \"", request->method,
                           "\" is A2A 1.0; this request says A2A-Version ", AskedVersionValue(req),
                           v03_name.empty() ? std::string(" (A2A 0.3 has no such method)")
                                            : absl::StrCat(" (its 0.3 method is ", v03_name, ")"))),
          a2a_protocol::kJsonRpcMethodNotFound);
    }
    if (method == nullptr) {
      return JsonRpcFailure(
          res, id,
          absl::UnimplementedError(absl::StrCat(
              "method \"", request->method, "\" not found; the A2A methods are ", MethodNames())),
          a2a_protocol::kJsonRpcMethodNotFound);
    }
    absl::StatusOr<std::unique_ptr<pb::Message>> message =
        BuildRequest(method, request->params_json, agent, RestRoute{});
    if (!message.ok()) {
      return JsonRpcFailure(res, id, message.status(), a2a_protocol::kJsonRpcInvalidParams);
    }
    if (method->server_streaming()) {
      if (!request->has_id) {
        return JsonRpcFailure(
            res, id, absl::InvalidArgumentError("a streaming method needs an id to answer"),
            a2a_protocol::kJsonRpcInvalidRequest);
      }
      return Stream(req, res, method, *std::move(message), Binding::kJsonRpc, id);
    }
    absl::StatusOr<std::unique_ptr<pb::Message>> response = Unary(req, method, **message);
    if (!request->has_id) {  // a notification: done, and no answer
      res.status = 204;
      return;
    }
    if (!response.ok()) return JsonRpcFailure(res, id, response.status(), std::nullopt);
    res.set_content(a2a_protocol::JsonRpcResult(id, ToJson(**response)),
                    a2a_protocol::kJsonContentType);
  }

  // The interfaces of a card that the coordinator serves in A2A 0.3.
  static bool ServedInV03(const a2apb::AgentInterface& interface) {
    return interface.protocol_version() == a2a_protocol::v03::kVersion;
  }

  // The A2A-Version the request asks for: its header, else its query parameter (specification
  // section 3.6.1; a browser reading a card can only set the latter).
  static std::string AskedVersionValue(const httplib::Request& req) {
    if (req.has_header(kVersionHeader)) return req.get_header_value(kVersionHeader);
    return req.get_param_value(kVersionHeader);
  }
  static a2a_protocol::v03::AskedVersion AskedVersionOf(const httplib::Request& req) {
    return a2a_protocol::v03::ParseVersion(AskedVersionValue(req));
  }

  // An A2A 0.3 JSON-RPC request: its params read into the 1.0 request, the call made on the
  // 1.0 service as 1.0, the answer written back as 0.3 JSON (a2a_protocol/v03_json.h).
  void JsonRpcV03(const httplib::Request& req, httplib::Response& res, const std::string& agent,
                  const a2a_protocol::JsonRpcRequest& request, a2a_protocol::v03::Method v03) {
    const std::string& id = request.id_json;
    const pb::MethodDescriptor* method =
        A2AService()->FindMethodByName(std::string(a2a_protocol::v03::ServiceMethodName(v03)));
    std::unique_ptr<pb::Message> message = NewMessage(method->input_type());
    absl::Status built =
        a2a_protocol::v03::RequestFromParams(v03, request.params_json, message.get());
    if (built.ok()) built = SetFromUrl(message.get(), "tenant", agent);
    if (a2a_protocol::v03::Streams(v03)) {
      if (!request.has_id) {
        return JsonRpcFailure(
            res, id, absl::InvalidArgumentError("a streaming method needs an id to answer"),
            a2a_protocol::kJsonRpcInvalidRequest);
      }
      const Binding binding = v03 == a2a_protocol::v03::Method::kMessageStream
                                  ? Binding::kJsonRpcV03Send
                                  : Binding::kJsonRpcV03Subscribe;
      if (!built.ok()) {
        return StreamOfOneError(res, binding, id, built, a2a_protocol::kJsonRpcInvalidParams);
      }
      return Stream(req, res, method, std::move(message), binding, id);
    }
    if (!built.ok()) return JsonRpcFailure(res, id, built, a2a_protocol::kJsonRpcInvalidParams);
    absl::StatusOr<std::unique_ptr<pb::Message>> response =
        Unary(req, method, *message, /*version=*/a2a_protocol::kVersion);
    if (!request.has_id) {
      res.status = 204;
      return;
    }
    if (!response.ok()) {
      // 0.3 names the refusal of a card not offered AuthenticatedExtendedCardNotConfigured.
      if (v03 == a2a_protocol::v03::Method::kGetExtendedAgentCard &&
          a2a_protocol::Reason(response.status()) == a2a_protocol::kUnsupportedOperation) {
        return JsonRpcFailure(
            res, id, a2a_protocol::ExtendedAgentCardNotConfigured(response.status().message()),
            std::nullopt);
      }
      return JsonRpcFailure(res, id, response.status(), std::nullopt);
    }
    absl::StatusOr<std::string> result = a2a_protocol::v03::ResultJson(v03, **response);
    if (!result.ok()) return JsonRpcFailure(res, id, result.status(), std::nullopt);
    res.set_content(a2a_protocol::JsonRpcResult(id, *result), a2a_protocol::kJsonContentType);
  }

  // A JSON-RPC error answer: HTTP 200 as JSON-RPC over HTTP has it, except 401 (with the
  // challenge) for a caller without valid credentials, and `http_status` when given.
  void JsonRpcFailure(httplib::Response& res, const std::string& id, const absl::Status& status,
                      std::optional<int> code, int http_status = 200) {
    if (status.code() == absl::StatusCode::kUnauthenticated) {
      http_status = 401;
      res.set_header("WWW-Authenticate", "Bearer");
    }
    res.status = http_status;
    res.set_content(a2a_protocol::JsonRpcError(id, status, code), a2a_protocol::kJsonContentType);
  }

  static std::string MethodNames() {
    std::vector<std::string> names;
    for (int i = 0; i < A2AService()->method_count(); ++i) {
      names.push_back(A2AService()->method(i)->name());
    }
    return absl::StrJoin(names, ", ");
  }

  // --- HTTP+JSON.

  // A path below the root: /{tenant}/... when its first segment is not one of the binding's.
  void RootRest(const httplib::Request& req, httplib::Response& res) {
    const std::string& path = req.matches[1];
    // A2A 0.3's paths, tenant-less ("v1" is a reserved agent name).
    if (absl::StartsWith(path, "/v1/")) return RestV03(req, res, "", path.substr(3));
    if (MatchRest(req.method, path).has_value()) return Rest(req, res, "", path);
    const size_t slash = path.find('/', 1);
    if (slash != std::string::npos) {
      return Rest(req, res, path.substr(1, slash - 1), path.substr(slash));
    }
    RestError(res, 404, absl::NotFoundError(absl::StrCat("nothing at ", path)));
  }

  void Rest(const httplib::Request& req, httplib::Response& res, const std::string& agent,
            const std::string& path) {
    const std::optional<RestRoute> route = MatchRest(req.method, path);
    if (!route.has_value()) {
      return RestError(res, 404,
                       absl::NotFoundError(absl::StrCat("no A2A HTTP+JSON endpoint at ", path)));
    }
    if (route->method == nullptr) {
      return RestError(
          res, 405,
          absl::InvalidArgumentError(absl::StrCat(req.method, " is not allowed on ", path)));
    }
    const pb::MethodDescriptor* method = A2AService()->FindMethodByName(route->method);
    std::string json = "{}";
    if (route->takes_body && !req.body.empty()) {
      if (!IsJsonContentType(req)) {
        return RestError(
            res, 415,
            absl::InvalidArgumentError(
                "the body's Content-Type is application/a2a+json or application/json"));
      }
      json = req.body;
    } else if (!route->takes_body) {
      absl::StatusOr<std::string> query = QueryToJson(method->input_type(), req.params);
      if (!query.ok()) return RestError(res, 400, query.status());
      json = *std::move(query);
    }
    absl::StatusOr<std::unique_ptr<pb::Message>> message =
        BuildRequest(method, json, agent, *route);
    if (!message.ok()) return RestError(res, 400, message.status());
    if (method->server_streaming()) {
      return Stream(req, res, method, *std::move(message), Binding::kRest, "");
    }
    absl::StatusOr<std::unique_ptr<pb::Message>> response = Unary(req, method, **message);
    if (!response.ok()) {
      return RestError(res, a2a_protocol::HttpStatusCode(response.status()), response.status());
    }
    res.set_content(ToJson(**response), a2a_protocol::kA2AJsonContentType);
  }

  // A2A 0.3 over HTTP+JSON (rest_v03.h): the call of the 0.3 gRPC service the request makes, for
  // agent `agent` ("" for the tenant-less rules), answered in 0.3's ProtoJSON.
  void RestV03(const httplib::Request& req, httplib::Response& res, const std::string& agent,
               const std::string& path) {
    if (!req.body.empty() && !IsJsonContentType(req)) {
      return RestV03Error(
          res, 415, absl::InvalidArgumentError("the body's Content-Type is application/json"));
    }
    RestV03Result matched = MatchRestV03(req.method, path, req.params, req.body);
    if (!matched.error.ok()) return RestV03Error(res, matched.call.http_status, matched.error);
    const pb::MethodDescriptor* method = matched.call.method;
    if (method->server_streaming()) {
      return Stream(req, res, method, std::move(matched.call.request), Binding::kRestV03, "",
                    agent);
    }
    absl::StatusOr<std::unique_ptr<pb::Message>> response =
        Unary(req, method, *matched.call.request, /*version=*/nullptr, agent);
    if (!response.ok()) {
      return RestV03Error(res, RestV03HttpStatus(response.status()), response.status());
    }
    res.set_content(ToJson(**response), a2a_protocol::kJsonContentType);
  }

  static void RestV03Error(httplib::Response& res, int http_status, const absl::Status& status) {
    if (status.code() == absl::StatusCode::kUnauthenticated) {
      res.set_header("WWW-Authenticate", "Bearer");
    }
    res.status = http_status;
    res.set_content(RestV03ErrorBody(status), a2a_protocol::kJsonContentType);
  }

  static void RestError(httplib::Response& res, int http_status, const absl::Status& status) {
    if (status.code() == absl::StatusCode::kUnauthenticated) {
      res.set_header("WWW-Authenticate", "Bearer");
    }
    res.status = http_status;
    res.set_content(a2a_protocol::HttpErrorBody(status, http_status),
                    a2a_protocol::kA2AJsonContentType);
  }

  // --- Calls.

  // The request message of `method` from its JSON, with the URL's agent as tenant and the
  // route's path parameters.
  static absl::StatusOr<std::unique_ptr<pb::Message>> BuildRequest(
      const pb::MethodDescriptor* method, const std::string& json, const std::string& agent,
      const RestRoute& route) {
    std::unique_ptr<pb::Message> message = NewMessage(method->input_type());
    RETURN_IF_ERROR(FromJson(json, message.get()));
    RETURN_IF_ERROR(SetFromUrl(message.get(), "tenant", agent));
    if (!route.config_id.empty()) {
      RETURN_IF_ERROR(SetFromUrl(message.get(), "task_id", route.id));
      RETURN_IF_ERROR(SetFromUrl(message.get(), "id", route.config_id));
    } else if (message->GetDescriptor()->FindFieldByName("task_id") != nullptr) {
      RETURN_IF_ERROR(SetFromUrl(message.get(), "task_id", route.id));
    } else {
      RETURN_IF_ERROR(SetFromUrl(message.get(), "id", route.id));
    }
    return message;
  }

  // The call's metadata from the request's headers, and its deadline. `version`, when given,
  // is the a2a-version the call carries instead of the request's (a 0.3 request made as 1.0).
  absl::Status Prepare(const httplib::Request& req, grpc::ClientContext* context,
                       const char* version = nullptr, const std::string& v03_tenant = "") {
    if (version != nullptr) {
      context->AddMetadata("a2a-version", version);
      context->AddMetadata(kCallerVersionMetadata, a2a_protocol::v03::kVersion);
    }
    // Binary metadata: an agent's name is UTF-8, which ASCII metadata cannot carry (found by
    // fuzz_http_bindings: gRPC aborts on such a value).
    if (!v03_tenant.empty()) context->AddMetadata(kTenantBinaryMetadata, v03_tenant);
    for (const auto& [header, key] : kForwardedHeaders) {
      if (!req.has_header(header)) continue;
      if (version != nullptr && absl::string_view(header) == kVersionHeader) continue;
      const std::string value = req.get_header_value(header);
      if (!IsPrintableAscii(value)) {
        return absl::InvalidArgumentError(
            absl::StrCat("the ", header, " header holds bytes other than printable ASCII"));
      }
      context->AddMetadata(key, value);
    }
    // The version asked by query parameter (specification section 3.6.1) when no header asks.
    if (version == nullptr && !req.has_header(kVersionHeader) && req.has_param(kVersionHeader)) {
      const std::string value = req.get_param_value(kVersionHeader);
      if (!IsPrintableAscii(value)) {
        return absl::InvalidArgumentError(
            "the A2A-Version parameter holds bytes other than printable ASCII");
      }
      context->AddMetadata("a2a-version", value);
    }
    context->set_deadline(absl::ToChronoTime(absl::Now() + options_.max_call_time));
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<pb::Message>> Unary(const httplib::Request& req,
                                                     const pb::MethodDescriptor* method,
                                                     const pb::Message& request,
                                                     const char* version = nullptr,
                                                     const std::string& v03_tenant = "") {
    grpc::ClientContext context;
    RETURN_IF_ERROR(Prepare(req, &context, version, v03_tenant));
    std::unique_ptr<pb::Message> response = NewMessage(method->output_type());
    // A completion queue of the call's own: when its one tag comes back and the queue is
    // drained, gRPC is done with the call, so the context and messages may go.
    grpc::CompletionQueue queue;
    grpc::Status status;
    std::unique_ptr<grpc::ClientAsyncResponseReader<pb::Message>> call =
        stub_.PrepareUnaryCall(&context, MethodPath(method), request, &queue);
    call->StartCall();
    call->Finish(response.get(), &status, &queue);
    void* tag = nullptr;
    bool ok = false;
    queue.Next(&tag, &ok);
    queue.Shutdown();
    while (queue.Next(&tag, &ok)) {
    }
    if (!status.ok()) return common::FromGrpcStatus(status);
    return response;
  }

  // One event of a stream as the binding writes it.
  // `opening`: on a 0.3 stream, the task its first event carried (null before it, or when it
  // carried none).
  static std::string Event(Binding binding, const std::string& id, const pb::Message& response,
                           const a2apb::Task* opening = nullptr) {
    if (IsV03(binding)) {
      // The stream's messages are of the generated type (NewMessage): a StreamResponse.
      return a2a_protocol::SseEvent(a2a_protocol::JsonRpcResult(
          id, a2a_protocol::v03::EventJson(static_cast<const a2apb::StreamResponse&>(response),
                                           binding == Binding::kJsonRpcV03Send, opening)));
    }
    if (binding == Binding::kJsonRpc) {
      return a2a_protocol::SseEvent(a2a_protocol::JsonRpcResult(id, ToJson(response)));
    }
    return a2a_protocol::SseEvent(ToJson(response));
  }

  static std::string ErrorEvent(Binding binding, const std::string& id, const absl::Status& status,
                                std::optional<int> code = std::nullopt) {
    if (binding == Binding::kRestV03) {
      return a2a_protocol::SseEvent(RestV03ErrorBody(status), "error");
    }
    if (binding != Binding::kRest) {
      return a2a_protocol::SseEvent(a2a_protocol::JsonRpcError(id, status, code));
    }
    return a2a_protocol::SseEvent(a2a_protocol::HttpErrorBody(status), "error");
  }

  // A streaming method: an error before the first response is an ordinary error answer (the
  // client learns it from the status line and body); after it, the stream carries it as its
  // last event.
  void Stream(const httplib::Request& req, httplib::Response& res,
              const pb::MethodDescriptor* method, std::unique_ptr<pb::Message> request,
              Binding binding, const std::string& id, const std::string& v03_tenant = "") {
    auto call = std::make_shared<StreamCall>(method, std::move(request));
    if (absl::Status prepared = Prepare(
            req, call->context(), IsV03(binding) ? a2a_protocol::kVersion : nullptr, v03_tenant);
        !prepared.ok()) {
      if (IsV03(binding)) return StreamOfOneError(res, binding, id, prepared, std::nullopt);
      if (binding == Binding::kRestV03) return RestV03Error(res, 400, prepared);
      return binding == Binding::kJsonRpc ? JsonRpcFailure(res, id, prepared, std::nullopt)
                                          : RestError(res, 400, prepared);
    }
    call->Start(&stub_, call);
    std::unique_ptr<pb::Message> first;
    while (call->Wait(options_.keepalive, &first) == StreamCall::Next::kIdle) {
    }
    if (first == nullptr) {
      const absl::Status status = common::FromGrpcStatus(call->status());
      const absl::Status failed =
          status.ok() ? absl::InternalError("the stream ended before its first event") : status;
      if (IsV03(binding)) return StreamOfOneError(res, binding, id, failed, std::nullopt);
      if (binding == Binding::kRestV03) {
        return RestV03Error(res, RestV03HttpStatus(failed), failed);
      }
      return binding == Binding::kJsonRpc
                 ? JsonRpcFailure(res, id, failed, std::nullopt)
                 : RestError(res, a2a_protocol::HttpStatusCode(failed), failed);
    }
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    auto pending = std::make_shared<std::string>(Event(binding, id, *first));
    std::shared_ptr<const a2apb::Task> opening;
    if (IsV03(binding) && static_cast<const a2apb::StreamResponse&>(*first).has_task()) {
      opening =
          std::make_shared<a2apb::Task>(static_cast<const a2apb::StreamResponse&>(*first).task());
    }
    const absl::Duration keepalive = options_.keepalive;
    res.set_chunked_content_provider(
        a2a_protocol::kEventStreamContentType,
        [call, pending, binding, id, keepalive, opening](size_t, httplib::DataSink& sink) {
          if (!pending->empty()) {
            if (!sink.write(pending->data(), pending->size())) return false;
            pending->clear();
          }
          while (true) {
            std::unique_ptr<pb::Message> response;
            switch (call->Wait(keepalive, &response)) {
              case StreamCall::Next::kResponse: {
                const std::string event = Event(binding, id, *response, opening.get());
                if (!sink.write(event.data(), event.size())) return false;
                break;
              }
              case StreamCall::Next::kIdle: {
                constexpr char kKeepAlive[] = ": keep-alive\n\n";
                if (!sink.write(kKeepAlive, sizeof(kKeepAlive) - 1)) return false;
                break;
              }
              case StreamCall::Next::kEnd: {
                const absl::Status status = common::FromGrpcStatus(call->status());
                if (!status.ok()) {
                  const std::string event = ErrorEvent(binding, id, status);
                  sink.write(event.data(), event.size());
                }
                sink.done();
                return true;
              }
            }
          }
        },
        // However the response ended (a client that went away included), the call ends too.
        [call](bool) { call->Abandon(); });
  }

  // A 0.3 stream that fails before its first event still answers as an event stream (0.3
  // clients refuse anything else once they asked for one): one error event, then the end.
  static void StreamOfOneError(httplib::Response& res, Binding binding, const std::string& id,
                               const absl::Status& status, std::optional<int> code) {
    res.set_header("Cache-Control", "no-cache");
    if (status.code() == absl::StatusCode::kUnauthenticated) {
      res.status = 401;
      res.set_header("WWW-Authenticate", "Bearer");
    }
    res.set_content(ErrorEvent(binding, id, status, code), a2a_protocol::kEventStreamContentType);
  }

  GenericStub stub_;
  CardSource* const cards_;
  const HttpBindingOptions options_;
  std::string scheme_ = "http";
  CardValidators validators_;
};

A2AHttpBindings::A2AHttpBindings(std::shared_ptr<grpc::Channel> channel, CardSource* cards,
                                 HttpBindingOptions options)
    : impl_(std::make_unique<Impl>(std::move(channel), cards, options)) {}

A2AHttpBindings::~A2AHttpBindings() = default;

void A2AHttpBindings::Install(httplib::Server& server, const std::string& scheme) {
  impl_->Install(server, scheme);
}

}  // namespace a2a_http
