// A2A 0.3's protocol buffers (package a2a.v1, protos/a2a/v0_3/a2a.proto) over the 1.0 messages
// the coordinator stores (lf.a2a.v1): the conversions of the 0.3 gRPC service and of 0.3's
// HTTP+JSON binding, whose bodies are the ProtoJSON of these messages (docs/a2a-0.3.md sections
// 3, 4 and 5). Where both versions have a field it is carried as it is; what only 1.0 has is not
// sent to 0.3 (a part's metadata and file name, a message's reference task ids); a data part whose
// value is not an object goes to 0.3 as {"value": <it>}, since 0.3's data is an object.
#ifndef A2A_PROTOCOL_V03_PROTO_H_
#define A2A_PROTOCOL_V03_PROTO_H_

#include <string>

#include "a2a/v0_3/a2a.pb.h"
#include "a2a/v1/a2a.pb.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace a2a_protocol::v03 {

namespace pb03 = ::a2a::v1;
namespace pb10 = ::lf::a2a::v1;

// --- 0.3 -> 1.0 (what a 0.3 client sends).

pb10::Message FromProto(const pb03::Message& message);
// The send; `tenant` is the agent the call is for ("" for the tenant-less rules). 0.3's
// `blocking` false is 1.0's `return_immediately`; a history length of 0 is "no limit" in 0.3.
pb10::SendMessageRequest FromProto(const pb03::SendMessageRequest& request,
                                   absl::string_view tenant);
// The task id of a resource name "tasks/{id}"; INVALID_ARGUMENT naming `field` otherwise.
[[nodiscard]] absl::StatusOr<std::string> TaskIdOfName(absl::string_view name,
                                                       absl::string_view field);
// The task and config ids of "tasks/{id}/pushNotificationConfigs/{config id}".
struct PushConfigName {
  std::string task_id;
  std::string config_id;
};
[[nodiscard]] absl::StatusOr<PushConfigName> PushConfigIdsOfName(absl::string_view name,
                                                                 absl::string_view field);
// A push config to create on task `task_id`: the config's own id, else `config_id`, else the task
// id (the 0.3 SDKs' default).
pb10::TaskPushNotificationConfig FromProto(const pb03::PushNotificationConfig& config,
                                           absl::string_view task_id, absl::string_view config_id);

// What a 0.3 agent answers, as 1.0 (`final` is not kept: the gateway ends a turn by the state).
pb10::Task FromProto(const pb03::Task& task);
pb10::StreamResponse FromProto(const pb03::StreamResponse& event);

// --- 1.0 -> 0.3 (what the coordinator answers, and sends to a 0.3 agent).

// A delivery to a 0.3 agent: blocking (the gateway reads the whole answer), a history length of
// 0 ("none" in 1.0, "all" in 0.3) asked as 1, no push config (the coordinator keeps those).
pb03::SendMessageRequest ToProto(const pb10::SendMessageRequest& request);

// The calls of a delivery to a 0.3 gRPC agent, which names a task by "tasks/{id}": GetTask asks
// a history length of at least 1 when it asks one (0 is "all" in 0.3), and unset for all.
pb03::GetTaskRequest ToProto(const pb10::GetTaskRequest& request);
pb03::CancelTaskRequest ToProto(const pb10::CancelTaskRequest& request);
pb03::TaskSubscriptionRequest ToProto(const pb10::SubscribeToTaskRequest& request);
// A 0.3 agent's answer to SendMessage as the one event it stands for (empty without a payload).
pb10::StreamResponse FromProto(const pb03::SendMessageResponse& response);

pb03::Message ToProto(const pb10::Message& message);
pb03::Task ToProto(const pb10::Task& task);
// One event of a stream; `send_stream` as EventJson has it (`final` on the status update that
// ends a send stream at an interrupted state, and on a terminal one).
pb03::StreamResponse ToProto(const pb10::StreamResponse& event, bool send_stream);
pb03::SendMessageResponse ToProto(const pb10::SendMessageResponse& response);
pb03::TaskPushNotificationConfig ToProto(const pb10::TaskPushNotificationConfig& config);

}  // namespace a2a_protocol::v03

#endif  // A2A_PROTOCOL_V03_PROTO_H_
