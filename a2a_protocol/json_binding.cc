// The JSON bindings' envelopes and error mapping (see json_binding.h).
#include "a2a_protocol/json_binding.h"

#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include "a2a_protocol/errors.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/log.h"
#include "google/protobuf/any.pb.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "google/rpc/error_details.pb.h"

namespace a2a_protocol {
namespace {

namespace pbu = google::protobuf::util;
using google::protobuf::Struct;
using google::protobuf::Value;

// One A2A error on every binding.
struct A2AErrorCode {
  const char* reason;
  int json_rpc_code;
  absl::StatusCode code;
};

constexpr A2AErrorCode kA2AErrors[] = {
    {kTaskNotFound, -32001, absl::StatusCode::kNotFound},
    {kTaskNotCancelable, -32002, absl::StatusCode::kFailedPrecondition},
    {kPushNotificationNotSupported, -32003, absl::StatusCode::kFailedPrecondition},
    {kUnsupportedOperation, -32004, absl::StatusCode::kFailedPrecondition},
    {kContentTypeNotSupported, -32005, absl::StatusCode::kInvalidArgument},
    {kInvalidAgentResponse, -32006, absl::StatusCode::kInternal},
    {kExtendedAgentCardNotConfigured, -32007, absl::StatusCode::kFailedPrecondition},
    {kExtensionSupportRequired, -32008, absl::StatusCode::kFailedPrecondition},
    {kVersionNotSupported, -32009, absl::StatusCode::kFailedPrecondition},
};

// google.rpc's HTTP mapping of the canonical codes, indexed by code.
constexpr int kHttpStatusOfCode[] = {
    200,  // OK
    499,  // CANCELLED
    500,  // UNKNOWN
    400,  // INVALID_ARGUMENT
    504,  // DEADLINE_EXCEEDED
    404,  // NOT_FOUND
    409,  // ALREADY_EXISTS
    403,  // PERMISSION_DENIED
    429,  // RESOURCE_EXHAUSTED
    400,  // FAILED_PRECONDITION
    409,  // ABORTED
    400,  // OUT_OF_RANGE
    501,  // UNIMPLEMENTED
    500,  // INTERNAL
    503,  // UNAVAILABLE
    500,  // DATA_LOSS
    401,  // UNAUTHENTICATED
};
constexpr int kLastCode = 16;

std::string CodeName(absl::StatusCode code) { return absl::StatusCodeToString(code); }

std::optional<absl::StatusCode> CodeNamed(absl::string_view name) {
  for (int i = 0; i <= kLastCode; ++i) {
    const auto code = static_cast<absl::StatusCode>(i);
    if (CodeName(code) == name) return code;
  }
  return std::nullopt;
}

absl::StatusCode CodeOfHttpStatus(int http_status) {
  switch (http_status) {
    case 400:
      return absl::StatusCode::kInvalidArgument;
    case 401:
      return absl::StatusCode::kUnauthenticated;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kNotFound;
    case 409:
      return absl::StatusCode::kAborted;
    case 429:
      return absl::StatusCode::kResourceExhausted;
    case 499:
      return absl::StatusCode::kCancelled;
    case 501:
      return absl::StatusCode::kUnimplemented;
    case 503:
      return absl::StatusCode::kUnavailable;
    case 504:
      return absl::StatusCode::kDeadlineExceeded;
    default:
      if (http_status >= 500 && http_status < 600) return absl::StatusCode::kInternal;
      if (http_status >= 400 && http_status < 500) return absl::StatusCode::kFailedPrecondition;
      return absl::StatusCode::kUnknown;
  }
}

const A2AErrorCode* A2AErrorOf(const absl::Status& status) {
  const std::optional<std::string> reason = Reason(status);
  if (!reason.has_value()) return nullptr;
  for (const A2AErrorCode& error : kA2AErrors) {
    if (*reason == error.reason) return &error;
  }
  return nullptr;
}

// The payloads of `status` as a JSON array of ProtoJSON Any objects; a payload whose type this
// binary does not know is left out (Protobuf cannot print it).
std::string DetailsJson(const absl::Status& status, const google::rpc::ErrorInfo* extra) {
  std::string out = "[";
  bool first = true;
  const auto add = [&](const google::protobuf::Any& any) {
    std::string json;
    if (!pbu::MessageToJsonString(any, &json).ok()) return;
    absl::StrAppend(&out, first ? "" : ",", json);
    first = false;
  };
  status.ForEachPayload([&](absl::string_view type_url, const absl::Cord& value) {
    google::protobuf::Any any;
    any.set_type_url(std::string(type_url));
    any.set_value(std::string(value));
    add(any);
  });
  if (extra != nullptr) {
    google::protobuf::Any any;
    any.PackFrom(*extra);
    add(any);
  }
  out += "]";
  return out;
}

// Protobuf 3.21 has a Status and a StringPiece of its own.
google::protobuf::StringPiece Piece(absl::string_view text) {
  return google::protobuf::StringPiece(text.data(), text.size());
}

absl::Status ParseValue(absl::string_view json, Value* value) {
  const auto parsed = pbu::JsonStringToMessage(Piece(json), value);
  if (parsed.ok()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("not JSON: ", parsed.message().ToString()));
}

const Value* Field(const Struct& object, const char* name) {
  auto it = object.fields().find(name);
  return it == object.fields().end() ? nullptr : &it->second;
}

// The A2A reason an error's details carry ({"@type": ErrorInfo, "domain": a2a-protocol.org}),
// and the code a kStatusCodeDomain ErrorInfo names.
void ReadDetails(const Value* details, std::optional<std::string>* a2a_reason,
                 std::optional<absl::StatusCode>* named_code) {
  if (details == nullptr || !details->has_list_value()) return;
  for (const Value& entry : details->list_value().values()) {
    if (!entry.has_struct_value()) continue;
    const Struct& object = entry.struct_value();
    const Value* type = Field(object, "@type");
    const Value* reason = Field(object, "reason");
    const Value* domain = Field(object, "domain");
    if (type == nullptr || type->string_value() != common::kErrorInfoTypeUrl || reason == nullptr ||
        domain == nullptr) {
      continue;
    }
    if (domain->string_value() == kErrorDomain && !a2a_reason->has_value()) {
      *a2a_reason = reason->string_value();
    } else if (domain->string_value() == kStatusCodeDomain) {
      *named_code = CodeNamed(reason->string_value());
    }
  }
}

// A status with `code` and `message`, carrying `a2a_reason` when it names an A2A error (whose
// own code then wins, as the mapping table fixes it).
absl::Status StatusWith(absl::StatusCode code, std::string message,
                        const std::optional<std::string>& a2a_reason) {
  if (message.empty()) message = "no message";
  if (a2a_reason.has_value()) {
    for (const A2AErrorCode& error : kA2AErrors) {
      if (*a2a_reason == error.reason) return Error(error.code, error.reason, message);
    }
  }
  if (code == absl::StatusCode::kOk) code = absl::StatusCode::kUnknown;
  return absl::Status(code, message);
}

}  // namespace

std::string ToJson(const google::protobuf::Message& message) {
  std::string json;
  if (!pbu::MessageToJsonString(message, &json).ok()) return "{}";
  return json;
}

absl::Status FromJson(absl::string_view json, google::protobuf::Message* message) {
  pbu::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  const auto parsed = pbu::JsonStringToMessage(Piece(json), message, options);
  if (parsed.ok()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("not a valid ", message->GetDescriptor()->name(),
                                                 ": ", parsed.message().ToString()));
}

int JsonRpcCode(const absl::Status& status) {
  if (const A2AErrorCode* error = A2AErrorOf(status)) return error->json_rpc_code;
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return kJsonRpcInvalidParams;
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kDataLoss:
      return kJsonRpcInternalError;
    default:
      return kJsonRpcServerError;
  }
}

