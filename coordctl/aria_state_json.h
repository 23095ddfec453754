// The ARIA task-state scripts' JSON state file (/tmp/aria-task-<id>.json) and the coordinator's
// TaskState, both ways: `coordctl import aria` reads files with it and `coordctl task state`
// prints the same shape, so tools written against the files keep working. Parsing goes through
// Protobuf's JSON mapping (a google.protobuf.Struct for the whole object, then the known keys
// into AriaStateFile); there is no hand-written JSON parser here.
#ifndef COORDCTL_ARIA_STATE_JSON_H_
#define COORDCTL_ARIA_STATE_JSON_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "coordinator/v1/breaker.pb.h"
#include "coordinator/v1/task_state.pb.h"
#include "google/protobuf/struct.pb.h"

namespace coordctl {

// Largest state file `import aria` reads (1 MiB). The scripts' files are a few KiB.
inline constexpr size_t kMaxAriaStateFileBytes = 1 << 20;

// Largest blocked.json `import aria` reads (16 MiB): each entry holds a description and an
// error, and the registry grows with every break.
inline constexpr size_t kMaxAriaBlockedFileBytes = 16 << 20;

// Largest <id>-summary.txt `import aria` reads (256 KiB, the server's limit).
inline constexpr size_t kMaxAriaSummaryFileBytes = 256 << 10;

// Parses `json` as one JSON object into a Struct, refusing text that nests deeper than 32
// levels first (Protobuf's parser takes time quadratic in the depth). INVALID_ARGUMENT saying
// what is wrong.
[[nodiscard]] absl::StatusOr<google::protobuf::Struct> ParseJsonObject(absl::string_view json);

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

// Parses the iteration breaker script's blocked registry (blocked.json:
// {"blocked_tasks": [{task_id, task_desc, reason, blocked_at, attempts, final_tier,
// analysis}]}) into one ImportedBlock per task, in the order of the tasks' last entries (a task
// broken twice appears twice in the file; its last entry is the one its state file matches).
// Empty text is no entries: the script's jq left the file empty when it failed. The summary
// of each block is left empty (the caller reads <id>-summary.txt). pattern_type is the
// analysis' ("unknown" when the analysis is {}); the analysis is kept when it has any key.
// INVALID_ARGUMENT naming the entry when anything is wrong, including a task id that could
// not name a summary file (with '/', or "." or "..") or one the coordinator refuses.
[[nodiscard]] absl::StatusOr<std::vector<coordinator::v1::ImportedBlock>> ParseAriaBlockedJson(
    absl::string_view json);

}  // namespace coordctl

#endif  // COORDCTL_ARIA_STATE_JSON_H_
