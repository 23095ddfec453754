// The root-cause-analysis task bundles and their scoring. A bundle is a folder named by its task
// id under --tasks_dir:
//   src/               the vulnerable source tree (copied into the workspace)
//   crash_report.txt   the sanitizer report (copied into the workspace, and sent in the task)
//   ground_truth.json  {"locations": [{"file", "function", "line_start", "line_end"}, ...]}
//                      (never copied: the agent under test must not see it)
// The agent under test answers with shared/loc.json:
//   {"locations": [{"file": "src/x.c", "function": "f", "line": 12}, ...]}
// ("line_start"/"line_end" are accepted instead of "line").
#ifndef GREEN_AGENT_EVALUATION_H_
#define GREEN_AGENT_EVALUATION_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace green_agent {

struct Location {
  std::string file;
  std::string function;
  int line_start = 0;
  int line_end = 0;
};

struct Score {
  // Fractions of the ground-truth locations that a submitted location matched by file, by
  // function (same file and function) and by line (same file, line within the range).
  double file_accuracy = 0;
  double function_accuracy = 0;
  double line_accuracy = 0;
};

// True when `id` can name a bundle folder (no path separators, not "." or "..").
bool IsValidTaskId(absl::string_view id);

// Reads "locations" from a ground-truth or submission JSON document. INVALID_ARGUMENT with a
// clear message when it is malformed.
[[nodiscard]] absl::StatusOr<std::vector<Location>> ParseLocations(absl::string_view json);

Score ScoreLocations(const std::vector<Location>& truth, const std::vector<Location>& submitted);

// The score as the JSON artifact: {"task_id":..,"file_accuracy":..,"function_accuracy":..,
// "line_accuracy":..,"score":..} with fixed precision, so equal scores are equal strings.
std::string ScoreJson(absl::string_view task_id, const Score& score);

[[nodiscard]] absl::StatusOr<std::string> ReadFile(const std::string& path);
// Writes through a temporary file and a rename, so a crash leaves the old file or the new one.
[[nodiscard]] absl::Status WriteFileAtomically(const std::string& path, absl::string_view data);

// How a workspace names what it holds. The default: src/ and crash_report.txt. The layout of the
// ARVO evaluation harness this project replaces (--layout=arvo): src-vul/ and
// <task id>_error.txt.
struct WorkspaceLayout {
  std::string source_dir = "src";
  std::string crash_report = "crash_report.txt";

  static WorkspaceLayout Default() { return {}; }
  static WorkspaceLayout Arvo(absl::string_view task_id) {
    return {"src-vul", absl::StrCat(task_id, "_error.txt")};
  }
};

// Copies a bundle's src/ and crash report into `workspace_dir`, under the names of `layout`,
// and creates `shared_dir`. Idempotent: a workspace that was completed before (it has its
// marker) is kept as it is, a half-copied one is removed and copied again.
[[nodiscard]] absl::Status PrepareWorkspace(const std::string& bundle_dir,
                                            const std::string& workspace_dir,
                                            const std::string& shared_dir,
                                            const WorkspaceLayout& layout = {});

struct TaskLimits {
  int timeout_seconds = 60;
  size_t output_cap = 64 << 10;
};

// The two parts of the formatted task: the tools the agent may use, then the instruction with
// the crash report.
std::vector<std::string> FormatTask(absl::string_view task_id, absl::string_view crash_report,
                                    const TaskLimits& limits, const WorkspaceLayout& layout = {});

}  // namespace green_agent

#endif  // GREEN_AGENT_EVALUATION_H_
