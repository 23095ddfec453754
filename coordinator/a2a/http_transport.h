// The JSON-RPC and HTTP+JSON bindings of the agent transport (agent_transport.h), on
// cpp-httplib's client. Both POST the request as Protobuf's JSON mapping with "A2A-Version: 1.0"
// and "Accept: text/event-stream", and read the answer as Server-Sent Events
// (a2a_protocol/json_binding.h) on a thread of the call's own, converting each event to a
// StreamResponse:
//  - JSONRPC (specification section 9): POST <url> {"jsonrpc":"2.0","id":..,
//    "method":"SendStreamingMessage","params":<SendMessageRequest>}; each event's data is a
//    JSON-RPC response whose "result" is a StreamResponse, or whose "error" ends the call.
//    CancelTask is the method "CancelTask".
//  - HTTP+JSON (section 11): POST <url>[/<tenant>]/message:stream with the SendMessageRequest;
//    each event's data is a StreamResponse; an error is an HTTP status with a google.rpc.Status
//    body {"error":{"code","status","message","details"}}. CancelTask is
//    POST <url>[/<tenant>]/tasks/<id>:cancel.
// An answer that is not an event stream but one JSON body (a SendMessageResponse, or a JSON-RPC
// response holding one) is read as one event. A body, event or error that does not parse ends
// the call with INVALID_AGENT_RESPONSE.
#ifndef COORDINATOR_A2A_HTTP_TRANSPORT_H_
#define COORDINATOR_A2A_HTTP_TRANSPORT_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/url_allow_list.h"
#include "coordinator/a2a/agent_transport.h"

namespace coordinator {

class HttpAgentTransport final : public AgentTransport {
 public:
  // kJsonRpcV03: A2A 0.3's JSON-RPC (docs/a2a-0.3.md section 7): `message/stream` (falling back
  // to a blocking `message/send` on "method not found" or UnsupportedOperation before any event),
  // `tasks/get`, `tasks/cancel`, `tasks/resubscribe`, with 0.3's JSON (a2a_protocol/v03_json.h)
  // and no A2A-Version header.
  // kRestV03: A2A 0.3's HTTP+JSON: POST <url>/v1/message:stream (falling back to :send likewise),
  // GET <url>/v1/tasks/{id}[?historyLength], POST <url>/v1/tasks/{id}:cancel, GET
  // <url>/v1/tasks/{id}:subscribe, with the ProtoJSON of 0.3's proto (a2a_protocol/v03_proto.h);
  // an error is read by its {code, message} body, else by its HTTP status as 0.3 servers use
  // them (404 task not found, 409 not cancelable, 501 unsupported).
  enum class Binding { kJsonRpc, kHttpJson, kJsonRpcV03, kRestV03 };

  // `url`: the agent's interface (parsed); `tenant` goes into every request ("" for none);
  // `max_event_bytes` and `connect_timeout` as AgentTransportOptions says; `streams`: whether to
  // send the streaming call first (false: the unary one only, for an agent whose card says it
  // does not stream).
  HttpAgentTransport(Binding binding, common::HttpUrl url, std::string tenant,
                     size_t max_event_bytes, absl::Duration connect_timeout, bool streams = true);

  std::unique_ptr<AgentCall> SendStreaming(const a2apb::SendMessageRequest& request,
                                           absl::Time deadline) override;
  absl::StatusOr<a2apb::Task> CancelTask(const a2apb::CancelTaskRequest& request,
                                         absl::Time deadline) override;
  absl::StatusOr<a2apb::Task> GetTask(const a2apb::GetTaskRequest& request,
                                      absl::Time deadline) override;
  std::unique_ptr<AgentCall> Subscribe(const a2apb::SubscribeToTaskRequest& request,
                                       absl::Time deadline) override;

 private:
  // One call answered by a Task: `method` over JSON-RPC, else a POST of `request` (a GET when
  // `rest_get`) to `rest_path`.
  absl::StatusOr<a2apb::Task> CallForTask(absl::string_view method,
                                          const google::protobuf::Message& request,
                                          const std::string& rest_path, absl::Time deadline,
                                          bool rest_get = false);

  const Binding binding_;
  const common::HttpUrl url_;
  const std::string tenant_;
  const size_t max_event_bytes_;
  const absl::Duration connect_timeout_;
  const bool streams_;
};

// --- The conversions, exposed for tests. ---

// One JSON-RPC response (an event's data, or a plain body): its "result" as a StreamResponse (a
// SendMessageResponse reads the same), or its "error" as the agent's status.
// INVALID_AGENT_RESPONSE when it is neither.
[[nodiscard]] absl::StatusOr<a2apb::StreamResponse> DecodeJsonRpcAnswer(absl::string_view json);
// One HTTP+JSON answer (an event's data, or a plain SendMessageResponse body) as a
// StreamResponse; an {"error": ...} object as the agent's status. INVALID_AGENT_RESPONSE when it
// is neither.
[[nodiscard]] absl::StatusOr<a2apb::StreamResponse> DecodeRestAnswer(absl::string_view json);
// The status an HTTP error answer stands for: its google.rpc.Status JSON body (or a JSON-RPC
// error response) when it has one, else the HTTP status's usual code.
[[nodiscard]] absl::Status DecodeHttpError(int http_status, absl::string_view body);

}  // namespace coordinator

#endif  // COORDINATOR_A2A_HTTP_TRANSPORT_H_
