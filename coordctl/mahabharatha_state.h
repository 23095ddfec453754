// MAHABHARATHA's runtime state (.mahabharatha/state/<feature>.json, written by its
// StateManager) and the coordinator's task-graph run, both ways: `coordctl import mahabharatha`
// reads the file into a run with one item per task, and `coordctl run export --format
// mahabharatha` writes the file the StateManager would have written for the run as it stands.
// Parsing goes through Protobuf's JSON mapping (a google.protobuf.Struct).
//
// The state file holds much the coordinator has no field for (the workers' ports and
// containers, the levels' merge details, the execution log, metrics). It is kept as it was in
// the metadata under "mahabharatha": on the run, the whole object but its tasks ("state"); on
// each item, its task object ("task"). An export starts from those and writes over them what
// the coordinator knows now: a task, level or worker the coordinator changed since the import
// is written as the StateManager writes one (status names, isoformat() times).
#ifndef COORDCTL_MAHABHARATHA_STATE_H_
#define COORDCTL_MAHABHARATHA_STATE_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "coordinator/v1/work.pb.h"

namespace coordctl {

// Largest state file `import mahabharatha` reads (4 MiB, the coordinator's bound on a run's
// JSON).
inline constexpr size_t kMaxMahabharathaStateBytes = 4 << 20;

// A run as CreateRun takes it.
struct MahabharathaRun {
  coordinator::v1::Run run;
  std::vector<coordinator::v1::WorkItem> items;  // in task id order
};

// Parses the text of a state file: feature (required), tasks (an object: task id -> {status,
// worker_id, started_at, completed_at, ...}), workers, levels, current_level, started_at. A
// task's level is its "level" key, else 1 (the StateManager does not write one; the levels
// come from task-graph.json); "dependencies", "title" and "description" are read when a task
// has them. Task statuses: todo, pending, paused (pending here), claimed, in_progress,
// verifying (running), complete (done), failed, blocked. INVALID_ARGUMENT saying what is wrong
// and where: a missing or mistyped field, an unknown status, a time that is not ISO 8601, a
// task id or feature that could not name a file (empty, over 256 bytes, a control character, a
// path separator, "." or ".."), a worker or level key that is not a number.
[[nodiscard]] absl::StatusOr<MahabharathaRun> ParseMahabharathaState(absl::string_view json);

// The state file the StateManager would have written for `run`, its `items` and its `workers`
// (the run's worker registry; may be empty). Laid out as json.dump(indent=2) writes it, with
// no final newline.
std::string FormatMahabharathaState(const coordinator::v1::Run& run,
                                    const std::vector<coordinator::v1::WorkItem>& items,
                                    const std::vector<coordinator::v1::RunWorker>& workers);

}  // namespace coordctl

#endif  // COORDCTL_MAHABHARATHA_STATE_H_
