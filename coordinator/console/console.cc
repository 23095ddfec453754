#include "coordinator/console/console.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "a2a_protocol/json_binding.h"
#include "a2a_protocol/scenario_run.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "common/utf8.h"
#include "common/validation.h"
#include "coordinator/console/console_assets.h"
#include "coordinator/store/contexts/scores.h"
#include "coordinator/store/records/tallies.h"
#include "coordinator/store/records/time_util.h"
#include "google/protobuf/struct.pb.h"
#include "httplib.h"

namespace coordinator {
namespace {

using a2a_protocol::ToJson;

// Rows one listing answers at most (the evaluations, runs and retry tables): a page for people,
// and a bound on what one request reads.
constexpr int kMaxRows = 1000;
constexpr int kDefaultRows = 200;
// Index entries one page of evaluations reads at most, whatever its filters match.
constexpr int kMaxScan = 5000;
// Commands, messages and A2A events one evaluation's timeline shows at most.
constexpr int kMaxTimeline = 2000;

// `text` as a JSON string (common/log.h): bytes that are not UTF-8 (a query parameter's name, say,
// echoed in an error) become U+FFFD.
using common::JsonQuote;

void Answer(httplib::Response& res, int code, const std::string& json) {
  res.status = code;
  res.set_header("Cache-Control", "no-store");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_content(json, "application/json");
}

// {"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": "..."}}, the HTTP status as the
// A2A HTTP+JSON binding maps the code (a2a_protocol/json_binding.h), unless `http_code` says.
void AnswerError(httplib::Response& res, const absl::Status& status, int http_code = 0) {
  const int code = http_code != 0 ? http_code : a2a_protocol::HttpStatusCode(status);
  if (code == 401) res.set_header("WWW-Authenticate", "Bearer");
  Answer(res, code,
         absl::StrCat("{\"error\":{\"code\":", code,
                      ",\"status\":", JsonQuote(absl::StatusCodeToString(status.code())),
                      ",\"message\":", JsonQuote(status.message()), "}}"));
}

// The query parameters of a request, checked against the names an endpoint takes: an unknown
// or repeated parameter is INVALID_ARGUMENT, so a typo is not silently ignored.
absl::StatusOr<std::map<std::string, std::string>> Params(
    const httplib::Request& req, std::initializer_list<absl::string_view> allowed) {
  std::map<std::string, std::string> params;
  for (const auto& [name, value] : req.params) {
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown query parameter ", JsonQuote(name.substr(0, 64)),
                       allowed.size() == 0
                           ? std::string(": this endpoint takes none")
                           : absl::StrCat(": this endpoint takes ", absl::StrJoin(allowed, ", "))));
    }
    if (!params.emplace(name, value).second) {
      return absl::InvalidArgumentError(absl::StrCat("query parameter ", name, " given twice"));
    }
  }
  return params;
}

absl::StatusOr<int> IntParam(const std::map<std::string, std::string>& params,
                             const std::string& name, int fallback, int min, int max) {
  auto it = params.find(name);
  if (it == params.end()) return fallback;
  int value = 0;
  if (!absl::SimpleAtoi(it->second, &value) || value < min || value > max) {
    return absl::InvalidArgumentError(
        absl::StrFormat("query parameter %s must be a whole number from %d to %d", name, min, max));
  }
  return value;
}

absl::StatusOr<v1::ContextStatus> StatusParam(const std::map<std::string, std::string>& params) {
  auto it = params.find("status");
  if (it == params.end() || it->second.empty() || it->second == "all") {
    return v1::CONTEXT_STATUS_UNSPECIFIED;
  }
  const std::string upper = absl::AsciiStrToUpper(it->second);
  v1::ContextStatus status;
  if (upper.size() > 32 || !v1::ContextStatus_Parse("CONTEXT_STATUS_" + upper, &status) ||
      status == v1::CONTEXT_STATUS_UNSPECIFIED) {
    return absl::InvalidArgumentError(
        "query parameter status must be one of all, active, completed, failed, canceled");
  }
  return status;
}

std::string Label(const v1::TaskContext& context, const std::string& name) {
  auto it = context.labels().find(name);
  return it == context.labels().end() ? std::string() : it->second;
}

// Where an event stream starts: ?after=<seq> (a change's seq, from a "hello" or "change"
// event), else at the newest change.
absl::StatusOr<int64_t> EventsCursor(const httplib::Request& req, ConsoleFeed& feed) {
  ASSIGN_OR_RETURN(auto params, Params(req, {"after"}));
  auto it = params.find("after");
  if (it == params.end()) return feed.last_seq();
  int64_t value = 0;
  if (!absl::SimpleAtoi(it->second, &value) || value < 0) {
    return absl::InvalidArgumentError(
        "query parameter after must be a non-negative whole number (a change's seq)");
  }
  return value;
}

