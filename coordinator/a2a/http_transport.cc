#include "coordinator/a2a/http_transport.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "a2a_protocol/errors.h"
#include "a2a_protocol/version.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/notification.h"
#include "common/http_deadline.h"
#include "coordinator/a2a/sse.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "httplib.h"

namespace coordinator {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

constexpr char kJsonRpcContentType[] = "application/json";
constexpr char kRestContentType[] = "application/a2a+json";
// How long Finish waits between two attempts to stop a cancelled call's client: httplib drops
// a stop() that comes before the call has its socket.
constexpr absl::Duration kStopRetry = absl::Milliseconds(100);

std::string ToJson(const google::protobuf::Message& message) {
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(message, &json);
  return json;
}

// Parses `json` (any JSON value); nullopt when it is not JSON.
std::optional<Value> ParseValue(absl::string_view json) {
  Value value;
  const auto parsed = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &value);
  if (!parsed.ok()) return std::nullopt;
  return value;
}

// Reads a JSON value into `message` (Protobuf's JSON mapping, unknown fields ignored).
absl::Status FromValue(const Value& value, google::protobuf::Message* message,
                       absl::string_view what) {
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(value, &json);
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  const auto parsed = google::protobuf::util::JsonStringToMessage(json, message, options);
  if (!parsed.ok()) {
    return a2a_protocol::InvalidAgentResponse(absl::StrCat("the agent's ", what, " is not a ",
                                                           message->GetDescriptor()->full_name(),
                                                           ": ", parsed.message().as_string()));
  }
  return absl::OkStatus();
}

const Value* Field(const Struct& object, absl::string_view name) {
  auto it = object.fields().find(std::string(name));
  return it == object.fields().end() ? nullptr : &it->second;
}

std::string Shorten(absl::string_view text) {
  constexpr size_t kMax = 200;
  return text.size() <= kMax ? std::string(text) : absl::StrCat(text.substr(0, kMax), "...");
}

// The A2A reason of an error's details (JSON-RPC "data", google.rpc.Status "details"): the
// ErrorInfo of domain a2a-protocol.org among them.
std::optional<std::string> DetailsReason(const Value* details) {
  if (details == nullptr || !details->has_list_value()) return std::nullopt;
  for (const Value& detail : details->list_value().values()) {
    if (!detail.has_struct_value()) continue;
    const Struct& info = detail.struct_value();
    const Value* type = Field(info, "@type");
    const Value* reason = Field(info, "reason");
    const Value* domain = Field(info, "domain");
    if (type != nullptr && absl::EndsWith(type->string_value(), "google.rpc.ErrorInfo") &&
        reason != nullptr && !reason->string_value().empty() && domain != nullptr &&
        domain->string_value() == a2a_protocol::kErrorDomain) {
      return reason->string_value();
    }
  }
  return std::nullopt;
}

absl::Status WithReason(absl::StatusCode code, std::optional<std::string> reason,
                        absl::string_view message) {
  if (reason.has_value()) return a2a_protocol::Error(code, *reason, message);
  return absl::Status(code, message);
}

