// coordctl context ...: TaskContexts and their command records.
#include <iostream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "coordctl/cli.h"
#include "coordinator/v1/context.grpc.pb.h"

namespace coordctl {
namespace {

using coordinator::v1::ContextService;
using coordinator::v1::TaskContext;

// Fields `context put --set field=value` sets directly; any other key is a label.
const std::vector<std::string>& SettableFields() {
  static const auto* fields = new std::vector<std::string>{
      "agent", "external_task_id", "workspace_dir", "shared_dir", "environment_handle", "status"};
  return *fields;
}

absl::StatusOr<coordinator::v1::ContextStatus> ParseStatus(std::string text) {
  text = absl::AsciiStrToUpper(text);
  if (!absl::StartsWith(text, "CONTEXT_STATUS_")) text = absl::StrCat("CONTEXT_STATUS_", text);
  coordinator::v1::ContextStatus status;
  if (!coordinator::v1::ContextStatus_Parse(text, &status) ||
      status == coordinator::v1::CONTEXT_STATUS_UNSPECIFIED) {
    return absl::InvalidArgumentError("status must be one of active, completed, failed, canceled");
  }
  return status;
}

std::string StatusName(coordinator::v1::ContextStatus status) {
  std::string name = coordinator::v1::ContextStatus_Name(status);
  absl::string_view short_name = name;
  absl::ConsumePrefix(&short_name, "CONTEXT_STATUS_");
  return absl::AsciiStrToLower(short_name);
}

std::string FormatTime(const google::protobuf::Timestamp& ts) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(ts.seconds()),
                          absl::UTCTimeZone());
}

void PrintContext(const Env& env, const TaskContext& c) {
  std::ostream& out = *env.out;
  out << "context_id:         " << c.context_id() << "\n"
      << "agent:              " << c.agent() << "\n"
      << "external_task_id:   " << c.external_task_id() << "\n"
      << "workspace_dir:      " << c.workspace_dir() << "\n"
      << "shared_dir:         " << c.shared_dir() << "\n"
      << "environment_handle: " << c.environment_handle() << "\n"
      << "status:             " << StatusName(c.status()) << "\n"
      << "command_count:      " << c.command_count() << "\n"
      << "failed_commands:    " << c.failed_commands() << "\n"
      << "created:            " << FormatTime(c.create_time()) << "\n"
      << "updated:            " << FormatTime(c.update_time()) << "\n"
      << "version:            " << c.version() << "\n";
  std::vector<std::pair<std::string, std::string>> labels(c.labels().begin(), c.labels().end());
  std::sort(labels.begin(), labels.end());
  for (const auto& [key, value] : labels) out << "label " << key << ": " << value << "\n";
}

// Applies --agent, --set and --unset to `context`; collects the update mask paths.
absl::Status ApplyEdits(const ParsedArgs& args, TaskContext* context,
                        std::vector<std::string>* paths) {
  auto add_path = [&](const std::string& p) {
    if (std::find(paths->begin(), paths->end(), p) == paths->end()) paths->push_back(p);
  };
  if (args.has("agent")) {
    context->set_agent(args.get("agent"));
    add_path("agent");
  }
  auto sets = args.options.find("set");
  if (sets != args.options.end()) {
    for (const std::string& kv : sets->second) {
      const size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) {
        return absl::InvalidArgumentError(absl::StrCat("--set takes key=value, not \"", kv, "\""));
      }
      const std::string key = kv.substr(0, eq);
      const std::string value = kv.substr(eq + 1);
      const auto& fields = SettableFields();
      if (std::find(fields.begin(), fields.end(), key) == fields.end()) {
        (*context->mutable_labels())[key] = value;
        add_path("labels");
        continue;
      }
      const auto* field = context->GetDescriptor()->FindFieldByName(key);
      if (key == "status") {
        absl::StatusOr<coordinator::v1::ContextStatus> status = ParseStatus(value);
        if (!status.ok()) return status.status();
        context->set_status(*status);
      } else {
        context->GetReflection()->SetString(context, field, value);
      }
      add_path(key);
    }
  }
  auto unsets = args.options.find("unset");
  if (unsets != args.options.end()) {
    for (const std::string& key : unsets->second) {
      context->mutable_labels()->erase(key);
      add_path("labels");
    }
  }
  return absl::OkStatus();
}

