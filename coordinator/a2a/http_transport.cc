#include "coordinator/a2a/http_transport.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <thread>
#include <utility>
#include <vector>

#include "a2a_protocol/errors.h"
#include "a2a_protocol/json_binding.h"
#include "a2a_protocol/v03_json.h"
#include "a2a_protocol/v03_proto.h"
#include "a2a_protocol/version.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/notification.h"
#include "common/http_deadline.h"
#include "common/thread_name.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "httplib.h"

namespace coordinator {
namespace {

using a2a_protocol::kA2AJsonContentType;
using a2a_protocol::kEventStreamContentType;
using a2a_protocol::kJsonContentType;
using a2a_protocol::ToJson;

// How long Finish waits between two attempts to stop a cancelled call's client: httplib drops
// a stop() that comes before the call has its socket.
constexpr absl::Duration kStopRetry = absl::Milliseconds(100);

// Whether an HTTP call that got no response failed for want of a connection (nothing listens
// at the agent's address), rather than on a connection the agent had taken.
bool NothingListened(httplib::Error error) {
  return error == httplib::Error::Connection || error == httplib::Error::ConnectionTimeout;
}

std::string Shorten(absl::string_view text) {
  constexpr size_t kMax = 200;
  return text.size() <= kMax ? std::string(text) : absl::StrCat(text.substr(0, kMax), "...");
}

// Reads ProtoJSON `json` (unknown fields ignored) into `message`: what the agent sent that does
// not parse is an INVALID_AGENT_RESPONSE.
absl::Status Read(absl::string_view json, google::protobuf::Message* message,
                  absl::string_view what) {
  absl::Status read = a2a_protocol::FromJson(json, message);
  if (read.ok()) return read;
  return a2a_protocol::InvalidAgentResponse(
      absl::StrCat("the agent's ", what, " is ", read.message(), ": ", Shorten(json)));
}

// An INVALID_AGENT_RESPONSE from a2a_protocol's readers with the start of what the agent sent;
// the agent's own errors as they are.
absl::Status WithSnippet(const absl::Status& status, absl::string_view json) {
  if (a2a_protocol::Reason(status) != a2a_protocol::kInvalidAgentResponse) return status;
  return a2a_protocol::InvalidAgentResponse(absl::StrCat(status.message(), ": ", Shorten(json)));
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

std::string JsonRpcCall(absl::string_view method, absl::string_view params_json) {
  return absl::StrCat(R"({"jsonrpc":"2.0","id":)", NextRequestId(), R"(,"method":")", method,
                      R"(","params":)", params_json, "}");
}

std::string JsonRpcCall(absl::string_view method, const google::protobuf::Message& params) {
  return JsonRpcCall(method, ToJson(params));
}

// A call of 0.3's JSON-RPC method `method` made of the 1.0 request `params`.
std::string JsonRpcV03Call(a2a_protocol::v03::Method method,
                           const google::protobuf::Message& params) {
  return JsonRpcCall(a2a_protocol::v03::MethodName(method),
                     a2a_protocol::v03::ParamsJson(method, params));
}

// One 0.3 JSON-RPC response (an event's data, or a plain body): its "result", read as 0.3 JSON.
absl::StatusOr<a2apb::StreamResponse> DecodeJsonRpcV03Answer(absl::string_view json) {
  absl::StatusOr<std::string> result = a2a_protocol::JsonRpcResultOf(json);
  if (!result.ok()) return WithSnippet(result.status(), json);
  absl::StatusOr<a2apb::StreamResponse> event = a2a_protocol::v03::EventFromJson(*result);
  if (!event.ok()) {
    return a2a_protocol::InvalidAgentResponse(absl::StrCat(
        "the agent's A2A 0.3 JSON-RPC result: ", event.status().message(), ": ", Shorten(json)));
  }
  return event;
}

bool IsJsonRpc(HttpAgentTransport::Binding binding) {
  return binding == HttpAgentTransport::Binding::kJsonRpc ||
         binding == HttpAgentTransport::Binding::kJsonRpcV03;
}

bool IsV03(HttpAgentTransport::Binding binding) {
  return binding == HttpAgentTransport::Binding::kJsonRpcV03 ||
         binding == HttpAgentTransport::Binding::kRestV03;
}

// One 0.3 HTTP+JSON answer (an event's data, or a plain body): the ProtoJSON of a 0.3
// StreamResponse (a SendMessageResponse reads the same), or an error object {code, message}.
absl::StatusOr<a2apb::StreamResponse> DecodeRestV03Answer(absl::string_view json) {
  google::protobuf::Struct object;
  if (!a2a_protocol::FromJson(json, &object).ok()) {
    return a2a_protocol::InvalidAgentResponse(
        absl::StrCat("the agent's answer is not a JSON object: ", Shorten(json)));
  }
  if (const auto code = object.fields().find("code"); code != object.fields().end() &&
                                                      code->second.has_number_value() &&
                                                      object.fields().count("message") > 0) {
    return a2a_protocol::StatusFromJsonRpcError(json);  // an error event
  }
  google::protobuf::util::JsonParseOptions lenient;
  lenient.ignore_unknown_fields = true;
  ::a2a::v1::StreamResponse event;
  if (!google::protobuf::util::JsonStringToMessage(std::string(json), &event, lenient).ok()) {
    return a2a_protocol::InvalidAgentResponse(
        absl::StrCat("the agent's answer is not an A2A 0.3 StreamResponse: ", Shorten(json)));
  }
  return a2a_protocol::v03::FromProto(event);
}

// A 0.3 HTTP+JSON error answer: its {code, message} body when it has one (the A2A JSON-RPC code,
// as one 0.3 SDK sends it), else its HTTP status read as 0.3 servers use them.
absl::Status DecodeRestV03Error(int http_status, absl::string_view body) {
  google::protobuf::Struct object;
  if (a2a_protocol::FromJson(body, &object).ok()) {
    const auto code = object.fields().find("code");
    if (code != object.fields().end() && code->second.has_number_value() &&
        code->second.number_value() < 0) {
      return a2a_protocol::StatusFromJsonRpcError(body);
    }
  }
  const std::string said =
      absl::StrCat("HTTP ", http_status, body.empty() ? "" : ": ", Shorten(body));
  switch (http_status) {
    case 404:
      return a2a_protocol::TaskNotFound(said);
    case 409:
      return a2a_protocol::TaskNotCancelable(said);
    case 501:
      return a2a_protocol::UnsupportedOperation(said);
    default:
      return DecodeHttpError(http_status, body);
  }
}

// One POST of an agent call: where, what, and how its answer reads.
struct Exchange {
  std::string path;
  std::string body;
  std::string content_type;
  std::string accept;
  bool get = false;  // a GET (a 0.3 subscription) rather than a POST
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
    thread_ = std::thread([this] {
      common::SetThreadName("a2a-http-call");
      Run();
    });
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
      // A 0.3 agent without streaming answers UnsupportedOperation (both 0.3 SDKs check their
      // card's capability) rather than "method not found".
      const bool unsupported =
          status.code() == absl::StatusCode::kUnimplemented ||
          (IsV03(binding_) && a2a_protocol::Reason(status) == a2a_protocol::kUnsupportedOperation);
      unary = unsupported && !got_any_ && !cancelled_;
    }
    // An agent without streaming: the unary SendMessage, whose answer is the one event (a
    // subscription has none).
    if (unary && !unary_.path.empty()) status = Post(unary_, /*streaming=*/false);
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
    request.method = exchange.get ? "GET" : "POST";
    request.path = exchange.path;
    request.body = exchange.body;
    request.set_header("Content-Type", exchange.content_type);
    request.set_header("Accept", exchange.accept);
    // A 0.3 client sends no version (0.3 has none; an A2A 1.x server reads its absence as 0.3).
    if (!IsV03(binding_)) request.set_header("A2A-Version", a2a_protocol::kVersion);
    int http_status = 0;
    bool sse = false;
    std::string body;
    a2a_protocol::SseParser parser(max_event_bytes_);
    absl::Status stop;  // why reading stopped early, when it did
    auto on_event = [&](std::string data) -> absl::Status {
      absl::StatusOr<a2apb::StreamResponse> event = Decode(data);
      if (!event.ok()) return event.status();
      if (!Push(*std::move(event))) return absl::CancelledError("the delivery was cancelled");
      return absl::OkStatus();
    };
    request.response_handler = [&](const httplib::Response& response) {
      http_status = response.status;
      sse = streaming && http_status >= 200 && http_status < 300 &&
            absl::StartsWithIgnoreCase(response.get_header_value("Content-Type"),
                                       kEventStreamContentType);
      return !IsCancelled();
    };
    request.content_receiver = [&](const char* data, size_t length, uint64_t, uint64_t) {
      if (IsCancelled()) return false;
      if (sse) {
        stop = parser.Feed(absl::string_view(data, length), on_event);
        if (absl::IsResourceExhausted(stop)) {  // an event over max_event_bytes
          stop = a2a_protocol::InvalidAgentResponse(absl::StrCat(what, ": ", stop.message()));
        }
        return stop.ok();
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
      absl::Status unavailable =
          absl::UnavailableError(absl::StrCat(what, ": ", httplib::to_string(error)));
      return NothingListened(error) ? NotListening(std::move(unavailable)) : unavailable;
    }
    if (http_status < 200 || http_status >= 300) {
      return binding_ == HttpAgentTransport::Binding::kRestV03
                 ? DecodeRestV03Error(http_status, body)
                 : DecodeHttpError(http_status, body);
    }
    if (sse) return absl::OkStatus();  // an event left without its blank line is dropped
    // One plain JSON answer instead of a stream: the one event.
    absl::StatusOr<a2apb::StreamResponse> event = Decode(body);
    if (!event.ok()) return event.status();
    if (!Push(*std::move(event))) return absl::CancelledError("the delivery was cancelled");
    return absl::OkStatus();
  }

