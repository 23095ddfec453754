// One JSON rendering of a protobuf message shared by the coordinator and coordctl: the ARIA
// task-state files' shape (compact, proto field names, every scalar field printed). Header only,
// so it adds no link dependency: both sides already link Protobuf, and coordctl links no
// coordinator code.
#ifndef COMMON_PROTO_JSON_H_
#define COMMON_PROTO_JSON_H_

#include <string>

#include "google/protobuf/message.h"
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

}  // namespace common

#endif  // COMMON_PROTO_JSON_H_
