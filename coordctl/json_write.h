// Writes a google.protobuf.Value as JSON text laid out as the tools we replace wrote their state
// files: compact, as JavaScript's JSON.stringify (Arial), or indented by two, as Python's
// json.dump(indent=2) (MAHABHARATHA). Protobuf's own printer sorts no keys and knows neither
// layout; this one puts the keys a format names first, in its order, so an exported file reads
// like one the tool wrote. Numbers that are whole print without a fraction. Python's one-line
// json.dumps layout (JSONL logs) is the third.
#ifndef COORDCTL_JSON_WRITE_H_
#define COORDCTL_JSON_WRITE_H_

#include <string>
#include <vector>

#include "google/protobuf/struct.pb.h"

namespace coordctl {

// `value` as JSON. `indent` 0 is compact; otherwise each nested line is indented by `indent`
// more spaces and keys are followed by ": ", as Python writes it (an empty object or array
// stays "{}" or "[]"). In every object, the keys listed in `key_order` come first in that
// order, then the others by name. Ends without a newline.
std::string WriteJson(const google::protobuf::Value& value, int indent,
                      const std::vector<std::string>& key_order);

// `value` on one line as Python's json.dumps writes it by default: ", " between items and ": "
// after keys (MAHABHARATHA's JSONL logs). Keys ordered as in WriteJson.
std::string WriteJsonLine(const google::protobuf::Value& value,
                          const std::vector<std::string>& key_order);

}  // namespace coordctl

#endif  // COORDCTL_JSON_WRITE_H_