  absl::StatusOr<a2apb::StreamResponse> Decode(absl::string_view json) const {
    switch (binding_) {
      case HttpAgentTransport::Binding::kJsonRpc:
        return DecodeJsonRpcAnswer(json);
      case HttpAgentTransport::Binding::kJsonRpcV03:
        return DecodeJsonRpcV03Answer(json);
      case HttpAgentTransport::Binding::kRestV03:
        return DecodeRestV03Answer(json);
      case HttpAgentTransport::Binding::kHttpJson:
        break;
    }
    return DecodeRestAnswer(json);
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
  absl::StatusOr<std::string> result = a2a_protocol::JsonRpcResultOf(json);
  if (!result.ok()) return WithSnippet(result.status(), json);
  a2apb::StreamResponse event;
  absl::Status read = Read(*result, &event, "JSON-RPC result");
  if (!read.ok()) return read;
  return event;
}

absl::StatusOr<a2apb::StreamResponse> DecodeRestAnswer(absl::string_view json) {
  google::protobuf::Struct object;
  if (!a2a_protocol::FromJson(json, &object).ok()) {
    return a2a_protocol::InvalidAgentResponse(
        absl::StrCat("the agent's answer is not a JSON object: ", Shorten(json)));
  }
  if (auto error = object.fields().find("error");
      error != object.fields().end() && error->second.has_struct_value()) {
    // An error in place of an event: the HTTP status it names (500 when it names none).
    const auto& fields = error->second.struct_value().fields();
    const auto code = fields.find("code");
    return a2a_protocol::StatusFromHttpError(
        code != fields.end() && code->second.number_value() >= 400
            ? static_cast<int>(code->second.number_value())
            : 500,
        json);
  }
  a2apb::StreamResponse event;
  absl::Status read = Read(json, &event, "answer");
  if (!read.ok()) return read;
  return event;
}

absl::Status DecodeHttpError(int http_status, absl::string_view body) {
  google::protobuf::Struct object;
  if (a2a_protocol::FromJson(body, &object).ok() && object.fields().count("jsonrpc") > 0 &&
      object.fields().count("error") > 0) {
    return a2a_protocol::JsonRpcResultOf(body).status();  // a JSON-RPC error, sent as HTTP error
  }
  absl::Status status = a2a_protocol::StatusFromHttpError(http_status, body);
  if (status.message() == absl::StrCat("HTTP ", http_status) && !body.empty()) {
    // No google.rpc.Status body: say what came instead.
    return absl::Status(status.code(), absl::StrCat(status.message(), ": ", Shorten(body)));
  }
  return status;
}

HttpAgentTransport::HttpAgentTransport(Binding binding, common::HttpUrl url, std::string tenant,
                                       size_t max_event_bytes, absl::Duration connect_timeout,
                                       bool streams)
    : binding_(binding),
      url_(std::move(url)),
      tenant_(std::move(tenant)),
      max_event_bytes_(max_event_bytes),
      connect_timeout_(connect_timeout),
      streams_(streams) {}

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
    stream = {path, JsonRpcCall("SendStreamingMessage", sent), kJsonContentType,
              kEventStreamContentType};
    unary = {path, JsonRpcCall("SendMessage", sent), kJsonContentType, kJsonContentType};
  } else if (binding_ == Binding::kJsonRpcV03) {
    using a2a_protocol::v03::Method;
    const std::string path = url_.path.empty() ? "/" : url_.path;
    stream = {path, JsonRpcV03Call(Method::kMessageStream, sent), kJsonContentType,
              kEventStreamContentType};
    unary = {path, JsonRpcV03Call(Method::kMessageSend, sent), kJsonContentType, kJsonContentType};
  } else if (binding_ == Binding::kRestV03) {
    const std::string body = ToJson(a2a_protocol::v03::ToProto(sent));
    stream = {RestPath(url_, "", "v1/message:stream"), body, kJsonContentType,
              kEventStreamContentType};
    unary = {RestPath(url_, "", "v1/message:send"), body, kJsonContentType, kJsonContentType};
  } else {
    const std::string body = ToJson(sent);
    stream = {RestPath(url_, tenant_, "message:stream"), body, kA2AJsonContentType,
              kEventStreamContentType};
    unary = {RestPath(url_, tenant_, "message:send"), body, kA2AJsonContentType,
             kA2AJsonContentType};
  }
  if (!streams_) {
    // An agent whose card says it does not stream is sent the unary call from the start.
    stream = std::move(unary);
    unary = Exchange{};
  }
  auto call =
      std::make_unique<HttpAgentCall>(binding_, Base(url_), std::move(stream), std::move(unary),
                                      deadline, max_event_bytes_, connect_timeout_);
  call->Start();
  return call;
}