std::vector<std::string> AuthorizationValues(const httplib::Request& req) {
  std::vector<std::string> values;
  const size_t n = req.get_header_value_count("Authorization");
  for (size_t i = 0; i < n; ++i) values.push_back(req.get_header_value("Authorization", i));
  return values;
}

// Authentication of /console/api/: a reader or admin token (`tokens` null: none needed). Agents'
// tokens see only what they own through the gRPC API, so the console, which shows everything,
// does not take them.
// The caller (not authenticated when `tokens` is null).
absl::StatusOr<Caller> AuthorizeCaller(TokenSource* tokens,
                                       const std::vector<std::string>& authorization) {
  if (tokens == nullptr) return Caller();
  std::vector<absl::string_view> views(authorization.begin(), authorization.end());
  ASSIGN_OR_RETURN(const Caller caller, tokens->Current()->Authenticate(views, absl::Now()));
  if (caller.role == Role::kAgent) {
    return absl::PermissionDeniedError(
        "the console shows every agent's records: it needs a reader or admin token");
  }
  return caller;
}

absl::Status Authorize(TokenSource* tokens, const std::vector<std::string>& authorization) {
  return AuthorizeCaller(tokens, authorization).status();
}

std::string TimeText(absl::Time t) {
  return absl::FormatTime(absl::RFC3339_full, t, absl::UTCTimeZone());
}

const std::string& IndexHtml() {
  static const std::string* html = [] {
    const ConsoleAsset* asset = FindConsoleAsset("index.html");
    return new std::string(asset != nullptr ? std::string(asset->data, asset->size) : "");
  }();
  return *html;
}

// Overview: agents, evaluation and run counts. Calls per second and the error rate come from
// /metrics, which the page reads itself.
absl::StatusOr<std::string> Overview(const ConsoleParts* parts, const httplib::Request& req) {
  ASSIGN_OR_RETURN(auto params, Params(req, {}));
  v1::ListAgentsRequest list_agents;
  list_agents.set_page_size(kMaxRows);
  ASSIGN_OR_RETURN(v1::ListAgentsResponse agents, parts->agents->List(list_agents));
  // The running totals (tallies.h): exact, and a few point reads however many contexts,
  // runs and queued deliveries there are.
  storage::Store& store = *parts->store;
  ASSIGN_OR_RETURN(const TallyTotal active, Tallies::Read(store, Tally::kContextsActive));
  ASSIGN_OR_RETURN(const TallyTotal ended, Tallies::Read(store, Tally::kContextsEnded));
  ASSIGN_OR_RETURN(const TallyTotal runs_active, Tallies::Read(store, Tally::kRunsActive));
  ASSIGN_OR_RETURN(const TallyTotal runs_ended, Tallies::Read(store, Tally::kRunsEnded));
  // Reachability is what the gateway observed (agent_contacts.h): the outcome and time of
  // its last call to the agent. An agent with no recent word is probed now, in the
  // background; its answer comes as an "agent" change.
  auto when = [](absl::Time t) {
    return t == absl::InfinitePast() ? std::string("null") : JsonQuote(TimeText(t));
  };
  std::vector<std::string> agent_json;
  for (v1::Agent agent : agents.agents()) {
    AgentContact contact;
    // What was known when the probe was asked for: the probe may end before this row is
    // written, and its outcome comes as the change.
    if (parts->contacts != nullptr) contact = parts->contacts->ProbeIfStale(agent);
    const bool known = contact.last_call != absl::InfinitePast();
    ASSIGN_OR_RETURN(const TallyTotal queued,
                     Tallies::Read(store, Tally::kDeliveriesQueued, agent.name()));
    agent.clear_card();  // large, and not shown
    agent_json.push_back(absl::StrCat(
        "{\"agent\":", ToJson(agent), ",\"queuedDeliveries\":", queued.count,
        ",\"reachable\":", !known ? "null" : (contact.reached ? "true" : "false"),
        ",\"lastCall\":", when(contact.last_call), ",\"lastCallVia\":", JsonQuote(contact.via),
        ",\"lastSeen\":", when(contact.last_seen), ",\"lastError\":", JsonQuote(contact.error),
        ",\"probing\":", contact.probing ? "true" : "false", "}"));
  }
  return absl::StrCat("{\"agents\":[", absl::StrJoin(agent_json, ","),
                      "],\"evaluations\":{\"active\":", active.count, ",\"ended\":", ended.count,
                      "},\"runs\":{\"active\":", runs_active.count, ",\"ended\":", runs_ended.count,
                      "},\"lastChange\":", parts->feed->last_seq(), "}");
}

