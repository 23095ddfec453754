#include "common/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

extern char** environ;

namespace common {

namespace {

// The signals a child starts with at their default disposition.
constexpr int kDefaultedSignals[] = {SIGPIPE, SIGINT, SIGTERM};

absl::Status CannotRun(const std::string& command, int error) {
  return absl::FailedPreconditionError(
      absl::StrCat("cannot run ", command, ": ", std::strerror(error)));
}

// The child's side of ForkExec: only async-signal-safe calls. Writes errno to `report` when the
// command cannot be started.
[[noreturn]] void ExecInChild(const SpawnOptions& options, pid_t parent, char** argv, char** envp,
                              int report) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // the parent died before prctl took effect
  if (options.own_process_group) setpgid(0, 0);
  struct sigaction default_action = {};
  default_action.sa_handler = SIG_DFL;
  for (int signal : kDefaultedSignals) sigaction(signal, &default_action, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  const int wanted[] = {options.stdin_fd, options.stdout_fd, options.stderr_fd};
  for (int target = 0; target < 3; ++target) {
    const int fd = wanted[target];
    if (fd == kInherit) continue;
    if (fd >= 0) {
      dup2(fd, target);
    } else if (target == 2) {
      dup2(1, 2);
    } else {
      const int null = open("/dev/null", target == 0 ? O_RDONLY : O_WRONLY);
      if (null >= 0 && null != target) {
        dup2(null, target);
        close(null);
      }
    }
  }
  int error = 0;
  if (!options.cwd.empty() && chdir(options.cwd.c_str()) != 0) {
    error = errno;
  } else {
    execvpe(argv[0], argv, envp);
    error = errno;
  }
  (void)!write(report, &error, sizeof(error));
  _exit(127);
}

// Spawn with die_with_parent: fork and exec, the exec's failure reported through a pipe that
// closes on a successful exec.
absl::StatusOr<pid_t> ForkExec(const SpawnOptions& options, char** argv, char** envp) {
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int error = errno;
    close(report[0]);
    close(report[1]);
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(error)));
  }
  if (pid == 0) {
    close(report[0]);
    ExecInChild(options, parent, argv, envp, report[1]);
  }
  close(report[1]);
  int error = 0;
  ssize_t got;
  do {
    got = read(report[0], &error, sizeof(error));
  } while (got < 0 && errno == EINTR);
  close(report[0]);
  if (got == static_cast<ssize_t>(sizeof(error))) {
    int status = 0;
    waitpid(pid, &status, 0);
    return CannotRun(options.argv[0], error);
  }
  return pid;
}

}  // namespace

absl::StatusOr<pid_t> Spawn(const SpawnOptions& options) {
  if (options.argv.empty()) return absl::InvalidArgumentError("no command to run");
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    bool replaced = false;
    for (const std::string& add : options.env_add) {
      if (absl::StartsWith(*e, add.substr(0, add.find('=') + 1))) replaced = true;
    }
    if (!replaced) env_strings.emplace_back(*e);
  }
  env_strings.insert(env_strings.end(), options.env_add.begin(), options.env_add.end());
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = options.argv;
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  if (options.die_with_parent) return ForkExec(options, argv.data(), envp.data());

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // Each of stdin, stdout, stderr: a given descriptor, this process's, or the default.
  const struct {
    int fd;
    int target;
    void (*fallback)(posix_spawn_file_actions_t*);
  } streams[] = {
      {options.stdin_fd, 0,
       [](posix_spawn_file_actions_t* a) {
         posix_spawn_file_actions_addopen(a, 0, "/dev/null", O_RDONLY, 0);
       }},
      {options.stdout_fd, 1,
       [](posix_spawn_file_actions_t* a) {
         posix_spawn_file_actions_addopen(a, 1, "/dev/null", O_WRONLY, 0);
       }},
      {options.stderr_fd, 2,
       [](posix_spawn_file_actions_t* a) { posix_spawn_file_actions_adddup2(a, 1, 2); }},
  };
  for (const auto& stream : streams) {
    if (stream.fd >= 0) {
      posix_spawn_file_actions_adddup2(&actions, stream.fd, stream.target);
    } else if (stream.fd != kInherit) {
      stream.fallback(&actions);
    }
  }
  if (!options.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, options.cwd.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, (options.own_process_group ? POSIX_SPAWN_SETPGROUP : 0) |
                                      POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  sigset_t defaulted;
  sigemptyset(&defaulted);
  for (int signal : kDefaultedSignals) sigaddset(&defaulted, signal);
  posix_spawnattr_setsigdefault(&attr, &defaulted);
  pid_t pid = 0;
  const int error = posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (error != 0) return CannotRun(options.argv[0], error);
  return pid;
}

std::optional<int> ExitedStatus(pid_t pid) {
  int status = 0;
  const pid_t done = waitpid(pid, &status, WNOHANG);
  if (done == pid) return status;
  if (done < 0 && errno == ECHILD) return 0;  // not ours, or reaped already
  return std::nullopt;
}

std::string DescribeExit(int status) {
  if (WIFSIGNALED(status)) return absl::StrCat("killed by signal ", WTERMSIG(status));
  return absl::StrCat("exit code ", WEXITSTATUS(status));
}

void StopProcessGroup(pid_t pgid, absl::Duration grace) {
  if (pgid <= 1) return;
  if (kill(-pgid, SIGTERM) != 0) {
    (void)ExitedStatus(pgid);
    return;
  }
  const absl::Time deadline = absl::Now() + grace;
  while (absl::Now() < deadline) {
    (void)ExitedStatus(pgid);  // a zombie leader still counts as a member until reaped
    if (kill(-pgid, 0) != 0 && errno == ESRCH) return;
    absl::SleepFor(absl::Milliseconds(20));
  }
  kill(-pgid, SIGKILL);
  for (int i = 0; i < 100 && !(kill(-pgid, 0) != 0 && errno == ESRCH); ++i) {
    (void)ExitedStatus(pgid);
    absl::SleepFor(absl::Milliseconds(10));
  }
}

}  // namespace common
