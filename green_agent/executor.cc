#include "green_agent/executor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"

extern char** environ;

namespace green_agent {

absl::StatusOr<std::vector<std::string>> SplitWords(absl::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      ++i;
      continue;
    }
    in_word = true;
    if (c == '\'') {
      const size_t end = text.find('\'', i + 1);
      if (end == absl::string_view::npos) {
        return absl::InvalidArgumentError("unterminated single quote");
      }
      word.append(text.data() + i + 1, end - i - 1);
      i = end + 1;
    } else if (c == '"') {
      ++i;
      bool closed = false;
      while (i < text.size()) {
        const char d = text[i];
        if (d == '"') {
          closed = true;
          ++i;
          break;
        }
        if (d == '\\' && i + 1 < text.size() &&
            (text[i + 1] == '"' || text[i + 1] == '\\' || text[i + 1] == '$' ||
             text[i + 1] == '`')) {
          word.push_back(text[i + 1]);
          i += 2;
          continue;
        }
        word.push_back(d);
        ++i;
      }
      if (!closed) return absl::InvalidArgumentError("unterminated double quote");
    } else if (c == '\\') {
      if (i + 1 < text.size()) word.push_back(text[i + 1]);
      i += 2;
    } else {
      word.push_back(c);
      ++i;
    }
  }
  if (in_word) words.push_back(std::move(word));
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

absl::StatusOr<ExecResult> RunProcess(std::vector<std::string> argv_words, const ExecEnv& env,
                                      const ProcessOptions& options) {
  ExecResult result;
  if (argv_words.empty()) {
    result.exit_code = 2;
    result.output = "cannot run the command: it is empty";
    return result;
  }
  std::vector<char*> argv;
  for (std::string& w : argv_words) argv.push_back(w.data());
  argv.push_back(nullptr);

  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "WORKSPACE=", 10) == 0 || std::strncmp(*e, "SHARED_DIR=", 11) == 0) {
      continue;
    }
    env_strings.emplace_back(*e);
  }
  env_strings.push_back(absl::StrCat("WORKSPACE=", env.workspace_dir));
  env_strings.push_back(absl::StrCat("SHARED_DIR=", env.shared_dir));
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

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
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, options.separate_stderr ? err[1] : out[1], 2);
  if (!options.cwd.empty()) {
    posix_spawn_file_actions_addchdir_np(&actions, options.cwd.c_str());
  }
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t no_signals;
  sigemptyset(&no_signals);
  posix_spawnattr_setsigmask(&attr, &no_signals);

  const absl::Time start = absl::Now();
  pid_t pid = 0;
  const int spawn_error = posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(out[1]);
  if (err[1] >= 0) close(err[1]);
  if (spawn_error != 0) {
    close(out[0]);
    if (err[0] >= 0) close(err[0]);
    result.exit_code = 127;
    result.output =
        absl::StrCat("cannot run ", argv_words[0], ": ", std::strerror(spawn_error), "\n");
    result.duration = absl::Now() - start;
    return result;
  }

  const absl::Time deadline = start + options.timeout;
  // "Exited" is learned with WNOWAIT: the child stays a zombie, so its process group id stays
  // reserved until the group (background children included) has been killed below.
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
  std::vector<Stream> streams = {{out[0], &result.output}};
  if (err[0] >= 0) streams.push_back({err[0], &result.error_output});
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
    if (ready > 0) {
      for (nfds_t i = 0; i < n; ++i) {
        if (p[i].revents == 0) continue;
        Stream* s = nullptr;
        for (Stream& candidate : streams) {
          if (candidate.fd == p[i].fd) s = &candidate;
        }
        const ssize_t got = read(p[i].fd, buffer, sizeof(buffer));
        if (got > 0) {
          const size_t room = options.output_cap - std::min(options.output_cap, s->text->size());
          if (static_cast<size_t>(got) > room) result.truncated = true;
          s->text->append(buffer, std::min(room, static_cast<size_t>(got)));
        } else if (got == 0 || errno != EINTR) {
          s->eof = true;
        }
      }
    }
    // The child is gone and the pipes are quiet: a grandchild left in the background must not
    // hold the command open.
    if (!all_eof() && ready == 0 && exited()) {
      child_exited = true;
      break;
    }
    if (absl::Now() >= deadline) {
      result.timed_out = true;
      break;
    }
  }
  for (const Stream& s : streams) close(s.fd);
  // The output ended (often just before the exit): wait for the exit itself.
  while (!result.timed_out && !child_exited) {
    if (exited()) {
      child_exited = true;
    } else if (absl::Now() >= deadline) {
      result.timed_out = true;
    } else {
      absl::SleepFor(absl::Milliseconds(2));
    }
  }
  kill(-pid, SIGKILL);  // the whole group: background children, or everything on a timeout
  int wait_status = 0;
  waitpid(pid, &wait_status, 0);
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
