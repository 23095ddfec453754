// coordctl import arial|mahabharatha and coordctl run export: the state files of the
// orchestrators we replace, into a run and back out of one (arial_state.h,
// mahabharatha_state.h, mahabharatha_logs.h); `run export --follow` keeps them current
// (run_follow.h). An import is one CreateRun: the coordinator validates the items as a
// graph (unknown dependencies, cycles) and creates the run with all its items or nothing.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "coordctl/aria_state_json.h"
#include "coordctl/arial_state.h"
#include "coordctl/cli.h"
#include "coordctl/mahabharatha_logs.h"
#include "coordctl/mahabharatha_state.h"
#include "coordctl/run_commands.h"
#include "coordctl/run_follow.h"
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
  // The run keeps its project (weakly canonical, as `run create` and --project-dir resolve
  // theirs), so that the export can write the file's paths relative to it or to another one.
  std::error_code resolve_ec;
  std::string project = ArialProjectDir(std::filesystem::absolute(path, resolve_ec).string());
  if (!project.empty()) project = std::filesystem::weakly_canonical(project, resolve_ec).string();
  if (resolve_ec) project.clear();
  absl::StatusOr<ArialRun> parsed = ParseArialState(*text, project);
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

// Writes `text` to `path` as the tools did: a temporary file beside it, flushed to disk, then a
// rename, so a reader never sees half a file.
absl::Status WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string temp = absl::StrCat(path, ".tmp.", getpid());
  const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InvalidArgumentError(absl::StrCat("cannot write ", path, ": ", strerror(errno)));
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
    return absl::InternalError(
        absl::StrCat("cannot rename ", temp, " to ", path, ": ", strerror(e)));
  }
  return absl::OkStatus();
}

enum class ExportFormat { kArial, kMahabharatha, kMahabharathaAssignments, kMahabharathaLogs };

absl::StatusOr<ExportFormat> ParseExportFormat(const std::string& word) {
  if (word == "arial") return ExportFormat::kArial;
  if (word == "mahabharatha") return ExportFormat::kMahabharatha;
  if (word == "mahabharatha-assignments") return ExportFormat::kMahabharathaAssignments;
  if (word == "mahabharatha-logs") return ExportFormat::kMahabharathaLogs;
  return absl::InvalidArgumentError(
      "--format takes arial, mahabharatha, mahabharatha-assignments or mahabharatha-logs");
}

// One run exported in one format. Kept across the refreshes of --follow: the event log is read
// on from where the last refresh left it, and only what changed is written again.
class RunExport {
 public:
  RunExport(const Env& env, std::string run_id, ExportFormat format, std::string output,
            std::string project_dir = "")
      : env_(env),
        stub_(WorkService::NewStub(env.channel)),
        run_id_(std::move(run_id)),
        format_(format),
        output_(std::move(output)),
        project_dir_(std::move(project_dir)) {}

  // Reads the run as it stands (what the format needs of it). A failed call's status; nothing
  // read is kept then but the log entries read whole.
  grpc::Status Read() {
    coordinator::v1::GetRunRequest get;
    get.set_run_id(run_id_);
    coordinator::v1::Run run;
    grpc::Status s = stub_->GetRun(env_.NewContext().get(), get, &run);
    if (!s.ok()) return s;
    run_ = std::move(run);
    if (format_ == ExportFormat::kArial || format_ == ExportFormat::kMahabharathaLogs ||
        format_ == ExportFormat::kMahabharatha) {
      s = ReadNewEvents();
      if (!s.ok()) return s;
    }
    if (format_ == ExportFormat::kMahabharathaLogs) return grpc::Status::OK;
    std::vector<WorkItem> items;
    coordinator::v1::ListItemsRequest list;
    list.set_run_id(run_id_);
    list.set_page_size(1000);
    s = ForEachPage(env_, *stub_, &WorkService::Stub::ListItems, list,
                    [&](coordinator::v1::ListItemsResponse& page) {
                      for (WorkItem& item : *page.mutable_items()) items.push_back(std::move(item));
                    });
    if (!s.ok()) return s;
    items_ = std::move(items);
    if (format_ == ExportFormat::kArial) return grpc::Status::OK;
    return ReadWorkers();
  }