std::unique_ptr<AgentCall> HttpAgentTransport::Subscribe(
    const a2apb::SubscribeToTaskRequest& request, absl::Time deadline) {
  a2apb::SubscribeToTaskRequest sent = request;
  if (!tenant_.empty()) sent.set_tenant(tenant_);
  Exchange stream;
  if (binding_ == Binding::kJsonRpc) {
    stream = {url_.path.empty() ? "/" : url_.path, JsonRpcCall("SubscribeToTask", sent),
              kJsonContentType, kEventStreamContentType};
  } else if (binding_ == Binding::kJsonRpcV03) {
    stream = {url_.path.empty() ? "/" : url_.path,
              JsonRpcV03Call(a2a_protocol::v03::Method::kTasksResubscribe, sent), kJsonContentType,
              kEventStreamContentType};
  } else if (binding_ == Binding::kRestV03) {
    // GET: one 0.3 server takes nothing else.
    stream = {RestPath(url_, "", absl::StrCat("v1/tasks/", EncodeSegment(sent.id()), ":subscribe")),
              "", kJsonContentType, kEventStreamContentType, /*get=*/true};
  } else {
    stream = {
        RestPath(url_, tenant_, absl::StrCat("tasks/", EncodeSegment(sent.id()), ":subscribe")), "",
        kA2AJsonContentType, kEventStreamContentType};
  }
  auto call = std::make_unique<HttpAgentCall>(binding_, Base(url_), std::move(stream), Exchange{},
                                              deadline, max_event_bytes_, connect_timeout_);
  call->Start();
  return call;
}

