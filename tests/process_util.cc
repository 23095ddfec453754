#include "tests/process_util.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "tests/test_util.h"

extern char** environ;

namespace testing_util {
namespace {

absl::Status ErrnoError(absl::string_view what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

void CloseIfOpen(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

// The test's environment with `extra` ("NAME=value") added or overriding.
std::vector<std::string> MergedEnvironment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const absl::string_view entry(*e);
    const absl::string_view name = entry.substr(0, entry.find('='));
    bool overridden = false;
    for (const std::string& x : extra) {
      if (absl::StartsWith(x, absl::StrCat(name, "="))) overridden = true;
    }
    if (!overridden) env.emplace_back(entry);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

// The first complete line of `text` that contains `needle`, without its newline.
bool FindLine(absl::string_view text, absl::string_view needle, std::string* line) {
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    if (end == absl::string_view::npos) return false;  // an incomplete last line
    const absl::string_view candidate = text.substr(start, end - start);
    if (absl::StrContains(candidate, needle)) {
      *line = std::string(candidate);
      return true;
    }
    start = end + 1;
  }
  return false;
}

}  // namespace

std::string BinaryPath(absl::string_view name) {
  const char* dir = std::getenv("COORD_BIN_DIR");
  if (dir != nullptr && *dir != '\0') return absl::StrCat(dir, "/", name);
  // Run by hand: the test binaries are built into the same directory as the others.
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (self.parent_path() / std::string(name)).string();
}

std::string ProcessResult::Describe() const {
  return absl::StrCat(exited() ? absl::StrCat("exit code ", exit_code)
                               : absl::StrCat("killed by signal ", term_signal),
                      "\n--- stdout ---\n", out, "\n--- stderr ---\n", err);
}

absl::StatusOr<std::unique_ptr<Process>> Process::Start(const std::string& path,
                                                        const std::vector<std::string>& args,
                                                        const std::string& stdin_data,
                                                        const std::vector<std::string>& extra_env) {
  // Every descriptor is close-on-exec, so a child started by another thread at the same time
  // cannot inherit (and hold open) this child's pipes.
  int in_pipe[2] = {-1, -1};
  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  auto close_all = [&] {
    for (int* p : {in_pipe, out_pipe, err_pipe}) {
      CloseIfOpen(p[0]);
      CloseIfOpen(p[1]);
    }
  };
  if ((!stdin_data.empty() && pipe2(in_pipe, O_CLOEXEC) != 0) || pipe2(out_pipe, O_CLOEXEC) != 0 ||
      pipe2(err_pipe, O_CLOEXEC) != 0) {
    absl::Status error = ErrnoError("pipe2");
    close_all();
    return error;
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (stdin_data.empty()) {
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  } else {
    posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
  }
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);

  // The child starts with no blocked signals and default dispositions, whatever the test's
  // threads (gRPC's among them) have set up.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  sigset_t all;
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<std::string> argv_strings;
  argv_strings.push_back(path);
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings = MergedEnvironment(extra_env);
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  pid_t pid = 0;
  const int rc = posix_spawn(&pid, path.c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    close_all();
    return absl::FailedPreconditionError(
        absl::StrCat("cannot start ", path, ": ", std::strerror(rc)));
  }
  CloseIfOpen(in_pipe[0]);
  CloseIfOpen(out_pipe[1]);
  CloseIfOpen(err_pipe[1]);
  for (int fd : {in_pipe[1], out_pipe[0], err_pipe[0]}) {
    if (fd >= 0) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  return std::unique_ptr<Process>(
      new Process(pid, in_pipe[1], out_pipe[0], err_pipe[0], stdin_data));
}

Process::Process(pid_t pid, int stdin_fd, int stdout_fd, int stderr_fd, std::string stdin_data)
    : pid_(pid) {
  pump_ = std::thread([this, stdin_fd, stdout_fd, stderr_fd, data = std::move(stdin_data)] {
    Pump(stdin_fd, stdout_fd, stderr_fd, data);
  });
}

Process::~Process() {
  {
    absl::MutexLock lock(&mu_);
    // A child in the middle of a sanitizer report is given time to finish it (it aborts then).
    const auto ended_or_reported = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return ended_ || !absl::StrContains(err_, "Sanitizer");
    };
    mu_.AwaitWithTimeout(absl::Condition(&ended_or_reported), absl::Seconds(30));
    if (!ended_) kill(pid_, SIGKILL);
  }
  pump_.join();
  // A child's sanitizer report would otherwise go with its stderr: the test only sees a call
  // fail (the child aborted), so the report goes to the test's own stderr, whole.
  absl::MutexLock lock(&mu_);
  for (const char* marker : {"ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                             "WARNING: ThreadSanitizer", "runtime error: "}) {
    const size_t at = err_.find(marker);
    if (at == std::string::npos) continue;
    const size_t from = err_.rfind('\n', at);
    std::fprintf(stderr, "=== sanitizer report of child process %d ===\n%s\n=== end ===\n",
                 static_cast<int>(pid_),
                 err_.substr(from == std::string::npos ? 0 : from + 1).c_str());
    break;
  }
}

void Process::Pump(int stdin_fd, int stdout_fd, int stderr_fd, std::string stdin_data) {
  // A child that exits without reading all of its stdin must not kill the test with SIGPIPE:
  // with the signal blocked in this thread, the write fails with EPIPE instead.
  sigset_t pipe_signal;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);

  // The pidfd reports the exit even when a grandchild still holds the pipes open.
  int pid_fd = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
  size_t written = 0;
  if (stdin_fd >= 0 && stdin_data.empty()) CloseIfOpen(stdin_fd);
  bool exited = false;
  char buffer[16384];

  auto drain = [&](int& fd, bool is_stdout) {
    while (fd >= 0) {
      const ssize_t n = read(fd, buffer, sizeof(buffer));
      if (n > 0) {
        absl::MutexLock lock(&mu_);
        (is_stdout ? out_ : err_).append(buffer, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      CloseIfOpen(fd);  // end of file, or an error we cannot do better with
    }
  };

  while (!exited) {
    pollfd fds[4];
    int n = 0;
    auto add = [&](int fd, short events) {
      if (fd >= 0) fds[n++] = pollfd{fd, events, 0};
    };
    add(stdin_fd, POLLOUT);
    add(stdout_fd, POLLIN);
    add(stderr_fd, POLLIN);
    add(pid_fd, POLLIN);
    if (n == 0) break;  // no pidfd (very old kernel) and every pipe closed: go and reap
    if (poll(fds, static_cast<nfds_t>(n), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (stdin_fd >= 0) {
      const ssize_t w = write(stdin_fd, stdin_data.data() + written, stdin_data.size() - written);
      if (w > 0) written += static_cast<size_t>(w);
      if ((w < 0 && errno != EAGAIN && errno != EINTR) || written == stdin_data.size()) {
        CloseIfOpen(stdin_fd);
      }
    }
    drain(stdout_fd, true);
    drain(stderr_fd, false);
    if (pid_fd >= 0) {
      pollfd p{pid_fd, POLLIN, 0};
      exited = poll(&p, 1, 0) > 0;
    }
  }
  // The child is gone: what it wrote is already in the pipes.
  drain(stdout_fd, true);
  drain(stderr_fd, false);
  CloseIfOpen(stdin_fd);
  CloseIfOpen(stdout_fd);
  CloseIfOpen(stderr_fd);
  CloseIfOpen(pid_fd);

  // Wait for the exit without reaping, then reap under the lock, so that Signal (which checks
  // ended_ under it) never signals a pid the system has already given to another process.
  siginfo_t info;
  while (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  absl::MutexLock lock(&mu_);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  wait_status_ = status;
  ended_ = true;
}

ProcessResult Process::ResultLocked() const {
  ProcessResult result;
  result.out = out_;
  result.err = err_;
  if (ended_) {
    if (WIFEXITED(wait_status_)) result.exit_code = WEXITSTATUS(wait_status_);
    if (WIFSIGNALED(wait_status_)) result.term_signal = WTERMSIG(wait_status_);
  }
  return result;
}

absl::Status Process::Signal(int signal) {
  absl::MutexLock lock(&mu_);
  if (ended_) return absl::OkStatus();
  if (kill(pid_, signal) != 0) return ErrnoError("kill");
  return absl::OkStatus();
}

absl::StatusOr<ProcessResult> Process::Wait(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  if (!mu_.AwaitWithTimeout(absl::Condition(&ended_), timeout)) {
    return absl::DeadlineExceededError(absl::StrCat("process ", pid_, " still running after ",
                                                    absl::FormatDuration(timeout), "\n",
                                                    ResultLocked().Describe()));
  }
  return ResultLocked();
}

absl::StatusOr<ProcessResult> Process::Kill() {
  if (absl::Status s = Signal(SIGKILL); !s.ok()) return s;
  return Wait(absl::Seconds(60));
}

absl::StatusOr<std::string> Process::WaitForStderrLine(absl::string_view needle,
                                                       absl::Duration timeout) {
  return WaitForLine(&Process::err_, "stderr", needle, timeout);
}

absl::StatusOr<std::string> Process::WaitForStdoutLine(absl::string_view needle,
                                                       absl::Duration timeout) {
  return WaitForLine(&Process::out_, "stdout", needle, timeout);
}

absl::StatusOr<std::string> Process::WaitForLine(std::string Process::*stream,
                                                 absl::string_view name, absl::string_view needle,
                                                 absl::Duration timeout) {
  std::string line;
  absl::MutexLock lock(&mu_);
  auto found_or_ended = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return FindLine(this->*stream, needle, &line) || ended_;
  };
  const bool done = mu_.AwaitWithTimeout(absl::Condition(&found_or_ended), timeout);
  if (FindLine(this->*stream, needle, &line)) return line;
  if (done) {
    return absl::FailedPreconditionError(
        absl::StrCat("process ended before writing \"", needle, "\": ", ResultLocked().Describe()));
  }
  return absl::DeadlineExceededError(absl::StrCat("no \"", needle, "\" on ", name, " after ",
                                                  absl::FormatDuration(timeout), ": ",
                                                  ResultLocked().Describe()));
}

std::string Process::stdout_text() const {
  absl::MutexLock lock(&mu_);
  return out_;
}

std::string Process::stderr_text() const {
  absl::MutexLock lock(&mu_);
  return err_;
}

bool Process::ended() const {
  absl::MutexLock lock(&mu_);
  return ended_;
}

absl::StatusOr<ProcessResult> RunProcess(const std::string& path,
                                         const std::vector<std::string>& args,
                                         absl::Duration timeout, const std::string& stdin_data) {
  absl::StatusOr<std::unique_ptr<Process>> process = Process::Start(path, args, stdin_data);
  if (!process.ok()) return process.status();
  absl::StatusOr<ProcessResult> result = (*process)->Wait(timeout);
  if (absl::IsDeadlineExceeded(result.status())) {
    absl::StatusOr<ProcessResult> killed = (*process)->Kill();
    return absl::DeadlineExceededError(
        absl::StrCat(path, " ran longer than ", absl::FormatDuration(timeout), "; killed. ",
                     killed.ok() ? killed->Describe() : std::string(killed.status().message())));
  }
  return result;
}

absl::StatusOr<int> ParseListeningPort(absl::string_view line) {
  constexpr absl::string_view kMarker = "listening on ";
  const size_t at = line.find(kMarker);
  if (at == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("no \"listening on\" in: ", line));
  }
  // The address ends at a space or, in a JSON log line, at the message's closing quote.
  absl::string_view address = absl::StripAsciiWhitespace(line.substr(at + kMarker.size()));
  address = address.substr(0, address.find_first_of("\" \t"));
  const size_t colon = address.rfind(':');
  int port = 0;
  if (colon == absl::string_view::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port) ||
      port <= 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("no port in: ", line));
  }
  return port;
}

absl::StatusOr<std::unique_ptr<Process>> StartAgentWithHttp(const std::string& binary,
                                                            std::vector<std::string> args,
                                                            int* http_port) {
  args.insert(args.end(), {"--host=127.0.0.1", "--port=0"});
  ASSIGN_OR_RETURN(std::unique_ptr<Process> agent, Process::Start(BinaryPath(binary), args));
  constexpr absl::string_view kMarker = "over HTTP on port ";
  ASSIGN_OR_RETURN(const std::string line, agent->WaitForStderrLine(kMarker, kProcessWait));
  absl::string_view rest = absl::string_view(line);
  rest = rest.substr(rest.find(kMarker) + kMarker.size());
  rest = rest.substr(0, rest.find_first_not_of("0123456789"));
  if (!absl::SimpleAtoi(rest, http_port) || *http_port <= 0 || *http_port > 65535) {
    return absl::InternalError(absl::StrCat("no HTTP port in: ", line));
  }
  return agent;
}

absl::StatusOr<std::unique_ptr<CoordinatorProcess>> CoordinatorProcess::Start(
    const std::string& data_dir, const std::vector<std::string>& extra_args) {
  // Every port ephemeral, the agent card's HTTP port too (extra_args may override it).
  std::vector<std::string> args = {"--listen=127.0.0.1:0", "--http_listen=127.0.0.1:0",
                                   absl::StrCat("--data_dir=", data_dir)};
  // Run as etcd.<test> (ctest's etcd fixture, storage/testing/test_store.h): the coordinator
  // keeps its data in the test cluster, under a prefix of this data dir's own (the same one when
  // the test starts a coordinator on it again), unless the test chose a store itself.
  const char* etcd_file = std::getenv("COORD_TEST_ETCD");
  const bool store_chosen =
      std::any_of(extra_args.begin(), extra_args.end(),
                  [](const std::string& a) { return absl::StartsWith(a, "--store="); });
  if (etcd_file != nullptr && *etcd_file != '\0' && !store_chosen) {
    std::ifstream in(etcd_file);
    std::string url;
    if (!in || !std::getline(in, url) || url.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("COORD_TEST_ETCD names ", etcd_file, ", which holds no etcd URL"));
    }
    static const uint64_t nonce = absl::Uniform<uint64_t>(absl::BitGen());
    args.push_back("--store=" + url);
    args.push_back(absl::StrCat("--etcd_prefix=/test/", getpid(), "-", nonce, "/", data_dir, "/"));
  }
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  absl::StatusOr<std::unique_ptr<Process>> process =
      Process::Start(BinaryPath("coordinator"), args);
  if (!process.ok()) return process.status();
  absl::StatusOr<std::string> line =
      (*process)->WaitForStderrLine("listening on ", absl::Seconds(60));
  if (!line.ok()) return line.status();
  absl::StatusOr<int> port = ParseListeningPort(*line);
  if (!port.ok()) return port.status();
  return std::unique_ptr<CoordinatorProcess>(new CoordinatorProcess(*std::move(process), *port));
}

std::string CoordinatorProcess::target() const { return absl::StrCat("127.0.0.1:", port_); }

absl::StatusOr<int> CoordinatorProcess::HttpPort() {
  absl::StatusOr<std::string> line =
      process_->WaitForStderrLine("agent card on ", absl::Seconds(60));
  if (!line.ok()) return line.status();
  const std::string kMarker = "://127.0.0.1:";
  const size_t at = line->find(kMarker);
  if (at == std::string::npos) return absl::NotFoundError(*line);
  std::string digits;
  for (const char c : line->substr(at + kMarker.size())) {
    if (c < '0' || c > '9') break;
    digits += c;
  }
  int port = 0;
  if (!absl::SimpleAtoi(digits, &port)) return absl::NotFoundError(*line);
  return port;
}

absl::StatusOr<ProcessResult> CoordinatorProcess::Stop() {
  if (absl::Status s = process_->Signal(SIGTERM); !s.ok()) return s;
  return process_->Wait(absl::Seconds(60));
}

absl::StatusOr<ProcessResult> RunCoordctl(const std::string& target,
                                          const std::vector<std::string>& args,
                                          const std::string& stdin_data) {
  std::vector<std::string> full = {"--target", target, "--timeout", "30s"};
  full.insert(full.end(), args.begin(), args.end());
  return RunProcess(BinaryPath("coordctl"), full, absl::Seconds(60), stdin_data);
}

namespace {

std::string EtcdClusterScript() { return std::string(COORD_SOURCE_DIR) + "/tests/etcd_cluster.sh"; }

}  // namespace

absl::StatusOr<std::unique_ptr<EtcdCluster>> EtcdCluster::Start(const std::string& dir,
                                                                int members) {
  absl::StatusOr<ProcessResult> started = RunProcess(
      "/bin/bash", {EtcdClusterScript(), "start", dir, absl::StrCat(members)}, absl::Seconds(120));
  if (!started.ok()) return started.status();
  if (started->exit_code == 77) {
    return absl::UnimplementedError(absl::StrCat("etcd is not installed: ", started->out));
  }
  if (started->exit_code != 0) {
    return absl::InternalError(absl::StrCat("etcd_cluster.sh start: ", started->Describe()));
  }
  std::ifstream in(dir + "/url");
  std::string url;
  if (!in || !std::getline(in, url) || url.empty()) {
    return absl::InternalError(absl::StrCat("etcd_cluster.sh wrote no URL to ", dir, "/url"));
  }
  return std::unique_ptr<EtcdCluster>(new EtcdCluster(dir, url));
}

EtcdCluster::~EtcdCluster() { (void)Run({"stop", dir_}); }

absl::Status EtcdCluster::Kill(int i) { return Run({"kill", dir_, absl::StrCat(i)}); }

absl::Status EtcdCluster::Restart(int i) { return Run({"restart", dir_, absl::StrCat(i)}); }

absl::Status EtcdCluster::Run(const std::vector<std::string>& args) {
  std::vector<std::string> all = {EtcdClusterScript()};
  all.insert(all.end(), args.begin(), args.end());
  absl::StatusOr<ProcessResult> r = RunProcess("/bin/bash", all, absl::Seconds(120));
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    return absl::InternalError(absl::StrCat("etcd_cluster.sh ", args[0], ": ", r->Describe()));
  }
  return absl::OkStatus();
}

}  // namespace testing_util
