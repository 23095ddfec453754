// Typed reads of the JSON objects the state files of the tools we replace hold, for the
// importers (arial_state.h, mahabharatha_state.h): each read names the key and where it is, so
// a bad file gets an error a person can act on ("workstreams[2].status must be a string").
// The objects are google.protobuf.Struct values made by Protobuf's JSON parser.
#ifndef COORDCTL_IMPORT_JSON_H_
#define COORDCTL_IMPORT_JSON_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/proto_json.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/timestamp.pb.h"

namespace coordctl {

// One JSON object and where it sits in its file ("" for the top level).
class JsonObject {
 public:
  JsonObject(const google::protobuf::Struct& object, std::string where)
      : object_(object), where_(std::move(where)) {}

  bool Has(absl::string_view key) const;
  // The key as a person reads it: "workstreams[2].status".
  std::string Name(absl::string_view key) const;

  // A string; nullopt when absent (or null, when `null_ok`). INVALID_ARGUMENT for another type,
  // or when absent and `required`.
  [[nodiscard]] absl::StatusOr<std::optional<std::string>> String(absl::string_view key,
                                                                  bool required,
                                                                  bool null_ok = false) const;
  // A whole number from `min` to `max` (a number without a fraction).
  [[nodiscard]] absl::StatusOr<std::optional<int64_t>> Integer(absl::string_view key, bool required,
                                                               int64_t min, int64_t max,
                                                               bool null_ok = false) const;
  // An array of strings.
  [[nodiscard]] absl::StatusOr<std::optional<std::vector<std::string>>> Strings(
      absl::string_view key, bool required) const;
  // An object.
  [[nodiscard]] absl::StatusOr<const google::protobuf::Struct*> Object(absl::string_view key,
                                                                       bool required) const;

  const google::protobuf::Struct& object() const { return object_; }
  const std::string& where() const { return where_; }

 private:
  const google::protobuf::Value* Find(absl::string_view key) const;

  const google::protobuf::Struct& object_;
  std::string where_;
};

// OK when `id` can name an item and, in a path or a branch, only that item: 1 to 256 bytes, no
// control character, no '/' or '\\', not "." or "..". `what` names it in the error.
[[nodiscard]] absl::Status ValidatePathSafeId(absl::string_view what, absl::string_view id);

// An ISO 8601 / RFC 3339 time ("2024-01-15T10:30:05Z", with a fraction or an offset). A time
// without an offset (Python's datetime.isoformat() of a naive time) is read as UTC.
[[nodiscard]] absl::StatusOr<absl::Time> ParseIsoTime(absl::string_view what,
                                                      absl::string_view text);

google::protobuf::Timestamp ToTimestamp(absl::Time t);
absl::Time FromTimestamp(const google::protobuf::Timestamp& ts);

// JavaScript's Date.prototype.toISOString: "2024-01-15T10:30:05.000Z".
std::string JsIsoTime(absl::Time t);
// Python's datetime.isoformat() of a naive time: "2026-01-31T10:05:00" or, with
// microseconds, "2026-01-31T10:05:00.123456" (UTC).
std::string PythonIsoTime(absl::Time t);

// Fields of a Struct, for reading what an import keeps and writing what an export gives back.
inline void SetField(google::protobuf::Struct* s, const std::string& key,
                     google::protobuf::Value v) {
  (*s->mutable_fields())[key] = std::move(v);
}
// The value at `key`, or nullptr when there is none.
inline const google::protobuf::Value* FindField(const google::protobuf::Struct& s,
                                                const std::string& key) {
  auto it = s.fields().find(key);
  return it == s.fields().end() ? nullptr : &it->second;
}
// The string at `key`, or "" when it is missing or not a string.
inline std::string StringField(const google::protobuf::Struct& s, const std::string& key) {
  const google::protobuf::Value* v = FindField(s, key);
  return v != nullptr && v->kind_case() == google::protobuf::Value::kStringValue ? v->string_value()
                                                                                 : "";
}
inline google::protobuf::Value StructValue(google::protobuf::Struct s) {
  google::protobuf::Value v;
  *v.mutable_struct_value() = std::move(s);
  return v;
}

// JSON values, for building what an export writes (common/proto_json.h).
using common::JsonBool;
using common::JsonNull;
using common::JsonNumber;
using common::JsonString;
using common::JsonStrings;

}  // namespace coordctl

#endif  // COORDCTL_IMPORT_JSON_H_