// A JSON-RPC error object as a status (specification sections 5.4 and 9.5).
// TODO(issue 15): a2a_protocol/json_binding.h's conversion once it lands on main.
absl::Status JsonRpcErrorStatus(const Struct& error) {
  const Value* code_value = Field(error, "code");
  const Value* message_value = Field(error, "message");
  const int code = code_value != nullptr ? static_cast<int>(code_value->number_value()) : 0;
  const std::string message = absl::StrCat(
      "agent error ", code, ": ", message_value != nullptr ? message_value->string_value() : "");
  std::optional<std::string> reason = DetailsReason(Field(error, "data"));
  using absl::StatusCode;
  struct A2AError {
    int code;
    StatusCode status;
    const char* reason;
  };
  static constexpr A2AError kA2AErrors[] = {
      {-32001, StatusCode::kNotFound, a2a_protocol::kTaskNotFound},
      {-32002, StatusCode::kFailedPrecondition, a2a_protocol::kTaskNotCancelable},
      {-32003, StatusCode::kFailedPrecondition, a2a_protocol::kPushNotificationNotSupported},
      {-32004, StatusCode::kFailedPrecondition, a2a_protocol::kUnsupportedOperation},
      {-32005, StatusCode::kInvalidArgument, a2a_protocol::kContentTypeNotSupported},
      {-32006, StatusCode::kInternal, a2a_protocol::kInvalidAgentResponse},
      {-32007, StatusCode::kFailedPrecondition, a2a_protocol::kExtendedAgentCardNotConfigured},
      {-32008, StatusCode::kFailedPrecondition, a2a_protocol::kExtensionSupportRequired},
      {-32009, StatusCode::kFailedPrecondition, a2a_protocol::kVersionNotSupported},
  };
  for (const A2AError& known : kA2AErrors) {
    if (code == known.code) return WithReason(known.status, reason.value_or(known.reason), message);
  }
  switch (code) {
    case -32700:  // parse error
    case -32600:  // invalid request
    case -32602:  // invalid params
      return WithReason(StatusCode::kInvalidArgument, reason, message);
    case -32601:  // method not found
      return WithReason(StatusCode::kUnimplemented, reason, message);
    case -32603:  // internal error
      return WithReason(StatusCode::kInternal, reason, message);
    default:
      return WithReason(StatusCode::kUnknown, reason, message);
  }
}

// The canonical code an HTTP status stands for when the body does not say.
absl::StatusCode CodeOfHttpStatus(int status) {
  using absl::StatusCode;
  switch (status) {
    case 400:
      return StatusCode::kInvalidArgument;
    case 401:
      return StatusCode::kUnauthenticated;
    case 403:
      return StatusCode::kPermissionDenied;
    case 404:
      return StatusCode::kNotFound;
    case 405:
    case 501:
      return StatusCode::kUnimplemented;
    case 408:
    case 504:
      return StatusCode::kDeadlineExceeded;
    case 409:
      return StatusCode::kAborted;
    case 429:
      return StatusCode::kResourceExhausted;
    case 499:
      return StatusCode::kCancelled;
    case 500:
      return StatusCode::kInternal;
    case 502:
    case 503:
      return StatusCode::kUnavailable;
    default:
      return status >= 500 ? StatusCode::kUnknown : StatusCode::kFailedPrecondition;
  }
}

// A google.rpc.Status JSON object ({"code", "status", "message", "details"}) as a status.
// TODO(issue 15): a2a_protocol/json_binding.h's conversion once it lands on main.
absl::Status RpcStatusJson(int http_status, const Struct& error) {
  absl::StatusCode code = CodeOfHttpStatus(http_status);
  const Value* name = Field(error, "status");
  if (name != nullptr && !name->string_value().empty()) {
    for (int c = 1; c <= 16; ++c) {
      if (absl::StatusCodeToString(static_cast<absl::StatusCode>(c)) == name->string_value()) {
        code = static_cast<absl::StatusCode>(c);
      }
    }
  }
  const Value* message = Field(error, "message");
  return WithReason(code, DetailsReason(Field(error, "details")),
                    absl::StrCat("agent error (HTTP ", http_status,
                                 "): ", message != nullptr ? message->string_value() : ""));
}

// Percent-encodes one path segment (an id or a tenant): everything but RFC 3986's unreserved.
std::string EncodeSegment(absl::string_view segment) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const unsigned char c : segment) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

int64_t NextRequestId() {
  static std::atomic<int64_t> next{1};
  return next.fetch_add(1);
}

std::string JsonRpcRequest(absl::string_view method, const google::protobuf::Message& params) {
  return absl::StrCat(R"({"jsonrpc":"2.0","id":)", NextRequestId(), R"(,"method":")", method,
                      R"(","params":)", ToJson(params), "}");
}

// One POST of an agent call: where, what, and how its answer reads.
struct Exchange {
  std::string path;
  std::string body;
  std::string content_type;
  std::string accept;
};

