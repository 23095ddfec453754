// Starting a command as a child process: posix_spawn with its output where the caller says, in
// a process group of its own so that the whole group (the command and what it started) can be
// stopped together, or bound to this process's life.
#ifndef COMMON_CHILD_PROCESS_H_
#define COMMON_CHILD_PROCESS_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace common {

// SpawnOptions: the child shares this process's file descriptor.
inline constexpr int kInherit = -2;

struct SpawnOptions {
  // The command and its arguments; argv[0] is looked up in PATH.
  std::vector<std::string> argv;
  // NAME=value entries added to this process's environment (replacing NAME).
  std::vector<std::string> env_add;
  // The child's stdin (-1: /dev/null), stdout (-1: /dev/null) and stderr (-1: stdout's);
  // kInherit keeps this process's.
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  // Working directory; empty: this process's.
  std::string cwd;
  // In a process group of its own (the default), so that StopProcessGroup stops the command with
  // what it started; false keeps it in this process's group (a terminal's Ctrl-C reaches both,
  // and it may read the terminal).
  bool own_process_group = true;
  // SIGKILL to the command when this process dies, however it dies (PR_SET_PDEATHSIG): for a
  // command that must not outlive its supervisor. Started with fork and exec then (posix_spawn
  // cannot ask for it), to the same effect otherwise.
  bool die_with_parent = false;
};

// Starts the command (in a new process group unless told otherwise: its id is the child's pid)
// with the default disposition of SIGPIPE, SIGINT and SIGTERM, whatever this process does with
// them.
// INVALID_ARGUMENT for an empty argv; FAILED_PRECONDITION when the command cannot be run.
[[nodiscard]] absl::StatusOr<pid_t> Spawn(const SpawnOptions& options);

// The child's exit status (as waitpid gives it) once it has exited, reaping it; nullopt while it
// runs. 0 for a pid that is not this process's child (there is nothing to wait for).
std::optional<int> ExitedStatus(pid_t pid);

// "exit code N" or "killed by signal N".
std::string DescribeExit(int status);

// SIGTERM to the process group `pgid`, then SIGKILL after `grace` if any member is left; reaps
// `pgid` when it is this process's child.
void StopProcessGroup(pid_t pgid, absl::Duration grace);

}  // namespace common

#endif  // COMMON_CHILD_PROCESS_H_