int RunPut(const Env& env, const ParsedArgs& args) {
  auto stub = ContextService::NewStub(env.channel);
  const std::string& id = args.positional[0];
  // Create when absent, else update the read version; a concurrent change (ABORTED) or a
  // concurrent create (ALREADY_EXISTS) starts over.
  for (int attempt = 0; attempt < 20; ++attempt) {
    coordinator::v1::GetContextRequest get;
    get.set_context_id(id);
    TaskContext current;
    grpc::Status s = stub->GetContext(env.NewContext().get(), get, &current);
    TaskContext result;
    if (s.error_code() == grpc::StatusCode::NOT_FOUND) {
      coordinator::v1::CreateContextRequest create;
      create.mutable_context()->set_context_id(id);
      std::vector<std::string> paths;
      if (absl::Status e = ApplyEdits(args, create.mutable_context(), &paths); !e.ok()) {
        return Fail(env, std::string(e.message()), kExitUsage);
      }
      s = stub->CreateContext(env.NewContext().get(), create, &result);
      if (s.error_code() == grpc::StatusCode::ALREADY_EXISTS) continue;
    } else if (s.ok()) {
      coordinator::v1::UpdateContextRequest update;
      *update.mutable_context() = current;
      std::vector<std::string> paths;
      if (absl::Status e = ApplyEdits(args, update.mutable_context(), &paths); !e.ok()) {
        return Fail(env, std::string(e.message()), kExitUsage);
      }
      if (paths.empty()) {
        result = current;
      } else {
        for (const std::string& p : paths) update.mutable_update_mask()->add_paths(p);
        s = stub->UpdateContext(env.NewContext().get(), update, &result);
        if (s.error_code() == grpc::StatusCode::ABORTED) continue;
      }
    }
    if (!s.ok()) return ReportRpcError(env, s);
    if (args.flag("json")) {
      *env.out << ToJson(result) << std::endl;
    } else {
      *env.out << result.context_id() << " version " << result.version() << std::endl;
    }
    return kExitOk;
  }
  return Fail(env, "context " + id + " kept changing under this command; try again");
}

int RunContextGet(const Env& env, const ParsedArgs& args) {
  auto stub = ContextService::NewStub(env.channel);
  coordinator::v1::GetContextRequest request;
  request.set_context_id(args.positional[0]);
  TaskContext context;
  grpc::Status s = stub->GetContext(env.NewContext().get(), request, &context);
  if (!s.ok()) return ReportRpcError(env, s);
  if (args.flag("json")) {
    *env.out << ToJson(context) << std::endl;
  } else {
    PrintContext(env, context);
  }
  return kExitOk;
}

int RunContextList(const Env& env, const ParsedArgs& args) {
  auto stub = ContextService::NewStub(env.channel);
  coordinator::v1::ListContextsRequest request;
  request.set_agent(args.get("agent"));
  if (args.has("status")) {
    absl::StatusOr<coordinator::v1::ContextStatus> status = ParseStatus(args.get("status"));
    if (!status.ok()) return Fail(env, std::string(status.status().message()), kExitUsage);
    request.set_status(*status);
  }
  request.set_page_size(1000);
  coordinator::v1::ListContextsResponse all;
  const grpc::Status s = ForEachPage(env, *stub, &ContextService::Stub::ListContexts, request,
                                     [&](coordinator::v1::ListContextsResponse& page) {
                                       for (TaskContext& c : *page.mutable_contexts())
                                         *all.add_contexts() = std::move(c);
                                     });
  if (!s.ok()) return ReportRpcError(env, s);
  if (args.flag("json")) {
    *env.out << ToJson(all) << std::endl;
    return kExitOk;
  }
  for (const TaskContext& c : all.contexts()) {
    *env.out << c.context_id() << "\t" << (c.agent().empty() ? "-" : c.agent()) << "\t"
             << StatusName(c.status()) << "\tcommands=" << c.command_count()
             << "\tfailed=" << c.failed_commands() << "\tupdated=" << FormatTime(c.update_time())
             << "\n";
  }
  env.out->flush();
  return kExitOk;
}

