#include "a2a_protocol/v03_json.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/log.h"
#include "common/proto_json.h"
#include "common/status_macros.h"
#include "google/protobuf/empty.pb.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"

namespace a2a_protocol::v03 {
namespace {

using google::protobuf::ListValue;
using google::protobuf::Struct;
using google::protobuf::Value;

struct MethodInfo {
  Method method;
  const char* name;
  const char* service_method;
  bool streams;
};

constexpr MethodInfo kMethods[] = {
    {Method::kMessageSend, "message/send", "SendMessage", false},
    {Method::kMessageStream, "message/stream", "SendStreamingMessage", true},
    {Method::kTasksGet, "tasks/get", "GetTask", false},
    {Method::kTasksCancel, "tasks/cancel", "CancelTask", false},
    {Method::kTasksResubscribe, "tasks/resubscribe", "SubscribeToTask", true},
    {Method::kPushConfigSet, "tasks/pushNotificationConfig/set", "CreateTaskPushNotificationConfig",
     false},
    {Method::kPushConfigGet, "tasks/pushNotificationConfig/get", "GetTaskPushNotificationConfig",
     false},
    {Method::kPushConfigList, "tasks/pushNotificationConfig/list",
     "ListTaskPushNotificationConfigs", false},
    {Method::kPushConfigDelete, "tasks/pushNotificationConfig/delete",
     "DeleteTaskPushNotificationConfig", false},
    {Method::kGetExtendedAgentCard, "agent/getAuthenticatedExtendedCard", "GetExtendedAgentCard",
     false},
};

const MethodInfo& Info(Method method) {
  for (const MethodInfo& info : kMethods) {
    if (info.method == method) return info;
  }
  return kMethods[0];  // unreachable: every Method is in the table
}

// --- Writing.

Value Obj(Struct s) {
  Value v;
  *v.mutable_struct_value() = std::move(s);
  return v;
}

void Set(Struct* object, const char* name, Value value) {
  (*object->mutable_fields())[name] = std::move(value);
}

// Sets `name` to `value` unless it is empty.
void SetNonEmpty(Struct* object, const char* name, absl::string_view value) {
  if (!value.empty()) Set(object, name, common::JsonString(value));
}

template <typename Strings>
Value StringList(const Strings& strings) {
  Value v;
  ListValue* list = v.mutable_list_value();
  for (const std::string& s : strings) *list->add_values() = common::JsonString(s);
  return v;
}

template <typename Strings>
void SetStrings(Struct* object, const char* name, const Strings& strings) {
  if (!strings.empty()) Set(object, name, StringList(strings));
}

void SetMetadata(Struct* object, const Struct& metadata, bool present) {
  if (present) Set(object, "metadata", Obj(metadata));
}

// `value` as compact JSON with every object's members in name order, so that the same value
// always prints the same bytes (a card's ETag depends on it; Protobuf's printer follows its map's
// hash order).
void PrintTo(const Value& value, std::string* out) {
  switch (value.kind_case()) {
    case Value::kNumberValue: {
      const double d = value.number_value();
      if (!std::isfinite(d)) {
        out->append("null");
      } else if (d == std::floor(d) && std::fabs(d) < 9007199254740992.0) {
        absl::StrAppend(out, static_cast<int64_t>(d));
      } else {
        absl::StrAppend(out, absl::StrFormat("%.17g", d));
      }
      return;
    }
    case Value::kStringValue:
      out->append(common::JsonQuote(value.string_value()));
      return;
    case Value::kBoolValue:
      out->append(value.bool_value() ? "true" : "false");
      return;
    case Value::kStructValue: {
      std::vector<const std::string*> names;
      for (const auto& [name, member] : value.struct_value().fields()) names.push_back(&name);
      std::sort(names.begin(), names.end(),
                [](const std::string* a, const std::string* b) { return *a < *b; });
      out->push_back('{');
      for (size_t i = 0; i < names.size(); ++i) {
        if (i > 0) out->push_back(',');
        out->append(common::JsonQuote(*names[i]));
        out->push_back(':');
        PrintTo(value.struct_value().fields().at(*names[i]), out);
      }
      out->push_back('}');
      return;
    }
    case Value::kListValue: {
      out->push_back('[');
      for (int i = 0; i < value.list_value().values_size(); ++i) {
        if (i > 0) out->push_back(',');
        PrintTo(value.list_value().values(i), out);
      }
      out->push_back(']');
      return;
    }
    default:
      out->append("null");
      return;
  }
}

std::string Print(const Value& value) {
  std::string json;
  PrintTo(value, &json);
  return json;
}

Value PartToJson(const a2apb::Part& part) {
  Struct out;
  Struct metadata = part.metadata();
  switch (part.content_case()) {
    case a2apb::Part::kRaw:
    case a2apb::Part::kUrl: {
      Struct file;
      if (part.content_case() == a2apb::Part::kRaw) {
        Set(&file, "bytes", common::JsonString(absl::Base64Escape(part.raw())));
      } else {
        Set(&file, "uri", common::JsonString(part.url()));
      }
      SetNonEmpty(&file, "name", part.filename());
      SetNonEmpty(&file, "mimeType", part.media_type());
      Set(&out, "kind", common::JsonString("file"));
      Set(&out, "file", Obj(std::move(file)));
      break;
    }
    case a2apb::Part::kData:
      Set(&out, "kind", common::JsonString("data"));
      if (part.data().has_struct_value()) {
        Set(&out, "data", part.data());
      } else {
        Struct wrapped;
        Set(&wrapped, "value", part.data());
        Set(&out, "data", Obj(std::move(wrapped)));
        Set(&metadata, kDataPartCompat, common::JsonBool(true));
      }
      break;
    case a2apb::Part::kText:
    default:
      Set(&out, "kind", common::JsonString("text"));
      Set(&out, "text", common::JsonString(part.text()));
      break;
  }
  if (!metadata.fields().empty()) Set(&out, "metadata", Obj(std::move(metadata)));
  return Obj(std::move(out));
}

template <typename Parts>
Value PartsToJson(const Parts& parts) {
  Value v;
  ListValue* list = v.mutable_list_value();
  for (const a2apb::Part& part : parts) *list->add_values() = PartToJson(part);
  return v;
}

Value ArtifactToJson(const a2apb::Artifact& artifact) {
  Struct out;
  Set(&out, "artifactId", common::JsonString(artifact.artifact_id()));
  SetNonEmpty(&out, "name", artifact.name());
  SetNonEmpty(&out, "description", artifact.description());
  Set(&out, "parts", PartsToJson(artifact.parts()));
  SetMetadata(&out, artifact.metadata(), artifact.has_metadata());
  SetStrings(&out, "extensions", artifact.extensions());
  return Obj(std::move(out));
}

Value StatusToJson(const a2apb::TaskStatus& status) {
  Struct out;
  Set(&out, "state", common::JsonString(StateName(status.state())));
  if (status.has_message()) Set(&out, "message", MessageToJson(status.message()));
  if (status.has_timestamp()) {
    Set(&out, "timestamp",
        common::JsonString(google::protobuf::util::TimeUtil::ToString(status.timestamp())));
  }
  return Obj(std::move(out));
}

bool IsTerminal(a2apb::TaskState state) {
  return state == a2apb::TASK_STATE_COMPLETED || state == a2apb::TASK_STATE_FAILED ||
         state == a2apb::TASK_STATE_CANCELED || state == a2apb::TASK_STATE_REJECTED;
}

bool IsInterrupted(a2apb::TaskState state) {
  return state == a2apb::TASK_STATE_INPUT_REQUIRED || state == a2apb::TASK_STATE_AUTH_REQUIRED;
}

Value StatusUpdateToJson(const a2apb::TaskStatusUpdateEvent& update, bool send_stream) {
  Struct out;
  Set(&out, "kind", common::JsonString("status-update"));
  Set(&out, "taskId", common::JsonString(update.task_id()));
  Set(&out, "contextId", common::JsonString(update.context_id()));
  Set(&out, "status", StatusToJson(update.status()));
  const a2apb::TaskState state = update.status().state();
  Set(&out, "final", common::JsonBool(IsTerminal(state) || (send_stream && IsInterrupted(state))));
  SetMetadata(&out, update.metadata(), update.has_metadata());
  return Obj(std::move(out));
}

Value ArtifactUpdateToJson(const a2apb::TaskArtifactUpdateEvent& update) {
  Struct out;
  Set(&out, "kind", common::JsonString("artifact-update"));
  Set(&out, "taskId", common::JsonString(update.task_id()));
  Set(&out, "contextId", common::JsonString(update.context_id()));
  Set(&out, "artifact", ArtifactToJson(update.artifact()));
  if (update.append()) Set(&out, "append", common::JsonBool(true));
  if (update.last_chunk()) Set(&out, "lastChunk", common::JsonBool(true));
  SetMetadata(&out, update.metadata(), update.has_metadata());
  return Obj(std::move(out));
}

}  // namespace

namespace {

// A security scheme's 0.3 members (0.3 specification section 5.5.2: OpenAPI's shape, told apart
// by `type`).
Value SecuritySchemeV03(const a2apb::SecurityScheme& scheme) {
  Struct out;
  switch (scheme.scheme_case()) {
    case a2apb::SecurityScheme::kHttpAuthSecurityScheme: {
      const auto& http = scheme.http_auth_security_scheme();
      Set(&out, "type", common::JsonString("http"));
      Set(&out, "scheme", common::JsonString(http.scheme()));
      SetNonEmpty(&out, "bearerFormat", http.bearer_format());
      SetNonEmpty(&out, "description", http.description());
      break;
    }
    case a2apb::SecurityScheme::kApiKeySecurityScheme: {
      const auto& key = scheme.api_key_security_scheme();
      Set(&out, "type", common::JsonString("apiKey"));
      Set(&out, "in", common::JsonString(key.location()));
      Set(&out, "name", common::JsonString(key.name()));
      SetNonEmpty(&out, "description", key.description());
      break;
    }
    case a2apb::SecurityScheme::kOauth2SecurityScheme:
      // Its flows read the same in both versions' JSON.
      Set(&out, "type", common::JsonString("oauth2"));
      SetNonEmpty(&out, "description", scheme.oauth2_security_scheme().description());
      if (scheme.oauth2_security_scheme().has_flows()) {
        std::string flows_json;
        Value flows;
        if (google::protobuf::util::MessageToJsonString(scheme.oauth2_security_scheme().flows(),
                                                        &flows_json)
                .ok() &&
            google::protobuf::util::JsonStringToMessage(flows_json, &flows).ok()) {
          Set(&out, "flows", std::move(flows));
        }
      }
      break;
    case a2apb::SecurityScheme::kOpenIdConnectSecurityScheme:
      Set(&out, "type", common::JsonString("openIdConnect"));
      Set(&out, "openIdConnectUrl",
          common::JsonString(scheme.open_id_connect_security_scheme().open_id_connect_url()));
      break;
    case a2apb::SecurityScheme::kMtlsSecurityScheme:
      Set(&out, "type", common::JsonString("mutualTLS"));
      break;
    default:
      break;
  }
  return Obj(std::move(out));
}

}  // namespace

// The 0.3 card: 0.3 specification, section 5.5.
Value CardToJson(const a2apb::AgentCard& card, bool (*usable)(const a2apb::AgentInterface&)) {
  Struct out;
  Set(&out, "name", common::JsonString(card.name()));
  Set(&out, "description", common::JsonString(card.description()));
  Set(&out, "version", common::JsonString(card.version()));
  Set(&out, "protocolVersion", common::JsonString("0.3.0"));
  std::vector<const a2apb::AgentInterface*> interfaces;
  for (const a2apb::AgentInterface& i : card.supported_interfaces()) {
    if (usable == nullptr || usable(i)) interfaces.push_back(&i);
  }
  const a2apb::AgentInterface* preferred = nullptr;
  for (const a2apb::AgentInterface* i : interfaces) {
    if (i->protocol_binding() == "JSONRPC") {
      preferred = i;
      break;
    }
  }
  if (preferred == nullptr && !interfaces.empty()) preferred = interfaces.front();
  Set(&out, "url", common::JsonString(preferred != nullptr ? preferred->url() : ""));
  Set(&out, "preferredTransport",
      common::JsonString(preferred != nullptr ? preferred->protocol_binding() : "JSONRPC"));
  Value additional;
  ListValue* list = additional.mutable_list_value();
  for (const a2apb::AgentInterface* i : interfaces) {
    Struct entry;
    Set(&entry, "url", common::JsonString(i->url()));
    Set(&entry, "transport", common::JsonString(i->protocol_binding()));
    *list->add_values() = Obj(std::move(entry));
  }
  Set(&out, "additionalInterfaces", std::move(additional));
  if (card.has_provider()) {
    Struct provider;
    Set(&provider, "organization", common::JsonString(card.provider().organization()));
    Set(&provider, "url", common::JsonString(card.provider().url()));
    Set(&out, "provider", Obj(std::move(provider)));
  }
  if (card.has_documentation_url())
    Set(&out, "documentationUrl", common::JsonString(card.documentation_url()));
  if (card.has_icon_url()) Set(&out, "iconUrl", common::JsonString(card.icon_url()));
  Struct capabilities;
  const a2apb::AgentCapabilities& c = card.capabilities();
  if (c.has_streaming()) Set(&capabilities, "streaming", common::JsonBool(c.streaming()));
  if (c.has_push_notifications()) {
    Set(&capabilities, "pushNotifications", common::JsonBool(c.push_notifications()));
  }
  Set(&out, "capabilities", Obj(std::move(capabilities)));
  Set(&out, "defaultInputModes", StringList(card.default_input_modes()));
  Set(&out, "defaultOutputModes", StringList(card.default_output_modes()));
  Value skills;
  ListValue* skill_list = skills.mutable_list_value();
  for (const a2apb::AgentSkill& skill : card.skills()) {
    Struct s;
    Set(&s, "id", common::JsonString(skill.id()));
    Set(&s, "name", common::JsonString(skill.name()));
    Set(&s, "description", common::JsonString(skill.description()));
    Set(&s, "tags", StringList(skill.tags()));
    SetStrings(&s, "examples", skill.examples());
    SetStrings(&s, "inputModes", skill.input_modes());
    SetStrings(&s, "outputModes", skill.output_modes());
    *skill_list->add_values() = Obj(std::move(s));
  }
  Set(&out, "skills", std::move(skills));
  if (c.has_extended_agent_card()) {
    Set(&out, "supportsAuthenticatedExtendedCard", common::JsonBool(c.extended_agent_card()));
  }
  return Obj(std::move(out));
}

std::string HybridCardJson(const a2apb::AgentCard& card,
                           bool (*usable)(const a2apb::AgentInterface&)) {
  Value hybrid;
  std::string v10;
  (void)google::protobuf::util::MessageToJsonString(card, &v10);
  (void)google::protobuf::util::JsonStringToMessage(v10, &hybrid);
  Value v03 = CardToJson(card, usable);
  for (const char* name :
       {"protocolVersion", "url", "preferredTransport", "additionalInterfaces", "skills",
        "defaultInputModes", "defaultOutputModes", "name", "description", "version"}) {
    (*hybrid.mutable_struct_value()->mutable_fields())[name] = v03.struct_value().fields().at(name);
  }
  // Capabilities: 1.0's members, which 0.3 reads too (streaming, pushNotifications), kept.
  if (hybrid.struct_value().fields().count("capabilities") == 0) {
    (*hybrid.mutable_struct_value()->mutable_fields())["capabilities"] =
        v03.struct_value().fields().at("capabilities");
  }
  // Security: each scheme carries 0.3's members beside 1.0's (a 0.3 reader picks the scheme by
  // `type`; a 1.0 reader by the one member it knows), and 0.3's `security` sits beside 1.0's
  // securityRequirements.
  auto* fields = hybrid.mutable_struct_value()->mutable_fields();
  if (auto schemes = fields->find("securitySchemes");
      schemes != fields->end() && schemes->second.has_struct_value()) {
    for (auto& [name, scheme] : *schemes->second.mutable_struct_value()->mutable_fields()) {
      const auto found = card.security_schemes().find(name);
      if (found == card.security_schemes().end() || !scheme.has_struct_value()) continue;
      const Value v03_members = SecuritySchemeV03(found->second);
      for (const auto& [member, value] : v03_members.struct_value().fields()) {
        (*scheme.mutable_struct_value()->mutable_fields())[member] = value;
      }
    }
  }
  if (!card.security_requirements().empty()) {
    Value security;
    security.mutable_list_value();
    for (const a2apb::SecurityRequirement& requirement : card.security_requirements()) {
      Struct entry;
      for (const auto& [name, scopes] : requirement.schemes()) {
        Set(&entry, name.c_str(), StringList(scopes.list()));
      }
      *security.mutable_list_value()->add_values() = Obj(std::move(entry));
    }
    (*fields)["security"] = std::move(security);
  }
  return Print(hybrid);
}

std::optional<Method> MethodNamed(absl::string_view name) {
  for (const MethodInfo& info : kMethods) {
    if (name == info.name) return info.method;
  }
  return std::nullopt;
}

absl::string_view MethodName(Method method) { return Info(method).name; }

absl::string_view ServiceMethodName(Method method) { return Info(method).service_method; }

bool Streams(Method method) { return Info(method).streams; }

absl::string_view V03NameOf(absl::string_view service_method) {
  for (const MethodInfo& info : kMethods) {
    if (service_method == info.service_method) return info.name;
  }
  return "";
}

AskedVersion ParseVersion(absl::string_view value) {
  value = absl::StripAsciiWhitespace(value);
  if (value.empty()) return AskedVersion::kUnstated;
  if (value == "0.3" || absl::StartsWith(value, "0.3.")) return AskedVersion::kV03;
  if (value == "1" || value == "1.0" || absl::StartsWith(value, "1.0.")) return AskedVersion::kV10;
  return AskedVersion::kOther;
}

absl::string_view StateName(a2apb::TaskState state) {
  switch (state) {
    case a2apb::TASK_STATE_SUBMITTED:
      return "submitted";
    case a2apb::TASK_STATE_WORKING:
      return "working";
    case a2apb::TASK_STATE_COMPLETED:
      return "completed";
    case a2apb::TASK_STATE_FAILED:
      return "failed";
    case a2apb::TASK_STATE_CANCELED:
      return "canceled";
    case a2apb::TASK_STATE_INPUT_REQUIRED:
      return "input-required";
    case a2apb::TASK_STATE_REJECTED:
      return "rejected";
    case a2apb::TASK_STATE_AUTH_REQUIRED:
      return "auth-required";
    default:
      return "unknown";
  }
}

std::optional<a2apb::TaskState> StateNamed(absl::string_view name) {
  for (a2apb::TaskState state :
       {a2apb::TASK_STATE_SUBMITTED, a2apb::TASK_STATE_WORKING, a2apb::TASK_STATE_COMPLETED,
        a2apb::TASK_STATE_FAILED, a2apb::TASK_STATE_CANCELED, a2apb::TASK_STATE_INPUT_REQUIRED,
        a2apb::TASK_STATE_REJECTED, a2apb::TASK_STATE_AUTH_REQUIRED}) {
    if (name == StateName(state)) return state;
  }
  return std::nullopt;
}

Value MessageToJson(const a2apb::Message& message) {
  Struct out;
  Set(&out, "kind", common::JsonString("message"));
  Set(&out, "messageId", common::JsonString(message.message_id()));
  Set(&out, "role", common::JsonString(message.role() == a2apb::ROLE_AGENT ? "agent" : "user"));
  Set(&out, "parts", PartsToJson(message.parts()));
  SetNonEmpty(&out, "contextId", message.context_id());
  SetNonEmpty(&out, "taskId", message.task_id());
  SetMetadata(&out, message.metadata(), message.has_metadata());
  SetStrings(&out, "extensions", message.extensions());
  SetStrings(&out, "referenceTaskIds", message.reference_task_ids());
  return Obj(std::move(out));
}

Value TaskToJson(const a2apb::Task& task) {
  Struct out;
  Set(&out, "kind", common::JsonString("task"));
  Set(&out, "id", common::JsonString(task.id()));
  Set(&out, "contextId", common::JsonString(task.context_id()));
  Set(&out, "status", StatusToJson(task.status()));
  if (!task.artifacts().empty()) {
    Value artifacts;
    for (const a2apb::Artifact& a : task.artifacts()) {
      *artifacts.mutable_list_value()->add_values() = ArtifactToJson(a);
    }
    Set(&out, "artifacts", std::move(artifacts));
  }
  if (!task.history().empty()) {
    Value history;
    for (const a2apb::Message& m : task.history()) {
      *history.mutable_list_value()->add_values() = MessageToJson(m);
    }
    Set(&out, "history", std::move(history));
  }
  SetMetadata(&out, task.metadata(), task.has_metadata());
  return Obj(std::move(out));
}

Value PushConfigToJson(const a2apb::TaskPushNotificationConfig& config) {
  Struct push;
  SetNonEmpty(&push, "id", config.id());
  Set(&push, "url", common::JsonString(config.url()));
  SetNonEmpty(&push, "token", config.token());
  if (config.has_authentication()) {
    Struct authentication;
    Value schemes;
    if (!config.authentication().scheme().empty()) {
      *schemes.mutable_list_value()->add_values() =
          common::JsonString(config.authentication().scheme());
    } else {
      schemes.mutable_list_value();
    }
    Set(&authentication, "schemes", std::move(schemes));
    SetNonEmpty(&authentication, "credentials", config.authentication().credentials());
    Set(&push, "authentication", Obj(std::move(authentication)));
  }
  Struct out;
  Set(&out, "taskId", common::JsonString(config.task_id()));
  Set(&out, "pushNotificationConfig", Obj(std::move(push)));
  return Obj(std::move(out));
}

absl::StatusOr<std::string> ResultJson(Method method, const google::protobuf::Message& response) {
  switch (method) {
    case Method::kMessageSend:
    case Method::kMessageStream: {
      const auto& send = static_cast<const a2apb::SendMessageResponse&>(response);
      if (send.has_task()) return Print(TaskToJson(send.task()));
      if (send.has_message()) return Print(MessageToJson(send.message()));
      return absl::InternalError("the answer holds neither a task nor a message");
    }
    case Method::kTasksGet:
    case Method::kTasksCancel:
    case Method::kTasksResubscribe:
      return Print(TaskToJson(static_cast<const a2apb::Task&>(response)));
    case Method::kPushConfigSet:
    case Method::kPushConfigGet:
      return Print(
          PushConfigToJson(static_cast<const a2apb::TaskPushNotificationConfig&>(response)));
    case Method::kPushConfigList: {
      const auto& list =
          static_cast<const a2apb::ListTaskPushNotificationConfigsResponse&>(response);
      if (!list.next_page_token().empty()) {
        return absl::ResourceExhaustedError(absl::StrCat("the task has more than ", kListPageSize,
                                                         " push configs; list them with A2A 1.0"));
      }
      Value configs;
      configs.mutable_list_value();
      for (const a2apb::TaskPushNotificationConfig& config : list.configs()) {
        *configs.mutable_list_value()->add_values() = PushConfigToJson(config);
      }
      return Print(configs);
    }
    case Method::kPushConfigDelete:
      return std::string("null");
    case Method::kGetExtendedAgentCard:
      return Print(CardToJson(static_cast<const a2apb::AgentCard&>(response)));
  }
  return absl::InternalError("unknown 0.3 method");
}

std::string EventJson(const a2apb::StreamResponse& event, bool send_stream,
                      const a2apb::Task* opening) {
  if (opening != nullptr && event.has_message()) {
    // As the store keeps it: the status message that completes the task (A2ATasks).
    a2apb::TaskStatusUpdateEvent completed;
    completed.set_task_id(opening->id());
    completed.set_context_id(opening->context_id());
    completed.mutable_status()->set_state(a2apb::TASK_STATE_COMPLETED);
    *completed.mutable_status()->mutable_message() = event.message();
    return Print(StatusUpdateToJson(completed, send_stream));
  }
  switch (event.payload_case()) {
    case a2apb::StreamResponse::kTask:
      return Print(TaskToJson(event.task()));
    case a2apb::StreamResponse::kMessage:
      return Print(MessageToJson(event.message()));
    case a2apb::StreamResponse::kStatusUpdate:
      return Print(StatusUpdateToJson(event.status_update(), send_stream));
    case a2apb::StreamResponse::kArtifactUpdate:
      return Print(ArtifactUpdateToJson(event.artifact_update()));
    default:
      return "{}";
  }
}

std::string ParamsJson(Method method, const google::protobuf::Message& request) {
  Struct params;
  switch (method) {
    case Method::kMessageSend:
    case Method::kMessageStream: {
      const auto& send = static_cast<const a2apb::SendMessageRequest&>(request);
      Set(&params, "message", MessageToJson(send.message()));
      Struct configuration;
      // The gateway reads the whole answer: a unary send waits for it (0.3 gives no default).
      Set(&configuration, "blocking", common::JsonBool(true));
      SetStrings(&configuration, "acceptedOutputModes",
                 send.configuration().accepted_output_modes());
      if (send.configuration().has_history_length()) {
        // 0 asks for none in 1.0 and for all in 0.3: the least 0.3 can ask for is one.
        Set(&configuration, "historyLength",
            common::JsonNumber(std::max(1, send.configuration().history_length())));
      }
      Set(&params, "configuration", Obj(std::move(configuration)));
      SetMetadata(&params, send.metadata(), send.has_metadata());
      break;
    }
    case Method::kTasksGet: {
      const auto& get = static_cast<const a2apb::GetTaskRequest&>(request);
      Set(&params, "id", common::JsonString(get.id()));
      if (get.has_history_length()) {
        Set(&params, "historyLength", common::JsonNumber(std::max(1, get.history_length())));
      }
      break;
    }
    case Method::kTasksCancel: {
      const auto& cancel = static_cast<const a2apb::CancelTaskRequest&>(request);
      Set(&params, "id", common::JsonString(cancel.id()));
      SetMetadata(&params, cancel.metadata(), cancel.has_metadata());
      break;
    }
    case Method::kTasksResubscribe:
      Set(&params, "id",
          common::JsonString(static_cast<const a2apb::SubscribeToTaskRequest&>(request).id()));
      break;
    case Method::kPushConfigSet:
      return Print(
          PushConfigToJson(static_cast<const a2apb::TaskPushNotificationConfig&>(request)));
    case Method::kPushConfigGet: {
      const auto& get = static_cast<const a2apb::GetTaskPushNotificationConfigRequest&>(request);
      Set(&params, "id", common::JsonString(get.task_id()));
      SetNonEmpty(&params, "pushNotificationConfigId", get.id());
      break;
    }
    case Method::kPushConfigList:
      Set(&params, "id",
          common::JsonString(
              static_cast<const a2apb::ListTaskPushNotificationConfigsRequest&>(request)
                  .task_id()));
      break;
    case Method::kPushConfigDelete: {
      const auto& del = static_cast<const a2apb::DeleteTaskPushNotificationConfigRequest&>(request);
      Set(&params, "id", common::JsonString(del.task_id()));
      Set(&params, "pushNotificationConfigId", common::JsonString(del.id()));
      break;
    }
    case Method::kGetExtendedAgentCard:
      break;
  }
  return Print(Obj(std::move(params)));
}

}  // namespace a2a_protocol::v03