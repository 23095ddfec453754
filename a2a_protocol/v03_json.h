// A2A 0.3's JSON-RPC binding over the 1.0 messages: its method names, its JSON objects (`kind`
// discriminators, lowercase task states, `role: "user"`, parts by `kind`, the nested push config)
// read into the lf.a2a.v1 requests, and the lf.a2a.v1 answers written as 0.3 JSON. The
// coordinator stores and serves one task in 1.0 terms; a 0.3 client's request is converted here
// on the way in and the answer on the way out (docs/a2a-0.3.md, sections 2 and 3).
//
// Reading is strict where the spec is (a role, a state or a part kind it does not define, a
// member of the wrong JSON type: INVALID_ARGUMENT naming the member) and lenient where peers
// differ (unknown members are ignored; a part without `kind` is read by the member it has).
// Writing always includes what 0.3's schema requires (`kind`, `final`, an empty `parts`), since
// 0.3 SDKs validate it.
#ifndef A2A_PROTOCOL_V03_JSON_H_
#define A2A_PROTOCOL_V03_JSON_H_

#include <optional>
#include <string>

#include "a2a/v1/a2a.pb.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "google/protobuf/struct.pb.h"

namespace a2a_protocol::v03 {

namespace a2apb = ::lf::a2a::v1;

// The version string of 0.3 (an A2A-Version header of "0.3" or "0.3.x" asks for it).
inline constexpr char kVersion[] = "0.3";

// Push configs a 0.3 list reads in one page: the most the store gives (A2APush), more than a
// task may have by default (16).
inline constexpr int kListPageSize = 100;
// The metadata flag of a data part that wraps a value other than an object (0.3 data parts are
// objects only), as the JavaScript SDK's compatibility layer writes it.
inline constexpr char kDataPartCompat[] = "data_part_compat";

// The methods of 0.3's JSON-RPC binding (0.3 specification, section 7).
enum class Method {
  kMessageSend,           // message/send
  kMessageStream,         // message/stream
  kTasksGet,              // tasks/get
  kTasksCancel,           // tasks/cancel
  kTasksResubscribe,      // tasks/resubscribe
  kPushConfigSet,         // tasks/pushNotificationConfig/set
  kPushConfigGet,         // tasks/pushNotificationConfig/get
  kPushConfigList,        // tasks/pushNotificationConfig/list
  kPushConfigDelete,      // tasks/pushNotificationConfig/delete
  kGetExtendedAgentCard,  // agent/getAuthenticatedExtendedCard
};

// The 0.3 method `name` names; nullopt for any other name (a 1.0 method's included).
std::optional<Method> MethodNamed(absl::string_view name);
// Its 0.3 name, and the lf.a2a.v1.A2AService method it is made as.
absl::string_view MethodName(Method method);
absl::string_view ServiceMethodName(Method method);
// Whether it answers with an event stream.
bool Streams(Method method);
// The 0.3 name of the 1.0 method `service_method` ("SendMessage" -> "message/send"); "" when
// 0.3 has none (ListTasks).
absl::string_view V03NameOf(absl::string_view service_method);

// What an A2A-Version value asks for.
enum class AskedVersion { kUnstated, kV03, kV10, kOther };
AskedVersion ParseVersion(absl::string_view header_value);

// Reads the 0.3 `params` (JSON) of `method` into `request`, which is of the input type of
// ServiceMethodName(method). INVALID_ARGUMENT naming the member when they are not 0.3 params.
[[nodiscard]] absl::Status RequestFromParams(Method method, absl::string_view params_json,
                                             google::protobuf::Message* request);

// The 0.3 `result` (JSON) answering `method`, from `response` (of the output type of
// ServiceMethodName(method)).
[[nodiscard]] absl::StatusOr<std::string> ResultJson(Method method,
                                                     const google::protobuf::Message& response);

// One event of a 0.3 stream: the task, a message, a status update (`final` when the stream ends
// with it: a terminal state, or on a send stream an interrupted one) or an artifact update.
// `send_stream`: message/stream (true) or tasks/resubscribe.
// `opening`, when given, is the task the stream opened with: a Message after it (an agent's direct
// answer) is written as the status update that completes that task, carrying the message, since
// 0.3 clients take a Message only as a stream's one event.
std::string EventJson(const a2apb::StreamResponse& event, bool send_stream,
                      const a2apb::Task* opening = nullptr);

// --- The objects, both ways (JSON values of the 0.3 schema).

// "submitted", "input-required", ...; "unknown" for TASK_STATE_UNSPECIFIED.
absl::string_view StateName(a2apb::TaskState state);
std::optional<a2apb::TaskState> StateNamed(absl::string_view name);

google::protobuf::Value MessageToJson(const a2apb::Message& message);
google::protobuf::Value TaskToJson(const a2apb::Task& task);
google::protobuf::Value PushConfigToJson(const a2apb::TaskPushNotificationConfig& config);
// The 0.3 card (`url` and `preferredTransport`: the first JSON-RPC interface, else the first;
// the rest as `additionalInterfaces`) of a 1.0 card, listing only the interfaces whose binding
// `usable` accepts (all when null).
google::protobuf::Value CardToJson(const a2apb::AgentCard& card,
                                   bool (*usable)(const a2apb::AgentInterface&) = nullptr);
// The card that both versions' clients read: the 1.0 card's JSON with the members 0.3 adds
// (protocolVersion, url, preferredTransport, additionalInterfaces) and 0.3's form of the members
// both have where 0.3 requires more (skills with their tags, capabilities). 1.0 readers ignore
// what they do not know; 0.3 readers find what they need.
std::string HybridCardJson(const a2apb::AgentCard& card,
                           bool (*usable)(const a2apb::AgentInterface&) = nullptr);

// --- Calling a 0.3 agent (the gateway's deliveries, docs/a2a-0.3.md section 7).

// The 0.3 `params` (JSON) of the call `method` makes of `request` (of the input type of
// ServiceMethodName(method)). A send always blocks (the gateway reads the whole answer); a
// history length of 0 ("none" in 1.0, "all" in 0.3) is asked as 1.
std::string ParamsJson(Method method, const google::protobuf::Message& request);
// A 0.3 agent's `result` (JSON): a task, a message, a status update or an artifact update by its
// `kind` (by its members when it has none; `final` is not kept). INVALID_ARGUMENT naming the
// member when it is none of them.
[[nodiscard]] absl::StatusOr<a2apb::StreamResponse> EventFromJson(absl::string_view result_json);
// Whether a card's JSON is a 0.3 card: a string `url` and no `supportedInterfaces` (a hybrid card
// that lists them is read as 1.0).
bool IsV03Card(const google::protobuf::Struct& card);
// A 0.3 card as the 1.0 card it stands for: `url` with `preferredTransport` (JSONRPC when absent)
// and each of `additionalInterfaces` become supportedInterfaces at protocol version 0.3; the
// members both versions name alike are read by 1.0's JSON mapping; the security schemes, in
// 0.3's shape, and the signatures (of the 0.3 text) are not kept. INVALID_ARGUMENT when it is not
// a card; FAILED_PRECONDITION when its protocolVersion is neither absent nor 0.3.x.
[[nodiscard]] absl::StatusOr<a2apb::AgentCard> CardFromJson(const google::protobuf::Struct& card);

// `where` names the value in errors ("params.message").
[[nodiscard]] absl::Status MessageFromJson(const google::protobuf::Value& json,
                                           absl::string_view where, a2apb::Message* message);
[[nodiscard]] absl::Status TaskFromJson(const google::protobuf::Value& json,
                                        absl::string_view where, a2apb::Task* task);
[[nodiscard]] absl::Status PushConfigFromJson(const google::protobuf::Value& json,
                                              absl::string_view where, absl::string_view task_id,
                                              a2apb::TaskPushNotificationConfig* config);

}  // namespace a2a_protocol::v03

#endif  // A2A_PROTOCOL_V03_JSON_H_
