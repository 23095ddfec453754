// coordctl task ...: retry state, with the words and outputs of the ARIA task-state scripts
// (aria_task_init, aria_task_get, ...) so that scripts can switch by changing the command.
#include <algorithm>
#include <iostream>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "coordctl/aria_state_json.h"
#include "coordctl/cli.h"
#include "coordctl/json_path.h"
#include "coordinator/v1/task_state.grpc.pb.h"

namespace coordctl {
namespace {

using coordinator::v1::TaskStateService;

// At most `max_chars` UTF-8 characters of `text`, control characters (a newline in a
// description) shown as spaces so that one task stays one line.
std::string FirstChars(const std::string& text, size_t max_chars) {
  std::string out;
  size_t chars = 0;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if ((u & 0xC0) != 0x80 && chars++ == max_chars) break;
    out.push_back(u < 0x20 || u == 0x7F ? ' ' : c);
  }
  return out;
}

int RunInit(const Env& env, const ParsedArgs& args) {
  if (args.positional.empty() && args.rest.empty()) {
    return Fail(env, "the description is required", kExitUsage);
  }
  coordinator::v1::InitTaskRequest request;
  request.set_description(args.free_text(0));
  if (args.has("id_text")) request.set_id_text(args.get("id_text"));
  coordinator::v1::InitTaskResponse response;
  grpc::Status s =
      TaskStateService::NewStub(env.channel)->InitTask(env.NewContext().get(), request, &response);
  if (!s.ok()) return ReportRpcError(env, s);
  *env.out << response.task_id() << std::endl;
  return kExitOk;
}

// The task's whole state as the state file would hold it; NOT_FOUND for an unknown task.
grpc::Status GetStateJson(const Env& env, const std::string& task_id, std::string* json) {
  coordinator::v1::GetTaskStateRequest request;
  request.set_task_id(task_id);
  coordinator::v1::TaskState state;
  grpc::Status s =
      TaskStateService::NewStub(env.channel)->GetTaskState(env.NewContext().get(), request, &state);
  if (s.ok()) *json = FormatAriaStateJson(state);
  return s;
}

// A field name, or a path (`a.b`, `failures[0].error`) read out of the whole state. With
// --compat, as the script's `jq -r '.<field> // empty'`: nothing (exit 0) for an unset field,
// null or false; nothing (exit 1) for an unknown task.
int RunTaskGet(const Env& env, const ParsedArgs& args) {
  const std::string& task_id = args.positional[0];
  const std::string& field = args.positional[1];
  const bool compat = args.flag("compat");
  const bool is_path = field.find_first_of(".[") != std::string::npos;
  if (compat || is_path) {
    absl::StatusOr<std::vector<JsonPathStep>> path = ParseJsonPath(field);
    if (!path.ok()) return Fail(env, std::string(path.status().message()), kExitUsage);
    std::string json;
    grpc::Status s = GetStateJson(env, task_id, &json);
    if (compat && s.error_code() == grpc::StatusCode::NOT_FOUND) return kExitNo;
    if (!s.ok()) {
      if (s.error_code() == grpc::StatusCode::NOT_FOUND) *env.out << std::endl;
      return ReportRpcError(env, s);
    }
    absl::StatusOr<std::optional<std::string>> value = ReadJsonPath(json, *path);
    if (!value.ok()) return Fail(env, std::string(value.status().message()));
    if (!value->has_value()) {
      if (compat) return kExitOk;
      *env.out << std::endl;
      return Fail(env, absl::StrCat("not found: task ", task_id, " has no value at ", field),
                  kExitNo);
    }
    *env.out << **value << std::endl;
    return kExitOk;
  }
  coordinator::v1::GetTaskFieldRequest request;
  request.set_task_id(task_id);
  request.set_field(field);
  coordinator::v1::GetTaskFieldResponse response;
  grpc::Status s = TaskStateService::NewStub(env.channel)
                       ->GetTaskField(env.NewContext().get(), request, &response);
  if (s.error_code() == grpc::StatusCode::NOT_FOUND) {
    // An unknown task (or unset field) prints an empty line and exits 1 (--compat: see above).
    *env.out << std::endl;
    return ReportRpcError(env, s);
  }
  if (!s.ok()) return ReportRpcError(env, s);
  *env.out << response.value() << std::endl;
  return kExitOk;
}

// A value of only digits is a number, as the script's `set` wrote it: leading zeros go.
std::string NumericLikeTheScript(std::string value) {
  if (value.empty() ||
      !std::all_of(value.begin(), value.end(), [](char c) { return absl::ascii_isdigit(c); })) {
    return value;
  }
  const size_t first = value.find_first_not_of('0');
  return first == std::string::npos ? "0" : value.substr(first);
}

int RunSet(const Env& env, const ParsedArgs& args) {
  if (args.positional.size() < 3 && args.rest.empty()) {
    return Fail(env, "the value is required", kExitUsage);
  }
  coordinator::v1::SetTaskFieldRequest request;
  request.set_task_id(args.positional[0]);
  request.set_field(args.positional[1]);
  request.set_value(NumericLikeTheScript(args.free_text(2)));
  coordinator::v1::SetTaskFieldResponse response;
  grpc::Status s = TaskStateService::NewStub(env.channel)
                       ->SetTaskField(env.NewContext().get(), request, &response);
  if (!s.ok()) return ReportRpcError(env, s);
  return kExitOk;
}

int RunAttempt(const Env& env, const ParsedArgs& args) {
  coordinator::v1::IncrementAttemptRequest request;
  request.set_task_id(args.positional[0]);
  coordinator::v1::IncrementAttemptResponse response;
  grpc::Status s = TaskStateService::NewStub(env.channel)
                       ->IncrementAttempt(env.NewContext().get(), request, &response);
  if (!s.ok()) return ReportRpcError(env, s);
  *env.out << response.attempt_count() << std::endl;
  return kExitOk;
}

int RunTier(const Env& env, const ParsedArgs& args) {
  coordinator::v1::GetTierRequest request;
  request.set_task_id(args.positional[0]);
  coordinator::v1::GetTierResponse response;
  grpc::Status s =
      TaskStateService::NewStub(env.channel)->GetTier(env.NewContext().get(), request, &response);
  if (!s.ok()) return ReportRpcError(env, s);
  *env.out << response.model_tier() << std::endl;
  return kExitOk;
}

int RunEscalate(const Env& env, const ParsedArgs& args) {
  coordinator::v1::EscalateRequest request;
  request.set_task_id(args.positional[0]);
  request.set_reason(args.free_text(1));
  if (args.has("steps")) {
    absl::StatusOr<int64_t> steps = ParseIntArg("--steps", args.get("steps"));
    if (!steps.ok()) return Fail(env, std::string(steps.status().message()), kExitUsage);
    if (*steps < INT32_MIN || *steps > INT32_MAX) {
      return Fail(env, "--steps is out of range", kExitUsage);
    }
    request.set_steps(static_cast<int32_t>(*steps));
  }
  coordinator::v1::EscalateResponse response;
  grpc::Status s =
      TaskStateService::NewStub(env.channel)->Escalate(env.NewContext().get(), request, &response);
  if (!s.ok()) return ReportRpcError(env, s);
  *env.out << response.model_tier() << std::endl;
  return kExitOk;
}

int RunTaskFail(const Env& env, const ParsedArgs& args) {
  if (args.positional.size() < 2 && args.rest.empty()) {
    return Fail(env, "the error text is required", kExitUsage);
  }
  coordinator::v1::RecordFailureRequest request;
  request.set_task_id(args.positional[0]);
  request.set_error(args.free_text(1));
  coordinator::v1::RecordFailureResponse response;
  grpc::Status s = TaskStateService::NewStub(env.channel)
                       ->RecordFailure(env.NewContext().get(), request, &response);
  if (!s.ok()) return ReportRpcError(env, s);
  return kExitOk;
}

int RunQualityGate(const Env& env, const ParsedArgs& args) {
  coordinator::v1::RecordQualityGateRequest request;
  request.set_task_id(args.positional[0]);
  request.set_check(args.positional[1]);
  const std::string& verdict = args.positional[2];
  if (verdict == "pass") {
    request.set_passed(true);
  } else if (verdict == "fail") {
    request.set_passed(false);
  } else {
    return Fail(env, absl::StrCat("the verdict is pass or fail, not \"", verdict, "\""),
                kExitUsage);
  }
  request.set_detail(args.free_text(3));
  coordinator::v1::RecordQualityGateResponse response;
  grpc::Status s = TaskStateService::NewStub(env.channel)
                       ->RecordQualityGate(env.NewContext().get(), request, &response);
  if (!s.ok()) return ReportRpcError(env, s);
  return kExitOk;
}

int RunFailureContext(const Env& env, const ParsedArgs& args) {
  coordinator::v1::GetFailureContextRequest request;
  request.set_task_id(args.positional[0]);
  if (args.has("tail")) {
    absl::StatusOr<int64_t> tail = ParseIntArg("--tail", args.get("tail"));
    if (!tail.ok() || *tail <= 0 || *tail > INT32_MAX) {
      return Fail(env, "--tail takes a positive number", kExitUsage);
    }
    request.set_tail(static_cast<int32_t>(*tail));
  }
  coordinator::v1::GetFailureContextResponse response;
  grpc::Status s = TaskStateService::NewStub(env.channel)
                       ->GetFailureContext(env.NewContext().get(), request, &response);
  if (!s.ok()) return ReportRpcError(env, s);
  *env.out << response.text() << std::flush;
  return kExitOk;
}

int RunState(const Env& env, const ParsedArgs& args) {
  std::string json;
  grpc::Status s = GetStateJson(env, args.positional[0], &json);
  if (!s.ok()) return ReportRpcError(env, s);
  *env.out << (args.flag("pretty") ? PrettyJson(json) : json) << std::flush;
  return kExitOk;
}

int RunTaskList(const Env& env, const ParsedArgs& /*args*/) {
  auto stub = TaskStateService::NewStub(env.channel);
  coordinator::v1::ListTasksRequest request;
  request.set_page_size(1000);
  int count = 0;
  const grpc::Status s =
      ForEachPage(env, *stub, &TaskStateService::Stub::ListTasks, request,
                  [&](const coordinator::v1::ListTasksResponse& page) {
                    for (const auto& t : page.tasks()) {
                      *env.out << absl::StrFormat("%-8s | Attempts: %d | Tier: %d | %s\n",
                                                  t.task_id(), t.attempt_count(), t.model_tier(),
                                                  FirstChars(t.description(), 30));
                      ++count;
                    }
                  });
  if (!s.ok()) return ReportRpcError(env, s);
  if (count == 0) *env.out << "No active task states\n";
  env.out->flush();
  return kExitOk;
}

int RunTaskCleanup(const Env& env, const ParsedArgs& args) {
  coordinator::v1::CleanupTaskRequest request;
  request.set_task_id(args.positional[0]);
  coordinator::v1::CleanupTaskResponse response;
  grpc::Status s = TaskStateService::NewStub(env.channel)
                       ->CleanupTask(env.NewContext().get(), request, &response);
  if (!s.ok()) return ReportRpcError(env, s);
  return kExitOk;
}

}  // namespace