absl::StatusOr<a2apb::Task> HttpAgentTransport::CancelTask(const a2apb::CancelTaskRequest& request,
                                                           absl::Time deadline) {
  a2apb::CancelTaskRequest sent = request;
  if (!tenant_.empty()) sent.set_tenant(tenant_);
  if (IsJsonRpc(binding_)) return CallForTask("CancelTask", sent, "", deadline);
  if (binding_ == Binding::kRestV03) {
    ::a2a::v1::CancelTaskRequest cancel;
    cancel.set_name(absl::StrCat("tasks/", sent.id()));
    return CallForTask(
        "CancelTask", cancel,
        RestPath(url_, "", absl::StrCat("v1/tasks/", EncodeSegment(sent.id()), ":cancel")),
        deadline);
  }
  return CallForTask(
      "CancelTask", sent,
      RestPath(url_, tenant_, absl::StrCat("tasks/", EncodeSegment(sent.id()), ":cancel")),
      deadline);
}

absl::StatusOr<a2apb::Task> HttpAgentTransport::GetTask(const a2apb::GetTaskRequest& request,
                                                        absl::Time deadline) {
  a2apb::GetTaskRequest sent = request;
  if (!tenant_.empty()) sent.set_tenant(tenant_);
  if (IsJsonRpc(binding_)) return CallForTask("GetTask", sent, "", deadline);
  const bool v03 = binding_ == Binding::kRestV03;
  std::string path = RestPath(url_, v03 ? "" : tenant_,
                              absl::StrCat(v03 ? "v1/" : "", "tasks/", EncodeSegment(sent.id())));
  if (sent.has_history_length()) {
    // 0 means "all" to a 0.3 agent: the least it can be asked for is 1.
    absl::StrAppend(
        &path, "?historyLength=", v03 ? std::max(1, sent.history_length()) : sent.history_length());
  }
  return CallForTask("GetTask", sent, path, deadline, /*rest_get=*/true);
}

