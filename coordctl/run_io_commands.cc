// coordctl import arial|mahabharatha and coordctl run export: the state files of the
// orchestrators we replace, into a run and back out of one (arial_state.h,
// mahabharatha_state.h). An import is one CreateRun: the coordinator validates the items as a
// graph (unknown dependencies, cycles) and creates the run with all its items or nothing.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "coordctl/aria_state_json.h"
#include "coordctl/arial_state.h"
#include "coordctl/cli.h"
#include "coordctl/mahabharatha_state.h"
#include "coordctl/run_commands.h"
#include "coordinator/v1/work.grpc.pb.h"

namespace coordctl {
namespace {

using coordinator::v1::WorkItem;
using coordinator::v1::WorkService;

bool AllPending(const std::vector<WorkItem>& items) {
  for (const WorkItem& item : items) {
    if (item.status() != coordinator::v1::ITEM_STATUS_PENDING) return false;
  }
  return true;
}

// --run-id and --claimant on the run to create.
void ApplyRunArgs(const ParsedArgs& args, coordinator::v1::Run* run) {
  run->set_run_id(args.get("run-id"));
  // The principals whose agents may claim the items (none: the caller).
  if (auto it = args.options.find("claimant"); it != args.options.end()) {
    for (const std::string& name : it->second) run->add_claimants(name);
  }
}

// A plan (every item pending, or --as-pending): one CreateRun, every item pending.
int CreateImportedRun(const Env& env, const ParsedArgs& args, coordinator::v1::Run run,
                      std::vector<WorkItem> items) {
  coordinator::v1::CreateRunRequest request;
  ApplyRunArgs(args, &run);
  *request.mutable_run() = std::move(run);
  for (WorkItem& item : items) *request.add_items() = std::move(item);
  coordinator::v1::Run created;
  grpc::Status s =
      WorkService::NewStub(env.channel)->CreateRun(env.NewContext().get(), request, &created);
  if (!s.ok()) return ReportRpcError(env, s);
  *env.out << created.run_id() << std::endl;
  return kExitOk;
}

// A run under way: one ImportRun with the items' states. Prints the run id, then a line per
// running item: its id, its worker and the lease the worker goes on with, tab-separated.
int ImportRunUnderWay(const Env& env, const ParsedArgs& args,
                      coordinator::v1::ImportRunRequest request) {
  absl::StatusOr<absl::Duration> ttl = ParseDurationArg("ttl", args.get("ttl", "30s"));
  if (!ttl.ok()) return Fail(env, std::string(ttl.status().message()), kExitUsage);
  if (*ttl <= absl::ZeroDuration()) return Fail(env, "--ttl takes a positive duration", kExitUsage);
  request.mutable_lease_ttl()->set_seconds(absl::ToInt64Seconds(*ttl));
  request.mutable_lease_ttl()->set_nanos(
      static_cast<int32_t>(absl::ToInt64Nanoseconds(*ttl % absl::Seconds(1))));
  ApplyRunArgs(args, request.mutable_run());
  coordinator::v1::ImportRunResponse response;
  grpc::Status s =
      WorkService::NewStub(env.channel)->ImportRun(env.NewContext().get(), request, &response);
  if (!s.ok()) return ReportRpcError(env, s);
  *env.out << response.run().run_id() << "\n";
  for (const coordinator::v1::ImportedLease& lease : response.leases()) {
    *env.out << lease.item_id() << "\t" << lease.worker_id() << "\t" << lease.lease() << "\n";
  }
  env.out->flush();
  return kExitOk;
}

int RunImportArial(const Env& env, const ParsedArgs& args) {
  std::filesystem::path path = args.positional[0];
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) path /= "state.json";
  absl::StatusOr<std::string> text = ReadBoundedFile(path.string(), kMaxArialStateBytes);
  if (!text.ok()) return Fail(env, absl::StrCat(path.string(), ": ", text.status().message()));
  absl::StatusOr<ArialRun> parsed = ParseArialState(*text);
  if (!parsed.ok()) {
    return Fail(env,
                absl::StrCat(path.string(), ": ", parsed.status().message(), "; nothing imported"));
  }
  if (args.flag("as-pending") || AllPending(parsed->items)) {
    return CreateImportedRun(env, args, std::move(parsed->run), std::move(parsed->items));
  }
  return ImportRunUnderWay(env, args, ArialImportRequest(*parsed));
}

int RunImportMahabharatha(const Env& env, const ParsedArgs& args) {
  const std::string& path = args.positional[0];
  absl::StatusOr<std::string> text = ReadBoundedFile(path, kMaxMahabharathaStateBytes);
  if (!text.ok()) return Fail(env, absl::StrCat(path, ": ", text.status().message()));
  absl::StatusOr<MahabharathaRun> parsed = ParseMahabharathaState(*text);
  if (!parsed.ok()) {
    return Fail(env, absl::StrCat(path, ": ", parsed.status().message(), "; nothing imported"));
  }
  // The feature's task-graph.json: --task-graph, or where MAHABHARATHA keeps it beside
  // .mahabharatha/state/<feature>.json (.gsd/specs/<feature>/task-graph.json).
  std::string graph_path = args.get("task-graph");
  if (graph_path.empty()) {
    const std::filesystem::path state_dir = std::filesystem::absolute(path).parent_path();
    if (state_dir.filename() == "state" && state_dir.parent_path().filename() == ".mahabharatha") {
      const std::filesystem::path beside = state_dir.parent_path().parent_path() / ".gsd" /
                                           "specs" / parsed->run.feature() / "task-graph.json";
      std::error_code ec;
      if (std::filesystem::is_regular_file(beside, ec)) graph_path = beside.string();
    }
  }
  if (!graph_path.empty()) {
    absl::StatusOr<std::string> graph = ReadBoundedFile(graph_path, kMaxTaskGraphBytes);
    if (!graph.ok()) return Fail(env, absl::StrCat(graph_path, ": ", graph.status().message()));
    if (absl::Status s = JoinMahabharathaTaskGraph(*graph, &*parsed); !s.ok()) {
      return Fail(env, absl::StrCat(graph_path, ": ", s.message(), "; nothing imported"));
    }
  }
  if (args.flag("as-pending") || AllPending(parsed->items)) {
    return CreateImportedRun(env, args, std::move(parsed->run), std::move(parsed->items));
  }
  absl::StatusOr<coordinator::v1::ImportRunRequest> request = MahabharathaImportRequest(*parsed);
  if (!request.ok()) {
    return Fail(env, absl::StrCat(path, ": ", request.status().message(), "; nothing imported"));
  }
  return ImportRunUnderWay(env, args, *std::move(request));
}

// Writes `text` to `path` as the tools did: a temporary file beside it, then a rename, so a
// reader never sees half a file.
absl::Status WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string temp = absl::StrCat(path, ".tmp.", getpid());
  const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InvalidArgumentError(absl::StrCat("cannot write ", temp, ": ", strerror(errno)));
  }
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = errno;
      close(fd);
      unlink(temp.c_str());
      return absl::InternalError(absl::StrCat("cannot write ", temp, ": ", strerror(e)));
    }
    done += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0 || close(fd) != 0) {
    unlink(temp.c_str());
    return absl::InternalError(absl::StrCat("cannot write ", temp, ": ", strerror(errno)));
  }
  if (rename(temp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    unlink(temp.c_str());
    return absl::InternalError(absl::StrCat("cannot rename to ", path, ": ", strerror(e)));
  }
  return absl::OkStatus();
}