// One delivery over JSON-RPC or HTTP+JSON. A thread of the call's own POSTs the request and
// reads the answer as it arrives (httplib's client blocks), converting each event and queueing
// it for the gateway; at most kMaxBurstEvents wait, then the thread stops reading until the
// gateway takes them. Cancel stops httplib's client; the call's deadline is kept by Take (and
// by httplib's read timeout while the thread reads).
class HttpAgentCall final : public AgentCall {
 public:
  HttpAgentCall(HttpAgentTransport::Binding binding, std::string base, Exchange stream,
                Exchange unary, absl::Time deadline, size_t max_event_bytes,
                absl::Duration connect_timeout)
      : binding_(binding),
        base_(std::move(base)),
        stream_(std::move(stream)),
        unary_(std::move(unary)),
        deadline_(deadline),
        max_event_bytes_(max_event_bytes),
        connect_timeout_(connect_timeout) {}

  ~HttpAgentCall() override {
    if (thread_.joinable()) {
      Cancel();
      (void)Finish();
    }
  }

  void Start() {
    thread_ = std::thread([this] { Run(); });
  }

  size_t Take(std::vector<a2apb::StreamResponse>* out, absl::Time deadline) override {
    bool expired = false;
    size_t taken;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !queue_.empty() || done_ || cancelled_;
      };
      mu_.AwaitWithDeadline(absl::Condition(&ready), std::min(deadline, deadline_));
      taken = TakeBurst(&queue_, out);
      if (taken == 0 && !done_ && !cancelled_ && absl::Now() >= deadline_) {
        expired_ = true;
        expired = true;
      }
    }
    if (expired) Cancel();
    return taken;
  }

  void Cancel() override {
    {
      absl::MutexLock lock(&mu_);
      cancelled_ = true;
    }
    StopClient();
  }

  absl::Status Finish() override {
    while (!ended_.WaitForNotificationWithTimeout(kStopRetry)) {
      bool cancelled;
      {
        absl::MutexLock lock(&mu_);
        cancelled = cancelled_;
      }
      if (cancelled) StopClient();
    }
    if (thread_.joinable()) thread_.join();
    absl::MutexLock lock(&mu_);
    if (expired_) {
      return absl::DeadlineExceededError(
          absl::StrCat("no end of the agent's answer by the deadline (", base_, stream_.path, ")"));
    }
    return status_;
  }

 private:
  void Run() {
    absl::Status status = Post(stream_, /*streaming=*/true);
    bool unary;
    {
      absl::MutexLock lock(&mu_);
      unary = status.code() == absl::StatusCode::kUnimplemented && !got_any_ && !cancelled_;
    }
    // An agent without streaming: the unary SendMessage, whose answer is the one event.
    if (unary) status = Post(unary_, /*streaming=*/false);
    {
      absl::MutexLock lock(&mu_);
      status_ = std::move(status);
      done_ = true;
    }
    ended_.Notify();
  }

  // POSTs `exchange` and queues the events of its answer. OK when the answer ended cleanly.
  absl::Status Post(const Exchange& exchange, bool streaming) {
    const std::string what = absl::StrCat("POST ", base_, exchange.path);
    httplib::Client client(base_);
    const absl::Duration left = std::max(deadline_ - absl::Now(), absl::Milliseconds(1));
    common::SetHttpTimeouts(client, left);
    client.set_connection_timeout(absl::ToChronoMicroseconds(
        std::max(std::min(left, connect_timeout_), absl::Milliseconds(1))));
    client.set_follow_location(false);
    {
      absl::MutexLock lock(&client_mu_);
      client_ = &client;
    }
    struct Unregister {
      HttpAgentCall* call;
      ~Unregister() {
        absl::MutexLock lock(&call->client_mu_);
        call->client_ = nullptr;
      }
    } unregister{this};
    if (IsCancelled()) return absl::CancelledError("the delivery was cancelled");

    httplib::Request request;
    request.method = "POST";
    request.path = exchange.path;
    request.body = exchange.body;
    request.set_header("Content-Type", exchange.content_type);
    request.set_header("Accept", exchange.accept);
    request.set_header("A2A-Version", a2a_protocol::kVersion);
    int http_status = 0;
    bool sse = false;
    std::string body;
    SseParser parser(max_event_bytes_);
    absl::Status stop;  // why reading stopped early, when it did
    const SseParser::OnEvent on_event = [&](std::string data) {
      absl::StatusOr<a2apb::StreamResponse> event = Decode(data);
      if (!event.ok()) {
        stop = event.status();
        return false;
      }
      return Push(*std::move(event));
    };
    request.response_handler = [&](const httplib::Response& response) {
      http_status = response.status;
      sse = streaming && http_status >= 200 && http_status < 300 &&
            absl::StartsWithIgnoreCase(response.get_header_value("Content-Type"),
                                       "text/event-stream");
      return !IsCancelled();
    };
    request.content_receiver = [&](const char* data, size_t length, uint64_t, uint64_t) {
      if (IsCancelled()) return false;
      if (sse) {
        if (parser.Feed(absl::string_view(data, length), on_event)) return true;
        if (stop.ok() && !parser.status().ok()) {
          stop = a2a_protocol::InvalidAgentResponse(
              absl::StrCat(what, ": ", parser.status().message()));
        }
        return false;
      }
      if (body.size() + length > max_event_bytes_) {
        stop = a2a_protocol::InvalidAgentResponse(
            absl::StrCat(what, ": the answer is longer than ", max_event_bytes_, " bytes"));
        return false;
      }
      body.append(data, length);
      return true;
    };
    httplib::Response response;
    httplib::Error error = httplib::Error::Success;
    const bool sent = client.send(request, response, error);
    if (IsCancelled()) return absl::CancelledError("the delivery was cancelled");
    if (!stop.ok()) return stop;
    if (!sent) {
      if (absl::Now() >= deadline_) {
        return absl::DeadlineExceededError(absl::StrCat(what, ": no answer by the deadline"));
      }
      return absl::UnavailableError(absl::StrCat(what, ": ", httplib::to_string(error)));
    }
    if (http_status < 200 || http_status >= 300) return DecodeHttpError(http_status, body);
    if (sse) {
      if (parser.Finish(on_event)) return absl::OkStatus();
      if (!stop.ok()) return stop;
      if (IsCancelled()) return absl::CancelledError("the delivery was cancelled");
      return a2a_protocol::InvalidAgentResponse(
          absl::StrCat(what, ": ", parser.status().message()));
    }
    // One plain JSON answer instead of a stream: the one event.
    absl::StatusOr<a2apb::StreamResponse> event = Decode(body);
    if (!event.ok()) return event.status();
    if (!Push(*std::move(event))) return absl::CancelledError("the delivery was cancelled");
    return absl::OkStatus();
  }

  absl::StatusOr<a2apb::StreamResponse> Decode(absl::string_view json) const {
    return binding_ == HttpAgentTransport::Binding::kJsonRpc ? DecodeJsonRpcAnswer(json)
                                                             : DecodeRestAnswer(json);
  }

  // Queues `event`, waiting while kMaxBurstEvents wait. False when the call was cancelled.
  bool Push(a2apb::StreamResponse event) {
    absl::MutexLock lock(&mu_);
    auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return queue_.size() < kMaxBurstEvents || cancelled_;
    };
    mu_.Await(absl::Condition(&room));
    if (cancelled_) return false;
    got_any_ = true;
    queue_.push_back(std::move(event));
    return true;
  }

  bool IsCancelled() {
    absl::MutexLock lock(&mu_);
    return cancelled_;
  }

  // httplib's way to make a blocked connect or read of another thread fail.
  void StopClient() {
    absl::MutexLock lock(&client_mu_);
    if (client_ != nullptr) client_->stop();
  }

  const HttpAgentTransport::Binding binding_;
  const std::string base_;
  const Exchange stream_;
  const Exchange unary_;
  const absl::Time deadline_;
  const size_t max_event_bytes_;
  const absl::Duration connect_timeout_;
  std::thread thread_;
  absl::Notification ended_;  // Run has set status_ and done_

  absl::Mutex mu_;
  std::deque<a2apb::StreamResponse> queue_ ABSL_GUARDED_BY(mu_);
  bool got_any_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool expired_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);

  // Never held while taking mu_, so that stop() may wait for the reading thread.
  absl::Mutex client_mu_;
  httplib::Client* client_ ABSL_GUARDED_BY(client_mu_) = nullptr;
};

}  // namespace

