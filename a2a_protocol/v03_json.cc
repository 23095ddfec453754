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

// Push configs a 0.3 list reads in one page: the most the store gives (A2APush), more than a
// task may have by default (16).
constexpr int kListPageSize = 100;
// The metadata flag of a data part that wraps a value other than an object (0.3 data parts are
// objects only), as the JavaScript SDK's compatibility layer writes it.
constexpr char kDataPartCompat[] = "data_part_compat";

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
  return Print(hybrid);
}

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

}  // namespace a2a_protocol::v03
