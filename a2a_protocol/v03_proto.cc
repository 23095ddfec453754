#include "a2a_protocol/v03_proto.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace a2a_protocol::v03 {
namespace {

// The states and roles have the same numbers in both versions (0.3's CANCELLED is 1.0's
// CANCELED).
pb03::TaskState StateTo(pb10::TaskState state) { return static_cast<pb03::TaskState>(state); }

pb10::Part PartFrom(const pb03::Part& part) {
  pb10::Part out;
  switch (part.part_case()) {
    case pb03::Part::kFile:
      if (part.file().file_case() == pb03::FilePart::kFileWithBytes) {
        out.set_raw(part.file().file_with_bytes());
      } else {
        out.set_url(part.file().file_with_uri());
      }
      out.set_media_type(part.file().mime_type());
      break;
    case pb03::Part::kData:
      *out.mutable_data()->mutable_struct_value() = part.data().data();
      break;
    case pb03::Part::kText:
    default:
      out.set_text(part.text());
      break;
  }
  return out;
}

pb03::Part PartTo(const pb10::Part& part) {
  pb03::Part out;
  switch (part.content_case()) {
    case pb10::Part::kRaw:
      out.mutable_file()->set_file_with_bytes(part.raw());
      out.mutable_file()->set_mime_type(part.media_type());
      break;
    case pb10::Part::kUrl:
      out.mutable_file()->set_file_with_uri(part.url());
      out.mutable_file()->set_mime_type(part.media_type());
      break;
    case pb10::Part::kData:
      if (part.data().has_struct_value()) {
        *out.mutable_data()->mutable_data() = part.data().struct_value();
      } else {
        (*out.mutable_data()->mutable_data()->mutable_fields())["value"] = part.data();
      }
      break;
    case pb10::Part::kText:
    default:
      out.set_text(part.text());
      break;
  }
  return out;
}

pb03::Artifact ArtifactTo(const pb10::Artifact& artifact) {
  pb03::Artifact out;
  out.set_artifact_id(artifact.artifact_id());
  out.set_name(artifact.name());
  out.set_description(artifact.description());
  for (const pb10::Part& part : artifact.parts()) *out.add_parts() = PartTo(part);
  if (artifact.has_metadata()) *out.mutable_metadata() = artifact.metadata();
  *out.mutable_extensions() = artifact.extensions();
  return out;
}

pb03::TaskStatus StatusTo(const pb10::TaskStatus& status) {
  pb03::TaskStatus out;
  out.set_state(StateTo(status.state()));
  if (status.has_message()) *out.mutable_update() = ToProto(status.message());
  if (status.has_timestamp()) *out.mutable_timestamp() = status.timestamp();
  return out;
}

bool Ends(pb10::TaskState state, bool send_stream) {
  switch (state) {
    case pb10::TASK_STATE_COMPLETED:
    case pb10::TASK_STATE_FAILED:
    case pb10::TASK_STATE_CANCELED:
    case pb10::TASK_STATE_REJECTED:
      return true;
    case pb10::TASK_STATE_INPUT_REQUIRED:
    case pb10::TASK_STATE_AUTH_REQUIRED:
      return send_stream;
    default:
      return false;
  }
}

// The members a status or artifact update has under the same names in both versions.
template <typename From, typename To>
void CopyUpdateHeader(const From& from, To* to) {
  to->set_task_id(from.task_id());
  to->set_context_id(from.context_id());
  if (from.has_metadata()) *to->mutable_metadata() = from.metadata();
}

// An artifact update either way, its artifact converted by `artifact`.
template <typename From, typename To, typename ArtifactOf>
void CopyArtifactUpdate(const From& from, To* to, ArtifactOf artifact) {
  CopyUpdateHeader(from, to);
  *to->mutable_artifact() = artifact(from.artifact());
  to->set_append(from.append());
  to->set_last_chunk(from.last_chunk());
}

absl::Status BadName(absl::string_view field, absl::string_view name, absl::string_view form) {
  return absl::InvalidArgumentError(
      absl::StrCat(field, " \"", name, "\" is not of the form ", form));
}

pb10::Artifact ArtifactFrom(const pb03::Artifact& artifact) {
  pb10::Artifact out;
  out.set_artifact_id(artifact.artifact_id());
  out.set_name(artifact.name());
  out.set_description(artifact.description());
  for (const pb03::Part& part : artifact.parts()) *out.add_parts() = PartFrom(part);
  if (artifact.has_metadata()) *out.mutable_metadata() = artifact.metadata();
  *out.mutable_extensions() = artifact.extensions();
  return out;
}

pb10::TaskStatus StatusFrom(const pb03::TaskStatus& status) {
  pb10::TaskStatus out;
  out.set_state(static_cast<pb10::TaskState>(status.state()));
  if (status.has_update()) *out.mutable_message() = FromProto(status.update());
  if (status.has_timestamp()) *out.mutable_timestamp() = status.timestamp();
  return out;
}

}  // namespace

