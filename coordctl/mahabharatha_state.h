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
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "coordinator/v1/work.pb.h"
#include "google/protobuf/struct.pb.h"

namespace coordctl {

// Largest state file `import mahabharatha` reads (4 MiB, the coordinator's bound on a run's
// JSON).
inline constexpr size_t kMaxMahabharathaStateBytes = 4 << 20;

// A run as CreateRun takes it.
struct MahabharathaRun {
  coordinator::v1::Run run;
  std::vector<coordinator::v1::WorkItem> items;  // in task id order
  // Whether the tasks' levels are known (a task has a "level" key): the StateManager writes
  // none, so a state file alone puts every task at level 1, and its levels map cannot be
  // matched to the tasks.
  bool levels_known = false;
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

// Joins `run`, parsed from a state file, with the text of the feature's task-graph.json
// (.gsd/specs/<feature>/task-graph.json), which has what the state file lacks: each task's
// title, description, level, dependencies, files and verification (other keys of a task go to
// its metadata). A task of the graph that the state lacks is added pending. INVALID_ARGUMENT
// when the graph is malformed (ParseItemsJson), is for another feature, or lacks a task the
// state has. The tasks' levels are known afterwards.
[[nodiscard]] absl::Status JoinMahabharathaTaskGraph(absl::string_view task_graph_json,
                                                     MahabharathaRun* run);

// The ImportRun request of a feature under way (coordctl import mahabharatha when a task is not
// pending): every task that left pending counts one attempt (the retries before stay in its
// retry_count); an in_progress, claimed or verifying task is held by its worker_id (else by the
// worker whose current_task it is) under a fresh lease; the workers map becomes the registry
// (crashed and stalled: lost; stopping and stopped: stopped; the rest idle, or busy while they
// hold a task; health_check_at is the last heartbeat, tasks_completed the items completed); and,
// when the levels are known, a merged level stays merged (merge_commit, merge_completed_at).
// INVALID_ARGUMENT for a running task that no worker holds.
[[nodiscard]] absl::StatusOr<coordinator::v1::ImportRunRequest> MahabharathaImportRequest(
    const MahabharathaRun& parsed);

// The numbers MAHABHARATHA's files name a run's workers by (their status reads a worker id with
// int()): each worker's RunWorker.number, as the coordinator gave it when the worker joined the
// run; a worker registered before numbers were kept gets the one it would have got (those
// named by a free number keep it, the others follow the highest in the order they joined). A
// worker_id none of the workers has is written as itself: a number when it is one ("3" is 3),
// else the string.
class MahabharathaWorkerNumbers {
 public:
  MahabharathaWorkerNumbers() = default;
  explicit MahabharathaWorkerNumbers(const std::vector<coordinator::v1::RunWorker>& workers);

  // The worker's id as their files write it (a JSON number, or the string).
  google::protobuf::Value Id(const std::string& worker_id) const;
  // The same as text: the key of the state's workers map, the <id> of workers/worker-<id>.jsonl.
  std::string Key(const std::string& worker_id) const;

 private:
  std::map<std::string, int64_t> numbers_;
};

// The state file the StateManager would have written for `run`, its `items` and its `workers`
// (the run's worker registry; may be empty). A worker the import registered and nothing changed
// since is written as it was imported. With the run's `events` (its work log; may be null), the
// execution_log gets, after the imported entries, one entry per event since the run came here
// that their status shows (task_claimed, task_complete, task_failed, task_retry,
// task_stale_detected, level_started, level_complete), in their append_event
// shape. Laid out as json.dump(indent=2) writes it, with no final newline.
std::string FormatMahabharathaState(
    const coordinator::v1::Run& run, const std::vector<coordinator::v1::WorkItem>& items,
    const std::vector<coordinator::v1::RunWorker>& workers,
    const std::vector<coordinator::v1::WorkEvent>* events = nullptr);

// worker-assignments.json (.gsd/specs/<feature>/), as MAHABHARATHA's
// WorkerAssignment.save_to_file writes it (json.dump(indent=2), no final newline): feature,
// worker_count (the registry's workers, or the distinct holders when more), one assignment per
// task that has a worker (its worker_id; level 0 and estimated_minutes 15, the constants
// save_to_file writes), lowest level first, then by id; generated_at, `now` as isoformat() of
// UTC.
std::string FormatMahabharathaAssignments(const coordinator::v1::Run& run,
                                          const std::vector<coordinator::v1::WorkItem>& items,
                                          const std::vector<coordinator::v1::RunWorker>& workers,
                                          absl::Time now);

}  // namespace coordctl

#endif  // COORDCTL_MAHABHARATHA_STATE_H_