  // Writes what Read() read: the file (stdout without --output), or the changed files of the
  // logs directory. A single file whose text did not change is not written again.
  absl::Status Write() {
    if (format_ == ExportFormat::kMahabharathaLogs) return WriteLogs();
    std::string text;
    switch (format_) {
      case ExportFormat::kArial:
        text = FormatArialState(run_, items_, have_log_ ? &events_ : nullptr, project_dir_);
        break;
      case ExportFormat::kMahabharatha:
        text = FormatMahabharathaState(run_, items_, workers_, have_log_ ? &events_ : nullptr);
        break;
      default:
        text = FormatMahabharathaAssignments(run_, items_, workers_, absl::Now());
        break;
    }
    if (output_.empty()) {
      *env_.out << text << std::endl;
      return absl::OkStatus();
    }
    if (written_.has_value() && *written_ == text) return absl::OkStatus();
    if (absl::Status w = WriteFileAtomically(output_, text); !w.ok()) return w;
    written_ = std::move(text);
    return absl::OkStatus();
  }

  // The newest log entry of the run when it was last read.
  int64_t last_event_seq() const { return run_.last_event_seq(); }

 private:
  // The run's worker registry (empty from a coordinator that has none).
  grpc::Status ReadWorkers() {
    std::vector<coordinator::v1::RunWorker> workers;
    coordinator::v1::ListWorkersRequest list;
    list.set_run_id(run_id_);
    list.set_page_size(1000);
    const grpc::Status s = ForEachPage(env_, *stub_, &WorkService::Stub::ListWorkers, list,
                                       [&](coordinator::v1::ListWorkersResponse& page) {
                                         for (auto& w : *page.mutable_workers())
                                           workers.push_back(std::move(w));
                                       });
    // UNIMPLEMENTED: a coordinator without a worker registry (no workers, then).
    if (!s.ok() && s.error_code() != grpc::StatusCode::UNIMPLEMENTED) return s;
    workers_ = std::move(workers);
    return grpc::Status::OK;
  }

  // The log entries after the last one read (all of them the first time).
  grpc::Status ReadNewEvents() {
    if (!have_log_) return grpc::Status::OK;
    coordinator::v1::ListEventsRequest list;
    list.set_run_id(run_id_);
    list.set_page_size(1000);
    list.set_after_seq(events_read_);
    const grpc::Status s =
        ForEachPage(env_, *stub_, &WorkService::Stub::ListEvents, list,
                    [&](coordinator::v1::ListEventsResponse& page) {
                      for (coordinator::v1::WorkEvent& e : *page.mutable_events()) {
                        events_read_ = e.seq();
                        events_.push_back(std::move(e));
                      }
                    });
    if (s.error_code() == grpc::StatusCode::UNIMPLEMENTED &&
        format_ != ExportFormat::kMahabharathaLogs) {
      // An older coordinator: Arial's status from the items as they are, MAHABHARATHA's
      // execution_log as imported.
      have_log_ = false;
      return grpc::Status::OK;
    }
    if (!s.ok()) return s;
    if (format_ != ExportFormat::kMahabharathaLogs) return grpc::Status::OK;
    // The logs keep their lines, not the entries. The workers are read after the entries, so
    // that every worker an entry names is among them (numbered).
    if (grpc::Status s = ReadWorkers(); !s.ok()) return s;
    if (!logs_.has_value()) logs_.emplace(run_.feature().empty() ? run_.run_id() : run_.feature());
    logs_->SetWorkers(workers_);
    for (const coordinator::v1::WorkEvent& e : events_) logs_->Add(e);
    events_.clear();
    return grpc::Status::OK;
  }