// Evaluations: the contexts with their conversation's totals, newest first (the contexts'
// time index), filtered by green agent, agent under test and status. One page reads at most
// kMaxScan index entries: a filter that matches rarely answers quickly with fewer rows and a
// `next` token to read on from.
absl::StatusOr<std::string> Evaluations(const ConsoleParts* parts, const httplib::Request& req) {
  ASSIGN_OR_RETURN(auto params, Params(req, {"agent", "purple", "status", "limit", "page"}));
  const std::string agent = params["agent"];
  const std::string purple = params["purple"];
  RETURN_IF_ERROR(common::ValidateOptionalId("agent", agent));
  RETURN_IF_ERROR(common::ValidateOptionalId("purple", purple));
  ASSIGN_OR_RETURN(const v1::ContextStatus status, StatusParam(params));
  ASSIGN_OR_RETURN(const int limit, IntParam(params, "limit", kDefaultRows, 1, kMaxRows));
  auto keep = [&](const v1::TaskContext& context) {
    return (agent.empty() || context.agent() == agent) &&
           (status == v1::CONTEXT_STATUS_UNSPECIFIED || context.status() == status) &&
           (purple.empty() || Label(context, "purple_agent") == purple);
  };
  ASSIGN_OR_RETURN(ContextStore::NewestPage page,
                   parts->contexts->ListNewest(limit, kMaxScan, params["page"], keep));
  std::vector<std::string> rows;
  for (const v1::TaskContext& context : page.contexts) {
    ASSIGN_OR_RETURN(std::optional<v1::ConversationMeta> meta,
                     ConversationStore::ReadMeta(*parts->store, context.context_id()));
    const std::optional<double> score = EvaluationScore(context);
    rows.push_back(absl::StrCat(
        "{\"context\":", ToJson(context),
        ",\"conversation\":", meta.has_value() ? ToJson(*meta) : "null",
        ",\"score\":", score.has_value() ? absl::StrFormat("%.4f", *score) : "null", "}"));
  }
  return absl::StrCat("{\"evaluations\":[", absl::StrJoin(rows, ","),
                      "],\"next\":", JsonQuote(page.next_page_token), "}");
}

