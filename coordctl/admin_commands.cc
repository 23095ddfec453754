// coordctl backup | gc | export: the data-care calls of coordinator.v1.Admin.
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "coordctl/cli.h"
#include "coordinator/v1/admin.grpc.pb.h"
#include "google/protobuf/util/json_util.h"

namespace coordctl {
namespace {

using coordinator::v1::Admin;

std::string FormatTimestamp(const google::protobuf::Timestamp& ts) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(ts.seconds()),
                          absl::UTCTimeZone());
}

int RunBackup(const Env& env, const ParsedArgs& args) {
  coordinator::v1::BackupRequest request;
  request.set_dir(args.positional[0]);
  coordinator::v1::BackupResponse response;
  auto context = env.NewContext();
  grpc::Status status = Admin::NewStub(env.channel)->Backup(context.get(), request, &response);
  if (!status.ok()) return ReportRpcError(env, status);
  if (args.flag("json")) {
    *env.out << ToJson(response) << "\n";
  } else {
    *env.out << "backup written to " << response.dir() << " on the coordinator's machine ("
             << response.size_bytes() << " bytes, as of " << FormatTimestamp(response.time())
             << ")\n";
  }
  return kExitOk;
}

void PrintIds(const Env& env, const std::string& what,
              const google::protobuf::RepeatedPtrField<std::string>& ids) {
  *env.out << what << " (" << ids.size() << ")" << (ids.empty() ? "" : ": ")
           << absl::StrJoin(ids, " ") << "\n";
}

int RunGc(const Env& env, const ParsedArgs& args) {
  coordinator::v1::CollectGarbageRequest request;
  request.set_dry_run(args.flag("dry-run"));
  if (args.has("older-than")) {
    absl::StatusOr<absl::Duration> d = ParseDurationArg("older-than", args.get("older-than"));
    if (!d.ok() || *d <= absl::ZeroDuration()) {
      return Fail(env, "--older-than takes a positive duration such as 720h", kExitUsage);
    }
    const int64_t nanos = absl::ToInt64Nanoseconds(*d);
    request.mutable_older_than()->set_seconds(nanos / 1000000000);
    request.mutable_older_than()->set_nanos(static_cast<int32_t>(nanos % 1000000000));
  }
  if (args.has("max-deletes")) {
    absl::StatusOr<int64_t> n = ParseIntArg("--max-deletes", args.get("max-deletes"));
    if (!n.ok() || *n <= 0) {
      return Fail(env, "--max-deletes takes a positive whole number", kExitUsage);
    }
    request.set_max_deletes(*n);
  }
  coordinator::v1::CollectGarbageResponse response;
  auto context = env.NewContext();
  grpc::Status status =
      Admin::NewStub(env.channel)->CollectGarbage(context.get(), request, &response);
  if (!status.ok()) return ReportRpcError(env, status);
  if (args.flag("json")) {
    *env.out << ToJson(response) << "\n";
    return kExitOk;
  }
  *env.out << (response.dry_run() ? "dry run: would delete " : "deleted ") << response.records()
           << " records of what ended before " << FormatTimestamp(response.cutoff()) << "\n";
  PrintIds(env, "contexts", response.context_ids());
  PrintIds(env, "a2a tasks", response.a2a_task_ids());
  PrintIds(env, "runs", response.run_ids());
  if (response.more()) {
    *env.out << "more: the pass stopped at its limit (--max-deletes); run it again\n";
  }
  return kExitOk;
}

int RunAdminExport(const Env& env, const ParsedArgs& args) {
  coordinator::v1::ExportContextRequest request;
  request.set_context_id(args.positional[0]);
  if (auto it = args.options.find("retry-task"); it != args.options.end()) {
    for (const std::string& id : it->second) request.add_retry_task_ids(id);
  }
  coordinator::v1::ContextExport response;
  auto context = env.NewContext();
  grpc::Status status =
      Admin::NewStub(env.channel)->ExportContext(context.get(), request, &response);
  if (!status.ok()) return ReportRpcError(env, status);
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = !args.flag("compact");
  options.always_print_primitive_fields = true;
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(response, &json, options).ok()) {
    return Fail(env, "cannot print the export as JSON");
  }
  *env.out << json << (options.add_whitespace ? "" : "\n");
  return kExitOk;
}

}  // namespace

void AddAdminCommands(std::vector<Command>* commands) {
  commands->push_back(
      {{"backup"},
       "<dir> [--json]",
       "write a consistent online backup into <dir> on the coordinator's machine (an absolute "
       "path, absent or empty); start from it with coordinator --restore_from=<dir>",
       {},
       {"json"},
       1,
       1,
       false,
       RunBackup});
  commands->push_back(
      {{"gc"},
       "[--dry-run] [--older-than D] [--max-deletes N] [--json]",
       "run one retention pass now: delete contexts, conversations, A2A tasks and runs that "
       "ended longer ago than D (default: the server's --retention_terminal_ttl); --dry-run "
       "lists what would go",
       {"older-than", "max-deletes"},
       {"dry-run", "json"},
       0,
       0,
       false,
       RunGc});
  commands->push_back({{"export"},
                       "<context_id> [--retry-task ID ...] [--compact]",
                       "print everything about one evaluation as one JSON document: context, "
                       "commands, conversation, A2A tasks and events, retry and breaker state",
                       {"retry-task"},
                       {"compact"},
                       1,
                       1,
                       false,
                       RunAdminExport});
}

}  // namespace coordctl
