// Arial's run state file (.arial/state.json) and the coordinator's workstreams run, both ways:
// `coordctl import arial` reads the file into a run with one item per workstream, and
// `coordctl run export --format arial` writes the file Arial would have written for the run as
// it stands. The layout is the one of Arial's lib/state.ts (version 2); version 1 files are
// migrated on read, as Arial's loadState does. Parsing goes through Protobuf's JSON mapping (a
// google.protobuf.Struct); there is no hand-written JSON parser here.
//
// What the coordinator has no field for is kept in the metadata under "arial", so that an
// export gives back what was imported: on the run {status, createdAt, updatedAt, extra,
// projectDir}, on each item {index, specFile, retryCount, pid, startedAt, completedAt,
// lastError, summary, extra} (extra: keys the format does not name; index: the place in
// "workstreams"; projectDir: the project the file was imported from, which its relative paths
// are relative to).
#ifndef COORDCTL_ARIAL_STATE_H_
#define COORDCTL_ARIAL_STATE_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "coordinator/v1/work.pb.h"

namespace coordctl {

// Largest state.json `import arial` reads (4 MiB, the coordinator's bound on a run's JSON).
inline constexpr size_t kMaxArialStateBytes = 4 << 20;

// The version Arial writes, and the one every export has.
inline constexpr int kArialStateVersion = 2;

// A run as CreateRun takes it.
struct ArialRun {
  coordinator::v1::Run run;
  std::vector<coordinator::v1::WorkItem> items;
};

// Parses the text of .arial/state.json. Version 1 is migrated to 2 first: its workstreams take
// the fields version 2 added with their defaults (branch arial/<id>, worktreePath
// .arial/worktrees/<id>, retryCount 0). Each workstream becomes an item in the file's order:
// id, title, description, status (pending, running, done, failed), branch, worktreePath,
// dependencies (an array of workstream ids; Arial's schema has none, a file may add them),
// pid, startedAt, completedAt, adapter, requiredCapabilities, lastError, summary.
// INVALID_ARGUMENT saying what is wrong and where: a version other than 1 or 2, a missing or
// mistyped field, an unknown status, a time that is not ISO 8601, an id that could not name a
// branch and a worktree (empty, over 256 bytes, a control character, a path separator, "." or
// ".."), the same id twice.
//
// `project_dir` is the project the file was read from (ArialProjectDir), absolute; it is kept
// in the run's metadata (projectDir), as the file's relative paths mean nothing without it.
// Empty: not known, nothing kept.
[[nodiscard]] absl::StatusOr<ArialRun> ParseArialState(absl::string_view json,
                                                       const std::string& project_dir = "");

// The project whose state file is `state_file` (absolute): the directory holding `.arial`, as
// Arial keeps its state in <project>/.arial/state.json; for a file anywhere else, the directory
// holding it. Lexical: the caller resolves symbolic links. Empty for a relative path.
std::string ArialProjectDir(const std::string& state_file);

// The ImportRun request of a run under way (coordctl import arial when a workstream is not
// pending): a workstream that left pending counts one attempt (the retries before stay in its
// retryCount); a running one is held by the worker "arial-<pid>" ("arial" without a pid) under
// a fresh lease, with its pid; completedAt is the complete time of a done one only (the export
// gives the others' back as imported).
coordinator::v1::ImportRunRequest ArialImportRequest(const ArialRun& parsed);

// The state.json Arial would have written for `run` and its `items` (any order): version 2,
// the run's status derived from the workstreams as Arial's updateRunStatus does (the previous
// status kept when no rule applies), workstreams in their imported order and then by id. Live
// values win; an item unchanged since it was created (version 1) gives back the values it was
// imported with. Compact, as JSON.stringify writes it, with a final newline.
//
// `events` is the run's event log, oldest first, when the coordinator keeps one: Arial's status
// is sticky (it keeps the previous one when no rule applies), so it depends on the order of
// the changes, and is replayed from the log (ReplayArialRunStatus). Without it the status is
// derived from the items now, with the imported status as the previous one.
//
// Paths are written as Arial's schema has them, relative to the project (`specsDir` "./specs",
// `specFile` "specs/auth.md"; ArialProjectPath): the project is `project_dir`, else the one the
// run was imported from (projectDir), else, for a run made by `coordctl run create --workstreams
// <project>/specs`, the directory holding its specs directory.
std::string FormatArialState(const coordinator::v1::Run& run,
                             const std::vector<coordinator::v1::WorkItem>& items,
                             const std::vector<coordinator::v1::WorkEvent>* events = nullptr,
                             const std::string& project_dir = "");

// `path` as the state file of the project `project_dir` has it: relative to the project
// ("specs/auth.md"; with `dot`, "./specs"; the project itself ".") when it lies inside it,
// absolute when it lies outside (an absolute `path` as given). A relative `path` is relative to
// `imported_from`, the project of the file it came from; it is written as that file had it
// while that is the project, and as given when `imported_from` is empty (nothing to resolve it
// against). Both directories are absolute; an empty or relative `project_dir` is no project.
// Lexical (std::filesystem::path::lexically_relative): ".." segments are resolved as written.
std::string ArialProjectPath(const std::string& path, const std::string& imported_from,
                             const std::string& project_dir, bool dot);

// The status Arial's updateRunStatus would have left after each item change of `events` (every
// item event, in order; an item is pending from its ITEM_CREATED), starting from `start`.
std::string ReplayArialRunStatus(const std::string& start,
                                 const std::vector<coordinator::v1::WorkEvent>& events);

}  // namespace coordctl

#endif  // COORDCTL_ARIAL_STATE_H_