// One evaluation: the context, its commands, its conversation and its A2A tasks with their
// event logs (status changes and artifacts), for the timeline.
absl::StatusOr<std::string> Evaluation(const ConsoleParts* parts, const httplib::Request& req) {
  ASSIGN_OR_RETURN(auto params, Params(req, {}));
  const std::string id = req.matches[1].str();
  RETURN_IF_ERROR(common::ValidateId("evaluation id", id));
  // A context of A2A tasks alone (a platform scenario's agents we did not write keep no
  // evaluation record) shows its exchange: the tasks and their events.
  absl::StatusOr<v1::TaskContext> stored = parts->contexts->Get(id);
  const bool a2a_only = absl::IsNotFound(stored.status());
  if (!stored.ok() && !a2a_only) return stored.status();
  v1::TaskContext context;
  if (stored.ok()) context = *std::move(stored);
  context.set_context_id(id);
  // The newest kMaxTimeline commands and messages: a long evaluation's timeline shows
  // what it does now, with the totals saying how much came before.
  std::vector<std::string> commands;
  if (!a2a_only) {
    ASSIGN_OR_RETURN(const std::vector<v1::CommandRecord> command_records,
                     parts->contexts->LastCommands(id, kMaxTimeline));
    for (const v1::CommandRecord& command : command_records) commands.push_back(ToJson(command));
  }
  std::vector<std::string> messages;
  int64_t steps = 0;
  int64_t message_count = 0;
  int64_t tokens = 0;
  v1::GetConversationRequest read;
  read.set_context_id(id);
  read.set_tail(kMaxTimeline);
  while (static_cast<int>(messages.size()) < kMaxTimeline) {
    read.set_page_size(kMaxRows);
    absl::StatusOr<v1::GetConversationResponse> page = parts->conversations->Read(read);
    if (absl::IsNotFound(page.status())) break;
    if (!page.ok()) return page.status();
    steps = page->step_count();
    message_count = page->message_count();
    tokens = page->total_tokens();
    for (const v1::ConversationMessage& message : page->messages()) {
      messages.push_back(ToJson(message));
    }
    if (page->next_page_token().empty()) break;
    read.set_page_token(page->next_page_token());
  }
  a2apb::ListTasksRequest list_tasks;
  list_tasks.set_context_id(id);
  list_tasks.set_page_size(100);
  list_tasks.set_history_length(0);
  list_tasks.set_include_artifacts(false);
  ASSIGN_OR_RETURN(a2apb::ListTasksResponse tasks, parts->a2a_tasks->ListTasks(list_tasks));
  if (a2a_only && tasks.tasks().empty()) {
    return absl::NotFoundError(
        absl::StrCat("context ", id, " not found: no evaluation and no A2A task in it"));
  }
  std::vector<std::string> task_json;
  int events_left = kMaxTimeline;
  for (const a2apb::Task& task : tasks.tasks()) {
    ASSIGN_OR_RETURN(std::vector<v1::StoredEvent> events,
                     parts->a2a_tasks->ReadEvents(task.id(), 0, std::max(events_left, 0)));
    events_left -= static_cast<int>(events.size());
    std::vector<std::string> event_json;
    for (const v1::StoredEvent& event : events) event_json.push_back(ToJson(event));
    task_json.push_back(absl::StrCat("{\"task\":", ToJson(task), ",\"events\":[",
                                     absl::StrJoin(event_json, ","), "]}"));
  }
  const std::optional<double> score = EvaluationScore(context);
  return absl::StrCat(
      "{\"context\":", ToJson(context), ",\"a2aOnly\":", a2a_only ? "true" : "false",
      ",\"score\":", score.has_value() ? absl::StrFormat("%.4f", *score) : "null",
      ",\"commands\":[", absl::StrJoin(commands, ","), "],\"conversation\":{\"stepCount\":", steps,
      ",\"messageCount\":", message_count, ",\"totalTokens\":", tokens, ",\"messages\":[",
      absl::StrJoin(messages, ","), "]},\"tasks\":[", absl::StrJoin(task_json, ","), "]}");
}

// Leaderboard: mean score and count by task and by agent under test, over the scored
// evaluations: the running totals (tallies.h), exact whatever the number of evaluations.
absl::StatusOr<std::string> Leaderboard(const ConsoleParts* parts, const httplib::Request& req) {
  ASSIGN_OR_RETURN(auto params, Params(req, {}));
  storage::Store& store = *parts->store;
  ASSIGN_OR_RETURN(auto by_task, Tallies::ReadGroups(store, Tally::kScoreByTask));
  ASSIGN_OR_RETURN(auto by_agent, Tallies::ReadGroups(store, Tally::kScoreByAgent));
  ASSIGN_OR_RETURN(auto by_both, Tallies::ReadGroups(store, Tally::kScoreByTaskAndAgent));
  auto rows = [](const std::map<std::string, TallyTotal>& totals) {
    std::vector<std::pair<std::string, TallyTotal>> sorted(totals.begin(), totals.end());
    std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
      return a.second.sum / a.second.count > b.second.sum / b.second.count;
    });
    std::vector<std::string> out;
    for (const auto& [key, total] : sorted) {
      out.push_back(absl::StrFormat("{\"key\":%s,\"mean\":%.4f,\"count\":%d}", JsonQuote(key),
                                    total.sum / total.count, total.count));
    }
    return absl::StrCat("[", absl::StrJoin(out, ","), "]");
  };
  std::vector<std::string> cells;
  for (const auto& [group, total] : by_both) {
    const auto [task, agent] = SplitTaskAndAgentGroup(group);
    cells.push_back(absl::StrFormat("{\"task\":%s,\"agent\":%s,\"mean\":%.4f,\"count\":%d}",
                                    JsonQuote(task), JsonQuote(agent), total.sum / total.count,
                                    total.count));
  }
  return absl::StrCat("{\"byTask\":", rows(by_task), ",\"byAgent\":", rows(by_agent),
                      ",\"cells\":[", absl::StrJoin(cells, ","), "]}");
}

// Registered agents the scenario pages look through at most.
constexpr int kMaxScenarioAgents = 100000;
// Assessments of one scenario run (coordctl scenario run makes at most 1000).
constexpr int kMaxAssessments = 1000;