std::string JsonRpcErrorObject(const absl::Status& status, std::optional<int> given_code) {
  const int code = given_code.value_or(JsonRpcCode(status));
  google::rpc::ErrorInfo named;
  if (code == kJsonRpcServerError) {
    named.set_reason(CodeName(status.code()));
    named.set_domain(kStatusCodeDomain);
  }
  return absl::StrCat(
      "{\"code\":", code, ",\"message\":", common::JsonQuote(status.message()),
      ",\"data\":", DetailsJson(status, code == kJsonRpcServerError ? &named : nullptr), "}");
}

std::string JsonRpcResult(absl::string_view id_json, absl::string_view result_json) {
  return absl::StrCat("{\"jsonrpc\":\"2.0\",\"id\":", id_json, ",\"result\":", result_json, "}");
}

std::string JsonRpcError(absl::string_view id_json, const absl::Status& status,
                         std::optional<int> code) {
  return absl::StrCat("{\"jsonrpc\":\"2.0\",\"id\":", id_json,
                      ",\"error\":", JsonRpcErrorObject(status, code), "}");
}

absl::StatusOr<JsonRpcRequest> ParseJsonRpcRequest(absl::string_view body, int* code,
                                                   std::string* id_json) {
  *id_json = "null";
  Value root;
  if (absl::Status parsed = ParseValue(body, &root); !parsed.ok()) {
    *code = kJsonRpcParseError;
    return parsed;
  }
  *code = kJsonRpcInvalidRequest;
  if (root.has_list_value()) {
    return absl::InvalidArgumentError(
        "batch requests are not supported: send one request object per POST");
  }
  if (!root.has_struct_value()) {
    return absl::InvalidArgumentError("a JSON-RPC request is a JSON object");
  }
  const Struct& object = root.struct_value();
  JsonRpcRequest request;
  if (const Value* id = Field(object, "id")) {
    if (!id->has_string_value() && !id->has_number_value() && !id->has_null_value()) {
      return absl::InvalidArgumentError("\"id\" must be a string, a number or null");
    }
    request.id_json = ToJson(*id);
    request.has_id = true;
    *id_json = request.id_json;
  }
  const Value* version = Field(object, "jsonrpc");
  if (version == nullptr || version->string_value() != "2.0") {
    return absl::InvalidArgumentError("\"jsonrpc\" must be \"2.0\"");
  }
  const Value* method = Field(object, "method");
  if (method == nullptr || !method->has_string_value() || method->string_value().empty()) {
    return absl::InvalidArgumentError("\"method\" must be a non-empty string");
  }
  request.method = method->string_value();
  if (const Value* params = Field(object, "params");
      params != nullptr && !params->has_null_value()) {
    if (!params->has_struct_value()) {
      *code = kJsonRpcInvalidParams;
      return absl::InvalidArgumentError("\"params\" must be an object");
    }
    request.params_json = ToJson(params->struct_value());
  }
  return request;
}