absl::StatusOr<a2apb::StreamResponse> DecodeJsonRpcAnswer(absl::string_view json) {
  std::optional<Value> value = ParseValue(json);
  if (!value.has_value() || !value->has_struct_value()) {
    return a2a_protocol::InvalidAgentResponse(
        absl::StrCat("the agent's answer is not a JSON-RPC response: ", Shorten(json)));
  }
  const Struct& response = value->struct_value();
  if (const Value* error = Field(response, "error"); error != nullptr) {
    if (!error->has_struct_value()) {
      return a2a_protocol::InvalidAgentResponse(
          absl::StrCat("the agent's JSON-RPC error is not an object: ", Shorten(json)));
    }
    return JsonRpcErrorStatus(error->struct_value());
  }
  const Value* result = Field(response, "result");
  if (result == nullptr || !result->has_struct_value()) {
    return a2a_protocol::InvalidAgentResponse(
        absl::StrCat("the agent's JSON-RPC response has no result object: ", Shorten(json)));
  }
  a2apb::StreamResponse event;
  absl::Status read = FromValue(*result, &event, "JSON-RPC result");
  if (!read.ok()) return read;
  return event;
}

absl::StatusOr<a2apb::StreamResponse> DecodeRestAnswer(absl::string_view json) {
  std::optional<Value> value = ParseValue(json);
  if (!value.has_value() || !value->has_struct_value()) {
    return a2a_protocol::InvalidAgentResponse(
        absl::StrCat("the agent's answer is not a JSON object: ", Shorten(json)));
  }
  if (const Value* error = Field(value->struct_value(), "error");
      error != nullptr && error->has_struct_value()) {
    const Value* code = Field(error->struct_value(), "code");
    return RpcStatusJson(code != nullptr ? static_cast<int>(code->number_value()) : 500,
                         error->struct_value());
  }
  a2apb::StreamResponse event;
  absl::Status read = FromValue(*value, &event, "answer");
  if (!read.ok()) return read;
  return event;
}