int RunExport(const Env& env, const ParsedArgs& args) {
  const std::string format = args.get("format");
  if (format != "arial" && format != "mahabharatha" && format != "mahabharatha-assignments") {
    return Fail(env, "--format takes arial, mahabharatha or mahabharatha-assignments", kExitUsage);
  }
  auto stub = WorkService::NewStub(env.channel);
  coordinator::v1::GetRunRequest get;
  get.set_run_id(args.positional[0]);
  coordinator::v1::Run run;
  grpc::Status s = stub->GetRun(env.NewContext().get(), get, &run);
  if (!s.ok()) return ReportRpcError(env, s);
  std::vector<WorkItem> items;
  coordinator::v1::ListItemsRequest list;
  list.set_run_id(run.run_id());
  list.set_page_size(1000);
  do {
    coordinator::v1::ListItemsResponse page;
    s = stub->ListItems(env.NewContext().get(), list, &page);
    if (!s.ok()) return ReportRpcError(env, s);
    for (WorkItem& item : *page.mutable_items()) items.push_back(std::move(item));
    list.set_page_token(page.next_page_token());
  } while (!list.page_token().empty());

  std::string text;
  if (format == "arial") {
    // Arial's status depends on the order of the changes: the run's event log has it.
    std::vector<coordinator::v1::WorkEvent> events;
    coordinator::v1::ListEventsRequest list_events;
    list_events.set_run_id(run.run_id());
    list_events.set_page_size(1000);
    bool have_log = true;
    do {
      coordinator::v1::ListEventsResponse page;
      s = stub->ListEvents(env.NewContext().get(), list_events, &page);
      if (s.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
        have_log = false;  // an older coordinator: derived from the items as they are
        break;
      }
      if (!s.ok()) return ReportRpcError(env, s);
      for (auto& e : *page.mutable_events()) events.push_back(std::move(e));
      list_events.set_page_token(page.next_page_token());
    } while (!list_events.page_token().empty());
    text = FormatArialState(run, items, have_log ? &events : nullptr);
  } else {
    std::vector<coordinator::v1::RunWorker> workers;
    coordinator::v1::ListWorkersRequest list_workers;
    list_workers.set_run_id(run.run_id());
    list_workers.set_page_size(1000);
    do {
      coordinator::v1::ListWorkersResponse page;
      s = stub->ListWorkers(env.NewContext().get(), list_workers, &page);
      if (s.error_code() == grpc::StatusCode::UNIMPLEMENTED) break;  // no registry there
      if (!s.ok()) return ReportRpcError(env, s);
      for (auto& w : *page.mutable_workers()) workers.push_back(std::move(w));
      list_workers.set_page_token(page.next_page_token());
    } while (!list_workers.page_token().empty());
    text = format == "mahabharatha"
               ? FormatMahabharathaState(run, items, workers)
               : FormatMahabharathaAssignments(run, items, workers, absl::Now());
  }
  if (!args.has("output")) {
    *env.out << text << std::endl;
    return kExitOk;
  }
  if (absl::Status w = WriteFileAtomically(args.get("output"), text); !w.ok()) {
    return Fail(env, std::string(w.message()));
  }
  return kExitOk;
}

}  // namespace