absl::Status StatusFromJsonRpcError(absl::string_view error_object_json) {
  Value root;
  if (!ParseValue(error_object_json, &root).ok() || !root.has_struct_value()) {
    return InvalidAgentResponse("a JSON-RPC error that is not an object");
  }
  const Struct& error = root.struct_value();
  const Value* code_value = Field(error, "code");
  const Value* message = Field(error, "message");
  std::optional<std::string> reason;
  std::optional<absl::StatusCode> named_code;
  ReadDetails(Field(error, "data"), &reason, &named_code);
  // A code is a JSON number the agent chose: one that is no integer an int holds (1e34, 1.5,
  // a string) names no known error, like an absent one; converting it would be undefined.
  int code = 0;
  if (code_value != nullptr && code_value->has_number_value()) {
    const double number = code_value->number_value();
    if (std::isfinite(number) && number == std::trunc(number) &&
        number >= std::numeric_limits<int>::min() && number <= std::numeric_limits<int>::max()) {
      code = static_cast<int>(number);
    }
  }
  for (const A2AErrorCode& a2a : kA2AErrors) {
    if (code == a2a.json_rpc_code) reason = a2a.reason;
  }
  absl::StatusCode status_code = absl::StatusCode::kUnknown;
  switch (code) {
    case kJsonRpcParseError:
    case kJsonRpcInvalidRequest:
    case kJsonRpcInvalidParams:
      status_code = absl::StatusCode::kInvalidArgument;
      break;
    case kJsonRpcMethodNotFound:
      status_code = absl::StatusCode::kUnimplemented;
      break;
    case kJsonRpcInternalError:
      status_code = absl::StatusCode::kInternal;
      break;
    default:
      if (named_code.has_value()) status_code = *named_code;
  }
  return StatusWith(status_code, message == nullptr ? "" : message->string_value(), reason);
}