// Every scenario run with a green agent in the registry (a2a_protocol/scenario_run.h), each with
// the names of its other agents.
absl::StatusOr<std::map<std::string, std::vector<std::string>>> ScenarioRuns(
    const ConsoleParts* parts) {
  ASSIGN_OR_RETURN(const AgentRegistryStore::NameSample names,
                   parts->agents->SampleNames(kMaxScenarioAgents));
  std::map<std::string, std::vector<std::string>> runs;
  for (const std::string& name : names.first) {
    if (std::optional<std::string> run = a2a_protocol::ScenarioRunOfGreenAgent(name)) {
      runs[*run];
    }
  }
  // A participant "<run>.<role>" belongs to the longest run id it starts with (run ids may hold
  // dots themselves).
  for (const std::string& name : names.first) {
    if (a2a_protocol::ScenarioRunOfGreenAgent(name).has_value()) continue;
    for (size_t dot = name.rfind('.'); dot != std::string::npos && dot > 0;
         dot = name.rfind('.', dot - 1)) {
      auto run = runs.find(name.substr(0, dot));
      if (run != runs.end()) {
        run->second.push_back(name);
        break;
      }
    }
  }
  return runs;
}

// A run's assessments: its green agent's tasks in the run's contexts, newest first, with their
// artifacts and no history.
absl::StatusOr<std::vector<a2apb::Task>> RunAssessments(const ConsoleParts* parts,
                                                        const std::string& run_id) {
  a2apb::ListTasksRequest list;
  list.set_tenant(a2a_protocol::ScenarioAgentName(run_id, a2a_protocol::kScenarioGreenRole));
  list.set_page_size(100);
  list.set_history_length(0);
  list.set_include_artifacts(true);
  std::vector<a2apb::Task> tasks;
  while (static_cast<int>(tasks.size()) < kMaxAssessments) {
    ASSIGN_OR_RETURN(a2apb::ListTasksResponse page, parts->a2a_tasks->ListTasks(list));
    for (a2apb::Task& task : *page.mutable_tasks()) {
      if (a2a_protocol::InScenarioRun(task.context_id(), run_id)) tasks.push_back(std::move(task));
    }
    if (page.next_page_token().empty()) break;
    list.set_page_token(page.next_page_token());
  }
  return tasks;
}

std::string StateWord(a2apb::TaskState state) {
  return absl::AsciiStrToLower(absl::StripPrefix(a2apb::TaskState_Name(state), "TASK_STATE_"));
}

// One run's figures: its assessments by state, how many reported a score and their mean.
std::string RunSummaryJson(const std::string& run_id, const std::vector<std::string>& agents,
                           const std::vector<a2apb::Task>& tasks) {
  std::map<std::string, int> states;
  int scored = 0;
  double sum = 0;
  absl::Time updated = absl::InfinitePast();
  for (const a2apb::Task& task : tasks) {
    ++states[StateWord(task.status().state())];
    if (std::optional<double> score = a2a_protocol::AssessmentScore(task)) {
      ++scored;
      sum += *score;
    }
    if (task.status().has_timestamp()) {
      updated = std::max(updated, FromProtoTime(task.status().timestamp()));
    }
  }
  std::vector<std::string> state_json;
  for (const auto& [state, n] : states)
    state_json.push_back(absl::StrCat(JsonQuote(state), ":", n));
  std::vector<std::string> agent_json;
  for (const std::string& agent : agents) agent_json.push_back(JsonQuote(agent));
  return absl::StrCat(
      "{\"runId\":", JsonQuote(run_id), ",\"greenAgent\":",
      JsonQuote(a2a_protocol::ScenarioAgentName(run_id, a2a_protocol::kScenarioGreenRole)),
      ",\"participants\":[", absl::StrJoin(agent_json, ","), "],\"assessments\":", tasks.size(),
      ",\"states\":{", absl::StrJoin(state_json, ","), "},\"scored\":", scored,
      ",\"mean\":", scored > 0 ? absl::StrFormat("%.4f", sum / scored) : "null",
      ",\"updated\":", updated == absl::InfinitePast() ? "null" : JsonQuote(TimeText(updated)),
      "}");
}

