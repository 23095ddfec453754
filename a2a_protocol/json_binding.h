// A2A errors and envelopes on the two JSON bindings, JSON-RPC 2.0 and HTTP+JSON (REST), both
// directions: the coordinator's HTTP bindings answer clients with them, and the gateway reads an
// agent's answers with them. Payloads are ProtoJSON (camelCase names, enums by name) through
// Protobuf's JSON mapping; an error's details are the status payloads as ProtoJSON Any objects,
// so the A2A reason (google.rpc.ErrorInfo, domain a2a-protocol.org) crosses every binding.
//
// Status codes, per the specification's mapping table (section 5.4):
//   A2A reason          JSON-RPC         HTTP
//   TASK_NOT_FOUND      -32001           404
//   TASK_NOT_CANCELABLE -32002 ...       400 (every FAILED_PRECONDITION A2A error)
//   (no reason)         INVALID_ARGUMENT -32602; INTERNAL, UNKNOWN, DATA_LOSS -32603;
//                       any other code -32000 with an ErrorInfo {reason: the code's name,
//                       domain: kStatusCodeDomain}, so a JSON-RPC client can still tell
//                       UNAUTHENTICATED from RESOURCE_EXHAUSTED.
// HTTP statuses follow google.rpc's mapping (NOT_FOUND 404, UNAUTHENTICATED 401, ...).
#ifndef A2A_PROTOCOL_JSON_BINDING_H_
#define A2A_PROTOCOL_JSON_BINDING_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace a2a_protocol {

// JSON-RPC 2.0's own error codes.
inline constexpr int kJsonRpcParseError = -32700;
inline constexpr int kJsonRpcInvalidRequest = -32600;
inline constexpr int kJsonRpcMethodNotFound = -32601;
inline constexpr int kJsonRpcInvalidParams = -32602;
inline constexpr int kJsonRpcInternalError = -32603;
// The implementation-defined server error (JSON-RPC leaves -32000..-32099 to servers; A2A takes
// -32001 and up): a status with no A2A reason and no JSON-RPC equivalent.
inline constexpr int kJsonRpcServerError = -32000;
// ErrorInfo domain naming a canonical status code on the JSON bindings.
inline constexpr char kStatusCodeDomain[] = "status.a2a-coordinator";

// Media types.
inline constexpr char kJsonContentType[] = "application/json";
inline constexpr char kA2AJsonContentType[] = "application/a2a+json";
inline constexpr char kEventStreamContentType[] = "text/event-stream";

// `message` as ProtoJSON (camelCase names, enums by name, defaults omitted).
std::string ToJson(const google::protobuf::Message& message);

// Parses ProtoJSON `json` into `message`, ignoring unknown fields (the specification asks
// receivers to). INVALID_ARGUMENT naming what Protobuf refused.
absl::Status FromJson(absl::string_view json, google::protobuf::Message* message);

// --- JSON-RPC 2.0.

// The JSON-RPC code of `status` (not OK), per the table above.
int JsonRpcCode(const absl::Status& status);

// The JSON-RPC error object of `status` (not OK): {"code", "message", "data": [details]}, with
// `code` when given (an error of the binding itself, such as kJsonRpcParseError), else
// JsonRpcCode(status).
std::string JsonRpcErrorObject(const absl::Status& status, std::optional<int> code = std::nullopt);

// A whole response: {"jsonrpc":"2.0","id":<id>,"result":<result_json>} and the same with
// "error". `id_json` is the request's id as JSON ("null" when it could not be read).
std::string JsonRpcResult(absl::string_view id_json, absl::string_view result_json);
std::string JsonRpcError(absl::string_view id_json, const absl::Status& status,
                         std::optional<int> code = std::nullopt);

// A JSON-RPC request as the binding reads it.
struct JsonRpcRequest {
  std::string id_json = "null";  // the id as JSON: a string, a number or null
  bool has_id = false;           // false: a notification
  std::string method;
  std::string params_json = "{}";  // the params object as JSON
};