void AddRunIoCommands(std::vector<Command>* commands) {
  commands->push_back({{"import", "arial"},
                       "<.arial dir or state.json> [--run-id ID] [--claimant NAME ...] "
                       "[--ttl 30s] [--as-pending]",
                       "create a workstreams run from Arial's .arial/state.json (version 1 or 2), "
                       "with the workstreams' states; prints the run id, then a line per running "
                       "workstream: id, worker and the lease it goes on with (for --ttl). "
                       "--as-pending: every workstream pending (run them all again)",
                       {"run-id", "claimant", "ttl"},
                       {"as-pending"},
                       1,
                       1,
                       false,
                       RunImportArial});
  commands->push_back({{"import", "mahabharatha"},
                       "<state json> [--task-graph FILE] [--run-id ID] [--claimant NAME ...] "
                       "[--ttl 30s] [--as-pending]",
                       "create a task-graph run from MAHABHARATHA's "
                       ".mahabharatha/state/<feature>.json, with the tasks', levels' and "
                       "workers' states; prints the run id, then a line per running task: id, "
                       "worker and the lease it goes on with (for --ttl). --as-pending: every "
                       "task pending. The tasks' levels, dependencies and files come from "
                       "--task-graph, or from .gsd/specs/<feature>/task-graph.json beside "
                       ".mahabharatha/state/ when it is there",
                       {"run-id", "claimant", "ttl", "task-graph"},
                       {"as-pending"},
                       1,
                       1,
                       false,
                       RunImportMahabharatha});
  commands->push_back({{"run", "export"},
                       "<run> --format arial|mahabharatha|mahabharatha-assignments "
                       "[--output FILE]",
                       "write the run as Arial's state.json, MAHABHARATHA's state file or its "
                       "worker-assignments.json, as those tools would have written it (to "
                       "stdout, or to FILE by a rename)",
                       {"format", "output"},
                       {},
                       1,
                       1,
                       false,
                       RunExport});
}

}  // namespace coordctl
