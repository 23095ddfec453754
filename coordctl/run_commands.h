// Client-side pieces of `coordctl run ...` that are worth testing on their own: turning a
// directory of spec files into the items of a workstreams run.
#ifndef COORDCTL_RUN_COMMANDS_H_
#define COORDCTL_RUN_COMMANDS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "coordinator/v1/work.pb.h"

namespace coordctl {

// Largest spec file read for its title, and most spec files in one directory.
inline constexpr size_t kMaxSpecBytesRead = 64 << 10;
inline constexpr size_t kMaxSpecFiles = 10000;
// Largest task-graph.json read.
inline constexpr size_t kMaxTaskGraphBytes = 4 << 20;

// A branch- and path-safe name: lower-case letters, digits and single dashes, at most 64
// characters; "spec" when nothing is left.
std::string Slug(absl::string_view name);

// How a workstream's branch and worktree are named (`--naming`).
enum class Naming {
  // The branch is the id; the worktree <worktree_root>/<id>.
  kCoordinator,
  // As Arial names them: the branch arial/<id>, the worktree .arial/worktrees/<id> (relative,
  // as in its state.json); `worktree_root` is not used.
  kArial,
};

// "coordinator" or "arial"; INVALID_ARGUMENT otherwise.
[[nodiscard]] absl::StatusOr<Naming> ParseNaming(absl::string_view word);

// One item per *.md file of `specs_dir` (sorted by name): the id is the slug of the file name
// (made unique with -2, -3, ...), the title is the file's first "# " heading (or its name), the
// description is the spec's path; the branch and worktree are named per `naming` (kCoordinator:
// the branch is the id and the worktree <worktree_root>/<slug>; an empty `worktree_root` means
// <parent of specs_dir>/.worktrees).
[[nodiscard]] absl::StatusOr<std::vector<coordinator::v1::WorkItem>> ReadWorkstreams(
    const std::string& specs_dir, const std::string& worktree_root,
    Naming naming = Naming::kCoordinator);

// The items of one spec file, as ReadWorkstreams makes them, with id `id`.
[[nodiscard]] absl::StatusOr<coordinator::v1::WorkItem> ReadSpecItem(
    const std::string& spec_path, const std::string& id, const std::string& worktree_root,
    Naming naming = Naming::kCoordinator);

// The items of `json`, the text of `run add --items`: a JSON array of items, or an object with
// a "tasks" array (task-graph.json's shape). Each item is an object with WorkItem's input fields
// (protobuf's JSON names, snake_case or camelCase; "id" is item_id, as in task-graph.json).
// Output-only WorkItem fields are ignored; any other key is kept in the item's metadata.
// INVALID_ARGUMENT for malformed JSON, a value of the wrong type or more than `max_items` items.
[[nodiscard]] absl::StatusOr<std::vector<coordinator::v1::WorkItem>> ParseItemsJson(
    absl::string_view json, size_t max_items);

// "pending", "running", "done", "failed" or "blocked"; INVALID_ARGUMENT otherwise.
[[nodiscard]] absl::StatusOr<coordinator::v1::ItemStatus> ParseItemStatus(absl::string_view word);

// One entry of a run's event log as a JSON line (no newline): seq, ts, event, run_id, then
// whichever of item_id, worker_id, level, item_status, level_status, worker_status, run_status,
// attempt, epoch and message apply. Names and statuses are lower-case words
// (docs/work.md, "The event log").
std::string EventJsonLine(const coordinator::v1::WorkEvent& event);

}  // namespace coordctl

#endif  // COORDCTL_RUN_COMMANDS_H_
