// coordctl breaker ...: the loop breaker, with the words and outputs of the ARIA iteration
// breaker script (check, analyze, force-escalate, break, status, cleanup) plus its log.
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "coordctl/cli.h"
#include "coordinator/v1/breaker.grpc.pb.h"
#include "google/protobuf/util/json_util.h"

namespace coordctl {
namespace {

using coordinator::v1::BreakerService;

// The threshold options every analysing command takes.
const std::vector<std::string>& ThresholdOptions() {
  static const auto* options =
      new std::vector<std::string>{"repeated-error", "stuck-tier", "quality-gate"};
  return *options;
}

// Reads --repeated-error, --stuck-tier and --quality-gate into `thresholds`.
absl::Status ParseThresholds(const ParsedArgs& args, coordinator::v1::LoopThresholds* thresholds) {
  for (const std::string& name : ThresholdOptions()) {
    if (!args.has(name)) continue;
    absl::StatusOr<int64_t> value = ParseIntArg("--" + name, args.get(name));
    if (!value.ok()) return value.status();
    if (*value < 1 || *value > INT32_MAX) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, " takes a positive number"));
    }
    const auto v = static_cast<int32_t>(*value);
    if (name == "repeated-error") thresholds->set_repeated_error(v);
    if (name == "stuck-tier") thresholds->set_stuck_tier(v);
    if (name == "quality-gate") thresholds->set_quality_gate(v);
  }
  return absl::OkStatus();
}

std::string UtcTime(const google::protobuf::Timestamp& ts) {
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixSeconds(ts.seconds()),
                          absl::UTCTimeZone());
}

std::string LevelName(coordinator::v1::BreakerLogLevel level) {
  switch (level) {
    case coordinator::v1::BREAKER_LOG_LEVEL_INFO:
      return "INFO";
    case coordinator::v1::BREAKER_LOG_LEVEL_WARN:
      return "WARN";
    case coordinator::v1::BREAKER_LOG_LEVEL_ERROR:
      return "ERROR";
    case coordinator::v1::BREAKER_LOG_LEVEL_ALERT:
      return "ALERT";
    default:
      return "?";
  }
}

int RunCheck(const Env& env, const ParsedArgs& args) {
  coordinator::v1::CheckLoopRequest request;
  request.set_task_id(args.positional[0]);
  if (absl::Status s = ParseThresholds(args, request.mutable_thresholds()); !s.ok()) {
    return Fail(env, std::string(s.message()), kExitUsage);
  }
  coordinator::v1::CheckLoopResponse response;
  grpc::Status s =
      BreakerService::NewStub(env.channel)->CheckLoop(env.NewContext().get(), request, &response);
  if (!s.ok()) return ReportRpcError(env, s);
  if (!response.looping()) return kExitNo;
  *env.out << response.pattern_type() << std::endl;
  return kExitOk;
}

int RunAnalyze(const Env& env, const ParsedArgs& args) {
  coordinator::v1::AnalyzeLoopRequest request;
  request.set_task_id(args.positional[0]);
  if (absl::Status s = ParseThresholds(args, request.mutable_thresholds()); !s.ok()) {
    return Fail(env, std::string(s.message()), kExitUsage);
  }
  coordinator::v1::LoopAnalysis response;
  grpc::Status s =
      BreakerService::NewStub(env.channel)->AnalyzeLoop(env.NewContext().get(), request, &response);
  if (!s.ok()) return ReportRpcError(env, s);
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  options.add_whitespace = true;
  (void)google::protobuf::util::MessageToJsonString(response, &json, options);
  *env.out << json << std::flush;
  return kExitOk;
}

int RunForceEscalate(const Env& env, const ParsedArgs& args) {
  coordinator::v1::ForceEscalateRequest request;
  request.set_task_id(args.positional[0]);
  request.set_reason(args.free_text(1));
  coordinator::v1::ForceEscalateResponse response;
  grpc::Status s = BreakerService::NewStub(env.channel)
                       ->ForceEscalate(env.NewContext().get(), request, &response);
  if (!s.ok()) return ReportRpcError(env, s);
  if (response.result() == coordinator::v1::FORCE_ESCALATE_RESULT_HUMAN_INTERVENTION_REQUIRED) {
    *env.out << "HUMAN_INTERVENTION_REQUIRED" << std::endl;
  } else {
    *env.out << response.to_tier() << std::endl;
  }
  return kExitOk;
}

int RunBreak(const Env& env, const ParsedArgs& args) {
  coordinator::v1::BreakRequest request;
  request.set_task_id(args.positional[0]);
  request.set_reason(args.free_text(1));
  if (absl::Status s = ParseThresholds(args, request.mutable_thresholds()); !s.ok()) {
    return Fail(env, std::string(s.message()), kExitUsage);
  }
  coordinator::v1::BreakResponse response;
  grpc::Status s =
      BreakerService::NewStub(env.channel)->Break(env.NewContext().get(), request, &response);
  if (!s.ok()) return ReportRpcError(env, s);
  *env.out << response.summary() << std::flush;
  return kExitOk;
}