absl::Status DecodeHttpError(int http_status, absl::string_view body) {
  std::optional<Value> value = ParseValue(body);
  if (value.has_value() && value->has_struct_value()) {
    const Value* error = Field(value->struct_value(), "error");
    if (error != nullptr && error->has_struct_value()) {
      // A JSON-RPC error response (with "jsonrpc") or a google.rpc.Status body.
      if (Field(value->struct_value(), "jsonrpc") != nullptr) {
        return JsonRpcErrorStatus(error->struct_value());
      }
      return RpcStatusJson(http_status, error->struct_value());
    }
  }
  return absl::Status(
      CodeOfHttpStatus(http_status),
      absl::StrCat("agent answered HTTP ", http_status, body.empty() ? "" : ": ", Shorten(body)));
}

HttpAgentTransport::HttpAgentTransport(Binding binding, common::HttpUrl url, std::string tenant,
                                       size_t max_event_bytes, absl::Duration connect_timeout)
    : binding_(binding),
      url_(std::move(url)),
      tenant_(std::move(tenant)),
      max_event_bytes_(max_event_bytes),
      connect_timeout_(connect_timeout) {}

namespace {

// The REST path under the interface URL: <path>[/<tenant>]/<rest>.
std::string RestPath(const common::HttpUrl& url, const std::string& tenant,
                     absl::string_view rest) {
  absl::string_view base = url.path;
  absl::ConsumeSuffix(&base, "/");
  return absl::StrCat(base, tenant.empty() ? "" : "/", EncodeSegment(tenant), "/", rest);
}

std::string Base(const common::HttpUrl& url) {
  return absl::StrCat(url.scheme, "://", url.HostPort());
}

}  // namespace

