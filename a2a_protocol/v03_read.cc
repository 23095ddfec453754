// Reading A2A 0.3 JSON into the lf.a2a.v1 messages (v03_json.h): the requests a 0.3 client
// sends, and the answers and cards of a 0.3 agent.
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "a2a_protocol/v03_json.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/proto_json.h"
#include "common/status_macros.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"

namespace a2a_protocol::v03 {

using google::protobuf::ListValue;
using google::protobuf::Struct;
using google::protobuf::Value;
namespace {

// --- Reading.

absl::Status Bad(absl::string_view where, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(where, " ", what));
}

// The member `name` of `object`; nullptr when absent or null (both mean "not given" in 0.3).
const Value* Member(const Struct& object, absl::string_view name) {
  auto it = object.fields().find(std::string(name));
  if (it == object.fields().end() || it->second.has_null_value()) return nullptr;
  return &it->second;
}

std::string Path(absl::string_view where, absl::string_view name) {
  return absl::StrCat(where, ".", name);
}

absl::StatusOr<const Struct*> AsObject(const Value& v, absl::string_view where) {
  if (!v.has_struct_value())
    return Bad(where, absl::StrCat("must be an object, not ", common::JsonKindName(v)));
  return &v.struct_value();
}

// The string member `name`: "" when absent; an error when of another type, or absent and
// `required`.
absl::StatusOr<std::string> StringMember(const Struct& object, absl::string_view where,
                                         absl::string_view name, bool required = false) {
  const Value* v = Member(object, name);
  if (v == nullptr) {
    if (required) return Bad(Path(where, name), "is required");
    return std::string();
  }
  if (!v->has_string_value()) {
    return Bad(Path(where, name), absl::StrCat("must be a string, not ", common::JsonKindName(*v)));
  }
  return v->string_value();
}

absl::StatusOr<std::optional<bool>> BoolMember(const Struct& object, absl::string_view where,
                                               absl::string_view name) {
  const Value* v = Member(object, name);
  if (v == nullptr) return std::optional<bool>();
  if (!v->has_bool_value()) {
    return Bad(Path(where, name),
               absl::StrCat("must be a boolean, not ", common::JsonKindName(*v)));
  }
  return std::optional<bool>(v->bool_value());
}

// A history length: absent or 0 mean "no limit" in 0.3 (nullopt), a positive integer a limit.
absl::StatusOr<std::optional<int32_t>> HistoryLength(const Struct& object,
                                                     absl::string_view where) {
  const Value* v = Member(object, "historyLength");
  if (v == nullptr) return std::optional<int32_t>();
  const std::string path = Path(where, "historyLength");
  if (!v->has_number_value())
    return Bad(path, absl::StrCat("must be a number, not ", common::JsonKindName(*v)));
  const double n = v->number_value();
  if (!std::isfinite(n) || n != std::floor(n) || n < 0 || n > 1e9) {
    return Bad(path, "must be a non-negative integer");
  }
  if (n == 0) return std::optional<int32_t>();
  return std::optional<int32_t>(static_cast<int32_t>(n));
}

template <typename Strings>
absl::Status StringsMember(const Struct& object, absl::string_view where, absl::string_view name,
                           Strings* out) {
  const Value* v = Member(object, name);
  if (v == nullptr) return absl::OkStatus();
  const std::string path = Path(where, name);
  if (!v->has_list_value())
    return Bad(path, absl::StrCat("must be an array, not ", common::JsonKindName(*v)));
  for (int i = 0; i < v->list_value().values_size(); ++i) {
    const Value& item = v->list_value().values(i);
    if (!item.has_string_value()) {
      return Bad(absl::StrCat(path, "[", i, "]"), "must be a string");
    }
    out->Add(std::string(item.string_value()));
  }
  return absl::OkStatus();
}

absl::Status MetadataMember(const Struct& object, absl::string_view where, Struct* out,
                            bool* present = nullptr) {
  const Value* v = Member(object, "metadata");
  if (v == nullptr) return absl::OkStatus();
  ASSIGN_OR_RETURN(const Struct* metadata, AsObject(*v, Path(where, "metadata")));
  *out = *metadata;
  if (present != nullptr) *present = true;
  return absl::OkStatus();
}

// `kind`, when given, must be `expected`.
absl::Status CheckKind(const Struct& object, absl::string_view where, absl::string_view expected) {
  ASSIGN_OR_RETURN(const std::string kind, StringMember(object, where, "kind"));
  if (!kind.empty() && kind != expected) {
    return Bad(Path(where, "kind"), absl::StrCat("is \"", kind, "\"; expected \"", expected, "\""));
  }
  return absl::OkStatus();
}

absl::Status FileFromJson(const Struct& part, absl::string_view where, a2apb::Part* out) {
  const Value* file_value = Member(part, "file");
  if (file_value == nullptr) return Bad(Path(where, "file"), "is required for a file part");
  ASSIGN_OR_RETURN(const Struct* file, AsObject(*file_value, Path(where, "file")));
  const std::string file_where = Path(where, "file");
  ASSIGN_OR_RETURN(const std::string bytes, StringMember(*file, file_where, "bytes"));
  ASSIGN_OR_RETURN(const std::string uri, StringMember(*file, file_where, "uri"));
  const bool has_bytes = Member(*file, "bytes") != nullptr;
  const bool has_uri = Member(*file, "uri") != nullptr;
  if (has_bytes == has_uri) return Bad(file_where, "must have exactly one of bytes and uri");
  if (has_bytes) {
    std::string raw;
    if (!absl::Base64Unescape(bytes, &raw)) return Bad(Path(file_where, "bytes"), "is not base64");
    out->set_raw(std::move(raw));
  } else {
    out->set_url(uri);
  }
  ASSIGN_OR_RETURN(const std::string name, StringMember(*file, file_where, "name"));
  ASSIGN_OR_RETURN(const std::string mime, StringMember(*file, file_where, "mimeType"));
  out->set_filename(name);
  out->set_media_type(mime);
  return absl::OkStatus();
}

absl::Status PartFromJson(const Value& json, absl::string_view where, a2apb::Part* out) {
  ASSIGN_OR_RETURN(const Struct* part, AsObject(json, where));
  ASSIGN_OR_RETURN(std::string kind, StringMember(*part, where, "kind"));
  if (kind.empty()) {
    // Without a kind, the member the part has says what it is; more than one is ambiguous.
    int found = 0;
    for (const char* member : {"text", "file", "data"}) {
      if (Member(*part, member) != nullptr) {
        kind = member;
        ++found;
      }
    }
    if (found != 1) return Bad(Path(where, "kind"), "is required (one of text, file, data)");
  }
  RETURN_IF_ERROR(MetadataMember(*part, where, out->mutable_metadata()));
  if (kind == "text") {
    ASSIGN_OR_RETURN(const std::string text, StringMember(*part, where, "text", true));
    out->set_text(text);
  } else if (kind == "file") {
    RETURN_IF_ERROR(FileFromJson(*part, where, out));
  } else if (kind == "data") {
    const Value* data = Member(*part, "data");
    if (data == nullptr) return Bad(Path(where, "data"), "is required for a data part");
    ASSIGN_OR_RETURN(const Struct* object, AsObject(*data, Path(where, "data")));
    // A value other than an object, wrapped by a writer that marked it so: unwrapped.
    auto compat = out->metadata().fields().find(kDataPartCompat);
    const Value* wrapped = Member(*object, "value");
    if (compat != out->metadata().fields().end() && compat->second.bool_value() &&
        wrapped != nullptr && object->fields_size() == 1) {
      *out->mutable_data() = *wrapped;
      out->mutable_metadata()->mutable_fields()->erase(kDataPartCompat);
    } else {
      *out->mutable_data() = *data;
    }
  } else {
    return Bad(Path(where, "kind"), absl::StrCat("\"", kind, "\" is not one of text, file, data"));
  }
  if (out->metadata().fields().empty()) out->clear_metadata();
  return absl::OkStatus();
}

// The `id` of a request's params: required, a string.
absl::StatusOr<std::string> IdParam(const Struct& params, absl::string_view name = "id") {
  return StringMember(params, "params", name, /*required=*/true);
}

absl::Status SendFromParams(const Struct& params, a2apb::SendMessageRequest* request) {
  const Value* message = Member(params, "message");
  if (message == nullptr) return Bad("params.message", "is required");
  RETURN_IF_ERROR(MessageFromJson(*message, "params.message", request->mutable_message()));
  bool has_metadata = false;
  RETURN_IF_ERROR(MetadataMember(params, "params", request->mutable_metadata(), &has_metadata));
  if (!has_metadata) request->clear_metadata();
  const Value* configuration_value = Member(params, "configuration");
  if (configuration_value == nullptr) return absl::OkStatus();
  constexpr char kWhere[] = "params.configuration";
  ASSIGN_OR_RETURN(const Struct* configuration, AsObject(*configuration_value, kWhere));
  a2apb::SendMessageConfiguration* out = request->mutable_configuration();
  RETURN_IF_ERROR(StringsMember(*configuration, kWhere, "acceptedOutputModes",
                                out->mutable_accepted_output_modes()));
  ASSIGN_OR_RETURN(const std::optional<int32_t> history, HistoryLength(*configuration, kWhere));
  if (history.has_value()) out->set_history_length(*history);
  // 0.3 servers wait for the answer unless told not to (blocking: false).
  ASSIGN_OR_RETURN(const std::optional<bool> blocking,
                   BoolMember(*configuration, kWhere, "blocking"));
  out->set_return_immediately(blocking.has_value() && !*blocking);
  if (const Value* push = Member(*configuration, "pushNotificationConfig"); push != nullptr) {
    RETURN_IF_ERROR(PushConfigFromJson(*push, absl::StrCat(kWhere, ".pushNotificationConfig"),
                                       request->message().task_id(),
                                       out->mutable_task_push_notification_config()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status MessageFromJson(const Value& json, absl::string_view where, a2apb::Message* message) {
  ASSIGN_OR_RETURN(const Struct* object, AsObject(json, where));
  RETURN_IF_ERROR(CheckKind(*object, where, "message"));
  ASSIGN_OR_RETURN(const std::string message_id, StringMember(*object, where, "messageId"));
  ASSIGN_OR_RETURN(const std::string context_id, StringMember(*object, where, "contextId"));
  ASSIGN_OR_RETURN(const std::string task_id, StringMember(*object, where, "taskId"));
  ASSIGN_OR_RETURN(const std::string role, StringMember(*object, where, "role", true));
  message->set_message_id(message_id);
  message->set_context_id(context_id);
  message->set_task_id(task_id);
  if (role == "user") {
    message->set_role(a2apb::ROLE_USER);
  } else if (role == "agent") {
    message->set_role(a2apb::ROLE_AGENT);
  } else {
    return Bad(Path(where, "role"), absl::StrCat("\"", role, "\" is not \"user\" or \"agent\""));
  }
  const Value* parts = Member(*object, "parts");
  if (parts == nullptr) return Bad(Path(where, "parts"), "is required");
  if (!parts->has_list_value()) {
    return Bad(Path(where, "parts"),
               absl::StrCat("must be an array, not ", common::JsonKindName(*parts)));
  }
  for (int i = 0; i < parts->list_value().values_size(); ++i) {
    RETURN_IF_ERROR(PartFromJson(parts->list_value().values(i),
                                 absl::StrCat(where, ".parts[", i, "]"), message->add_parts()));
  }
  bool has_metadata = false;
  RETURN_IF_ERROR(MetadataMember(*object, where, message->mutable_metadata(), &has_metadata));
  if (!has_metadata) message->clear_metadata();
  RETURN_IF_ERROR(StringsMember(*object, where, "extensions", message->mutable_extensions()));
  RETURN_IF_ERROR(
      StringsMember(*object, where, "referenceTaskIds", message->mutable_reference_task_ids()));
  return absl::OkStatus();
}

absl::Status PushConfigFromJson(const Value& json, absl::string_view where,
                                absl::string_view task_id,
                                a2apb::TaskPushNotificationConfig* config) {
  ASSIGN_OR_RETURN(const Struct* object, AsObject(json, where));
  ASSIGN_OR_RETURN(const std::string id, StringMember(*object, where, "id"));
  ASSIGN_OR_RETURN(const std::string url, StringMember(*object, where, "url", true));
  ASSIGN_OR_RETURN(const std::string token, StringMember(*object, where, "token"));
  config->set_task_id(std::string(task_id));
  // Without an id the config is the task's own: 0.3 SDKs find it by the task id.
  config->set_id(id.empty() ? std::string(task_id) : id);
  config->set_url(url);
  config->set_token(token);
  if (const Value* auth = Member(*object, "authentication"); auth != nullptr) {
    const std::string auth_where = Path(where, "authentication");
    ASSIGN_OR_RETURN(const Struct* authentication, AsObject(*auth, auth_where));
    google::protobuf::RepeatedPtrField<std::string> schemes;
    RETURN_IF_ERROR(StringsMember(*authentication, auth_where, "schemes", &schemes));
    ASSIGN_OR_RETURN(const std::string credentials,
                     StringMember(*authentication, auth_where, "credentials"));
    // 1.0 keeps one scheme: the one a sender uses, the first the webhook takes.
    if (!schemes.empty()) config->mutable_authentication()->set_scheme(schemes[0]);
    if (!credentials.empty()) config->mutable_authentication()->set_credentials(credentials);
  }
  return absl::OkStatus();
}

absl::Status RequestFromParams(Method method, absl::string_view params_json,
                               google::protobuf::Message* request) {
  Value parsed;
  if (!google::protobuf::util::JsonStringToMessage(std::string(params_json), &parsed).ok()) {
    return Bad("params", "are not JSON");
  }
  ASSIGN_OR_RETURN(const Struct* params, AsObject(parsed, "params"));
  switch (method) {
    case Method::kMessageSend:
    case Method::kMessageStream:
      return SendFromParams(*params, static_cast<a2apb::SendMessageRequest*>(request));
    case Method::kTasksGet: {
      auto* get = static_cast<a2apb::GetTaskRequest*>(request);
      ASSIGN_OR_RETURN(const std::string id, IdParam(*params));
      ASSIGN_OR_RETURN(const std::optional<int32_t> history, HistoryLength(*params, "params"));
      get->set_id(id);
      if (history.has_value()) get->set_history_length(*history);
      return absl::OkStatus();
    }
    case Method::kTasksCancel: {
      auto* cancel = static_cast<a2apb::CancelTaskRequest*>(request);
      ASSIGN_OR_RETURN(const std::string id, IdParam(*params));
      cancel->set_id(id);
      bool has_metadata = false;
      RETURN_IF_ERROR(MetadataMember(*params, "params", cancel->mutable_metadata(), &has_metadata));
      if (!has_metadata) cancel->clear_metadata();
      return absl::OkStatus();
    }
    case Method::kTasksResubscribe: {
      ASSIGN_OR_RETURN(const std::string id, IdParam(*params));
      static_cast<a2apb::SubscribeToTaskRequest*>(request)->set_id(id);
      return absl::OkStatus();
    }
    case Method::kPushConfigSet: {
      ASSIGN_OR_RETURN(const std::string task_id, IdParam(*params, "taskId"));
      const Value* push = Member(*params, "pushNotificationConfig");
      if (push == nullptr) return Bad("params.pushNotificationConfig", "is required");
      return PushConfigFromJson(*push, "params.pushNotificationConfig", task_id,
                                static_cast<a2apb::TaskPushNotificationConfig*>(request));
    }
    case Method::kPushConfigGet: {
      auto* get = static_cast<a2apb::GetTaskPushNotificationConfigRequest*>(request);
      ASSIGN_OR_RETURN(const std::string task_id, IdParam(*params));
      ASSIGN_OR_RETURN(const std::string config_id,
                       StringMember(*params, "params", "pushNotificationConfigId"));
      get->set_task_id(task_id);
      get->set_id(config_id.empty() ? task_id : config_id);
      return absl::OkStatus();
    }
    case Method::kPushConfigList: {
      auto* list = static_cast<a2apb::ListTaskPushNotificationConfigsRequest*>(request);
      ASSIGN_OR_RETURN(const std::string task_id, IdParam(*params));
      list->set_task_id(task_id);
      list->set_page_size(kListPageSize);
      return absl::OkStatus();
    }
    case Method::kPushConfigDelete: {
      auto* del = static_cast<a2apb::DeleteTaskPushNotificationConfigRequest*>(request);
      ASSIGN_OR_RETURN(const std::string task_id, IdParam(*params));
      ASSIGN_OR_RETURN(const std::string config_id, IdParam(*params, "pushNotificationConfigId"));
      del->set_task_id(task_id);
      del->set_id(config_id);
      return absl::OkStatus();
    }
    case Method::kGetExtendedAgentCard:
      return absl::OkStatus();
  }
  return absl::InternalError("unknown 0.3 method");
}

namespace {

absl::Status StatusFromJson(const Value& json, absl::string_view where, a2apb::TaskStatus* status) {
  ASSIGN_OR_RETURN(const Struct* object, AsObject(json, where));
  ASSIGN_OR_RETURN(const std::string state, StringMember(*object, where, "state", true));
  const std::optional<a2apb::TaskState> named = StateNamed(state);
  if (!named.has_value() && state != "unknown") {
    return Bad(Path(where, "state"), absl::StrCat("\"", state, "\" is not a 0.3 task state"));
  }
  status->set_state(named.value_or(a2apb::TASK_STATE_UNSPECIFIED));
  if (const Value* message = Member(*object, "message"); message != nullptr) {
    RETURN_IF_ERROR(MessageFromJson(*message, Path(where, "message"), status->mutable_message()));
  }
  ASSIGN_OR_RETURN(const std::string timestamp, StringMember(*object, where, "timestamp"));
  if (!timestamp.empty() &&
      !google::protobuf::util::TimeUtil::FromString(timestamp, status->mutable_timestamp())) {
    return Bad(Path(where, "timestamp"), absl::StrCat("\"", timestamp, "\" is not RFC 3339"));
  }
  return absl::OkStatus();
}

absl::Status ArtifactFromJson(const Value& json, absl::string_view where,
                              a2apb::Artifact* artifact) {
  ASSIGN_OR_RETURN(const Struct* object, AsObject(json, where));
  ASSIGN_OR_RETURN(const std::string id, StringMember(*object, where, "artifactId", true));
  ASSIGN_OR_RETURN(const std::string name, StringMember(*object, where, "name"));
  ASSIGN_OR_RETURN(const std::string description, StringMember(*object, where, "description"));
  artifact->set_artifact_id(id);
  artifact->set_name(name);
  artifact->set_description(description);
  const Value* parts = Member(*object, "parts");
  if (parts == nullptr || !parts->has_list_value()) {
    return Bad(Path(where, "parts"), "is required (an array)");
  }
  for (int i = 0; i < parts->list_value().values_size(); ++i) {
    RETURN_IF_ERROR(PartFromJson(parts->list_value().values(i),
                                 absl::StrCat(where, ".parts[", i, "]"), artifact->add_parts()));
  }
  bool has_metadata = false;
  RETURN_IF_ERROR(MetadataMember(*object, where, artifact->mutable_metadata(), &has_metadata));
  if (!has_metadata) artifact->clear_metadata();
  return StringsMember(*object, where, "extensions", artifact->mutable_extensions());
}

// The items of the array member `name` (none when absent), each read by `read`.
template <typename Repeated, typename Read>
absl::Status ListMember(const Struct& object, absl::string_view where, absl::string_view name,
                        Repeated* out, Read read) {
  const Value* v = Member(object, name);
  if (v == nullptr) return absl::OkStatus();
  const std::string path = Path(where, name);
  if (!v->has_list_value()) {
    return Bad(path, absl::StrCat("must be an array, not ", common::JsonKindName(*v)));
  }
  for (int i = 0; i < v->list_value().values_size(); ++i) {
    RETURN_IF_ERROR(read(v->list_value().values(i), absl::StrCat(path, "[", i, "]"), out->Add()));
  }
  return absl::OkStatus();
}

absl::Status StatusUpdateFromJson(const Struct& object, absl::string_view where,
                                  a2apb::TaskStatusUpdateEvent* update) {
  ASSIGN_OR_RETURN(const std::string task_id, StringMember(object, where, "taskId", true));
  ASSIGN_OR_RETURN(const std::string context_id, StringMember(object, where, "contextId"));
  update->set_task_id(task_id);
  update->set_context_id(context_id);
  const Value* status = Member(object, "status");
  if (status == nullptr) return Bad(Path(where, "status"), "is required");
  RETURN_IF_ERROR(StatusFromJson(*status, Path(where, "status"), update->mutable_status()));
  bool has_metadata = false;
  RETURN_IF_ERROR(MetadataMember(object, where, update->mutable_metadata(), &has_metadata));
  if (!has_metadata) update->clear_metadata();
  return absl::OkStatus();  // `final` is not kept: the gateway ends a turn by the state
}

absl::Status ArtifactUpdateFromJson(const Struct& object, absl::string_view where,
                                    a2apb::TaskArtifactUpdateEvent* update) {
  ASSIGN_OR_RETURN(const std::string task_id, StringMember(object, where, "taskId", true));
  ASSIGN_OR_RETURN(const std::string context_id, StringMember(object, where, "contextId"));
  update->set_task_id(task_id);
  update->set_context_id(context_id);
  const Value* artifact = Member(object, "artifact");
  if (artifact == nullptr) return Bad(Path(where, "artifact"), "is required");
  RETURN_IF_ERROR(ArtifactFromJson(*artifact, Path(where, "artifact"), update->mutable_artifact()));
  ASSIGN_OR_RETURN(const std::optional<bool> append, BoolMember(object, where, "append"));
  ASSIGN_OR_RETURN(const std::optional<bool> last_chunk, BoolMember(object, where, "lastChunk"));
  update->set_append(append.value_or(false));
  update->set_last_chunk(last_chunk.value_or(false));
  bool has_metadata = false;
  RETURN_IF_ERROR(MetadataMember(object, where, update->mutable_metadata(), &has_metadata));
  if (!has_metadata) update->clear_metadata();
  return absl::OkStatus();
}

// The kind of a result that does not say: the members only that object has.
std::string InferKind(const Struct& object) {
  if (Member(object, "artifact") != nullptr) return "artifact-update";
  if (Member(object, "taskId") != nullptr && Member(object, "status") != nullptr) {
    return "status-update";
  }
  if (Member(object, "status") != nullptr) return "task";
  if (Member(object, "role") != nullptr) return "message";
  return "";
}

// A 0.3 interface (`url`, `transport`) as a 1.0 one at version 0.3.
void AddInterface(const std::string& url, const std::string& transport, a2apb::AgentCard* card) {
  for (const a2apb::AgentInterface& known : card->supported_interfaces()) {
    if (known.url() == url && known.protocol_binding() == transport &&
        known.protocol_version() == kVersion) {
      return;
    }
  }
  a2apb::AgentInterface* added = card->add_supported_interfaces();
  added->set_url(url);
  added->set_protocol_binding(transport);
  added->set_protocol_version(kVersion);
}

}  // namespace

absl::Status TaskFromJson(const Value& json, absl::string_view where, a2apb::Task* task) {
  ASSIGN_OR_RETURN(const Struct* object, AsObject(json, where));
  RETURN_IF_ERROR(CheckKind(*object, where, "task"));
  ASSIGN_OR_RETURN(const std::string id, StringMember(*object, where, "id", true));
  ASSIGN_OR_RETURN(const std::string context_id, StringMember(*object, where, "contextId"));
  task->set_id(id);
  task->set_context_id(context_id);
  const Value* status = Member(*object, "status");
  if (status == nullptr) return Bad(Path(where, "status"), "is required");
  RETURN_IF_ERROR(StatusFromJson(*status, Path(where, "status"), task->mutable_status()));
  RETURN_IF_ERROR(
      ListMember(*object, where, "artifacts", task->mutable_artifacts(), ArtifactFromJson));
  RETURN_IF_ERROR(ListMember(*object, where, "history", task->mutable_history(), MessageFromJson));
  bool has_metadata = false;
  RETURN_IF_ERROR(MetadataMember(*object, where, task->mutable_metadata(), &has_metadata));
  if (!has_metadata) task->clear_metadata();
  return absl::OkStatus();
}

absl::StatusOr<a2apb::StreamResponse> EventFromJson(absl::string_view result_json) {
  Value parsed;
  if (!google::protobuf::util::JsonStringToMessage(std::string(result_json), &parsed).ok()) {
    return Bad("result", "is not JSON");
  }
  ASSIGN_OR_RETURN(const Struct* object, AsObject(parsed, "result"));
  ASSIGN_OR_RETURN(std::string kind, StringMember(*object, "result", "kind"));
  if (kind.empty()) kind = InferKind(*object);
  a2apb::StreamResponse event;
  if (kind == "task") {
    RETURN_IF_ERROR(TaskFromJson(parsed, "result", event.mutable_task()));
  } else if (kind == "message") {
    RETURN_IF_ERROR(MessageFromJson(parsed, "result", event.mutable_message()));
  } else if (kind == "status-update") {
    RETURN_IF_ERROR(StatusUpdateFromJson(*object, "result", event.mutable_status_update()));
  } else if (kind == "artifact-update") {
    RETURN_IF_ERROR(ArtifactUpdateFromJson(*object, "result", event.mutable_artifact_update()));
  } else {
    return Bad("result.kind", kind.empty()
                                  ? std::string("is missing and the members do not say")
                                  : absl::StrCat("\"", kind,
                                                 "\" is not one of task, message, status-update, "
                                                 "artifact-update"));
  }
  return event;
}

bool IsV03Card(const Struct& card) {
  const Value* interfaces = Member(card, "supportedInterfaces");
  if (interfaces != nullptr && interfaces->has_list_value() &&
      interfaces->list_value().values_size() > 0) {
    return false;  // a 1.0 card, or a hybrid that 1.0 readers read as one
  }
  const Value* url = Member(card, "url");
  return url != nullptr && url->has_string_value();
}

absl::StatusOr<a2apb::AgentCard> CardFromJson(const Struct& json) {
  ASSIGN_OR_RETURN(const std::string protocol_version,
                   StringMember(json, "card", "protocolVersion"));
  if (!protocol_version.empty() && protocol_version != kVersion &&
      !absl::StartsWith(protocol_version, absl::StrCat(kVersion, "."))) {
    return absl::FailedPreconditionError(
        absl::StrCat("a card of A2A ", protocol_version,
                     " (its protocolVersion); the coordinator speaks A2A 0.3 and 1.x"));
  }
  // The members both versions have, read by 1.0's JSON mapping; those 0.3 shapes differently
  // (security schemes and requirements, on the card and its skills) are left out.
  Struct common = json;
  for (const char* member : {"securitySchemes", "security", "supportedInterfaces",
                             "additionalInterfaces", "signatures"}) {
    common.mutable_fields()->erase(member);
  }
  if (auto skills = common.mutable_fields()->find("skills");
      skills != common.mutable_fields()->end() && skills->second.has_list_value()) {
    for (Value& skill : *skills->second.mutable_list_value()->mutable_values()) {
      if (skill.has_struct_value())
        skill.mutable_struct_value()->mutable_fields()->erase("security");
    }
  }
  std::string text;
  (void)google::protobuf::util::MessageToJsonString(common, &text);
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  a2apb::AgentCard card;
  if (const auto parsed = google::protobuf::util::JsonStringToMessage(text, &card, options);
      !parsed.ok()) {
    const std::string why = parsed.message().as_string();
    return Bad("card", absl::StrCat("is not an A2A 0.3 agent card: ",
                                    absl::string_view(why).substr(0, why.find('\n'))));
  }
  ASSIGN_OR_RETURN(const std::string url, StringMember(json, "card", "url", true));
  ASSIGN_OR_RETURN(std::string preferred, StringMember(json, "card", "preferredTransport"));
  AddInterface(url, preferred.empty() ? "JSONRPC" : preferred, &card);
  if (const Value* more = Member(json, "additionalInterfaces"); more != nullptr) {
    if (!more->has_list_value()) return Bad("card.additionalInterfaces", "must be an array");
    for (int i = 0; i < more->list_value().values_size(); ++i) {
      const std::string where = absl::StrCat("card.additionalInterfaces[", i, "]");
      ASSIGN_OR_RETURN(const Struct* entry, AsObject(more->list_value().values(i), where));
      ASSIGN_OR_RETURN(const std::string entry_url, StringMember(*entry, where, "url", true));
      ASSIGN_OR_RETURN(const std::string transport, StringMember(*entry, where, "transport", true));
      AddInterface(entry_url, transport, &card);
    }
  }
  ASSIGN_OR_RETURN(const std::optional<bool> extended,
                   BoolMember(json, "card", "supportsAuthenticatedExtendedCard"));
  if (extended.has_value()) card.mutable_capabilities()->set_extended_agent_card(*extended);
  return card;
}

}  // namespace a2a_protocol::v03
