#include "coordctl/import_json.h"

#include <cmath>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/proto_json.h"

namespace coordctl {

using google::protobuf::Struct;
using google::protobuf::Value;

namespace {

absl::Status WrongType(const std::string& name, const char* want, const Value& v) {
  return absl::InvalidArgumentError(
      absl::StrCat(name, " must be ", want, ", not ", common::JsonKindName(v)));
}

}  // namespace

const Value* JsonObject::Find(absl::string_view key) const {
  auto it = object_.fields().find(std::string(key));
  return it == object_.fields().end() ? nullptr : &it->second;
}

bool JsonObject::Has(absl::string_view key) const { return Find(key) != nullptr; }

std::string JsonObject::Name(absl::string_view key) const {
  return where_.empty() ? std::string(key) : absl::StrCat(where_, ".", key);
}

absl::StatusOr<std::optional<std::string>> JsonObject::String(absl::string_view key, bool required,
                                                              bool null_ok) const {
  const Value* v = Find(key);
  if (v == nullptr || (null_ok && v->has_null_value())) {
    if (required) return absl::InvalidArgumentError(absl::StrCat(Name(key), " is missing"));
    return std::optional<std::string>();
  }
  if (v->kind_case() != Value::kStringValue) {
    return WrongType(Name(key), "a string", *v);
  }
  return std::optional<std::string>(v->string_value());
}

absl::StatusOr<std::optional<int64_t>> JsonObject::Integer(absl::string_view key, bool required,
                                                           int64_t min, int64_t max,
                                                           bool null_ok) const {
  const Value* v = Find(key);
  if (v == nullptr || (null_ok && v->has_null_value())) {
    if (required) return absl::InvalidArgumentError(absl::StrCat(Name(key), " is missing"));
    return std::optional<int64_t>();
  }
  if (v->kind_case() != Value::kNumberValue) return WrongType(Name(key), "a number", *v);
  const double d = v->number_value();
  if (!std::isfinite(d) || d != std::floor(d) || d < static_cast<double>(min) ||
      d > static_cast<double>(max)) {
    return absl::InvalidArgumentError(
        absl::StrCat(Name(key), " must be a whole number from ", min, " to ", max));
  }
  return std::optional<int64_t>(static_cast<int64_t>(d));
}

absl::StatusOr<std::optional<std::vector<std::string>>> JsonObject::Strings(absl::string_view key,
                                                                            bool required) const {
  const Value* v = Find(key);
  if (v == nullptr) {
    if (required) return absl::InvalidArgumentError(absl::StrCat(Name(key), " is missing"));
    return std::optional<std::vector<std::string>>();
  }
  if (v->kind_case() != Value::kListValue) return WrongType(Name(key), "an array", *v);
  std::vector<std::string> out;
  for (int i = 0; i < v->list_value().values_size(); ++i) {
    const Value& item = v->list_value().values(i);
    if (item.kind_case() != Value::kStringValue) {
      return WrongType(absl::StrCat(Name(key), "[", i, "]"), "a string", item);
    }
    out.push_back(item.string_value());
  }
  return std::optional<std::vector<std::string>>(std::move(out));
}

absl::StatusOr<const Struct*> JsonObject::Object(absl::string_view key, bool required) const {
  const Value* v = Find(key);
  if (v == nullptr) {
    if (required) return absl::InvalidArgumentError(absl::StrCat(Name(key), " is missing"));
    return static_cast<const Struct*>(nullptr);
  }
  if (v->kind_case() != Value::kStructValue) return WrongType(Name(key), "an object", *v);
  return &v->struct_value();
}

absl::Status ValidatePathSafeId(absl::string_view what, absl::string_view id) {
  if (id.empty()) return absl::InvalidArgumentError(absl::StrCat(what, " is empty"));
  if (id.size() > 256) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " is ", id.size(), " bytes long; ids are at most 256"));
  }
  for (const char c : id) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " \"", absl::CEscape(id), "\" has a control character"));
    }
  }
  if (absl::StrContains(id, "/") || absl::StrContains(id, "\\") || id == "." || id == "..") {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " \"", id, "\" would name a path outside its own (a path separator, . or ..)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<absl::Time> ParseIsoTime(absl::string_view what, absl::string_view text) {
  absl::Time t;
  std::string error;
  if (absl::ParseTime(absl::RFC3339_full, text, &t, &error)) return t;
  // Python's isoformat() of a naive datetime has no offset: read it as UTC.
  if (absl::ParseTime("%Y-%m-%d%ET%H:%M:%E*S", text, absl::UTCTimeZone(), &t, &error)) return t;
  return absl::InvalidArgumentError(
      absl::StrCat(what, " is not an ISO 8601 time: \"", absl::CEscape(text.substr(0, 40)), "\""));
}

google::protobuf::Timestamp ToTimestamp(absl::Time t) {
  google::protobuf::Timestamp ts;
  const int64_t seconds = absl::ToUnixSeconds(t);
  ts.set_seconds(seconds);
  ts.set_nanos(static_cast<int32_t>(absl::ToInt64Nanoseconds(t - absl::FromUnixSeconds(seconds))));
  return ts;
}

absl::Time FromTimestamp(const google::protobuf::Timestamp& ts) {
  return absl::FromUnixSeconds(ts.seconds()) + absl::Nanoseconds(ts.nanos());
}

std::string JsIsoTime(absl::Time t) {
  return absl::FormatTime("%Y-%m-%d%ET%H:%M:%E3SZ", t, absl::UTCTimeZone());
}

std::string PythonIsoTime(absl::Time t) {
  const absl::Time whole = absl::FromUnixSeconds(absl::ToUnixSeconds(t));
  const char* format = t == whole ? "%Y-%m-%d%ET%H:%M:%S" : "%Y-%m-%d%ET%H:%M:%E6S";
  return absl::FormatTime(format, t, absl::UTCTimeZone());
}

}  // namespace coordctl