std::unique_ptr<AgentCall> HttpAgentTransport::SendStreaming(
    const a2apb::SendMessageRequest& request, absl::Time deadline) {
  a2apb::SendMessageRequest sent = request;
  if (!tenant_.empty()) sent.set_tenant(tenant_);
  Exchange stream;
  Exchange unary;
  if (binding_ == Binding::kJsonRpc) {
    const std::string path = url_.path.empty() ? "/" : url_.path;
    stream = {path, JsonRpcRequest("SendStreamingMessage", sent), kJsonRpcContentType,
              "text/event-stream"};
    unary = {path, JsonRpcRequest("SendMessage", sent), kJsonRpcContentType, kJsonRpcContentType};
  } else {
    const std::string body = ToJson(sent);
    stream = {RestPath(url_, tenant_, "message:stream"), body, kRestContentType,
              "text/event-stream"};
    unary = {RestPath(url_, tenant_, "message:send"), body, kRestContentType, kRestContentType};
  }
  auto call =
      std::make_unique<HttpAgentCall>(binding_, Base(url_), std::move(stream), std::move(unary),
                                      deadline, max_event_bytes_, connect_timeout_);
  call->Start();
  return call;
}

absl::StatusOr<a2apb::Task> HttpAgentTransport::CancelTask(const a2apb::CancelTaskRequest& request,
                                                           absl::Time deadline) {
  a2apb::CancelTaskRequest sent = request;
  if (!tenant_.empty()) sent.set_tenant(tenant_);
  std::string path;
  std::string body;
  std::string content_type;
  if (binding_ == Binding::kJsonRpc) {
    path = url_.path.empty() ? "/" : url_.path;
    body = JsonRpcRequest("CancelTask", sent);
    content_type = kJsonRpcContentType;
  } else {
    path = RestPath(url_, tenant_, absl::StrCat("tasks/", EncodeSegment(sent.id()), ":cancel"));
    body = ToJson(sent);
    content_type = kRestContentType;
  }
  const std::string what = absl::StrCat("POST ", Base(url_), path);
  httplib::Client client(Base(url_));
  client.set_follow_location(false);
  httplib::Headers headers = {{"Accept", content_type}, {"A2A-Version", a2a_protocol::kVersion}};
  bool expired = false;
  const absl::Duration timeout = std::max(deadline - absl::Now(), absl::Milliseconds(1));
  httplib::Result res = common::CallWithDeadline(
      client, timeout, [&] { return client.Post(path, headers, body, content_type); }, &expired);
  if (!res) {
    return absl::UnavailableError(
        expired ? absl::StrCat(what, ": no answer within ", absl::FormatDuration(timeout))
                : absl::StrCat(what, ": ", httplib::to_string(res.error())));
  }
  if (res->status < 200 || res->status >= 300) return DecodeHttpError(res->status, res->body);
  std::optional<Value> value = ParseValue(res->body);
  if (!value.has_value() || !value->has_struct_value()) {
    return a2a_protocol::InvalidAgentResponse(
        absl::StrCat(what, ": the answer is not a JSON object: ", Shorten(res->body)));
  }
  const Value* task = &*value;
  if (binding_ == Binding::kJsonRpc) {
    if (const Value* error = Field(value->struct_value(), "error");
        error != nullptr && error->has_struct_value()) {
      return JsonRpcErrorStatus(error->struct_value());
    }
    task = Field(value->struct_value(), "result");
    if (task == nullptr || !task->has_struct_value()) {
      return a2a_protocol::InvalidAgentResponse(
          absl::StrCat(what, ": the JSON-RPC response has no result object"));
    }
  }
  a2apb::Task reply;
  absl::Status read = FromValue(*task, &reply, "CancelTask answer");
  if (!read.ok()) return read;
  return reply;
}

}  // namespace coordinator
