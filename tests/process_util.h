// Helpers for tests that run the real binaries: start a process with arguments, collect its
// stdout and stderr, wait for it with a bound, signal it (kill -9 included), and start a
// coordinator on 127.0.0.1:0 and learn its port from its "listening on" log line. Every wait is
// bounded: a test that goes wrong fails with the output so far instead of hanging.
#ifndef TESTS_PROCESS_UTIL_H_
#define TESTS_PROCESS_UTIL_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace testing_util {

// Path of a binary built with the tests (`coordinator`, `coordctl`): $COORD_BIN_DIR/<name>.
// COORD_BIN_DIR is set by ctest (tests/CMakeLists.txt); run by hand, set it yourself.
std::string BinaryPath(absl::string_view name);

// How a process ended, with everything it wrote.
struct ProcessResult {
  // The exit status when it exited; -1 when a signal ended it.
  int exit_code = -1;
  // The signal that ended it, or 0.
  int term_signal = 0;
  std::string out;
  std::string err;

  bool exited() const { return term_signal == 0; }
  // Exit code, output and error, for assertion messages.
  std::string Describe() const;
};

// A running child process. Its stdout and stderr go to pipes that a thread of this object
// drains into memory (so a chatty child never blocks on a full pipe); stdin is the data given
// to Start, then end of file. Not copyable; the destructor kills (SIGKILL) and reaps the child
// if it is still running.
class Process {
 public:
  // Starts `path` with `args` (not including argv[0]). `extra_env` entries ("NAME=value") are
  // added to (or override) the test's own environment.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Process>> Start(
      const std::string& path, const std::vector<std::string>& args,
      const std::string& stdin_data = "", const std::vector<std::string>& extra_env = {});

  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }

  // Sends `signal` unless the process has already ended (then OK: nothing to signal).
  [[nodiscard]] absl::Status Signal(int signal);

  // Waits up to `timeout` for the process to end. DEADLINE_EXCEEDED (with the output so far)
  // when it is still running; the process is left running.
  [[nodiscard]] absl::StatusOr<ProcessResult> Wait(absl::Duration timeout);

  // kill -9, then waits for it to end (bounded).
  [[nodiscard]] absl::StatusOr<ProcessResult> Kill();

  // Waits up to `timeout` until stderr holds a complete line containing `needle` and returns
  // that line (without the newline). FAILED_PRECONDITION when the process ended first,
  // DEADLINE_EXCEEDED on timeout; both messages carry the output so far.
  [[nodiscard]] absl::StatusOr<std::string> WaitForStderrLine(absl::string_view needle,
                                                              absl::Duration timeout);
  // The same on stdout.
  [[nodiscard]] absl::StatusOr<std::string> WaitForStdoutLine(absl::string_view needle,
                                                              absl::Duration timeout);

  std::string stdout_text() const;
  std::string stderr_text() const;
  bool ended() const;

 private:
  Process(pid_t pid, int stdin_fd, int stdout_fd, int stderr_fd, std::string stdin_data);

  [[nodiscard]] absl::StatusOr<std::string> WaitForLine(std::string Process::*stream,
                                                        absl::string_view name,
                                                        absl::string_view needle,
                                                        absl::Duration timeout);
  // Thread body: feeds stdin, drains stdout and stderr until both close, then reaps the child.
  void Pump(int stdin_fd, int stdout_fd, int stderr_fd, std::string stdin_data);
  ProcessResult ResultLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const pid_t pid_;
  mutable absl::Mutex mu_;
  std::string out_ ABSL_GUARDED_BY(mu_);
  std::string err_ ABSL_GUARDED_BY(mu_);
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  int wait_status_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread pump_;
};

// Runs `path` to completion and returns how it ended. When it runs longer than `timeout` it is
// killed and DEADLINE_EXCEEDED is returned with its output.
[[nodiscard]] absl::StatusOr<ProcessResult> RunProcess(const std::string& path,
                                                       const std::vector<std::string>& args,
                                                       absl::Duration timeout = absl::Seconds(60),
                                                       const std::string& stdin_data = "");

// Reads the port out of a coordinator log line such as
// "2024-01-01T00:00:00.000Z INFO listening on 127.0.0.1:43121" or (--log_format=json)
// {"time":"...","level":"INFO","message":"listening on 127.0.0.1:43121"}.
[[nodiscard]] absl::StatusOr<int> ParseListeningPort(absl::string_view line);

// Starts an agent binary (echo_agent, green_agent, purple_agent) with `args` plus its HTTP port
// on 127.0.0.1 (--port=0, agent_runtime/agent_http.h) and waits until it serves; the port it
// chose is put in *http_port.
[[nodiscard]] absl::StatusOr<std::unique_ptr<Process>> StartAgentWithHttp(
    const std::string& binary, std::vector<std::string> args, int* http_port);

// The real coordinator binary, listening on 127.0.0.1 at a port it chose itself.
class CoordinatorProcess {
 public:
  // Starts `coordinator --listen=127.0.0.1:0 --http_listen=127.0.0.1:0 --data_dir=<data_dir>
  // <extra_args>` (later flags win, so extra_args may override the first ones) and waits
  // (bounded) for its "listening on" line. When it exits instead, the error carries its stderr.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<CoordinatorProcess>> Start(
      const std::string& data_dir, const std::vector<std::string>& extra_args = {});

  int port() const { return port_; }
  // "127.0.0.1:<port>", for clients and coordctl --target.
  std::string target() const;
  // The HTTP port (--http_listen=127.0.0.1:0 chose it), from the "agent card on
  // http(s)://127.0.0.1:PORT/..." line; waits (bounded) for that line.
  [[nodiscard]] absl::StatusOr<int> HttpPort();
  Process& process() { return *process_; }

  // SIGTERM, then waits (bounded) for the exit.
  [[nodiscard]] absl::StatusOr<ProcessResult> Stop();
  // kill -9: the coordinator gets no chance to flush or close anything.
  [[nodiscard]] absl::StatusOr<ProcessResult> Kill() { return process_->Kill(); }

 private:
  CoordinatorProcess(std::unique_ptr<Process> process, int port)
      : process_(std::move(process)), port_(port) {}

  std::unique_ptr<Process> process_;
  int port_;
};

// Runs the real coordctl against `target` with `args` (after --target and --timeout).
[[nodiscard]] absl::StatusOr<ProcessResult> RunCoordctl(const std::string& target,
                                                        const std::vector<std::string>& args,
                                                        const std::string& stdin_data = "");

// A 3-member (or N) etcd cluster of the test's own, for tests that kill members: ctest's shared
// `etcd` fixture must stay whole for the other tests (tests/etcd_cluster.sh does the work).
class EtcdCluster {
 public:
  // Starts `members` members with their data under `dir`. UNIMPLEMENTED when etcd is not
  // installed (the caller skips).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<EtcdCluster>> Start(const std::string& dir,
                                                                          int members = 3);
  // Stops every member and removes `dir`.
  ~EtcdCluster();
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  // etcd://127.0.0.1:P0,127.0.0.1:P1,...
  const std::string& url() const { return url_; }
  // kill -9 of member `i` (0-based), and its start again on its data and ports.
  [[nodiscard]] absl::Status Kill(int i);
  [[nodiscard]] absl::Status Restart(int i);

 private:
  EtcdCluster(std::string dir, std::string url) : dir_(std::move(dir)), url_(std::move(url)) {}
  [[nodiscard]] absl::Status Run(const std::vector<std::string>& args);

  const std::string dir_;
  const std::string url_;
};

}  // namespace testing_util

#endif  // TESTS_PROCESS_UTIL_H_