namespace {

// attempt, tier, escalate, fail, qg: moving a task along its ladder.
void AddTaskLadderCommands(std::vector<Command>* commands) {
  commands->push_back({{"task", "attempt"},
                       "<task_id>",
                       "count one more attempt; prints the new count",
                       {},
                       {},
                       1,
                       1,
                       false,
                       RunAttempt});
  commands->push_back({{"task", "tier"},
                       "<task_id>",
                       "print the current model tier",
                       {},
                       {},
                       1,
                       1,
                       false,
                       RunTier});
  commands->push_back({{"task", "escalate"},
                       "<task_id> [\"<reason>\"] [--steps N]",
                       "climb N tiers (default 1, capped at the top); prints the new tier",
                       {"steps"},
                       {},
                       1,
                       2,
                       true,
                       RunEscalate});
  commands->push_back({{"task", "fail"},
                       "<task_id> \"<error>\"",
                       "record a failure of the current attempt on the current tier's model",
                       {},
                       {},
                       1,
                       2,
                       true,
                       RunTaskFail});
  commands->push_back({{"task", "qg"},
                       "<task_id> <check> pass|fail [\"<detail>\"]",
                       "record a quality-gate result",
                       {},
                       {},
                       3,
                       4,
                       true,
                       RunQualityGate});
}

// failure-context, state, list, cleanup: reading and removing tasks.
void AddTaskReadCommands(std::vector<Command>* commands) {
  commands->push_back({{"task", "failure-context"},
                       "<task_id> [--tail N]",
                       "print the failures as prompt text (nothing when there are none)",
                       {"tail"},
                       {},
                       1,
                       1,
                       false,
                       RunFailureContext});
  commands->push_back({{"task", "state"},
                       "<task_id> [--pretty]",
                       "print the whole state as JSON, in the scripts' state-file format "
                       "(--pretty: laid out as jq prints it)",
                       {},
                       {"pretty"},
                       1,
                       1,
                       false,
                       RunState});
  commands->push_back({{"task", "list"},
                       "",
                       "list every task: id | Attempts | Tier | first 30 characters",
                       {},
                       {},
                       0,
                       0,
                       false,
                       RunTaskList});
  commands->push_back({{"task", "cleanup"},
                       "<task_id>",
                       "remove the task's state (and any breaker block of it)",
                       {},
                       {},
                       1,
                       1,
                       false,
                       RunTaskCleanup});
}

}  // namespace

void AddTaskCommands(std::vector<Command>* commands) {
  commands->push_back({{"task", "init"},
                       "[--id_text=<text>] \"<description>\"",
                       "create the task's retry state unless it exists; prints the task id (the "
                       "SHA-256 of the description, or of --id_text: what ARIA's scripts hashed)",
                       {"id_text"},
                       {},
                       0,
                       1,
                       true,
                       RunInit});
  commands->push_back({{"task", "get"},
                       "<task_id> <field or path, e.g. failures[0].error> [--compat]",
                       "print one field or jq-style path (unset: an empty line and exit 1; "
                       "--compat: nothing and exit 0, as aria_task_get)",
                       {},
                       {"compat"},
                       2,
                       2,
                       false,
                       RunTaskGet});
  commands->push_back({{"task", "set"},
                       "<task_id> <field> <value>",
                       "set task_desc, attempt_count, model_tier, created_at or a custom field "
                       "(digits are a number: 007 is stored as 7)",
                       {},
                       {},
                       2,
                       3,
                       true,
                       RunSet});
  AddTaskLadderCommands(commands);
  AddTaskReadCommands(commands);
}

}  // namespace coordctl
