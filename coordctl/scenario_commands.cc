// coordctl scenario run / show / cancel: an evaluation platform's scenario file run through the
// coordinator (docs/scenarios.md). The agents are started and registered at the coordinator,
// the green agent is handed the coordinator's URL of each participant, so that every message of
// the assessment passes through the gateway and is stored; the assessment's task lives in the
// context "scenario-<run id>", which is how a second run of the same command finds it again.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "a2a/v1/a2a.grpc.pb.h"
#include "a2a_protocol/version.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/child_process.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/uuid.h"
#include "coordctl/a2a_follow.h"
#include "coordctl/cli.h"
#include "coordctl/scenario_file.h"
#include "coordinator/v1/agent_registry.grpc.pb.h"
#include "google/protobuf/util/json_util.h"

namespace coordctl {
namespace {

namespace a2apb = ::lf::a2a::v1;

// One agent of the scenario as this run handles it.
struct Agent {
  const ScenarioAgent* spec = nullptr;
  std::string name;      // at the coordinator: "<run id>.<role>"
  std::string card_url;  // the agent's own card
  std::string log_path;
  std::string pid_path;  // the process group of a started agent, for a later run to stop
  pid_t pgid = 0;        // started by this run, or adopted from the pid file of an earlier one
  bool ours = false;     // started by this process (a child: its exit can be seen)
  std::unique_ptr<std::thread> tee;
};

bool ValidRunId(absl::string_view id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id) {
    if (!absl::ascii_isalnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

// Protobuf's JSON of `message` without its default fields, on one line.
std::string CompactJson(const google::protobuf::Message& message) {
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(message, &json);
  return json;
}

// "COMPLETED" for TASK_STATE_COMPLETED.
std::string StateName(a2apb::TaskState state) {
  return std::string(absl::StripPrefix(a2apb::TaskState_Name(state), "TASK_STATE_"));
}

bool Ended(a2apb::TaskState s) {
  return s == a2apb::TASK_STATE_COMPLETED || s == a2apb::TASK_STATE_FAILED ||
         s == a2apb::TASK_STATE_CANCELED || s == a2apb::TASK_STATE_REJECTED;
}

std::string ContextOf(const std::string& run_id) { return absl::StrCat("scenario-", run_id); }

std::string AgentName(const std::string& run_id, const std::string& role) {
  return absl::StrCat(run_id, ".", role);
}

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

absl::Status StartAgent(Agent& agent, bool show_logs, std::ostream* err, absl::Mutex* err_mu) {
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
pid_t AdoptedGroup(const Agent& agent) {
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
absl::Status RegisterWhenUp(const Env& env, Agent& agent, absl::Time deadline) {
  auto stub = coordinator::v1::AgentRegistry::NewStub(env.channel);
  coordinator::v1::RegisterAgentRequest request;
  request.mutable_agent()->set_name(agent.name);
  request.mutable_agent()->set_card_url(agent.card_url);
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

// The assessment already sent in this run's context, if any (the newest).
absl::StatusOr<std::optional<a2apb::Task>> FindAssessment(const Env& env,
                                                          const std::string& context_id) {
  auto stub = a2apb::A2AService::NewStub(env.channel);
  a2apb::ListTasksRequest request;
  request.set_context_id(context_id);
  request.set_page_size(1);
  request.set_history_length(0);
  request.set_include_artifacts(true);
  a2apb::ListTasksResponse response;
  auto context = env.NewContext();
  a2a_protocol::AddVersion(context.get());
  grpc::Status s = stub->ListTasks(context.get(), request, &response);
  if (!s.ok()) {
    return absl::UnavailableError(
        absl::StrCat("reading the run's assessment at the coordinator: ", s.error_message()));
  }
  if (response.tasks().empty()) return std::optional<a2apb::Task>();
  return std::optional<a2apb::Task>(response.tasks(0));
}

// The message platforms send the green agent: each participant's URL (here the coordinator's
// URL of that agent) by role, and the scenario's config. The URL ends in a slash: clients that
// resolve the card path against it as a relative URL (the JavaScript SDK's createFromUrl) would
// drop the agent's name from a URL without one.
std::string AssessmentRequest(const std::vector<Agent>& agents, const std::string& gateway,
                              const Scenario& scenario) {
  std::string participants;
  for (size_t i = 1; i < agents.size(); ++i) {
    absl::StrAppend(&participants, participants.empty() ? "" : ", ",
                    common::JsonQuote(agents[i].spec->role), ": ",
                    common::JsonQuote(absl::StrCat(gateway, "/agents/", agents[i].name, "/")));
  }
  return absl::StrCat(R"({"participants": {)", participants, R"(}, "config": )",
                      ToJson(scenario.config), "}");
}

absl::StatusOr<a2apb::Task> SendAssessment(const Env& env, const std::string& green,
                                           const std::string& context_id, const std::string& text) {
  auto stub = a2apb::A2AService::NewStub(env.channel);
  a2apb::SendMessageRequest request;
  request.set_tenant(green);
  a2apb::Message* message = request.mutable_message();
  message->set_message_id(common::NewUuid());
  message->set_role(a2apb::ROLE_USER);
  message->set_context_id(context_id);
  message->add_parts()->set_text(text);
  request.mutable_configuration()->set_return_immediately(true);
  a2apb::SendMessageResponse response;
  auto context = env.NewContext();
  a2a_protocol::AddVersion(context.get());
  grpc::Status s = stub->SendMessage(context.get(), request, &response);
  if (!s.ok()) {
    return absl::UnavailableError(
        absl::StrCat("sending the assessment to the green agent: ", s.error_message()));
  }
  if (!response.has_task()) {
    return absl::FailedPreconditionError(
        "the green agent answered the assessment request with a message, not a task");
  }
  return response.task();
}

// The result file: the run, its task and the task's artifacts.
absl::Status WriteResult(const std::string& path, const std::string& run_id,
                         const a2apb::Task& task) {
  std::string artifacts;
  for (const a2apb::Artifact& artifact : task.artifacts()) {
    absl::StrAppend(&artifacts, artifacts.empty() ? "\n    " : ",\n    ", CompactJson(artifact));
  }
  const std::string state = StateName(task.status().state());
  const std::string json =
      absl::StrCat("{\n  \"run_id\": ", common::JsonQuote(run_id),
                   ",\n  \"context_id\": ", common::JsonQuote(task.context_id()),
                   ",\n  \"task_id\": ", common::JsonQuote(task.id()),
                   ",\n  \"state\": ", common::JsonQuote(absl::AsciiStrToLower(state)),
                   ",\n  \"artifacts\": [", artifacts, artifacts.empty() ? "]" : "\n  ]", "\n}\n");
  const std::string temporary = absl::StrCat(path, ".tmp");
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << json;
    out.close();
    if (!out) return absl::FailedPreconditionError(absl::StrCat("cannot write ", temporary));
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot write ", path, ": ", error.message()));
  }
  return absl::OkStatus();
}

void StopAgents(std::vector<Agent>& agents) {
  for (Agent& agent : agents) {
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

int RunScenario(const Env& env, const ParsedArgs& args) {
  const std::string file = args.positional[0];
  std::error_code error;
  const uintmax_t size = std::filesystem::file_size(file, error);
  if (error) return Fail(env, absl::StrCat("cannot read ", file, ": ", error.message()));
  if (size > kMaxScenarioBytes) {
    return Fail(env, absl::StrCat(file, ": ", size, " bytes; at most ", kMaxScenarioBytes));
  }
  std::ostringstream text;
  text << std::ifstream(file, std::ios::binary).rdbuf();
  absl::StatusOr<Scenario> scenario = ParseScenario(text.str());
  if (!scenario.ok()) return Fail(env, absl::StrCat(file, ": ", scenario.status().message()));

  const std::string run_id =
      args.get("run-id", absl::StrCat("sc-", common::Sha256Hex(text.str()).substr(0, 12)));
  if (!ValidRunId(run_id)) {
    return Fail(env, "--run-id must be 1 to 64 letters, digits, -, _ or .", kExitUsage);
  }
  std::string gateway(absl::StripSuffix(args.get("gateway", "http://127.0.0.1:8080"), "/"));
  if (!absl::StartsWith(gateway, "http://") && !absl::StartsWith(gateway, "https://")) {
    return Fail(env, "--gateway is the coordinator's HTTP URL (http://host:port)", kExitUsage);
  }
  absl::Duration start_timeout = absl::Seconds(60);
  if (args.has("start-timeout")) {
    absl::StatusOr<absl::Duration> d = ParseDurationArg("start-timeout", args.get("start-timeout"));
    if (!d.ok()) return Fail(env, std::string(d.status().message()), kExitUsage);
    start_timeout = *d;
  }
  absl::Duration for_at_most = absl::InfiniteDuration();
  if (args.has("for")) {
    absl::StatusOr<absl::Duration> d = ParseDurationArg("for", args.get("for"));
    if (!d.ok()) return Fail(env, std::string(d.status().message()), kExitUsage);
    for_at_most = *d;
  }
  const std::string logs = args.get("logs", absl::StrCat(".coordctl/scenarios/", run_id));
  std::filesystem::create_directories(logs, error);
  if (error) return Fail(env, absl::StrCat("cannot make ", logs, ": ", error.message()));

  std::vector<Agent> agents;
  for (const ScenarioAgent* spec = &scenario->green;;) {
    Agent& agent = agents.emplace_back();
    agent.spec = spec;
    agent.name = AgentName(run_id, spec->role);
    agent.card_url = CardUrl(spec->endpoint);
    agent.log_path = absl::StrCat(logs, "/", spec->role, ".log");
    agent.pid_path = absl::StrCat(logs, "/", spec->role, ".pid");
    if (agents.size() > scenario->participants.size()) break;
    spec = &scenario->participants[agents.size() - 1];
  }

  // A second run of the same scenario follows the assessment the first one sent.
  const std::string context_id = ContextOf(run_id);
  absl::StatusOr<std::optional<a2apb::Task>> found = FindAssessment(env, context_id);
  if (!found.ok()) return Fail(env, std::string(found.status().message()));
  const bool resumed = found->has_value();
  const bool ended = !args.flag("serve-only") && resumed && Ended((*found)->status().state());

  // Before anything starts: an endpoint someone else serves is refused, unless this run is
  // resumed and the agent is the one an earlier run started.
  std::vector<Agent*> to_start;
  for (Agent& agent : agents) {
    if (ended) break;  // nothing to start: the result is there
    if (agent.spec->cmd.empty() || !Listening(*agent.spec)) {
      if (!agent.spec->cmd.empty()) to_start.push_back(&agent);
      continue;
    }
    if (!resumed) {
      return Fail(env, absl::StrCat(file, ": line ", agent.spec->line, ": agent ", agent.spec->role,
                                    ": ", agent.spec->host, ":", agent.spec->port,
                                    " is in use already; stop what serves it or change the "
                                    "endpoint"));
    }
    agent.pgid = AdoptedGroup(agent);
  }
  absl::Mutex err_mu;
  for (Agent* agent : to_start) {
    if (absl::Status s = StartAgent(*agent, args.flag("show-logs"), env.err, &err_mu); !s.ok()) {
      StopAgents(agents);
      return Fail(env, std::string(s.message()));
    }
    absl::MutexLock lock(&err_mu);
    *env.err << "started " << agent->spec->role << " (pid " << agent->pgid << ", log "
             << agent->log_path << ")" << std::endl;
  }
  const absl::Time deadline = absl::Now() + start_timeout;
  for (Agent& agent : agents) {
    if (ended) break;
    if (absl::Status s = RegisterWhenUp(env, agent, deadline); !s.ok()) {
      StopAgents(agents);
      return Fail(env, std::string(s.message()));
    }
    absl::MutexLock lock(&err_mu);
    *env.err << "registered " << agent.spec->role << " as " << agent.name << ": " << gateway
             << "/agents/" << agent.name << std::endl;
  }

  if (args.flag("serve-only")) {
    *env.out << "serving run " << run_id << "; stop with Ctrl-C" << std::endl;
    WaitForStopSignal();
    StopAgents(agents);
    return kExitOk;
  }

  a2apb::Task task;
  if (resumed) {
    task = **found;
    *env.out << "run " << run_id << ": following assessment " << task.id() << " (context "
             << context_id << ")" << std::endl;
  } else {
    absl::StatusOr<a2apb::Task> sent = SendAssessment(
        env, agents.front().name, context_id, AssessmentRequest(agents, gateway, *scenario));
    if (!sent.ok()) {
      StopAgents(agents);
      return Fail(env, std::string(sent.status().message()));
    }
    task = *std::move(sent);
    *env.out << "run " << run_id << ": assessment " << task.id() << " (context " << context_id
             << ")" << std::endl;
  }
  a2apb::Task last;
  const int code = FollowTask(env, task.id(), for_at_most, /*json=*/false, &last);
  if (!last.id().empty() && args.has("output")) {
    if (absl::Status s = WriteResult(args.get("output"), run_id, last); !s.ok()) {
      StopAgents(agents);
      return Fail(env, std::string(s.message()));
    }
  }
  StopAgents(agents);
  return code;
}

// The run's assessment: found by the run id's context.
absl::StatusOr<a2apb::Task> RunTask(const Env& env, const std::string& run_id) {
  if (!ValidRunId(run_id)) return absl::InvalidArgumentError("not a run id");
  absl::StatusOr<std::optional<a2apb::Task>> found = FindAssessment(env, ContextOf(run_id));
  if (!found.ok()) return found.status();
  if (!found->has_value()) {
    return absl::NotFoundError(absl::StrCat("no assessment of run ", run_id));
  }
  return **found;
}

int RunShow(const Env& env, const ParsedArgs& args) {
  absl::StatusOr<a2apb::Task> task = RunTask(env, args.positional[0]);
  if (!task.ok()) {
    return Fail(env, std::string(task.status().message()),
                absl::IsNotFound(task.status()) ? kExitNo : kExitError);
  }
  if (args.flag("json")) {
    *env.out << ToJson(*task) << std::endl;
    return kExitOk;
  }
  const std::string state = StateName(task->status().state());
  *env.out << "run " << args.positional[0] << ": assessment " << task->id() << " " << state
           << " (context " << task->context_id() << ")\n";
  for (const a2apb::Artifact& artifact : task->artifacts()) {
    *env.out << "artifact " << artifact.name() << ": " << CompactJson(artifact) << "\n";
  }
  env.out->flush();
  return kExitOk;
}

int RunCancel(const Env& env, const ParsedArgs& args) {
  absl::StatusOr<a2apb::Task> task = RunTask(env, args.positional[0]);
  if (!task.ok()) {
    return Fail(env, std::string(task.status().message()),
                absl::IsNotFound(task.status()) ? kExitNo : kExitError);
  }
  auto stub = a2apb::A2AService::NewStub(env.channel);
  a2apb::CancelTaskRequest request;
  request.set_id(task->id());
  a2apb::Task canceled;
  auto context = env.NewContext();
  a2a_protocol::AddVersion(context.get());
  grpc::Status s = stub->CancelTask(context.get(), request, &canceled);
  if (!s.ok()) return ReportRpcError(env, s);
  *env.out << "canceled assessment " << canceled.id() << " of run " << args.positional[0]
           << std::endl;
  return kExitOk;
}

}  // namespace

void AddScenarioCommands(std::vector<Command>* commands) {
  commands->push_back(
      {{"scenario", "run"},
       "<scenario.toml> [--run-id ID] [--output FILE] [--gateway URL] [--logs DIR] "
       "[--show-logs] [--start-timeout D] [--for D] [--serve-only]",
       "start a platform scenario's agents, register them, send the green agent the assessment "
       "through the coordinator and follow it; run again to follow the same assessment",
       {"run-id", "output", "gateway", "logs", "start-timeout", "for"},
       {"show-logs", "serve-only"},
       1,
       1,
       false,
       RunScenario});
  commands->push_back({{"scenario", "show"},
                       "<run_id> [--json]",
                       "the state and artifacts of a scenario run's assessment",
                       {},
                       {"json"},
                       1,
                       1,
                       false,
                       RunShow});
  commands->push_back({{"scenario", "cancel"},
                       "<run_id>",
                       "cancel a scenario run's assessment",
                       {},
                       {},
                       1,
                       1,
                       false,
                       RunCancel});
}

}  // namespace coordctl