// Reads a request body. The error carries its JSON-RPC code (`*code`): kJsonRpcParseError for
// text that is not JSON, kJsonRpcInvalidRequest for JSON that is not one request object (a batch
// array, "jsonrpc" other than "2.0", a missing or non-string method, an id that is neither a
// string, a number nor null), kJsonRpcInvalidParams for params that are not an object. `id_json`
// is set as soon as an id was read, so the error can answer it.
absl::StatusOr<JsonRpcRequest> ParseJsonRpcRequest(absl::string_view body, int* code,
                                                   std::string* id_json);

// A JSON-RPC error object read back as a status: an A2A code becomes that A2A error (its reason
// set), the JSON-RPC codes their canonical codes, kJsonRpcServerError the code its ErrorInfo
// names. As with a2a_protocol::FromGrpcStatus, only the A2A reason crosses: a peer's other
// details stay behind.
absl::Status StatusFromJsonRpcError(absl::string_view error_object_json);

// Reads one JSON-RPC response (`body`) answering a call: the "result" member as JSON, or the
// status of its "error" member. INVALID_ARGUMENT when it is neither.
absl::StatusOr<std::string> JsonRpcResultOf(absl::string_view body);

// --- HTTP+JSON.

// The HTTP status of `status` (200 when OK).
int HttpStatusCode(const absl::Status& status);

// The HTTP+JSON error body of `status` (not OK):
// {"error":{"code":<http status>,"status":"NOT_FOUND","message":...,"details":[...]}}, where
// <http status> is `http_status` when the answer is sent with another status than
// HttpStatusCode(status) (a 405 or 415; specification section 11.6: the code is the HTTP one).
std::string HttpErrorBody(const absl::Status& status, int http_status = 0);

// An HTTP+JSON error answer read back as a status: the code from its "status" name, else from
// the HTTP status; its message, and its A2A reason (only that, as above).
absl::Status StatusFromHttpError(int http_status, absl::string_view body);

// --- Server-Sent Events.

// One event carrying `data` (which holds no newline: compact JSON), of type `event` and with the
// id `id` (what a reader that reconnects sends back as Last-Event-ID) when given.
std::string SseEvent(absl::string_view data, absl::string_view event = "",
                     absl::string_view id = "");

// Splits an event stream as it arrives: Feed() it bytes, and it calls back with the data of
// each complete event (its "data:" lines joined by newlines). Comments, ids and event names are
// ignored. An event larger than `max_event_bytes` is an error: the stream must be abandoned.
class SseParser {
 public:
  explicit SseParser(size_t max_event_bytes) : max_event_bytes_(max_event_bytes) {}

  // Calls `on_data` for each event completed by `bytes`; stops at the first error it returns.
  template <typename OnData>
  absl::Status Feed(absl::string_view bytes, OnData&& on_data) {
    buffer_.append(bytes.data(), bytes.size());
    size_t start = 0;
    for (size_t end; (end = buffer_.find('\n', start)) != std::string::npos; start = end + 1) {
      absl::string_view line(buffer_.data() + start, end - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.empty()) {
        if (has_data_) {
          std::string data = std::move(data_);
          data_.clear();
          has_data_ = false;
          if (absl::Status status = on_data(std::move(data)); !status.ok()) return status;
        }
        continue;
      }
      if (absl::Status status = Line(line); !status.ok()) return status;
    }
    buffer_.erase(0, start);
    if (buffer_.size() + data_.size() > max_event_bytes_) return TooLarge();
    return absl::OkStatus();
  }

 private:
  absl::Status Line(absl::string_view line);
  absl::Status TooLarge() const;

  const size_t max_event_bytes_;
  std::string buffer_;  // bytes after the last complete line
  std::string data_;    // the data lines of the event being read
  bool has_data_ = false;
};

}  // namespace a2a_protocol

#endif  // A2A_PROTOCOL_JSON_BINDING_H_
