// The ARIA task-state scripts' JSON state file (/tmp/aria-task-<id>.json) and the coordinator's
// TaskState, both ways: `coordctl import aria` reads files with it and `coordctl task state`
// prints the same shape, so tools written against the files keep working. Parsing goes through
// Protobuf's JSON mapping (a google.protobuf.Struct for the whole object, then the known keys
// into AriaStateFile); there is no hand-written JSON parser here.
#ifndef COORDCTL_ARIA_STATE_JSON_H_
#define COORDCTL_ARIA_STATE_JSON_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "coordinator/v1/task_state.pb.h"

namespace coordctl {

// Largest state file `import aria` reads (1 MiB). The scripts' files are a few KiB.
inline constexpr size_t kMaxAriaStateFileBytes = 1 << 20;

// Reads the regular file at `path` when it is at most `max_bytes` long. INVALID_ARGUMENT for a
// directory, device or FIFO; RESOURCE_EXHAUSTED when larger; NOT_FOUND when missing.
[[nodiscard]] absl::StatusOr<std::string> ReadBoundedFile(const std::string& path,
                                                          size_t max_bytes);

// Parses the text of one state file. Known keys: task_id, task_desc, attempt_count,
// model_tier (default 1), created_at, failures, escalation_log, quality_gate_results, blocked,
// blocked_at, block_reason; times are Unix seconds (strings or numbers). Every other top-level
// key becomes a custom field: strings as they are, numbers and booleans as their JSON text,
// arrays and objects as compact JSON, nulls dropped. INVALID_ARGUMENT saying what is wrong.
[[nodiscard]] absl::StatusOr<coordinator::v1::TaskState> ParseAriaStateJson(absl::string_view json);

// The state as a state file would hold it: known keys first in the scripts' order, then the
// custom fields by name (a value of only digits is written as a number, as the scripts' `set`
// did). blocked, blocked_at and block_reason appear only for a blocked task, "forced" only on
// forced escalations. Ends with a newline.
std::string FormatAriaStateJson(const coordinator::v1::TaskState& state);

}  // namespace coordctl

#endif  // COORDCTL_ARIA_STATE_JSON_H_