int RunBreakerStatus(const Env& env, const ParsedArgs& /*args*/) {
  coordinator::v1::GetBreakerStatusRequest request;
  coordinator::v1::GetBreakerStatusResponse response;
  grpc::Status s = BreakerService::NewStub(env.channel)
                       ->GetBreakerStatus(env.NewContext().get(), request, &response);
  if (!s.ok()) return ReportRpcError(env, s);
  if (response.blocked_tasks().empty()) {
    *env.out << "No blocked tasks" << std::endl;
    return kExitOk;
  }
  for (const auto& b : response.blocked_tasks()) {
    *env.out << absl::StrFormat("%-8s | Blocked: %s | Pattern: %s | Attempts: %d | Tier: %d | %s\n",
                                b.task_id(), UtcTime(b.blocked_time()), b.pattern_type(),
                                b.attempt_count(), b.final_tier(), OneLine(b.reason()));
  }
  env.out->flush();
  return kExitOk;
}

int RunSummary(const Env& env, const ParsedArgs& args) {
  coordinator::v1::GetBreakSummaryRequest request;
  request.set_task_id(args.positional[0]);
  coordinator::v1::GetBreakSummaryResponse response;
  grpc::Status s = BreakerService::NewStub(env.channel)
                       ->GetBreakSummary(env.NewContext().get(), request, &response);
  if (!s.ok()) return ReportRpcError(env, s);
  *env.out << response.summary() << std::flush;
  return kExitOk;
}

int RunBreakerCleanup(const Env& env, const ParsedArgs& args) {
  coordinator::v1::CleanupBreakerRequest request;
  request.set_task_id(args.positional[0]);
  coordinator::v1::CleanupBreakerResponse response;
  grpc::Status s =
      BreakerService::NewStub(env.channel)->Cleanup(env.NewContext().get(), request, &response);
  if (!s.ok()) return ReportRpcError(env, s);
  return kExitOk;
}

int RunLog(const Env& env, const ParsedArgs& args) {
  coordinator::v1::ReadBreakerLogRequest request;
  if (args.has("tail")) {
    absl::StatusOr<int64_t> tail = ParseIntArg("--tail", args.get("tail"));
    if (!tail.ok() || *tail <= 0 || *tail > INT32_MAX) {
      return Fail(env, "--tail takes a positive number", kExitUsage);
    }
    request.set_tail(static_cast<int32_t>(*tail));
  }
  request.set_page_size(1000);
  auto stub = BreakerService::NewStub(env.channel);
  const grpc::Status s = ForEachPage(env, *stub, &BreakerService::Stub::ReadBreakerLog, request,
                                     [&](const coordinator::v1::ReadBreakerLogResponse& page) {
                                       for (const auto& e : page.entries()) {
                                         *env.out << "[" << UtcTime(e.time()) << "] ["
                                                  << LevelName(e.level()) << "] "
                                                  << OneLine(e.message()) << "\n";
                                       }
                                     });
  if (!s.ok()) return ReportRpcError(env, s);
  env.out->flush();
  return kExitOk;
}

}  // namespace

void AddBreakerCommands(std::vector<Command>* commands) {
  const std::vector<std::string>& thresholds = ThresholdOptions();
  commands->push_back({{"breaker", "check"},
                       "<task_id> [--repeated-error N] [--stuck-tier M] [--quality-gate K]",
                       "exit 0 and print the pattern when the task is looping, exit 1 when not",
                       thresholds,
                       {},
                       1,
                       1,
                       false,
                       RunCheck});
  commands->push_back({{"breaker", "analyze"},
                       "<task_id> [--repeated-error N] [--stuck-tier M] [--quality-gate K]",
                       "print the loop analysis as JSON",
                       thresholds,
                       {},
                       1,
                       1,
                       false,
                       RunAnalyze});
  commands->push_back({{"breaker", "force-escalate"},
                       "<task_id> [\"<reason>\"]",
                       "jump two tiers; prints the new tier, or HUMAN_INTERVENTION_REQUIRED "
                       "near the top of the ladder",
                       {},
                       {},
                       1,
                       2,
                       true,
                       RunForceEscalate});
  commands->push_back({{"breaker", "break"},
                       "<task_id> [\"<reason>\"]",
                       "block the task for a person; prints the summary",
                       thresholds,
                       {},
                       1,
                       2,
                       true,
                       RunBreak});
  commands->push_back(
      {{"breaker", "status"}, "", "list the blocked tasks", {}, {}, 0, 0, false, RunBreakerStatus});
  commands->push_back({{"breaker", "summary"},
                       "<task_id>",
                       "print the summary stored when the task was blocked",
                       {},
                       {},
                       1,
                       1,
                       false,
                       RunSummary});
  commands->push_back({{"breaker", "cleanup"},
                       "<task_id>",
                       "unblock the task: remove it from the registry with its summary and "
                       "remove its retry state",
                       {},
                       {},
                       1,
                       1,
                       false,
                       RunBreakerCleanup});
  commands->push_back({{"breaker", "log"},
                       "[--tail N]",
                       "print the breaker's log: [time] [LEVEL] message",
                       {"tail"},
                       {},
                       0,
                       0,
                       false,
                       RunLog});
}

}  // namespace coordctl
