// Per-evaluation environments: a container (or a VM, or anything a command line can start and
// stop) for each evaluation, as evaluation harnesses run them. Three templates, split into words
// and substituted like --exec_template (green_agent/executor.h):
//   start  run when an evaluation starts, e.g.
//            podman run -d --rm --name {env_name} -v {workspace}:/workspace <image> sleep infinity
//          the last line of its stdout is the environment's handle (the container id), stored as
//          the context's environment_handle and given to the other two as {container}
//   exec   --exec_template: each command of the agent under test, e.g.
//            podman exec {container} {argv}
//          and, after a command that failed, the same template running `true`: when that fails
//          too, the environment is gone (a container that died) and the evaluation ends FAILED
//   stop   run when the evaluation ends (scored, failed, abandoned, cancelled, its context
//          deleted), e.g.  podman rm -f -t 0 {container}
// Nothing leaks: before it starts an environment green writes a record next to the context's
// workspace (<workspaces_dir>/<context>/environment.json) and removes it only once the stop
// template succeeded. A sweep (at start-up, then every --env_sweep_interval) stops the
// environments of records whose evaluation has ended or whose context is gone: those of
// evaluations that ended while green was down, and stops that failed before.
#ifndef GREEN_AGENT_ENVIRONMENT_H_
#define GREEN_AGENT_ENVIRONMENT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "green_agent/executor.h"

namespace green_agent {

struct EnvironmentOptions {
  // Empty: commands run on this host (or wherever --exec_template sends them), no environment
  // is started per evaluation.
  std::string start_template;
  // Required with start_template.
  std::string stop_template;
  // Time limit of one start or stop (default 2m); the process group is killed after it.
  absl::Duration timeout = absl::Minutes(2);
  // How often the records are swept (default 30s).
  absl::Duration sweep_interval = absl::Seconds(30);
};

// {env_name}: "coord-" + the context id's characters that container names allow (at most 40) +
// "-" + 12 hex digits of a SHA-256 of the workspaces folder and the context id. Stable, so a
// start interrupted by a crash can be cleaned up by name; distinct for two green agents on one
// host with different workspaces folders.
std::string EnvironmentName(absl::string_view workspaces_dir, absl::string_view context_id);

// Start-up checks of the templates: INVALID_ARGUMENT naming the flag. A start template needs a
// stop template and an exec template naming {container}; the start template cannot use
// {container}, {command} or {argv}, the stop template neither {command} nor {argv}.
[[nodiscard]] absl::Status ValidateEnvironmentOptions(const EnvironmentOptions& options,
                                                      const std::string& exec_template);

// Runs the templates.
class EnvironmentRunner {
 public:
  EnvironmentRunner(EnvironmentOptions options, ExecutorOptions executor)
      : options_(std::move(options)), executor_(std::move(executor)) {}

  bool enabled() const { return !options_.start_template.empty(); }
  const EnvironmentOptions& options() const { return options_; }

  // Runs the start template; the handle is the last non-empty line of its stdout (1 to 256
  // printable characters without blanks). On failure the message says what the template did:
  // its exit code and stderr, a timeout, or that it printed no handle.
  [[nodiscard]] absl::StatusOr<std::string> Start(const ExecEnv& env) const;
  // Runs the stop template for env.environment_handle.
  [[nodiscard]] absl::Status Stop(const ExecEnv& env) const;
  // The exec template running `true`: OK while the environment still runs commands.
  [[nodiscard]] absl::Status Check(const ExecEnv& env) const;

 private:
  // Runs `templ` with stdout and stderr apart; the error names `flag`.
  [[nodiscard]] absl::StatusOr<ExecResult> RunTemplate(const std::string& flag,
                                                       const std::string& templ,
                                                       absl::string_view command,
                                                       const ExecEnv& env,
                                                       absl::Duration timeout) const;

  const EnvironmentOptions options_;
  const ExecutorOptions executor_;
};

// What green keeps on disk about a started environment.
struct EnvironmentRecord {
  std::string context_id;
  std::string env_name;
  // Empty while the start template runs.
  std::string handle;
  // "starting", "running" or "stop failed".
  std::string state;
  // The last stop's error.
  std::string error;
};

// <context_root>/environment.json: NOT_FOUND when there is none.
[[nodiscard]] absl::StatusOr<EnvironmentRecord> ReadEnvironmentRecord(
    const std::string& context_root);
// Creates context_root when needed; written atomically.
[[nodiscard]] absl::Status WriteEnvironmentRecord(const std::string& context_root,
                                                  const EnvironmentRecord& record);
void RemoveEnvironmentRecord(const std::string& context_root);
// The records under workspaces_dir (one folder level down).
std::vector<EnvironmentRecord> ListEnvironmentRecords(const std::string& workspaces_dir);

}  // namespace green_agent

#endif  // GREEN_AGENT_ENVIRONMENT_H_