  absl::Status WriteLogs() {
    if (!logs_.has_value()) logs_.emplace(run_.feature().empty() ? run_.run_id() : run_.feature());
    const std::filesystem::path root(output_);
    std::error_code ec;
    std::filesystem::create_directories(root, ec);
    if (ec || !std::filesystem::is_directory(root, ec)) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot make the logs directory ", output_, ": ",
                       ec ? ec.message() : "a file of that name is in the way"));
    }
    for (const std::string& path : logs_->TakeChanged()) {
      const std::filesystem::path file = root / path;
      std::filesystem::create_directories(file.parent_path(), ec);
      if (ec) {
        return absl::InternalError(
            absl::StrCat("cannot make ", file.parent_path().string(), ": ", ec.message()));
      }
      if (absl::Status w = WriteFileAtomically(file.string(), logs_->files().at(path)); !w.ok()) {
        return w;
      }
    }
    // An id that cannot name a file is said once.
    for (; unnamed_told_ < logs_->unnamed().size(); ++unnamed_told_) {
      *env_.err << "coordctl: \"" << absl::CHexEscape(logs_->unnamed()[unnamed_told_])
                << "\" cannot name a file, so it has none of its own: its lines are in the "
                   "other logs (a worker's in workers/worker-orchestrator.jsonl)"
                << std::endl;
    }
    return absl::OkStatus();
  }

  const Env env_;
  const std::unique_ptr<WorkService::Stub> stub_;
  const std::string run_id_;
  const ExportFormat format_;
  const std::string output_;  // empty: stdout
  // Arial's paths are relative to it (FormatArialState; empty: the run's own project).
  const std::string project_dir_;
  coordinator::v1::Run run_;
  std::vector<WorkItem> items_;
  std::vector<coordinator::v1::RunWorker> workers_;
  bool have_log_ = true;
  int64_t events_read_ = 0;
  std::vector<coordinator::v1::WorkEvent> events_;  // kArial
  std::optional<MahabharathaLogs> logs_;            // kMahabharathaLogs
  size_t unnamed_told_ = 0;
  std::optional<std::string> written_;  // the file's text as last written
};

// --follow: rewrites the export on every change of the run until SIGINT or SIGTERM (exit 0).
int FollowExport(const Env& env, const std::string& run_id, RunExport& exporter,
                 const FollowOptions& options) {
  RunFollower follower(env, run_id, options);
  auto stub = WorkService::NewStub(env.channel);
  bool stale = false;  // a refresh failed: the next wake refreshes whatever it is
  std::optional<absl::Time> failing_since;
  while (true) {
    const RunFollower::Wake wake = follower.Wait();
    if (wake == RunFollower::Wake::kStop) return kExitOk;
    if (wake == RunFollower::Wake::kFailed) return ReportRpcError(env, follower.error());
    grpc::Status s;
    if (wake == RunFollower::Wake::kPoll && !stale) {
      // Changes that send no watch event (a level merged, a worker stopped) still log.
      coordinator::v1::GetRunRequest get;
      get.set_run_id(run_id);
      coordinator::v1::Run run;
      s = stub->GetRun(env.NewContext().get(), get, &run);
      if (s.ok() && run.last_event_seq() == exporter.last_event_seq()) continue;
    }
    if (s.ok()) s = exporter.Read();
    if (!s.ok()) {
      if (!TransientStatus(s)) return ReportRpcError(env, s);
      const absl::Time now = absl::Now();
      if (!failing_since.has_value()) failing_since = now;
      if (now - *failing_since >= options.patience) {
        return ReportRpcError(env, GiveUpStatus(s, absl::StrCat("reading run ", run_id),
                                                now - *failing_since, options.patience));
      }
      stale = true;
      continue;
    }
    stale = false;
    failing_since.reset();
    if (absl::Status w = exporter.Write(); !w.ok()) return Fail(env, std::string(w.message()));
  }
}