absl::StatusOr<a2apb::Task> HttpAgentTransport::CallForTask(
    absl::string_view method, const google::protobuf::Message& request,
    const std::string& rest_path, absl::Time deadline, bool rest_get) {
  std::string path;
  std::string body;
  std::string content_type;
  if (binding_ == Binding::kJsonRpc) {
    path = url_.path.empty() ? "/" : url_.path;
    body = JsonRpcCall(method, request);
    content_type = kJsonContentType;
  } else if (binding_ == Binding::kJsonRpcV03) {
    path = url_.path.empty() ? "/" : url_.path;
    body = JsonRpcV03Call(method == "GetTask" ? a2a_protocol::v03::Method::kTasksGet
                                              : a2a_protocol::v03::Method::kTasksCancel,
                          request);
    content_type = kJsonContentType;
  } else {
    path = rest_path;
    if (!rest_get) body = ToJson(request);
    content_type = binding_ == Binding::kRestV03 ? kJsonContentType : kA2AJsonContentType;
  }
  const bool get = !IsJsonRpc(binding_) && rest_get;
  const std::string what = absl::StrCat(get ? "GET " : "POST ", Base(url_), path);
  httplib::Client client(Base(url_));
  client.set_follow_location(false);
  httplib::Headers headers = {{"Accept", content_type}};
  if (!IsV03(binding_)) headers.emplace("A2A-Version", a2a_protocol::kVersion);
  bool expired = false;
  const absl::Duration timeout = std::max(deadline - absl::Now(), absl::Milliseconds(1));
  httplib::Result res = common::CallWithDeadline(
      client, timeout,
      [&] {
        return get ? client.Get(path, headers) : client.Post(path, headers, body, content_type);
      },
      &expired);
  if (!res) {
    if (expired) {
      return absl::UnavailableError(
          absl::StrCat(what, ": no answer within ", absl::FormatDuration(timeout)));
    }
    absl::Status unavailable =
        absl::UnavailableError(absl::StrCat(what, ": ", httplib::to_string(res.error())));
    return NothingListened(res.error()) ? NotListening(std::move(unavailable)) : unavailable;
  }
  if (res->status < 200 || res->status >= 300) {
    return binding_ == Binding::kRestV03 ? DecodeRestV03Error(res->status, res->body)
                                         : DecodeHttpError(res->status, res->body);
  }
  if (binding_ == Binding::kRestV03) {
    google::protobuf::util::JsonParseOptions lenient;
    lenient.ignore_unknown_fields = true;
    ::a2a::v1::Task task;
    if (!google::protobuf::util::JsonStringToMessage(res->body, &task, lenient).ok()) {
      return a2a_protocol::InvalidAgentResponse(absl::StrCat(
          "the agent's ", method, " answer is not an A2A 0.3 Task: ", Shorten(res->body)));
    }
    return a2a_protocol::v03::FromProto(task);
  }
  if (binding_ == Binding::kJsonRpcV03) {
    absl::StatusOr<a2apb::StreamResponse> event = DecodeJsonRpcV03Answer(res->body);
    if (!event.ok()) return event.status();
    if (!event->has_task()) {
      return a2a_protocol::InvalidAgentResponse(
          absl::StrCat("the agent's ", method, " answer is not a task: ", Shorten(res->body)));
    }
    return std::move(*event->mutable_task());
  }
  std::string task_json = res->body;
  if (binding_ == Binding::kJsonRpc) {
    absl::StatusOr<std::string> result = a2a_protocol::JsonRpcResultOf(res->body);
    if (!result.ok()) return WithSnippet(result.status(), res->body);
    task_json = *std::move(result);
  }
  a2apb::Task reply;
  absl::Status read = Read(task_json, &reply, absl::StrCat(method, " answer"));
  if (!read.ok()) return read;
  return reply;
}

}  // namespace coordinator
