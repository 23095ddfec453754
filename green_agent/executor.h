// Runs the commands an agent under test asks for, in an evaluation's workspace. The default
// runs a local subprocess without a shell (the command is split into words the way a POSIX
// shell would, but nothing is expanded), in its own process group, with a timeout (the whole
// group is killed) and a cap on the output kept. A template such as
// `docker exec {container} bash -lc {command}` wraps the command instead: the template is split
// into words first and the placeholders are substituted inside those words, so a command is
// always exactly one argument and needs no quoting. `{argv}`, a whole word of its own, is the
// exception: it becomes the command's words, split as without a template
// (`podman exec {container} {argv}` runs the command in a container exactly as it would run here).
#ifndef GREEN_AGENT_EXECUTOR_H_
#define GREEN_AGENT_EXECUTOR_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace green_agent {

// Where a command runs.
struct ExecEnv {
  std::string workspace_dir;
  std::string shared_dir;
  // The environment handle (e.g. a container id); {container} in the template.
  std::string environment_handle;
  std::string context_id;
  // The task being evaluated; {task_id}.
  std::string task_id;
  // A name for the evaluation's environment, stable per context (green_agent/environment.h);
  // {env_name}.
  std::string env_name;
};

struct ExecResult {
  int exit_code = 0;
  // stdout and stderr interleaved, at most the cap (a note says when it was cut); stdout alone
  // when the process was run with ProcessOptions::separate_stderr.
  std::string output;
  // stderr, with ProcessOptions::separate_stderr (at most the cap).
  std::string error_output;
  bool timed_out = false;
  bool truncated = false;
  absl::Duration duration;
};

struct ExecutorOptions {
  // Wall-clock limit of one command (default 60s); the process group is killed after it.
  absl::Duration timeout = absl::Seconds(60);
  // Bytes of output kept (default 64 KiB); the rest is read and dropped.
  size_t output_cap = 64 << 10;
  // Empty: run the command's own words. Otherwise the words of this template with {command},
  // {argv}, {workspace}, {shared}, {container}, {context_id}, {task_id} and {env_name}
  // substituted.
  std::string exec_template;
};

// Splits `text` into words like a POSIX shell without expansion (common::SplitShellWords).
// INVALID_ARGUMENT on an unterminated quote, a backslash at the end or an empty result.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> SplitWords(absl::string_view text);

// The words of `templ` with the placeholders substituted (see the top of this file); {command}
// and {argv} stand for `command`. INVALID_ARGUMENT when the template or, for {argv}, the command
// cannot be split. Braces that name no placeholder (`--format {{.ID}}`) are left as they are.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> ExpandTemplate(absl::string_view templ,
                                                                      absl::string_view command,
                                                                      const ExecEnv& env);

// How RunProcess runs a program.
struct ProcessOptions {
  absl::Duration timeout = absl::Seconds(60);
  size_t output_cap = 64 << 10;
  // Working directory; empty: this process's own.
  std::string cwd;
  // Keep stderr apart from stdout (ExecResult::error_output).
  bool separate_stderr = false;
};

// Runs argv (PATH is searched) in its own process group, stdin from /dev/null, WORKSPACE and
// SHARED_DIR set from `env`; the group is killed at the timeout (exit code 124) and once the
// program exits. A program that cannot be started gets exit code 127 and the reason as output;
// errors are reserved for the machine (no pipes).
[[nodiscard]] absl::StatusOr<ExecResult> RunProcess(std::vector<std::string> argv,
                                                    const ExecEnv& env,
                                                    const ProcessOptions& options);

class CommandExecutor {
 public:
  explicit CommandExecutor(ExecutorOptions options) : options_(std::move(options)) {}

  // The argv that Run would start.
  [[nodiscard]] absl::StatusOr<std::vector<std::string>> Argv(absl::string_view command,
                                                              const ExecEnv& env) const;

  // Runs the command in the workspace. A command that cannot be started gets exit code 127 and
  // the reason as output (an error the agent should see), not an error status; errors are
  // reserved for the machine (no pipes, no processes).
  [[nodiscard]] absl::StatusOr<ExecResult> Run(absl::string_view command, const ExecEnv& env) const;

  const ExecutorOptions& options() const { return options_; }

 private:
  ExecutorOptions options_;
};

}  // namespace green_agent

#endif  // GREEN_AGENT_EXECUTOR_H_