pb10::Task FromProto(const pb03::Task& task) {
  pb10::Task out;
  out.set_id(task.id());
  out.set_context_id(task.context_id());
  *out.mutable_status() = StatusFrom(task.status());
  for (const pb03::Artifact& artifact : task.artifacts()) {
    *out.add_artifacts() = ArtifactFrom(artifact);
  }
  for (const pb03::Message& message : task.history()) *out.add_history() = FromProto(message);
  if (task.has_metadata()) *out.mutable_metadata() = task.metadata();
  return out;
}

pb10::StreamResponse FromProto(const pb03::StreamResponse& event) {
  pb10::StreamResponse out;
  switch (event.payload_case()) {
    case pb03::StreamResponse::kTask:
      *out.mutable_task() = FromProto(event.task());
      break;
    case pb03::StreamResponse::kMsg:
      *out.mutable_message() = FromProto(event.msg());
      break;
    case pb03::StreamResponse::kStatusUpdate:
      CopyUpdateHeader(event.status_update(), out.mutable_status_update());
      *out.mutable_status_update()->mutable_status() = StatusFrom(event.status_update().status());
      break;
    case pb03::StreamResponse::kArtifactUpdate:
      CopyArtifactUpdate(event.artifact_update(), out.mutable_artifact_update(), ArtifactFrom);
      break;
    default:
      break;
  }
  return out;
}

pb03::SendMessageRequest ToProto(const pb10::SendMessageRequest& request) {
  pb03::SendMessageRequest out;
  *out.mutable_request() = ToProto(request.message());
  if (request.has_metadata()) *out.mutable_metadata() = request.metadata();
  pb03::SendMessageConfiguration* configuration = out.mutable_configuration();
  configuration->set_blocking(true);
  *configuration->mutable_accepted_output_modes() = request.configuration().accepted_output_modes();
  if (request.configuration().has_history_length()) {
    configuration->set_history_length(std::max(1, request.configuration().history_length()));
  }
  return out;
}

namespace {
std::string TaskName(absl::string_view id) { return absl::StrCat("tasks/", id); }
}  // namespace

pb03::GetTaskRequest ToProto(const pb10::GetTaskRequest& request) {
  pb03::GetTaskRequest out;
  out.set_name(TaskName(request.id()));
  if (request.has_history_length()) out.set_history_length(std::max(1, request.history_length()));
  return out;
}

pb03::CancelTaskRequest ToProto(const pb10::CancelTaskRequest& request) {
  pb03::CancelTaskRequest out;
  out.set_name(TaskName(request.id()));
  return out;
}

pb03::TaskSubscriptionRequest ToProto(const pb10::SubscribeToTaskRequest& request) {
  pb03::TaskSubscriptionRequest out;
  out.set_name(TaskName(request.id()));
  return out;
}

pb10::StreamResponse FromProto(const pb03::SendMessageResponse& response) {
  pb10::StreamResponse out;
  if (response.has_task()) *out.mutable_task() = FromProto(response.task());
  if (response.has_msg()) *out.mutable_message() = FromProto(response.msg());
  return out;
}

pb10::Message FromProto(const pb03::Message& message) {
  pb10::Message out;
  out.set_message_id(message.message_id());
  out.set_context_id(message.context_id());
  out.set_task_id(message.task_id());
  out.set_role(static_cast<pb10::Role>(message.role()));
  for (const pb03::Part& part : message.content()) *out.add_parts() = PartFrom(part);
  if (message.has_metadata()) *out.mutable_metadata() = message.metadata();
  *out.mutable_extensions() = message.extensions();
  return out;
}

pb10::SendMessageRequest FromProto(const pb03::SendMessageRequest& request,
                                   absl::string_view tenant) {
  pb10::SendMessageRequest out;
  out.set_tenant(std::string(tenant));
  *out.mutable_message() = FromProto(request.request());
  if (request.has_metadata()) *out.mutable_metadata() = request.metadata();
  const pb03::SendMessageConfiguration& configuration = request.configuration();
  pb10::SendMessageConfiguration* to = out.mutable_configuration();
  *to->mutable_accepted_output_modes() = configuration.accepted_output_modes();
  if (configuration.history_length() != 0) to->set_history_length(configuration.history_length());
  // An unset `blocking` reads false on the proto forms: 0.3 servers then answer at once.
  to->set_return_immediately(!configuration.blocking());
  if (configuration.has_push_notification()) {
    *to->mutable_task_push_notification_config() =
        FromProto(configuration.push_notification(), request.request().task_id(), "");
  }
  return out;
}

