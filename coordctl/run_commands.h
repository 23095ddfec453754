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

// One item per *.md file of `specs_dir` (sorted by name): id and branch are the slug of the
// file name (made unique with -2, -3, ...), the title is the file's first "# " heading (or its
// name), the description is the spec's path, and the worktree is <worktree_root>/<slug>. An
// empty `worktree_root` means <parent of specs_dir>/.worktrees.
[[nodiscard]] absl::StatusOr<std::vector<coordinator::v1::WorkItem>> ReadWorkstreams(
    const std::string& specs_dir, const std::string& worktree_root);

}  // namespace coordctl

#endif  // COORDCTL_RUN_COMMANDS_H_
