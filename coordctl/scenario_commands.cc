// coordctl scenario run / show / cancel: an evaluation platform's scenario file run through the
// coordinator (docs/scenarios.md). The agents are started and registered at the coordinator,
// the green agent is handed the coordinator's URL of each participant, so that every message of
// the assessment passes through the gateway and is stored; the assessment's task lives in the
// context "scenario-<run id>", which is how a second run of the same command finds it again.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "a2a/v1/a2a.grpc.pb.h"
#include "a2a_protocol/scenario_run.h"
#include "a2a_protocol/version.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/status_macros.h"
#include "coordctl/a2a_follow.h"
#include "coordctl/cli.h"
#include "coordctl/scenario_agents.h"
#include "coordctl/scenario_file.h"
#include "coordinator/v1/agent_registry.grpc.pb.h"
#include "google/protobuf/util/json_util.h"

namespace coordctl {
namespace {

namespace a2apb = ::lf::a2a::v1;

// Protobuf's JSON of `message` without its default fields, on one line.
std::string WireJson(const google::protobuf::Message& message) {
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(message, &json);
  return json;
}

using a2a_protocol::ScenarioAgentName;
using a2a_protocol::ValidScenarioRunId;

// The assessment already sent in `context_id` to the run's green agent `green`, if any (the
// newest). Only the green agent's: the exchange the assessment starts may share its context (our
// green agent's evaluation sends the participant its task there, and the participant its
// commands), and none of those tasks is the assessment.
absl::StatusOr<std::optional<a2apb::Task>> FindAssessment(const Env& env, const std::string& green,
                                                          const std::string& context_id) {
  auto stub = a2apb::A2AService::NewStub(env.channel);
  a2apb::ListTasksRequest request;
  request.set_tenant(green);
  request.set_context_id(context_id);
  request.set_page_size(1);
  request.set_history_length(0);
  request.set_include_artifacts(true);
  a2apb::ListTasksResponse response;
  auto context = env.NewA2AContext();
  grpc::Status s = stub->ListTasks(context.get(), request, &response);
  // NOT_FOUND: the green agent is not registered yet, so nothing was sent to it.
  if (s.error_code() == grpc::StatusCode::NOT_FOUND) return std::optional<a2apb::Task>();
  if (!s.ok()) {
    return absl::UnavailableError(
        absl::StrCat("reading the run's assessments at the coordinator: ", s.error_message()));
  }
  if (response.tasks().empty()) return std::optional<a2apb::Task>();
  return std::optional<a2apb::Task>(response.tasks(0));
}

// The message platforms send the green agent: each participant's URL (here the coordinator's
// URL of that agent) by role, and the scenario's config. The URL ends in a slash: clients that
// resolve the card path against it as a relative URL (the JavaScript SDK's createFromUrl) would
// drop the agent's name from a URL without one.
std::string AssessmentRequest(const std::vector<ScenarioRunAgent>& agents,
                              const std::string& gateway, const google::protobuf::Struct& config) {
  std::string participants;
  for (size_t i = 1; i < agents.size(); ++i) {
    absl::StrAppend(&participants, participants.empty() ? "" : ", ",
                    common::JsonQuote(agents[i].spec->role), ": ",
                    common::JsonQuote(absl::StrCat(gateway, "/agents/", agents[i].name, "/")));
  }
  return absl::StrCat(R"({"participants": {)", participants, R"(}, "config": )", WireJson(config),
                      "}");
}

// The message id is the assessment's context: a send whose answer was lost (the coordinator
// restarted meanwhile) and made again is the same message, which the coordinator answers with
// the task the first one made (docs/a2a.md, "Sending again").
absl::StatusOr<a2apb::Task> SendAssessment(const Env& env, const std::string& green,
                                           const std::string& context_id, const std::string& text) {
  auto stub = a2apb::A2AService::NewStub(env.channel);
  a2apb::SendMessageRequest request;
  request.set_tenant(green);
  a2apb::Message* message = request.mutable_message();
  message->set_message_id(context_id);
  message->set_role(a2apb::ROLE_USER);
  message->set_context_id(context_id);
  message->add_parts()->set_text(text);
  request.mutable_configuration()->set_return_immediately(true);
  a2apb::SendMessageResponse response;
  auto context = env.NewA2AContext();
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

// One assessment of a run: one shard of the config, one repeat.
struct Assessment {
  int shard = 0;
  int repeat = 0;
  std::string label;  // "s0-r1"; empty when the run has one assessment
  std::string context_id;
  google::protobuf::Struct config;
  a2apb::Task task;  // no id until sent or found
};

struct RunOptions {
  std::string file;
  std::string text;  // the file's bytes
  std::string run_id;
  std::string gateway;
  std::string logs;
  std::string output;
  absl::Duration start_timeout = absl::Seconds(60);
  absl::Duration for_at_most = absl::InfiniteDuration();
  int shards = 1;
  std::string shard_key;
  int repeat = 1;
  int max_in_flight = -1;  // each participant's; -1: unset
  bool show_logs = false;
  bool serve_only = false;
};

// The options of `scenario run` and the file's text. INVALID_ARGUMENT for a bad option (usage),
// FAILED_PRECONDITION for a file that cannot be read.
absl::StatusOr<RunOptions> ReadRunOptions(const ParsedArgs& args) {
  RunOptions o;
  o.file = args.positional[0];
  std::error_code error;
  const uintmax_t size = std::filesystem::file_size(o.file, error);
  if (error) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot read ", o.file, ": ", error.message()));
  }
  if (size > kMaxScenarioBytes) {
    return absl::FailedPreconditionError(
        absl::StrCat(o.file, ": ", size, " bytes; at most ", kMaxScenarioBytes));
  }
  std::ostringstream text;
  text << std::ifstream(o.file, std::ios::binary).rdbuf();
  o.text = text.str();
  o.run_id = args.get("run-id", absl::StrCat("sc-", common::Sha256Hex(o.text).substr(0, 12)));
  if (!ValidScenarioRunId(o.run_id)) {
    return absl::InvalidArgumentError("--run-id must be 1 to 64 letters, digits, -, _ or .");
  }
  o.gateway = std::string(absl::StripSuffix(args.get("gateway", "http://127.0.0.1:8080"), "/"));
  if (!absl::StartsWith(o.gateway, "http://") && !absl::StartsWith(o.gateway, "https://")) {
    return absl::InvalidArgumentError("--gateway is the coordinator's HTTP URL (http://host:port)");
  }
  for (auto [name, field] :
       {std::pair{"start-timeout", &o.start_timeout}, std::pair{"for", &o.for_at_most}}) {
    if (!args.has(name)) continue;
    absl::StatusOr<absl::Duration> d = ParseDurationArg(name, args.get(name));
    if (!d.ok()) return d.status();
    *field = *d;
  }
  for (auto [name, field] : {std::pair{"shards", &o.shards}, std::pair{"repeat", &o.repeat}}) {
    if (!args.has(name)) continue;
    absl::StatusOr<int64_t> n = ParseIntArg(name, args.get(name));
    if (!n.ok()) return n.status();
    if (*n < 1 || *n > 1000)
      return absl::InvalidArgumentError(absl::StrCat("--", name, " is 1 to 1000"));
    *field = static_cast<int>(*n);
  }
  if (args.has("max-in-flight")) {
    absl::StatusOr<int64_t> n = ParseIntArg("max-in-flight", args.get("max-in-flight"));
    if (!n.ok() || *n < 0 || *n > 10000) {
      return absl::InvalidArgumentError("--max-in-flight takes 0 (no limit) to 10000");
    }
    o.max_in_flight = static_cast<int>(*n);
  }
  o.shard_key = args.get("shard-key");
  if (o.shards > 1 && o.shard_key.empty()) {
    return absl::InvalidArgumentError("--shards needs --shard-key: the config list to split");
  }
  if (o.shards * o.repeat > 1000) {
    return absl::InvalidArgumentError("--shards times --repeat is at most 1000 assessments");
  }
  o.logs = args.get("logs", absl::StrCat(".coordctl/scenarios/", o.run_id));
  o.output = args.get("output");
  o.show_logs = args.flag("show-logs");
  o.serve_only = args.flag("serve-only");
  return o;
}

// The run's assessments: the config's list `shard_key` split into `shards` contiguous parts, each
// `repeat` times, each in a context of its own ("scenario-<run>", or "scenario-<run>-s<i>-r<k>"
// when there are several).
absl::StatusOr<std::vector<Assessment>> PlanAssessments(const Scenario& scenario,
                                                        const RunOptions& o) {
  std::vector<google::protobuf::Struct> configs(o.shards, scenario.config);
  if (o.shards > 1) {
    auto field = scenario.config.fields().find(o.shard_key);
    if (field == scenario.config.fields().end() || !field->second.has_list_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--shard-key ", o.shard_key, ": the file's [config] has no list by that name"));
    }
    const auto& items = field->second.list_value().values();
    if (items.size() < o.shards) {
      return absl::InvalidArgumentError(absl::StrCat("--shards ", o.shards, " is more than the ",
                                                     items.size(), " items of config.",
                                                     o.shard_key));
    }
    for (int i = 0; i < o.shards; ++i) {
      google::protobuf::ListValue* part =
          (*configs[i].mutable_fields())[o.shard_key].mutable_list_value();
      part->clear_values();
      for (int k = i * items.size() / o.shards; k < (i + 1) * items.size() / o.shards; ++k) {
        *part->add_values() = items[k];
      }
    }
  }
  std::vector<Assessment> assessments;
  const bool several = o.shards * o.repeat > 1;
  for (int i = 0; i < o.shards; ++i) {
    for (int k = 0; k < o.repeat; ++k) {
      Assessment& a = assessments.emplace_back();
      a.shard = i;
      a.repeat = k;
      a.config = configs[i];
      a.label = several ? absl::StrCat("s", i, "-r", k) : "";
      a.context_id = several ? a2a_protocol::ScenarioAssessmentContext(o.run_id, i, k)
                             : a2a_protocol::ScenarioContext(o.run_id);
    }
  }
  return assessments;
}

// The run's agents: the green agent first, then the participants in the file's order.
std::vector<ScenarioRunAgent> RunAgents(const Scenario& scenario, const RunOptions& o) {
  std::vector<const ScenarioAgent*> specs = {&scenario.green};
  for (const ScenarioAgent& p : scenario.participants) specs.push_back(&p);
  std::vector<ScenarioRunAgent> agents(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    agents[i].spec = specs[i];
    agents[i].name = ScenarioAgentName(o.run_id, specs[i]->role);
    agents[i].card_url = CardUrl(specs[i]->endpoint);
    agents[i].log_path = absl::StrCat(o.logs, "/", specs[i]->role, ".log");
    agents[i].pid_path = absl::StrCat(o.logs, "/", specs[i]->role, ".pid");
    if (i > 0) agents[i].max_in_flight = o.max_in_flight;
  }
  return agents;
}

// Starts the agents that are not up and registers them all. Before anything starts, an endpoint
// something listens on is refused unless the run is resumed (then it is the agent an earlier
// run started, adopted).
absl::Status BringUpAgents(const Env& env, const RunOptions& o, bool resumed,
                           std::vector<ScenarioRunAgent>& agents) {
  std::error_code error;
  std::filesystem::create_directories(o.logs, error);
  if (error) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot make ", o.logs, ": ", error.message()));
  }
  std::vector<ScenarioRunAgent*> to_start;
  for (ScenarioRunAgent& agent : agents) {
    if (agent.spec->cmd.empty()) continue;
    if (!Listening(*agent.spec)) {
      to_start.push_back(&agent);
    } else if (resumed) {
      agent.pgid = AdoptedGroup(agent);
    } else {
      return absl::FailedPreconditionError(absl::StrCat(
          o.file, ": line ", agent.spec->line, ": agent ", agent.spec->role, ": ", agent.spec->host,
          ":", agent.spec->port, " is in use already; stop what serves it or change the endpoint"));
    }
  }
  absl::Mutex err_mu;
  for (ScenarioRunAgent* agent : to_start) {
    RETURN_IF_ERROR(StartAgent(*agent, o.show_logs, env.err, &err_mu));
    absl::MutexLock lock(&err_mu);
    *env.err << "started " << agent->spec->role << " (pid " << agent->pgid << ", log "
             << agent->log_path << ")" << std::endl;
  }
  const absl::Time deadline = absl::Now() + o.start_timeout;
  for (ScenarioRunAgent& agent : agents) {
    RETURN_IF_ERROR(RegisterWhenUp(env, agent, deadline));
    absl::MutexLock lock(&err_mu);
    *env.err << "registered " << agent.spec->role << " as " << agent.name << ": " << o.gateway
             << "/agents/" << agent.name << "/" << std::endl;
  }
  return absl::OkStatus();
}

// Follows every assessment until all have ended (or `for_at_most` passes), a line per change.
// Exit 0 when all COMPLETED, 1 when one ended otherwise, 3 when the time ran out.
int FollowAll(const Env& env, std::vector<Assessment>& assessments, absl::Duration for_at_most) {
  if (assessments.size() == 1) {
    return FollowTask(env, assessments[0].task.id(), for_at_most, /*json=*/false,
                      &assessments[0].task);
  }
  auto stub = a2apb::A2AService::NewStub(env.channel);
  const absl::Time deadline = absl::Now() + for_at_most;
  std::vector<std::string> last(assessments.size());
  while (true) {
    bool all_ended = true;
    for (size_t i = 0; i < assessments.size(); ++i) {
      Assessment& a = assessments[i];
      if (TaskEnded(a.task.status().state()) && !last[i].empty()) continue;
      a2apb::GetTaskRequest request;
      request.set_id(a.task.id());
      request.set_history_length(0);
      auto context = env.NewA2AContext();
      a2apb::Task task;
      grpc::Status s = stub->GetTask(context.get(), request, &task);
      if (s.ok()) a.task = std::move(task);
      if (!s.ok() && s.error_code() != grpc::StatusCode::UNAVAILABLE &&
          s.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
        return ReportRpcError(env, s);
      }
      const std::string line = TaskStateWord(a.task.status().state());
      if (s.ok() && line != last[i]) {
        *env.out << "[" << a.label << "] " << line << std::endl;
        last[i] = line;
      }
      all_ended = all_ended && TaskEnded(a.task.status().state());
    }
    if (all_ended) break;
    if (absl::Now() >= deadline) {
      return Fail(env, absl::StrCat("the assessments have not ended after ",
                                    absl::FormatDuration(for_at_most)));
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
  for (const Assessment& a : assessments) {
    if (a.task.status().state() != a2apb::TASK_STATE_COMPLETED) return kExitNo;
  }
  return kExitOk;
}

// The score the assessment reported in its artifacts (a2a_protocol::AssessmentScore), or null.
std::string ScoreJson(const a2apb::Task& task) {
  const std::optional<double> score = a2a_protocol::AssessmentScore(task);
  return score.has_value() ? absl::StrCat(*score) : "null";
}

// The result file: the run and each assessment's task with its score and artifacts.
absl::Status WriteResults(const std::string& path, const std::string& run_id,
                          const std::vector<Assessment>& assessments) {
  bool completed = true;
  std::string list;
  for (const Assessment& a : assessments) {
    completed = completed && a.task.status().state() == a2apb::TASK_STATE_COMPLETED;
    std::string artifacts;
    for (const a2apb::Artifact& artifact : a.task.artifacts()) {
      absl::StrAppend(&artifacts, artifacts.empty() ? "" : ", ", WireJson(artifact));
    }
    absl::StrAppend(
        &list, list.empty() ? "\n    " : ",\n    ", "{\"shard\": ", a.shard,
        ", \"repeat\": ", a.repeat, ", \"context_id\": ", common::JsonQuote(a.context_id),
        ", \"task_id\": ", common::JsonQuote(a.task.id()), ", \"state\": ",
        common::JsonQuote(absl::AsciiStrToLower(TaskStateWord(a.task.status().state()))),
        ", \"score\": ", ScoreJson(a.task), ",\n     \"artifacts\": [", artifacts, "]}");
  }
  const std::string json =
      absl::StrCat("{\n  \"run_id\": ", common::JsonQuote(run_id),
                   ",\n  \"state\": ", completed ? "\"completed\"" : "\"not completed\"",
                   ",\n  \"assessments\": [", list, "\n  ]\n}\n");
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

// Sends each assessment not sent yet to the green agent.
absl::Status SendAssessments(const Env& env, const std::vector<ScenarioRunAgent>& agents,
                             const RunOptions& o, std::vector<Assessment>& assessments) {
  for (Assessment& a : assessments) {
    if (!a.task.id().empty()) {
      *env.out << "run " << o.run_id << ": following assessment " << a.task.id() << " (context "
               << a.context_id << ")" << std::endl;
      continue;
    }
    ASSIGN_OR_RETURN(a.task, SendAssessment(env, agents.front().name, a.context_id,
                                            AssessmentRequest(agents, o.gateway, a.config)));
    *env.out << "run " << o.run_id << ": assessment " << a.task.id() << " (context " << a.context_id
             << ")" << std::endl;
  }
  return absl::OkStatus();
}

int RunScenario(const Env& env, const ParsedArgs& args) {
  absl::StatusOr<RunOptions> o = ReadRunOptions(args);
  if (!o.ok()) {
    return Fail(env, std::string(o.status().message()),
                absl::IsInvalidArgument(o.status()) ? kExitUsage : kExitError);
  }
  absl::StatusOr<Scenario> scenario = ParseScenario(o->text);
  if (!scenario.ok()) return Fail(env, absl::StrCat(o->file, ": ", scenario.status().message()));
  absl::StatusOr<std::vector<Assessment>> assessments = PlanAssessments(*scenario, *o);
  if (!assessments.ok()) return Fail(env, std::string(assessments.status().message()), kExitUsage);

  // A second run of the same command follows the assessments the first one sent.
  bool resumed = false;
  bool all_ended = true;
  for (Assessment& a : *assessments) {
    absl::StatusOr<std::optional<a2apb::Task>> found = FindAssessment(
        env, ScenarioAgentName(o->run_id, a2a_protocol::kScenarioGreenRole), a.context_id);
    if (!found.ok()) return Fail(env, std::string(found.status().message()));
    if (found->has_value()) a.task = **found;
    resumed = resumed || found->has_value();
    all_ended = all_ended && found->has_value() && TaskEnded((*found)->status().state());
  }
  std::vector<ScenarioRunAgent> agents = RunAgents(*scenario, *o);
  if (!all_ended || o->serve_only) {
    if (absl::Status s = BringUpAgents(env, *o, resumed, agents); !s.ok()) {
      StopAgents(agents);
      return Fail(env, std::string(s.message()));
    }
  }
  if (o->serve_only) {
    *env.out << "serving run " << o->run_id << "; stop with Ctrl-C" << std::endl;
    WaitForStopSignal();
    StopAgents(agents);
    return kExitOk;
  }
  if (absl::Status s = SendAssessments(env, agents, *o, *assessments); !s.ok()) {
    StopAgents(agents);
    return Fail(env, std::string(s.message()));
  }
  const int code = FollowAll(env, *assessments, o->for_at_most);
  StopAgents(agents);
  if (!o->output.empty() && code != kExitError) {
    if (absl::Status s = WriteResults(o->output, o->run_id, *assessments); !s.ok()) {
      return Fail(env, std::string(s.message()));
    }
  }
  return code;
}

// The run's assessments as the coordinator has them: the green agent's tasks in the run's
// contexts, oldest first.
absl::StatusOr<std::vector<a2apb::Task>> RunTasks(const Env& env, const std::string& run_id) {
  if (!ValidScenarioRunId(run_id)) return absl::InvalidArgumentError("not a run id");
  auto stub = a2apb::A2AService::NewStub(env.channel);
  a2apb::ListTasksRequest request;
  request.set_tenant(ScenarioAgentName(run_id, a2a_protocol::kScenarioGreenRole));
  request.set_page_size(100);
  request.set_history_length(0);
  request.set_include_artifacts(true);
  std::vector<a2apb::Task> tasks;
  const grpc::Status s = ForEachPage(
      env, *stub, &a2apb::A2AService::Stub::ListTasks, request,
      [&](a2apb::ListTasksResponse& page) {
        for (a2apb::Task& task : *page.mutable_tasks()) {
          if (a2a_protocol::InScenarioRun(task.context_id(), run_id)) {
            tasks.push_back(std::move(task));
          }
        }
      },
      &Env::NewA2AContext);
  // NOT_FOUND: no such green agent, so no such run.
  if (!s.ok() && s.error_code() != grpc::StatusCode::NOT_FOUND) {
    return absl::UnavailableError(s.error_message());
  }
  if (tasks.empty()) return absl::NotFoundError(absl::StrCat("no assessment of run ", run_id));
  std::reverse(tasks.begin(), tasks.end());
  return tasks;
}

// Runs `command` on the assessments of the run named by the first argument; exit 1 when there is
// no such run.
int WithRunTasks(const Env& env, const ParsedArgs& args,
                 const std::function<int(const std::vector<a2apb::Task>&)>& command) {
  absl::StatusOr<std::vector<a2apb::Task>> tasks = RunTasks(env, args.positional[0]);
  if (!tasks.ok()) {
    return Fail(env, std::string(tasks.status().message()),
                absl::IsNotFound(tasks.status()) ? kExitNo : kExitError);
  }
  return command(*tasks);
}

int ShowTasks(const Env& env, const ParsedArgs& args, const std::vector<a2apb::Task>& tasks) {
  for (const a2apb::Task& task : tasks) {
    if (args.flag("json")) {
      *env.out << ToJson(task) << "\n";
      continue;
    }
    *env.out << task.context_id() << "  " << task.id() << "  "
             << TaskStateWord(task.status().state()) << "  score " << ScoreJson(task) << "\n";
    for (const a2apb::Artifact& artifact : task.artifacts()) {
      *env.out << "  artifact " << artifact.name() << ": " << WireJson(artifact) << "\n";
    }
  }
  env.out->flush();
  return kExitOk;
}

int CancelTasks(const Env& env, const std::vector<a2apb::Task>& tasks) {
  auto stub = a2apb::A2AService::NewStub(env.channel);
  for (const a2apb::Task& task : tasks) {
    if (TaskEnded(task.status().state())) continue;
    a2apb::CancelTaskRequest request;
    request.set_id(task.id());
    a2apb::Task canceled;
    auto context = env.NewA2AContext();
    grpc::Status s = stub->CancelTask(context.get(), request, &canceled);
    if (!s.ok()) return ReportRpcError(env, s);
    *env.out << "canceled " << canceled.id() << " (" << canceled.context_id() << ")" << std::endl;
  }
  return kExitOk;
}

int RunScenarioShow(const Env& env, const ParsedArgs& args) {
  return WithRunTasks(env, args, [&](const auto& tasks) { return ShowTasks(env, args, tasks); });
}

int RunCancel(const Env& env, const ParsedArgs& args) {
  return WithRunTasks(env, args, [&](const auto& tasks) { return CancelTasks(env, tasks); });
}

// Runs are known by their green agents, registered as "<run id>.green_agent".
int RunScenarioList(const Env& env, const ParsedArgs& args) {
  auto stub = coordinator::v1::AgentRegistry::NewStub(env.channel);
  coordinator::v1::ListAgentsRequest request;
  request.set_page_size(1000);
  const grpc::Status s = ForEachPage(
      env, *stub, &coordinator::v1::AgentRegistry::Stub::ListAgents, request,
      [&](const coordinator::v1::ListAgentsResponse& page) {
        for (const coordinator::v1::Agent& agent : page.agents()) {
          const std::optional<std::string> run =
              a2a_protocol::ScenarioRunOfGreenAgent(agent.name());
          if (!run.has_value()) continue;
          const std::string& run_id = *run;
          absl::StatusOr<std::vector<a2apb::Task>> tasks = RunTasks(env, run_id);
          std::map<std::string, int> states;
          if (tasks.ok()) {
            for (const a2apb::Task& t : *tasks) ++states[TaskStateWord(t.status().state())];
          }
          std::string summary;
          for (const auto& [state, n] : states) absl::StrAppend(&summary, " ", n, " ", state);
          if (args.flag("json")) {
            *env.out << "{\"run_id\": " << common::JsonQuote(run_id)
                     << ", \"assessments\": " << (tasks.ok() ? tasks->size() : 0) << "}\n";
          } else {
            *env.out << run_id << "  " << (tasks.ok() ? tasks->size() : 0) << " assessments"
                     << (summary.empty() ? "" : ":") << summary << "\n";
          }
        }
      });
  if (!s.ok()) return ReportRpcError(env, s);
  env.out->flush();
  return kExitOk;
}

}  // namespace

void AddScenarioCommands(std::vector<Command>* commands) {
  commands->push_back(
      {{"scenario", "run"},
       "<scenario.toml> [--run-id ID] [--output FILE] [--gateway URL] [--logs DIR] [--show-logs] "
       "[--start-timeout D] [--for D] [--shards N --shard-key KEY] [--repeat K] "
       "[--max-in-flight N] [--serve-only]",
       "start a platform scenario's agents, register them, send the green agent the assessment "
       "through the coordinator and follow it; run again to follow the same assessment",
       {"run-id", "output", "gateway", "logs", "start-timeout", "for", "shards", "shard-key",
        "repeat", "max-in-flight"},
       {"show-logs", "serve-only"},
       1,
       1,
       false,
       RunScenario});
  commands->push_back({{"scenario", "list"},
                       "[--json]",
                       "scenario runs and their assessments by state",
                       {},
                       {"json"},
                       0,
                       0,
                       false,
                       RunScenarioList});
  commands->push_back({{"scenario", "show"},
                       "<run_id> [--json]",
                       "the state and artifacts of a scenario run's assessments",
                       {},
                       {"json"},
                       1,
                       1,
                       false,
                       RunScenarioShow});
  commands->push_back({{"scenario", "cancel"},
                       "<run_id>",
                       "cancel a scenario run's assessments that have not ended",
                       {},
                       {},
                       1,
                       1,
                       false,
                       RunCancel});
}

}  // namespace coordctl
