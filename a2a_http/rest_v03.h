// A2A 0.3's HTTP+JSON binding read into calls of the 0.3 gRPC service (a2a.v1.A2AService,
// service_v03.h), onto which the HTTP port transcodes it (docs/a2a-0.3.md section 4). Paths are
// those below `/v1` at an agent's base URL (`/agents/<name>/v1/...`) or at the root; bodies and
// answers are the ProtoJSON of the 0.3 proto (protos/a2a/v0_3/a2a.proto).
//
//   POST   /message:send, /message:stream               SendMessageRequest
//   GET    /tasks/{id}[?historyLength=n]                 GetTask
//   POST   /tasks/{id}:cancel                            CancelTask
//   GET    /tasks/{id}:subscribe (POST too)              TaskSubscription
//   POST   /tasks/{id}/pushNotificationConfigs           CreateTaskPushNotificationConfig: a
//          CreateTaskPushNotificationConfigRequest {parent, configId, config}, or the bare
//          TaskPushNotificationConfig {name, pushNotificationConfig} some clients send
//   GET    /tasks/{id}/pushNotificationConfigs           ListTaskPushNotificationConfig
//   GET    /tasks/{id}/pushNotificationConfigs/{cid}     GetTaskPushNotificationConfig
//   DELETE /tasks/{id}/pushNotificationConfigs/{cid}     DeleteTaskPushNotificationConfig
//   GET    /card                                         GetAgentCard
// Pure: no I/O, so every path is unit-tested and fuzzed alone.
#ifndef A2A_HTTP_REST_V03_H_
#define A2A_HTTP_REST_V03_H_

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace a2a_http {

// One 0.3 HTTP+JSON request as the 0.3 gRPC call it is.
struct RestV03Call {
  const google::protobuf::MethodDescriptor* method = nullptr;  // of a2a.v1.A2AService
  std::unique_ptr<google::protobuf::Message> request;          // of method->input_type()
  // The HTTP status for a request that is not a call (with the error): 404 for a path that
  // names nothing, 405 for a verb the path does not take, 400 for a body or query that does
  // not parse or a parent that names another task.
  int http_status = 200;
};

// The call `verb` on `path` (below /v1; percent-decoded segments) with `query` and `body` makes.
// A result whose http_status is not 200 carries the error in `error`.
struct RestV03Result {
  RestV03Call call;
  absl::Status error;
};
RestV03Result MatchRestV03(absl::string_view verb, absl::string_view path,
                           const std::multimap<std::string, std::string>& query,
                           absl::string_view body);

// The 0.3 service's descriptor.
const google::protobuf::ServiceDescriptor* A2AServiceV03Descriptor();

// The HTTP status 0.3's HTTP+JSON answers `status` with (docs/a2a-0.3.md section 2's table:
// TaskNotCancelable 409, ContentTypeNotSupported 415, InvalidAgentResponse 502, the rest as
// google.rpc maps their codes) and its body: {"code": <the A2A JSON-RPC code>, "message": ...,
// "data": [<details>]}, which both 0.3 SDKs read.
int RestV03HttpStatus(const absl::Status& status);
std::string RestV03ErrorBody(const absl::Status& status);

}  // namespace a2a_http

#endif  // A2A_HTTP_REST_V03_H_
