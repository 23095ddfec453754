// Read-only jq-style paths into a JSON document (`a.b`, `failures[0].error`, `log[-1]`) and
// jq's pretty layout, for `coordctl task get` and `task state --pretty`: callers of the ARIA
// scripts passed such paths to `aria_task_get`, which handed them to jq. Only paths are taken;
// anything else jq would evaluate (pipes, functions, `env`) is refused. Values go through
// Protobuf's JSON mapping (google.protobuf.Value); there is no hand-written parser here.
#ifndef COORDCTL_JSON_PATH_H_
#define COORDCTL_JSON_PATH_H_

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace coordctl {

// One step of a path: an object key or an array index (negative counts from the end).
using JsonPathStep = std::variant<std::string, int64_t>;

// Parses `name`, `name.sub`, `name[0]`, `name[-1].sub`, with an optional leading dot. Keys are
// letters, digits and underscores, not starting with a digit. INVALID_ARGUMENT otherwise,
// naming the offending character.
[[nodiscard]] absl::StatusOr<std::vector<JsonPathStep>> ParseJsonPath(absl::string_view path);

// What `jq -r '.<path> // empty'` prints for `json`, without its final newline: strings raw,
// numbers as jq writes them, true, objects and arrays as compact JSON. nullopt where jq prints
// nothing: a missing key or index, null, false, or a step into a non-container.
// INVALID_ARGUMENT when `json` is not JSON.
[[nodiscard]] absl::StatusOr<std::optional<std::string>> ReadJsonPath(
    absl::string_view json, const std::vector<JsonPathStep>& path);

// `json` (valid JSON text, as coordctl produces it) re-laid out as `jq .` prints it: two-space
// indents, `"key": value`, empty containers as [] and {}, a final newline. Strings, numbers and
// key order are kept as they are.
std::string PrettyJson(absl::string_view json);

}  // namespace coordctl

#endif  // COORDCTL_JSON_PATH_H_