int RunExportCommand(const Env& env, const ParsedArgs& args) {
  absl::StatusOr<ExportFormat> format = ParseExportFormat(args.get("format"));
  if (!format.ok()) return Fail(env, std::string(format.status().message()), kExitUsage);
  const std::string output = args.get("output");
  if (args.has("output") && output.empty()) return Fail(env, "--output needs a path", kExitUsage);
  const bool follow = args.flag("follow");
  if (*format == ExportFormat::kMahabharathaLogs && output.empty()) {
    return Fail(env,
                "--format mahabharatha-logs writes a directory: give it with --output "
                "(MAHABHARATHA's is .mahabharatha/logs)",
                kExitUsage);
  }
  if (follow && output.empty()) {
    return Fail(env, "--follow keeps a file current: give it with --output", kExitUsage);
  }
  if (!follow && (args.has("poll") || args.has("patience"))) {
    return Fail(env, "--poll and --patience go with --follow", kExitUsage);
  }
  FollowOptions options;
  for (auto [name, field] : {std::pair<const char*, absl::Duration*>{"poll", &options.poll},
                             {"patience", &options.patience}}) {
    if (!args.has(name)) continue;
    absl::StatusOr<absl::Duration> d = ParseDurationArg(name, args.get(name));
    if (!d.ok()) return Fail(env, std::string(d.status().message()), kExitUsage);
    if (*d <= absl::ZeroDuration()) {
      return Fail(env, absl::StrCat("--", name, " takes a positive duration"), kExitUsage);
    }
    *field = *d;
  }
  if (*format != ExportFormat::kMahabharathaLogs && !output.empty()) {
    std::error_code ec;
    if (std::filesystem::is_directory(output, ec)) {
      return Fail(
          env,
          absl::StrCat("--output ", output, " is a directory; give the path of the file to write"),
          kExitUsage);
    }
  }
  std::string project_dir;
  if (args.has("project-dir")) {
    if (*format != ExportFormat::kArial) {
      return Fail(env, "--project-dir goes with --format arial", kExitUsage);
    }
    std::error_code ec;
    if (args.get("project-dir").empty() ||
        !std::filesystem::is_directory(args.get("project-dir"), ec)) {
      return Fail(env,
                  absl::StrCat("--project-dir ", args.get("project-dir"), " is not a directory"),
                  kExitUsage);
    }
    project_dir = std::filesystem::weakly_canonical(args.get("project-dir"), ec).string();
  }
  const std::string& run_id = args.positional[0];
  RunExport exporter(env, run_id, *format, output, project_dir);
  if (grpc::Status s = exporter.Read(); !s.ok()) return ReportRpcError(env, s);
  if (absl::Status w = exporter.Write(); !w.ok()) return Fail(env, std::string(w.message()));
  if (!follow) return kExitOk;
  return FollowExport(env, run_id, exporter, options);
}

}  // namespace

void AddRunIoCommands(std::vector<Command>* commands) {
  commands->push_back({{"import", "arial"},
                       "<.arial dir or state.json> [--run-id ID] [--claimant NAME ...] "
                       "[--ttl 30s] [--as-pending]",
                       "create a workstreams run from Arial's .arial/state.json (version 1 or 2), "
                       "with the workstreams' states; prints the run id, then a line per running "
                       "workstream: id, worker and the lease it goes on with (for --ttl). "
                       "--as-pending: every workstream pending (run them all again). The run "
                       "keeps its project (the directory holding .arial): run export writes "
                       "the file's paths relative to it",
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
  commands->push_back(
      {{"run", "export"},
       "<run> --format arial|mahabharatha|mahabharatha-assignments|mahabharatha-logs "
       "[--output PATH] [--project-dir DIR] [--follow [--poll 1s] [--patience 5m]]",
       "write the run as Arial's state.json, MAHABHARATHA's state file, its "
       "worker-assignments.json or its logs directory (.mahabharatha/logs: workers/*.jsonl, "
       "tasks/<id>/execution.jsonl, from the run's event log), as those tools would have "
       "written them (to stdout, or to PATH by a rename). --follow keeps PATH current: "
       "rewritten on every change of the run until SIGINT or SIGTERM; the coordinator may be "
       "unreachable for --patience before it gives up (exit 3). Arial's specsDir and "
       "specFile are written relative to --project-dir (default: the project the run was "
       "imported from; for a run made here, the folder holding its specs folder), absolute "
       "only for a spec outside it",
       {"format", "output", "poll", "patience", "project-dir"},
       {"follow"},
       1,
       1,
       false,
       RunExportCommand});
}

}  // namespace coordctl