absl::StatusOr<std::string> JsonRpcResultOf(absl::string_view body) {
  Value root;
  if (!ParseValue(body, &root).ok() || !root.has_struct_value()) {
    return InvalidAgentResponse("the JSON-RPC response is not a JSON object");
  }
  const Struct& object = root.struct_value();
  if (const Value* error = Field(object, "error")) return StatusFromJsonRpcError(ToJson(*error));
  if (const Value* result = Field(object, "result")) return ToJson(*result);
  return InvalidAgentResponse("the JSON-RPC response has neither \"result\" nor \"error\"");
}

int HttpStatusCode(const absl::Status& status) {
  const int code = static_cast<int>(status.code());
  if (code < 0 || code > kLastCode) return 500;
  return kHttpStatusOfCode[code];
}

std::string HttpErrorBody(const absl::Status& status, int http_status) {
  return absl::StrCat(
      "{\"error\":{\"code\":", http_status != 0 ? http_status : HttpStatusCode(status),
      ",\"status\":", common::JsonQuote(CodeName(status.code())),
      ",\"message\":", common::JsonQuote(status.message()),
      ",\"details\":", DetailsJson(status, nullptr), "}}");
}

absl::Status StatusFromHttpError(int http_status, absl::string_view body) {
  absl::StatusCode code = CodeOfHttpStatus(http_status);
  std::string message = absl::StrCat("HTTP ", http_status);
  std::optional<std::string> reason;
  Value root;
  if (ParseValue(body, &root).ok() && root.has_struct_value()) {
    const Value* error = Field(root.struct_value(), "error");
    if (error != nullptr && error->has_struct_value()) {
      const Struct& object = error->struct_value();
      if (const Value* name = Field(object, "status"); name != nullptr) {
        if (std::optional<absl::StatusCode> named = CodeNamed(name->string_value())) code = *named;
      }
      if (const Value* text = Field(object, "message"); text != nullptr) {
        message = absl::StrCat(message, ": ", text->string_value());
      }
      std::optional<absl::StatusCode> unused;
      ReadDetails(Field(object, "details"), &reason, &unused);
    }
  }
  return StatusWith(code, std::move(message), reason);
}

std::string SseEvent(absl::string_view data, absl::string_view event, absl::string_view id) {
  return absl::StrCat(id.empty() ? "" : absl::StrCat("id: ", id, "\n"),
                      event.empty() ? "" : absl::StrCat("event: ", event, "\n"), "data: ", data,
                      "\n\n");
}

absl::Status SseParser::Line(absl::string_view line) {
  if (line.front() == ':') return absl::OkStatus();  // a comment (keep-alive)
  absl::string_view field = line;
  absl::string_view value;
  if (const size_t colon = line.find(':'); colon != absl::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field != "data") return absl::OkStatus();  // event, id, retry: not used by A2A
  if (has_data_) data_ += '\n';
  data_.append(value.data(), value.size());
  has_data_ = true;
  if (data_.size() > max_event_bytes_) return TooLarge();
  return absl::OkStatus();
}

absl::Status SseParser::TooLarge() const {
  return absl::ResourceExhaustedError(
      absl::StrCat("a server-sent event exceeds ", max_event_bytes_, " bytes"));
}

}  // namespace a2a_protocol
