// JSON helpers shared by the coordinator, the A2A protocol library and coordctl: one rendering of a
// protobuf message (the ARIA task-state files' shape: compact, proto field names, every scalar
// field printed), builders of JSON values, and the name of a JSON value's kind for error messages.
// Header only, so it adds no link dependency: both sides already link Protobuf, and coordctl links
// no coordinator code.
#ifndef COMMON_PROTO_JSON_H_
#define COMMON_PROTO_JSON_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace common {

// `message` as compact JSON with proto field names and every scalar field printed (defaults
// included). "" when Protobuf refuses it, which a well-formed message never makes it do.
inline std::string CompactJson(const google::protobuf::Message& message) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(message, &json, options);
  return json;
}

// JSON values, for building a document to print.
inline google::protobuf::Value JsonString(absl::string_view s) {
  google::protobuf::Value v;
  v.set_string_value(std::string(s));
  return v;
}

inline google::protobuf::Value JsonNumber(double d) {
  google::protobuf::Value v;
  v.set_number_value(d);
  return v;
}

inline google::protobuf::Value JsonBool(bool b) {
  google::protobuf::Value v;
  v.set_bool_value(b);
  return v;
}

inline google::protobuf::Value JsonNull() {
  google::protobuf::Value v;
  v.set_null_value(google::protobuf::NULL_VALUE);
  return v;
}

inline google::protobuf::Value JsonStrings(const std::vector<std::string>& list) {
  google::protobuf::Value v;
  auto* values = v.mutable_list_value()->mutable_values();
  for (const std::string& s : list) *values->Add() = JsonString(s);
  return v;
}

// What a JSON value is, as an error message names it: "a string", "an object", "null", ...
inline const char* JsonKindName(const google::protobuf::Value& v) {
  switch (v.kind_case()) {
    case google::protobuf::Value::kNullValue:
      return "null";
    case google::protobuf::Value::kNumberValue:
      return "a number";
    case google::protobuf::Value::kStringValue:
      return "a string";
    case google::protobuf::Value::kBoolValue:
      return "a boolean";
    case google::protobuf::Value::kStructValue:
      return "an object";
    case google::protobuf::Value::kListValue:
      return "an array";
    default:
      return "nothing";
  }
}

}  // namespace common

#endif  // COMMON_PROTO_JSON_H_