// The leaderboard by scenario run: a page of runs in run id order (?limit=, ?page= the last run
// id of the previous page), each with its assessments by state and their mean score.
absl::StatusOr<std::string> Scenarios(const ConsoleParts* parts, const httplib::Request& req) {
  ASSIGN_OR_RETURN(auto params, Params(req, {"limit", "page"}));
  ASSIGN_OR_RETURN(const int limit, IntParam(params, "limit", kDefaultRows, 1, kMaxRows));
  const std::string after = params["page"];
  if (!after.empty() && !a2a_protocol::ValidScenarioRunId(after)) {
    return absl::InvalidArgumentError("query parameter page must be a scenario run id");
  }
  ASSIGN_OR_RETURN(const auto runs, ScenarioRuns(parts));
  std::vector<std::string> rows;
  std::string next;
  for (auto run = runs.upper_bound(after); run != runs.end(); ++run) {
    if (static_cast<int>(rows.size()) == limit) {
      next = std::prev(run)->first;
      break;
    }
    ASSIGN_OR_RETURN(const std::vector<a2apb::Task> tasks, RunAssessments(parts, run->first));
    rows.push_back(RunSummaryJson(run->first, run->second, tasks));
  }
  return absl::StrCat("{\"runs\":[", absl::StrJoin(rows, ","), "],\"next\":", JsonQuote(next), "}");
}

// One scenario run: its agents and each assessment (its context, task and score), oldest first.
absl::StatusOr<std::string> Scenario(const ConsoleParts* parts, const httplib::Request& req) {
  ASSIGN_OR_RETURN(auto params, Params(req, {}));
  const std::string run_id = req.matches[1].str();
  if (!a2a_protocol::ValidScenarioRunId(run_id)) {
    return absl::InvalidArgumentError(
        "a scenario run id is 1 to 64 letters, digits, '-', '_' or '.'");
  }
  ASSIGN_OR_RETURN(const auto runs, ScenarioRuns(parts));
  auto run = runs.find(run_id);
  if (run == runs.end()) return absl::NotFoundError(absl::StrCat("no scenario run ", run_id));
  ASSIGN_OR_RETURN(std::vector<a2apb::Task> tasks, RunAssessments(parts, run_id));
  std::reverse(tasks.begin(), tasks.end());
  std::vector<std::string> rows;
  for (const a2apb::Task& task : tasks) {
    const std::optional<double> score = a2a_protocol::AssessmentScore(task);
    rows.push_back(absl::StrCat("{\"task\":", ToJson(task), ",\"score\":",
                                score.has_value() ? absl::StrFormat("%.4f", *score) : "null", "}"));
  }
  return absl::StrCat("{\"run\":", RunSummaryJson(run_id, run->second, tasks), ",\"assessments\":[",
                      absl::StrJoin(rows, ","), "]}");
}

// ?limit= and ?page= (and nothing else) into a List request's page_size and page_token.
template <typename ListRequest>
absl::Status ReadPage(const httplib::Request& req, ListRequest* list) {
  ASSIGN_OR_RETURN(auto params, Params(req, {"limit", "page"}));
  ASSIGN_OR_RETURN(int limit, IntParam(params, "limit", kDefaultRows, 1, kMaxRows));
  list->set_page_size(limit);
  list->set_page_token(params["page"]);
  return absl::OkStatus();
}

// A page of runs.
absl::StatusOr<std::string> Runs(const ConsoleParts* parts, const httplib::Request& req) {
  // A page of runs in run_id order; `page` is the previous nextPageToken.
  v1::ListRunsRequest list;
  RETURN_IF_ERROR(ReadPage(req, &list));
  ASSIGN_OR_RETURN(v1::ListRunsResponse runs, parts->work->ListRuns(list));
  return ToJson(runs);
}

// One run with all of its items.
absl::StatusOr<std::string> Run(const ConsoleParts* parts, const httplib::Request& req) {
  ASSIGN_OR_RETURN(auto params, Params(req, {}));
  const std::string id = req.matches[1].str();
  RETURN_IF_ERROR(common::ValidateId("run id", id));
  ASSIGN_OR_RETURN(v1::Run run, parts->work->GetRun(id));
  ASSIGN_OR_RETURN(std::vector<v1::WorkItem> items, parts->work->AllItems(id));
  std::vector<std::string> item_json;
  for (const v1::WorkItem& item : items) item_json.push_back(ToJson(item));
  return absl::StrCat("{\"run\":", ToJson(run), ",\"items\":[", absl::StrJoin(item_json, ","),
                      "],\"now\":", JsonQuote(TimeText(absl::Now())), "}");
}

