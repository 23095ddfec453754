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

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "coordctl/aria_state_json.h"
#include "coordctl/arial_state.h"
#include "coordctl/cli.h"
#include "coordctl/mahabharatha_state.h"
#include "coordinator/v1/work.grpc.pb.h"

namespace coordctl {
namespace {

using coordinator::v1::WorkItem;
using coordinator::v1::WorkService;

// What an item that is not pending would need: the coordinator creates every item pending and
// changes its state only through claims, so such an item would be run again.
absl::Status CheckAllPending(const std::vector<WorkItem>& items, const char* noun,
                             bool as_pending) {
  if (as_pending) return absl::OkStatus();
  for (const WorkItem& item : items) {
    if (item.status() == coordinator::v1::ITEM_STATUS_PENDING) continue;
    return absl::FailedPreconditionError(absl::StrCat(
        noun, " ", item.item_id(), " is ",
        absl::AsciiStrToLower(coordinator::v1::ItemStatus_Name(item.status()).substr(12)),
        ": this coordinator creates every item pending, so it would be run again; import the "
        "state before the run starts, or pass --as-pending to run every ",
        noun, " again. Nothing imported"));
  }
  return absl::OkStatus();
}

int CreateImportedRun(const Env& env, const ParsedArgs& args, coordinator::v1::Run run,
                      std::vector<WorkItem> items) {
  coordinator::v1::CreateRunRequest request;
  run.set_run_id(args.get("run-id"));
  // The principals whose agents may claim the items (none: the caller).
  if (auto it = args.options.find("claimant"); it != args.options.end()) {
    for (const std::string& name : it->second) run.add_claimants(name);
  }
  *request.mutable_run() = std::move(run);
  for (WorkItem& item : items) *request.add_items() = std::move(item);
  coordinator::v1::Run created;
  grpc::Status s =
      WorkService::NewStub(env.channel)->CreateRun(env.NewContext().get(), request, &created);
  if (!s.ok()) return ReportRpcError(env, s);
  *env.out << created.run_id() << std::endl;
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
  if (absl::Status s = CheckAllPending(parsed->items, "workstream", args.flag("as-pending"));
      !s.ok()) {
    return Fail(env, absl::StrCat(path.string(), ": ", s.message()));
  }
  return CreateImportedRun(env, args, std::move(parsed->run), std::move(parsed->items));
}

int RunImportMahabharatha(const Env& env, const ParsedArgs& args) {
  const std::string& path = args.positional[0];
  absl::StatusOr<std::string> text = ReadBoundedFile(path, kMaxMahabharathaStateBytes);
  if (!text.ok()) return Fail(env, absl::StrCat(path, ": ", text.status().message()));
  absl::StatusOr<MahabharathaRun> parsed = ParseMahabharathaState(*text);
  if (!parsed.ok()) {
    return Fail(env, absl::StrCat(path, ": ", parsed.status().message(), "; nothing imported"));
  }
  if (absl::Status s = CheckAllPending(parsed->items, "task", args.flag("as-pending")); !s.ok()) {
    return Fail(env, absl::StrCat(path, ": ", s.message()));
  }
  return CreateImportedRun(env, args, std::move(parsed->run), std::move(parsed->items));
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
  if (format != "arial" && format != "mahabharatha") {
    return Fail(env, "--format takes arial or mahabharatha", kExitUsage);
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
    text = FormatMahabharathaState(run, items, workers);
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
                       "[--as-pending]",
                       "create a workstreams run from Arial's .arial/state.json (version 1 or 2); "
                       "prints the run id. Refused, with nothing created, when a workstream is "
                       "not pending, unless --as-pending (run them all again)",
                       {"run-id", "claimant"},
                       {"as-pending"},
                       1,
                       1,
                       false,
                       RunImportArial});
  commands->push_back({{"import", "mahabharatha"},
                       "<state json> [--run-id ID] [--claimant NAME ...] [--as-pending]",
                       "create a task-graph run from MAHABHARATHA's "
                       ".mahabharatha/state/<feature>.json; prints the run id. Refused, with "
                       "nothing created, when a task is not pending, unless --as-pending",
                       {"run-id", "claimant"},
                       {"as-pending"},
                       1,
                       1,
                       false,
                       RunImportMahabharatha});
  commands->push_back({{"run", "export"},
                       "<run> --format arial|mahabharatha [--output FILE]",
                       "write the run as Arial's state.json or MAHABHARATHA's state file, as "
                       "those tools would have written it (to stdout, or to FILE by a rename)",
                       {"format", "output"},
                       {},
                       1,
                       1,
                       false,
                       RunExport});
}

}  // namespace coordctl