int RunCommand(const Env& env, const ParsedArgs& args) {
  if (args.rest.empty()) return Fail(env, "the command words go after \"--\"", kExitUsage);
  coordinator::v1::RecordCommandRequest request;
  request.set_context_id(args.positional[0]);
  request.set_command(absl::StrJoin(args.rest, " "));
  if (!args.has("exit-code")) return Fail(env, "--exit-code is required", kExitUsage);
  absl::StatusOr<int64_t> exit_code = ParseIntArg("--exit-code", args.get("exit-code"));
  if (!exit_code.ok()) return Fail(env, std::string(exit_code.status().message()), kExitUsage);
  if (*exit_code < INT32_MIN || *exit_code > INT32_MAX) {
    return Fail(env, "--exit-code is out of range", kExitUsage);
  }
  request.set_exit_code(static_cast<int32_t>(*exit_code));
  if (args.has("duration")) {
    absl::StatusOr<absl::Duration> d = ParseDurationArg("duration", args.get("duration"));
    if (!d.ok()) return Fail(env, std::string(d.status().message()), kExitUsage);
    const int64_t nanos = absl::ToInt64Nanoseconds(*d);
    request.mutable_duration()->set_seconds(nanos / 1000000000);
    request.mutable_duration()->set_nanos(static_cast<int32_t>(nanos % 1000000000));
  }
  request.set_output_digest(args.get("digest"));
  auto stub = ContextService::NewStub(env.channel);
  coordinator::v1::RecordCommandResponse response;
  grpc::Status s = stub->RecordCommand(env.NewContext().get(), request, &response);
  if (!s.ok()) return ReportRpcError(env, s);
  *env.out << "command " << response.record().seq() << " recorded ("
           << response.context().failed_commands() << " failed)" << std::endl;
  return kExitOk;
}

int RunContextRemove(const Env& env, const ParsedArgs& args) {
  auto stub = ContextService::NewStub(env.channel);
  coordinator::v1::DeleteContextRequest request;
  request.set_context_id(args.positional[0]);
  google::protobuf::Empty response;
  grpc::Status s = stub->DeleteContext(env.NewContext().get(), request, &response);
  if (!s.ok()) return ReportRpcError(env, s);
  *env.out << "deleted " << request.context_id() << std::endl;
  return kExitOk;
}

}  // namespace

void AddContextCommands(std::vector<Command>* commands) {
  commands->push_back({{"context", "put"},
                       "<context_id> [--agent A] [--set key=value ...] [--unset label ...] "
                       "[--json]",
                       "create or update a context; --set sets agent, external_task_id, "
                       "workspace_dir, shared_dir, environment_handle, status, or else a label",
                       {"agent", "set", "unset"},
                       {"json"},
                       1,
                       1,
                       false,
                       RunPut});
  commands->push_back({{"context", "get"},
                       "<context_id> [--json]",
                       "show a context",
                       {},
                       {"json"},
                       1,
                       1,
                       false,
                       RunContextGet});
  commands->push_back({{"context", "list"},
                       "[--agent A] [--status S] [--json]",
                       "list contexts, optionally of one agent or in one status",
                       {"agent", "status"},
                       {"json"},
                       0,
                       0,
                       false,
                       RunContextList});
  commands->push_back({{"context", "command"},
                       "<context_id> --exit-code N [--duration 1.5s] [--digest D] -- "
                       "<command words...>",
                       "record a command run in the context (counts failures when N != 0)",
                       {"exit-code", "duration", "digest"},
                       {},
                       1,
                       1,
                       true,
                       RunCommand});
  commands->push_back({{"context", "rm"},
                       "<context_id>",
                       "delete a context with its commands and conversation",
                       {},
                       {},
                       1,
                       1,
                       false,
                       RunContextRemove});
}

}  // namespace coordctl