// Retry state and the breaker: the ladder, each task's state, the blocked registry with each
// blocked task's break summary.
absl::StatusOr<std::string> Retry(const ConsoleParts* parts, const httplib::Request& req) {
  // A page of tasks in task_id order; `page` is the previous "next".
  v1::ListTasksRequest list;
  RETURN_IF_ERROR(ReadPage(req, &list));
  ASSIGN_OR_RETURN(v1::ListTasksResponse tasks, parts->tasks->List(list));
  // Each task's state with the breaker's analysis of it (read only: a page view
  // writes no breaker log entry).
  std::vector<std::string> states;
  for (const v1::TaskSummary& summary : tasks.tasks()) {
    absl::StatusOr<v1::TaskState> state = parts->tasks->GetState(summary.task_id());
    absl::StatusOr<v1::LoopAnalysis> analysis =
        state.ok() ? parts->breaker->Preview(summary.task_id()) : state.status();
    if (absl::IsNotFound(analysis.status())) continue;  // cleaned up meanwhile
    if (!analysis.ok()) return analysis.status();
    states.push_back(
        absl::StrCat("{\"state\":", ToJson(*state), ",\"analysis\":", ToJson(*analysis), "}"));
  }
  ASSIGN_OR_RETURN(v1::GetBreakerStatusResponse status, parts->breaker->Status());
  std::vector<std::string> blocked;
  for (const v1::BlockedTask& task : status.blocked_tasks()) {
    absl::StatusOr<v1::GetBreakSummaryResponse> summary =
        parts->breaker->GetSummary(task.task_id());
    blocked.push_back(absl::StrCat("{\"task\":", ToJson(task), ",\"summary\":",
                                   JsonQuote(summary.ok() ? summary->summary() : ""), "}"));
  }
  std::vector<std::string> ladder;
  for (const std::string& model : parts->tasks->options().tier_ladder) {
    ladder.push_back(JsonQuote(model));
  }
  return absl::StrCat("{\"ladder\":[", absl::StrJoin(ladder, ","), "],\"tasks\":[",
                      absl::StrJoin(states, ","), "],\"blocked\":[", absl::StrJoin(blocked, ","),
                      "],\"truncated\":", tasks.next_page_token().empty() ? "false" : "true",
                      ",\"next\":", JsonQuote(tasks.next_page_token()), "}");
}

// Server-Sent Events: "change" events ({"seq", "kind", "id"}) after `after` (default: from
// now), "resync" when the reader fell behind, a comment every keepalive while idle. The
// provider runs on httplib's thread after this handler returned: it holds the feed by
// shared_ptr and its cursor by value, nothing of the request.
void ServeEvents(const ConsoleParts* parts, const httplib::Request& req, httplib::Response& res) {
  absl::StatusOr<Caller> caller = AuthorizeCaller(parts->tokens.get(), AuthorizationValues(req));
  if (!caller.ok()) {
    AnswerError(res, caller.status());
    return;
  }
  absl::StatusOr<int64_t> after = EventsCursor(req, *parts->feed);
  if (!after.ok()) {
    AnswerError(res, after.status());
    return;
  }
  res.set_header("Cache-Control", "no-store");
  res.set_header("X-Accel-Buffering", "no");
  auto cursor = std::make_shared<int64_t>(*after);
  std::shared_ptr<ConsoleFeed> feed = parts->feed;
  const absl::Duration keepalive = parts->keepalive;
  // A token removed from the file or expired ends the stream at once, as it ends the gRPC
  // streams (TokenSource::OnRevoke); the registration goes with the provider.
  auto revoked = std::make_shared<std::atomic<bool>>(false);
  std::shared_ptr<TokenSource::Registration> registration;
  if (parts->tokens != nullptr) {
    registration =
        parts->tokens->OnRevoke(*caller, [weak_revoked = std::weak_ptr<std::atomic<bool>>(revoked),
                                          weak_feed = std::weak_ptr<ConsoleFeed>(feed)] {
          std::shared_ptr<std::atomic<bool>> flag = weak_revoked.lock();
          if (flag == nullptr) return;
          flag->store(true);
          if (std::shared_ptr<ConsoleFeed> f = weak_feed.lock()) f->Wake();
        });
  }
  res.set_chunked_content_provider(
      "text/event-stream", [feed, cursor, keepalive, revoked, registration,
                            first = std::make_shared<bool>(true)](size_t, httplib::DataSink& sink) {
        if (*first) {
          // Tells the reader where it starts, so it can come back with ?after=.
          *first = false;
          const std::string hello =
              a2a_protocol::SseEvent(absl::StrCat("{\"seq\":", *cursor, "}"), "hello");
          if (!sink.write(hello.data(), hello.size())) return false;
        }
        ConsoleFeed::Batch batch = feed->Wait(*cursor, keepalive, revoked.get());
        if (batch.closed) {
          sink.done();
          return true;
        }
        if (revoked->load()) {
          const std::string error = a2a_protocol::SseEvent(
              absl::StrCat("{\"status\":", JsonQuote("UNAUTHENTICATED"),
                           ",\"message\":", JsonQuote("the token was revoked or has expired"), "}"),
              "error");
          sink.write(error.data(), error.size());
          sink.done();
          return true;
        }
        std::string out;
        if (batch.resync) absl::StrAppend(&out, a2a_protocol::SseEvent("{}", "resync"));
        for (const ConsoleChange& change : batch.changes) {
          absl::StrAppend(
              &out, a2a_protocol::SseEvent(
                        absl::StrCat("{\"seq\":", change.seq, ",\"kind\":", JsonQuote(change.kind),
                                     ",\"id\":", JsonQuote(change.id), "}"),
                        "change", absl::StrCat(change.seq)));
          *cursor = change.seq;
        }
        if (out.empty()) out = ": keep-alive\n\n";
        return sink.write(out.data(), out.size());
      });
}

}  // namespace

