#include "coordctl/scenario_agents.h"

#include <fcntl.h>
#include <netdb.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/child_process.h"
#include "coordinator/v1/agent_registry.grpc.pb.h"

namespace coordctl {
namespace {

// The last lines of a log, for an error message.
std::string LogTail(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
    if (lines.size() > 5) lines.erase(lines.begin());
  }
  std::string tail;
  for (const std::string& l : lines) absl::StrAppend(&tail, "\n  | ", l);
  return tail;
}

// Copies the agent's output to its log and, line by line with its role in front, to `err`.
void Tee(int from, int log_fd, std::string prefix, std::ostream* err, absl::Mutex* err_mu) {
  std::string pending;
  char buffer[4096];
  while (true) {
    const ssize_t n = read(from, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    (void)!write(log_fd, buffer, static_cast<size_t>(n));
    pending.append(buffer, static_cast<size_t>(n));
    size_t newline;
    while ((newline = pending.find('\n')) != std::string::npos) {
      absl::MutexLock lock(err_mu);
      *err << prefix << pending.substr(0, newline + 1) << std::flush;
      pending.erase(0, newline + 1);
    }
  }
  if (!pending.empty()) {
    absl::MutexLock lock(err_mu);
    *err << prefix << pending << std::endl;
  }
  close(from);
  close(log_fd);
}

}  // namespace

// Whether something accepts TCP connections at host:port (brackets of an IPv6 host dropped).
bool Listening(const ScenarioAgent& agent) {
  std::string host = agent.host;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(agent.port).c_str(), &hints, &found) != 0) {
    return false;
  }
  bool listening = false;
  for (addrinfo* a = found; a != nullptr && !listening; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    listening = connect(fd, a->ai_addr, a->ai_addrlen) == 0;
    close(fd);
  }
  freeaddrinfo(found);
  return listening;
}

std::string CardUrl(const std::string& endpoint) {
  return absl::StrCat(absl::StripSuffix(endpoint, "/"), "/.well-known/agent-card.json");
}

absl::Status StartAgent(ScenarioRunAgent& agent, bool show_logs, std::ostream* err,
                        absl::Mutex* err_mu) {
  const int log_fd = open(agent.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot write ", agent.log_path, ": ", std::strerror(errno)));
  }
  common::SpawnOptions options;
  options.argv = agent.spec->cmd;
  int pipe_fds[2] = {-1, -1};
  if (show_logs) {
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
      close(log_fd);
      return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
    }
    options.stdout_fd = pipe_fds[1];
  } else {
    options.stdout_fd = log_fd;
  }
  absl::StatusOr<pid_t> pid = common::Spawn(options);
  if (show_logs) close(pipe_fds[1]);
  if (!pid.ok()) {
    close(log_fd);
    if (show_logs) close(pipe_fds[0]);
    return absl::FailedPreconditionError(
        absl::StrCat("agent ", agent.spec->role, ": ", pid.status().message()));
  }
  agent.pgid = *pid;
  agent.ours = true;
  if (show_logs) {
    agent.tee = std::make_unique<std::thread>(
        Tee, pipe_fds[0], log_fd, absl::StrCat("[", agent.spec->role, "] "), err, err_mu);
  } else {
    close(log_fd);
  }
  std::ofstream(agent.pid_path) << agent.pgid << "\n";
  return absl::OkStatus();
}

// The process group an earlier run started for this agent, if it still runs that command.
pid_t AdoptedGroup(const ScenarioRunAgent& agent) {
  std::ifstream in(agent.pid_path);
  pid_t pgid = 0;
  if (!(in >> pgid) || pgid <= 1 || getpgid(pgid) != pgid) return 0;
  std::ifstream cmdline(absl::StrCat("/proc/", pgid, "/cmdline"));
  std::string first;
  std::getline(cmdline, first, '\0');
  return std::filesystem::path(first).filename() ==
                 std::filesystem::path(agent.spec->cmd.front()).filename()
             ? pgid
             : 0;
}

// Registers the agent by its card URL once it serves the card, until `deadline`.
absl::Status RegisterWhenUp(const Env& env, ScenarioRunAgent& agent, absl::Time deadline) {
  auto stub = coordinator::v1::AgentRegistry::NewStub(env.channel);
  coordinator::v1::RegisterAgentRequest request;
  request.mutable_agent()->set_name(agent.name);
  request.mutable_agent()->set_card_url(agent.card_url);
  if (agent.max_in_flight >= 0) request.mutable_agent()->set_max_in_flight(agent.max_in_flight);
  std::string last_error;
  while (true) {
    coordinator::v1::Agent registered;
    grpc::Status s = stub->RegisterAgent(env.NewContext().get(), request, &registered);
    if (s.ok()) return absl::OkStatus();
    last_error = s.error_message();
    if (s.error_code() == grpc::StatusCode::PERMISSION_DENIED ||
        s.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
      return absl::PermissionDeniedError(
          absl::StrCat("registering agent ", agent.spec->role, ": ", last_error));
    }
    if (agent.ours) {
      if (std::optional<int> status = common::ExitedStatus(agent.pgid); status.has_value()) {
        agent.pgid = 0;
        return absl::FailedPreconditionError(absl::StrCat(
            "agent ", agent.spec->role, ": its cmd ended (", common::DescribeExit(*status),
            ") before it served its card at ", agent.card_url, "; its log ", agent.log_path, ":",
            LogTail(agent.log_path)));
      }
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "agent ", agent.spec->role, " did not serve its card at ", agent.card_url,
          " in time (--start-timeout): ", last_error,
          agent.ours ? absl::StrCat("; its log ", agent.log_path, ":", LogTail(agent.log_path))
                     : ""));
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
}

void StopAgents(std::vector<ScenarioRunAgent>& agents) {
  for (ScenarioRunAgent& agent : agents) {
    if (agent.pgid > 0) {
      common::StopProcessGroup(agent.pgid, absl::Seconds(5));
      std::error_code ignored;
      std::filesystem::remove(agent.pid_path, ignored);
      agent.pgid = 0;
    }
    if (agent.tee != nullptr) agent.tee->join();
  }
}

// Waits for SIGINT or SIGTERM.
void WaitForStopSignal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  int signal = 0;
  sigwait(&set, &signal);
}

}  // namespace coordctl
