#include "green_agent/executor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "common/child_process.h"
#include "common/shell_words.h"
#include "common/status_macros.h"

namespace green_agent {

absl::StatusOr<std::vector<std::string>> SplitWords(absl::string_view text) {
  ASSIGN_OR_RETURN(std::vector<std::string> words, common::SplitShellWords(text));
  if (words.empty()) return absl::InvalidArgumentError("the command is empty");
  return words;
}

absl::StatusOr<std::vector<std::string>> ExpandTemplate(absl::string_view templ,
                                                        absl::string_view command,
                                                        const ExecEnv& env) {
  ASSIGN_OR_RETURN(std::vector<std::string> words, SplitWords(templ));
  std::vector<std::string> out;
  for (std::string& word : words) {
    if (word == "{argv}") {
      ASSIGN_OR_RETURN(std::vector<std::string> argv, SplitWords(command));
      for (std::string& a : argv) out.push_back(std::move(a));
      continue;
    }
    // One pass over the word: substituted text is never scanned again.
    out.push_back(absl::StrReplaceAll(word, {{"{command}", command},
                                             {"{workspace}", env.workspace_dir},
                                             {"{shared}", env.shared_dir},
                                             {"{container}", env.environment_handle},
                                             {"{context_id}", env.context_id},
                                             {"{task_id}", env.task_id},
                                             {"{env_name}", env.env_name}}));
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> CommandExecutor::Argv(absl::string_view command,
                                                               const ExecEnv& env) const {
  if (options_.exec_template.empty()) return SplitWords(command);
  if (absl::Status s = SplitWords(options_.exec_template).status(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--exec_template: ", s.message()));
  }
  return ExpandTemplate(options_.exec_template, command, env);
}

absl::StatusOr<ExecResult> CommandExecutor::Run(absl::string_view command,
                                                const ExecEnv& env) const {
  absl::StatusOr<std::vector<std::string>> argv = Argv(command, env);
  if (!argv.ok()) {
    ExecResult result;
    result.exit_code = 2;
    result.output = absl::StrCat("cannot run the command: ", argv.status().message());
    return result;
  }
  ProcessOptions process;
  process.timeout = options_.timeout;
  process.output_cap = options_.output_cap;
  process.cwd = env.workspace_dir;
  return RunProcess(*std::move(argv), env, process);
}

namespace {

// Reads the child's output into `result` (capped) until its pipes close, or the child is gone
// while a background process holds them, or `deadline` passes (result->timed_out). Returns
// whether the child was seen to exit. "Exited" is learned with WNOWAIT: the child stays a
// zombie, so its process group id stays reserved until the group has been killed.
bool ReadOutput(pid_t pid, int out_fd, int err_fd, size_t output_cap, absl::Time deadline,
                ExecResult* result) {
  auto exited = [pid] {
    siginfo_t info{};
    return waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
           info.si_pid == pid;
  };
  struct Stream {
    int fd;
    std::string* text;
    bool eof = false;
  };
  std::vector<Stream> streams = {{out_fd, &result->output}};
  if (err_fd >= 0) streams.push_back({err_fd, &result->error_output});
  auto all_eof = [&streams] {
    for (const Stream& s : streams) {
      if (!s.eof) return false;
    }
    return true;
  };
  bool child_exited = false;
  char buffer[8192];
  while (!all_eof()) {
    pollfd p[2];
    nfds_t n = 0;
    for (const Stream& s : streams) {
      if (!s.eof) p[n++] = pollfd{s.fd, POLLIN, 0};
    }
    const int ready = poll(p, n, 20);
    for (nfds_t i = 0; ready > 0 && i < n; ++i) {
      if (p[i].revents == 0) continue;
      Stream* s = nullptr;
      for (Stream& candidate : streams) {
        if (candidate.fd == p[i].fd) s = &candidate;
      }
      const ssize_t got = read(p[i].fd, buffer, sizeof(buffer));
      if (got > 0) {
        const size_t room = output_cap - std::min(output_cap, s->text->size());
        if (static_cast<size_t>(got) > room) result->truncated = true;
        s->text->append(buffer, std::min(room, static_cast<size_t>(got)));
      } else if (got == 0 || errno != EINTR) {
        s->eof = true;
      }
    }
    // The child is gone and the pipes are quiet: a grandchild left in the background must not
    // hold the command open.
    if (!all_eof() && ready == 0 && exited()) {
      child_exited = true;
      break;
    }
    if (absl::Now() >= deadline) {
      result->timed_out = true;
      break;
    }
  }
  for (const Stream& s : streams) close(s.fd);
  // The output ended (often just before the exit): wait for the exit itself.
  while (!result->timed_out && !child_exited) {
    if (exited()) {
      child_exited = true;
    } else if (absl::Now() >= deadline) {
      result->timed_out = true;
    } else {
      absl::SleepFor(absl::Milliseconds(2));
    }
  }
  return child_exited;
}

}  // namespace

absl::StatusOr<ExecResult> RunProcess(std::vector<std::string> argv_words, const ExecEnv& env,
                                      const ProcessOptions& options) {
  ExecResult result;
  if (argv_words.empty()) {
    result.exit_code = 2;
    result.output = "cannot run the command: it is empty";
    return result;
  }
  // out: stdout (and stderr unless kept apart); err: stderr when kept apart.
  int out[2] = {-1, -1};
  int err[2] = {-1, -1};
  if (pipe2(out, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  if (options.separate_stderr && pipe2(err, O_CLOEXEC) != 0) {
    close(out[0]);
    close(out[1]);
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  common::SpawnOptions spawn;
  spawn.argv = std::move(argv_words);
  spawn.env_add = {absl::StrCat("WORKSPACE=", env.workspace_dir),
                   absl::StrCat("SHARED_DIR=", env.shared_dir)};
  spawn.stdout_fd = out[1];
  spawn.stderr_fd = options.separate_stderr ? err[1] : out[1];
  spawn.cwd = options.cwd;
  const absl::Time start = absl::Now();
  absl::StatusOr<pid_t> pid = common::Spawn(spawn);
  close(out[1]);
  if (err[1] >= 0) close(err[1]);
  if (!pid.ok()) {
    close(out[0]);
    if (err[0] >= 0) close(err[0]);
    result.exit_code = 127;
    result.output = absl::StrCat(pid.status().message(), "\n");
    result.duration = absl::Now() - start;
    return result;
  }
  ReadOutput(*pid, out[0], err[0], options.output_cap, start + options.timeout, &result);
  kill(-*pid, SIGKILL);  // the whole group: background children, or everything on a timeout
  int wait_status = 0;
  waitpid(*pid, &wait_status, 0);
  result.duration = absl::Now() - start;
  if (result.timed_out) {
    result.exit_code = 124;
    absl::StrAppend(&result.output, "\n[timed out after ", absl::FormatDuration(options.timeout),
                    "; the process group was killed]\n");
  } else if (WIFEXITED(wait_status)) {
    result.exit_code = WEXITSTATUS(wait_status);
  } else if (WIFSIGNALED(wait_status)) {
    result.exit_code = 128 + WTERMSIG(wait_status);
  }
  if (result.truncated) {
    absl::StrAppend(&result.output, "\n[output truncated at ", options.output_cap, " bytes]\n");
  }
  return result;
}

}  // namespace green_agent