void Console::Install(httplib::Server& server) {
  // The page itself: the same document for / and /console/ (the views are #fragments).
  auto page = [](const httplib::Request&, httplib::Response& res) {
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_header("Content-Security-Policy",
                   "default-src 'self'; img-src 'self' data:; style-src 'self'; "
                   "script-src 'self'; connect-src 'self'; frame-ancestors 'none'");
    res.set_content(IndexHtml(), "text/html; charset=utf-8");
  };
  server.Get("/", page);
  server.Get("/console/?", page);
  // Static files by exact name; anything else (a traversal such as ../ included) is not one of
  // the compiled-in names and gets 404.
  server.Get("/console/static/(.*)", [](const httplib::Request& req, httplib::Response& res) {
    const ConsoleAsset* asset = FindConsoleAsset(req.matches[1].str());
    if (asset == nullptr) {
      AnswerError(res, absl::NotFoundError("no such console file"));
      return;
    }
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_content(std::string(asset->data, asset->size), asset->content_type);
  });

  ConsoleParts* parts = &parts_;
  auto authorize = [parts](const httplib::Request& req) -> absl::Status {
    return Authorize(parts->tokens.get(), AuthorizationValues(req));
  };

  using Handler = std::function<absl::StatusOr<std::string>(const httplib::Request&)>;
  auto json = [authorize](Handler handler) {
    return [authorize, handler](const httplib::Request& req, httplib::Response& res) {
      absl::Status allowed = authorize(req);
      if (!allowed.ok()) {
        AnswerError(res, allowed);
        return;
      }
      absl::StatusOr<std::string> body = handler(req);
      if (!body.ok()) {
        AnswerError(res, body.status());
        return;
      }
      Answer(res, 200, *body);
    };
  };

  // The JSON endpoints, each a function above: agents and counts, evaluations and one
  // evaluation's timeline, the leaderboard (also by scenario run), work runs, the retry ladder
  // and breaker.
  using JsonRoute = absl::StatusOr<std::string> (*)(const ConsoleParts*, const httplib::Request&);
  static constexpr std::pair<const char*, JsonRoute> kJsonRoutes[] = {
      {"/console/api/overview", Overview},
      {"/console/api/evaluations", Evaluations},
      {"/console/api/evaluations/(.+)", Evaluation},
      {"/console/api/leaderboard", Leaderboard},
      {"/console/api/scenarios", Scenarios},
      {"/console/api/scenarios/(.+)", Scenario},
      {"/console/api/runs", Runs},
      {"/console/api/runs/(.+)", Run},
      {"/console/api/retry", Retry},
  };
  for (const auto& [pattern, route] : kJsonRoutes) {
    server.Get(pattern, json([parts, route = route](const httplib::Request& req) {
                 return route(parts, req);
               }));
  }

  server.Get("/console/api/events", [parts](const httplib::Request& req, httplib::Response& res) {
    ServeEvents(parts, req, res);
  });

  // Anything else under /console/ is not ours to guess at: 404 (or 405 for a write), in JSON,
  // rather than the A2A REST binding's catch-all.
  auto unknown = [](const httplib::Request& req, httplib::Response& res) {
    if (req.method != "GET") {
      AnswerError(res,
                  absl::UnimplementedError(
                      absl::StrCat("the console is read-only: ", req.method, " is not served")),
                  405);
      return;
    }
    AnswerError(res, absl::NotFoundError("no such console endpoint"));
  };
  server.Get("/console/.*", unknown);
  server.Post("/console/.*", unknown);
  server.Put("/console/.*", unknown);
  server.Delete("/console/.*", unknown);
  server.Patch("/console/.*", unknown);
}

}  // namespace coordinator