absl::StatusOr<std::string> TaskIdOfName(absl::string_view name, absl::string_view field) {
  const std::vector<absl::string_view> parts = absl::StrSplit(name, '/');
  if (parts.size() != 2 || parts[0] != "tasks" || parts[1].empty()) {
    return BadName(field, name, "tasks/{id}");
  }
  return std::string(parts[1]);
}

absl::StatusOr<PushConfigName> PushConfigIdsOfName(absl::string_view name,
                                                   absl::string_view field) {
  const std::vector<absl::string_view> parts = absl::StrSplit(name, '/');
  if (parts.size() != 4 || parts[0] != "tasks" || parts[1].empty() ||
      parts[2] != "pushNotificationConfigs" || parts[3].empty()) {
    return BadName(field, name, "tasks/{id}/pushNotificationConfigs/{config id}");
  }
  return PushConfigName{std::string(parts[1]), std::string(parts[3])};
}

pb10::TaskPushNotificationConfig FromProto(const pb03::PushNotificationConfig& config,
                                           absl::string_view task_id, absl::string_view config_id) {
  pb10::TaskPushNotificationConfig out;
  out.set_task_id(std::string(task_id));
  out.set_id(!config.id().empty() ? config.id()
             : !config_id.empty() ? std::string(config_id)
                                  : std::string(task_id));
  out.set_url(config.url());
  out.set_token(config.token());
  if (config.has_authentication()) {
    // 1.0 keeps one scheme: the first, which the webhook takes.
    if (!config.authentication().schemes().empty()) {
      out.mutable_authentication()->set_scheme(config.authentication().schemes(0));
    }
    out.mutable_authentication()->set_credentials(config.authentication().credentials());
  }
  return out;
}

pb03::Message ToProto(const pb10::Message& message) {
  pb03::Message out;
  out.set_message_id(message.message_id());
  out.set_context_id(message.context_id());
  out.set_task_id(message.task_id());
  out.set_role(static_cast<pb03::Role>(message.role()));
  for (const pb10::Part& part : message.parts()) *out.add_content() = PartTo(part);
  if (message.has_metadata()) *out.mutable_metadata() = message.metadata();
  *out.mutable_extensions() = message.extensions();
  return out;
}

pb03::Task ToProto(const pb10::Task& task) {
  pb03::Task out;
  out.set_id(task.id());
  out.set_context_id(task.context_id());
  *out.mutable_status() = StatusTo(task.status());
  for (const pb10::Artifact& artifact : task.artifacts())
    *out.add_artifacts() = ArtifactTo(artifact);
  for (const pb10::Message& message : task.history()) *out.add_history() = ToProto(message);
  if (task.has_metadata()) *out.mutable_metadata() = task.metadata();
  return out;
}

pb03::StreamResponse ToProto(const pb10::StreamResponse& event, bool send_stream) {
  pb03::StreamResponse out;
  switch (event.payload_case()) {
    case pb10::StreamResponse::kTask:
      *out.mutable_task() = ToProto(event.task());
      break;
    case pb10::StreamResponse::kMessage:
      *out.mutable_msg() = ToProto(event.message());
      break;
    case pb10::StreamResponse::kStatusUpdate: {
      const pb10::TaskStatusUpdateEvent& update = event.status_update();
      pb03::TaskStatusUpdateEvent* to = out.mutable_status_update();
      CopyUpdateHeader(update, to);
      *to->mutable_status() = StatusTo(update.status());
      to->set_final(Ends(update.status().state(), send_stream));
      break;
    }
    case pb10::StreamResponse::kArtifactUpdate:
      CopyArtifactUpdate(event.artifact_update(), out.mutable_artifact_update(), ArtifactTo);
      break;
    default:
      break;
  }
  return out;
}

pb03::SendMessageResponse ToProto(const pb10::SendMessageResponse& response) {
  pb03::SendMessageResponse out;
  if (response.has_task()) *out.mutable_task() = ToProto(response.task());
  if (response.has_message()) *out.mutable_msg() = ToProto(response.message());
  return out;
}

pb03::TaskPushNotificationConfig ToProto(const pb10::TaskPushNotificationConfig& config) {
  pb03::TaskPushNotificationConfig out;
  out.set_name(absl::StrCat("tasks/", config.task_id(), "/pushNotificationConfigs/", config.id()));
  pb03::PushNotificationConfig* to = out.mutable_push_notification_config();
  to->set_id(config.id());
  to->set_url(config.url());
  to->set_token(config.token());
  if (config.has_authentication()) {
    if (!config.authentication().scheme().empty()) {
      to->mutable_authentication()->add_schemes(config.authentication().scheme());
    }
    to->mutable_authentication()->set_credentials(config.authentication().credentials());
  }
  return out;
}

}  // namespace a2a_protocol::v03
