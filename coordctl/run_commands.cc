// coordctl run ...: runs of workstreams and task graphs, their leases, and a worker loop.
#include "coordctl/run_commands.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/log.h"
#include "coordctl/cli.h"
#include "coordctl/progress.h"
#include "coordctl/run_format.h"
#include "coordinator/v1/work.grpc.pb.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

extern char** environ;

namespace coordctl {

using coordinator::v1::WorkItem;
using coordinator::v1::WorkService;

namespace {

std::string RunSummary(const coordinator::v1::Run& run) {
  const auto& c = run.counts();
  return absl::StrFormat("%s\t%s\t%s\tdone %d/%d\trunning %d\tpending %d\tfailed %d\tblocked %d",
                         run.run_id(), RunKindName(run.kind()), RunStatusName(run.status()),
                         c.done(), c.total(), c.running(), c.pending(), c.failed(), c.blocked());
}

// "  current level 2  levels 1 merged, 2 running": where a run with levels is.
std::string LevelsSummary(const coordinator::v1::Run& run) {
  if (run.level_states().empty()) return "";
  std::vector<std::string> levels;
  for (const coordinator::v1::LevelState& level : run.level_states()) {
    levels.push_back(absl::StrCat(level.level(), " ", LevelStatusName(level.status())));
  }
  return absl::StrCat("  current level ", run.current_level(), "  levels ",
                      absl::StrJoin(levels, ", "));
}

// Reads --max-attempts, --backoff-base, --backoff-max and --non-retryable.
absl::StatusOr<coordinator::v1::RetryPolicy> ParsePolicy(const ParsedArgs& args) {
  coordinator::v1::RetryPolicy policy;
  if (args.has("max-attempts")) {
    absl::StatusOr<int64_t> n = ParseIntArg("--max-attempts", args.get("max-attempts"));
    if (!n.ok()) return n.status();
    if (*n <= 0 || *n > 1000) {
      return absl::InvalidArgumentError("--max-attempts takes a number from 1 to 1000");
    }
    policy.set_max_attempts(static_cast<int32_t>(*n));
  }
  for (const char* name : {"backoff-base", "backoff-max"}) {
    if (!args.has(name)) continue;
    absl::StatusOr<absl::Duration> d = ParseDurationArg(name, args.get(name));
    if (!d.ok()) return d.status();
    *(std::string(name) == "backoff-base" ? policy.mutable_backoff_base()
                                          : policy.mutable_backoff_max()) = ToProto(*d);
  }
  if (auto it = args.options.find("non-retryable"); it != args.options.end()) {
    for (const std::string& pattern : it->second) policy.add_non_retryable_errors(pattern);
  }
  return policy;
}

const std::vector<std::string> kPolicyOptions = {"max-attempts", "backoff-base", "backoff-max",
                                                 "non-retryable"};

// --claimant NAME, repeated: the principals whose agents may claim the run's items (none: the
// caller's own principal; docs/security.md).
template <typename Repeated>
void AddClaimants(const ParsedArgs& args, Repeated* claimants) {
  if (auto it = args.options.find("claimant"); it != args.options.end()) {
    for (const std::string& name : it->second) *claimants->Add() = name;
  }
}

std::vector<std::string> WithPolicyOptions(std::vector<std::string> options) {
  options.insert(options.end(), kPolicyOptions.begin(), kPolicyOptions.end());
  return options;
}

int PrintCreated(const Env& env, const ParsedArgs& args, const coordinator::v1::Run& run) {
  if (args.flag("json")) {
    *env.out << ToJson(run) << std::endl;
  } else {
    *env.out << run.run_id() << std::endl;
  }
  return kExitOk;
}

int RunCreate(const Env& env, const ParsedArgs& args) {
  if (!args.has("workstreams"))
    return Fail(env, "--workstreams <specs dir> is required", kExitUsage);
  absl::StatusOr<coordinator::v1::RetryPolicy> policy = ParsePolicy(args);
  if (!policy.ok()) return Fail(env, std::string(policy.status().message()), kExitUsage);
  absl::StatusOr<Naming> naming = ParseNaming(args.get("naming", "coordinator"));
  if (!naming.ok()) return Fail(env, std::string(naming.status().message()), kExitUsage);
  absl::StatusOr<std::vector<WorkItem>> items =
      ReadWorkstreams(args.get("workstreams"), args.get("worktree-root"), *naming);
  if (!items.ok()) return Fail(env, std::string(items.status().message()));
  coordinator::v1::CreateRunRequest request;
  coordinator::v1::Run* run = request.mutable_run();
  run->set_run_id(args.get("run-id"));
  run->set_kind(coordinator::v1::RUN_KIND_WORKSTREAMS);
  std::error_code ec;
  run->set_specs_dir(std::filesystem::weakly_canonical(args.get("workstreams"), ec).string());
  run->set_base_branch(args.get("base-branch", "main"));
  *run->mutable_retry_policy() = *policy;
  AddClaimants(args, run->mutable_claimants());
  for (WorkItem& item : *items) *request.add_items() = std::move(item);
  auto stub = WorkService::NewStub(env.channel);
  coordinator::v1::Run created;
  grpc::Status s = stub->CreateRun(env.NewContext().get(), request, &created);
  if (!s.ok()) return ReportRpcError(env, s);
  return PrintCreated(env, args, created);
}

int RunImport(const Env& env, const ParsedArgs& args) {
  absl::StatusOr<coordinator::v1::RetryPolicy> policy = ParsePolicy(args);
  if (!policy.ok()) return Fail(env, std::string(policy.status().message()), kExitUsage);
  const std::string& path = args.positional[0];
  std::ifstream in(path, std::ios::binary);
  if (!in) return Fail(env, absl::StrCat("cannot read ", path));
  std::string json(kMaxTaskGraphBytes + 1, '\0');
  in.read(json.data(), static_cast<std::streamsize>(json.size()));
  json.resize(static_cast<size_t>(in.gcount()));
  if (json.size() > kMaxTaskGraphBytes) {
    return Fail(env, absl::StrCat(path, " is larger than ", kMaxTaskGraphBytes, " bytes"));
  }
  coordinator::v1::ImportTaskGraphRequest request;
  request.set_run_id(args.get("run-id"));
  request.set_graph_json(std::move(json));
  request.set_feature(args.get("feature"));
  *request.mutable_retry_policy() = *policy;
  AddClaimants(args, request.mutable_claimants());
  auto stub = WorkService::NewStub(env.channel);
  coordinator::v1::Run created;
  grpc::Status s = stub->ImportTaskGraph(env.NewContext().get(), request, &created);
  if (!s.ok()) return ReportRpcError(env, s);
  return PrintCreated(env, args, created);
}

int RunWorkStatus(const Env& env, const ParsedArgs& args) {
  auto stub = WorkService::NewStub(env.channel);
  coordinator::v1::GetRunRequest get;
  get.set_run_id(args.positional[0]);
  coordinator::v1::Run run;
  grpc::Status s = stub->GetRun(env.NewContext().get(), get, &run);
  if (!s.ok()) return ReportRpcError(env, s);
  coordinator::v1::ListItemsRequest list;
  list.set_run_id(run.run_id());
  list.set_page_size(1000);
  if (args.has("status")) {
    absl::StatusOr<coordinator::v1::ItemStatus> status = ParseItemStatus(args.get("status"));
    if (!status.ok()) return Fail(env, std::string(status.status().message()), kExitUsage);
    list.set_status(*status);
  }
  coordinator::v1::ListItemsResponse all;
  s = ForEachPage(env, *stub, &WorkService::Stub::ListItems, list,
                  [&](coordinator::v1::ListItemsResponse& page) {
                    for (WorkItem& item : *page.mutable_items()) *all.add_items() = std::move(item);
                  });
  if (!s.ok()) return ReportRpcError(env, s);
  if (args.flag("json")) {
    std::vector<std::string> items;
    for (const WorkItem& item : all.items()) items.push_back(ToJson(item));
    *env.out << "{\"run\":" << ToJson(run) << ",\"items\":[" << absl::StrJoin(items, ",") << "]}"
             << std::endl;
    return kExitOk;
  }
  *env.out << absl::StrReplaceAll(RunSummary(run), {{"\t", "  "}}) << LevelsSummary(run) << "\n\n";
  std::vector<std::vector<std::string>> rows = {
      {"ITEM", "STATE", "ATTEMPTS", "HOLDER", "LEASE EXPIRES", "LEVEL", "LAST ERROR OR SUMMARY"}};
  for (const WorkItem& item : all.items()) {
    std::string note = item.summary();
    if (item.status() == coordinator::v1::ITEM_STATUS_FAILED ||
        item.status() == coordinator::v1::ITEM_STATUS_BLOCKED) {
      note = item.status_reason();
    } else if (item.status() != coordinator::v1::ITEM_STATUS_DONE) {
      note = item.last_error();
    }
    const bool leased =
        item.status() == coordinator::v1::ITEM_STATUS_RUNNING && item.has_lease_expire_time();
    rows.push_back({item.item_id(), ItemStatusName(item.status()), absl::StrCat(item.attempts()),
                    item.worker_id().empty() ? "-" : item.worker_id(),
                    leased ? FormatTime(item.lease_expire_time()) : "-", absl::StrCat(item.level()),
                    Cell(note)});
  }
  *env.out << FormatTable(rows) << std::flush;
  return kExitOk;
}

int RunWorkList(const Env& env, const ParsedArgs& args) {
  auto stub = WorkService::NewStub(env.channel);
  coordinator::v1::ListRunsRequest request;
  request.set_page_size(1000);
  coordinator::v1::ListRunsResponse all;
  const grpc::Status s = ForEachPage(env, *stub, &WorkService::Stub::ListRuns, request,
                                     [&](coordinator::v1::ListRunsResponse& page) {
                                       for (auto& run : *page.mutable_runs()) {
                                         *all.add_runs() = std::move(run);
                                       }
                                     });
  if (!s.ok()) return ReportRpcError(env, s);
  if (args.flag("json")) {
    *env.out << ToJson(all) << std::endl;
    return kExitOk;
  }
  for (const auto& run : all.runs()) {
    *env.out << RunSummary(run) << "\tupdated " << FormatTime(run.update_time()) << "\n";
  }
  env.out->flush();
  return kExitOk;
}

int RunClaim(const Env& env, const ParsedArgs& args) {
  if (!args.has("worker")) return Fail(env, "--worker is required", kExitUsage);
  absl::StatusOr<absl::Duration> ttl = TtlArg(args, "30s");
  if (!ttl.ok()) return Fail(env, std::string(ttl.status().message()), kExitUsage);
  coordinator::v1::ClaimRequest request;
  request.set_run_id(args.positional[0]);
  request.set_worker_id(args.get("worker"));
  *request.mutable_lease_ttl() = ToProto(*ttl);
  AddCapabilities(args, request.mutable_capabilities());
  if (args.has("pid")) {
    absl::StatusOr<int64_t> pid = ParseIntArg("--pid", args.get("pid"));
    if (!pid.ok()) return Fail(env, std::string(pid.status().message()), kExitUsage);
    request.set_pid(*pid);
  }
  auto stub = WorkService::NewStub(env.channel);
  coordinator::v1::ClaimResponse response;
  grpc::Status s = stub->Claim(env.NewContext().get(), request, &response);
  if (!s.ok()) return ReportRpcError(env, s);
  *env.out << ToJson(response) << std::endl;
  return response.has_item() ? kExitOk : kExitNo;
}

int RunHeartbeat(const Env& env, const ParsedArgs& args) {
  coordinator::v1::HeartbeatRequest request;
  request.set_lease(args.positional[0]);
  request.set_progress(args.get("progress"));
  if (args.has("pid")) {
    absl::StatusOr<int64_t> pid = ParseIntArg("--pid", args.get("pid"));
    if (!pid.ok()) return Fail(env, std::string(pid.status().message()), kExitUsage);
    request.set_pid(*pid);
  }
  if (args.has("ttl")) {
    absl::StatusOr<absl::Duration> ttl = TtlArg(args, "");
    if (!ttl.ok()) return Fail(env, std::string(ttl.status().message()), kExitUsage);
    *request.mutable_lease_ttl() = ToProto(*ttl);
  }
  auto stub = WorkService::NewStub(env.channel);
  coordinator::v1::HeartbeatResponse response;
  grpc::Status s = stub->Heartbeat(env.NewContext().get(), request, &response);
  if (!s.ok()) return ReportRpcError(env, s);
  *env.out << response.item().item_id() << " leased until "
           << FormatTime(response.lease_expire_time()) << std::endl;
  return kExitOk;
}

int RunCheckpoint(const Env& env, const ParsedArgs& args) {
  if (!args.has("note")) return Fail(env, "--note is required", kExitUsage);
  coordinator::v1::CheckpointRequest request;
  request.set_lease(args.positional[0]);
  request.set_note(args.get("note"));
  auto stub = WorkService::NewStub(env.channel);
  WorkItem item;
  grpc::Status s = stub->Checkpoint(env.NewContext().get(), request, &item);
  if (!s.ok()) return ReportRpcError(env, s);
  *env.out << item.item_id() << " checkpointed" << std::endl;
  return kExitOk;
}

int RunComplete(const Env& env, const ParsedArgs& args) {
  coordinator::v1::CompleteRequest request;
  request.set_lease(args.positional[0]);
  request.set_summary(args.get("summary"));
  auto stub = WorkService::NewStub(env.channel);
  WorkItem item;
  grpc::Status s = stub->Complete(env.NewContext().get(), request, &item);
  if (!s.ok()) return ReportRpcError(env, s);
  *env.out << item.item_id() << " " << ItemStatusName(item.status()) << std::endl;
  return kExitOk;
}

void PrintFailed(const Env& env, const WorkItem& item) {
  *env.out << item.item_id() << " " << ItemStatusName(item.status());
  if (item.status() == coordinator::v1::ITEM_STATUS_PENDING && item.has_not_before()) {
    *env.out << " (claimable from " << FormatTime(item.not_before()) << ")";
  } else if (!item.status_reason().empty()) {
    *env.out << ": " << Cell(item.status_reason(), 200);
  }
  *env.out << std::endl;
}

int RunWorkFail(const Env& env, const ParsedArgs& args) {
  if (!args.has("error")) return Fail(env, "--error is required", kExitUsage);
  coordinator::v1::FailRequest request;
  request.set_lease(args.positional[0]);
  request.set_error(args.get("error"));
  request.set_retryable(!args.flag("no-retry"));
  auto stub = WorkService::NewStub(env.channel);
  WorkItem item;
  grpc::Status s = stub->Fail(env.NewContext().get(), request, &item);
  if (!s.ok()) return ReportRpcError(env, s);
  PrintFailed(env, item);
  return kExitOk;
}

int RunRetry(const Env& env, const ParsedArgs& args) {
  coordinator::v1::RetryRequest request;
  request.set_run_id(args.positional[0]);
  request.set_item_id(args.positional[1]);
  auto stub = WorkService::NewStub(env.channel);
  WorkItem item;
  grpc::Status s = stub->Retry(env.NewContext().get(), request, &item);
  if (!s.ok()) return ReportRpcError(env, s);
  *env.out << item.item_id() << " " << ItemStatusName(item.status()) << std::endl;
  return kExitOk;
}

std::string EventLine(const coordinator::v1::RunEvent& event) {
  if (event.type() == coordinator::v1::RunEvent::TYPE_SNAPSHOT_END) {
    return absl::StrCat("-- ", RunSummary(event.run()));
  }
  const WorkItem& item = event.item();
  std::string line = absl::StrFormat(
      "%s %s %s worker=%s attempts=%d epoch=%d",
      event.type() == coordinator::v1::RunEvent::TYPE_SNAPSHOT ? "snapshot" : "changed",
      item.item_id(), ItemStatusName(item.status()),
      item.worker_id().empty() ? "-" : item.worker_id(), item.attempts(), item.epoch());
  if (!item.progress().empty() && item.status() == coordinator::v1::ITEM_STATUS_RUNNING) {
    absl::StrAppend(&line, " progress=", Cell(item.progress(), 60));
  }
  if (!item.status_reason().empty()) absl::StrAppend(&line, " reason=", Cell(item.status_reason()));
  if (event.has_run()) absl::StrAppend(&line, " run=", RunStatusName(event.run().status()));
  return line;
}

// An item's line in the live view of `run watch` on a terminal.
std::string ItemLine(const WorkItem& item) {
  std::string line =
      absl::StrFormat("%-24s %-8s worker=%-10s attempts=%d", Cell(item.item_id(), 24),
                      ItemStatusName(item.status()),
                      item.worker_id().empty() ? "-" : item.worker_id(), item.attempts());
  if (!item.progress().empty() && item.status() == coordinator::v1::ITEM_STATUS_RUNNING) {
    absl::StrAppend(&line, " ", Cell(item.progress(), 60));
  } else if (!item.status_reason().empty()) {
    absl::StrAppend(&line, " ", Cell(item.status_reason(), 60));
  }
  return line;
}

int RunWorkWatch(const Env& env, const ParsedArgs& args) {
  auto stub = WorkService::NewStub(env.channel);
  coordinator::v1::WatchRunRequest request;
  request.set_run_id(args.positional[0]);
  grpc::ClientContext context;  // no deadline: a watch runs until the run or the user ends it
  std::unique_ptr<grpc::ClientReader<coordinator::v1::RunEvent>> reader =
      stub->WatchRun(&context, request);
  coordinator::v1::RunEvent event;
  if (!args.flag("json") && !args.flag("plain") && IsInteractive(env.out)) {
    // A terminal: one line per item and the run's summary below, redrawn in place.
    LiveLines lines(env.out);
    while (reader->Read(&event)) {
      if (event.type() != coordinator::v1::RunEvent::TYPE_SNAPSHOT_END) {
        lines.Set(event.item().item_id(), ItemLine(event.item()));
      }
      if (event.has_run()) {
        lines.SetFooter(absl::StrReplaceAll(RunSummary(event.run()), {{"\t", "  "}}));
      }
    }
  } else {
    while (reader->Read(&event)) {
      *env.out << (args.flag("json") ? ToJson(event) : EventLine(event)) << std::endl;
    }
  }
  grpc::Status s = reader->Finish();
  if (!s.ok()) return ReportRpcError(env, s);
  return kExitOk;
}

// ---- The worker registry, levels, adding items, the event log. ----

int RunWorkers(const Env& env, const ParsedArgs& args) {
  auto stub = WorkService::NewStub(env.channel);
  coordinator::v1::ListWorkersRequest request;
  request.set_run_id(args.positional[0]);
  request.set_page_size(1000);
  coordinator::v1::ListWorkersResponse all;
  const grpc::Status s = ForEachPage(env, *stub, &WorkService::Stub::ListWorkers, request,
                                     [&](coordinator::v1::ListWorkersResponse& page) {
                                       for (auto& worker : *page.mutable_workers()) {
                                         *all.add_workers() = std::move(worker);
                                       }
                                     });
  if (!s.ok()) return ReportRpcError(env, s);
  if (args.flag("json")) {
    *env.out << ToJson(all) << std::endl;
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows = {{"WORKER", "NUMBER", "STATUS", "CURRENT ITEM",
                                                 "LAST HEARTBEAT", "COMPLETED", "FAILED", "PID",
                                                 "CAPABILITIES"}};
  for (const coordinator::v1::RunWorker& w : all.workers()) {
    rows.push_back({Cell(w.worker_id(), 40), w.has_number() ? absl::StrCat(w.number()) : "-",
                    WorkerStatusName(w.status()),
                    w.current_item().empty() ? "-" : Cell(w.current_item(), 40),
                    w.has_last_heartbeat_time() ? FormatTime(w.last_heartbeat_time()) : "-",
                    absl::StrCat(w.items_completed()), absl::StrCat(w.items_failed()),
                    w.pid() == 0 ? "-" : absl::StrCat(w.pid()),
                    w.capabilities().empty() ? "-" : Cell(absl::StrJoin(w.capabilities(), ","))});
  }
  *env.out << FormatTable(rows) << std::flush;
  return kExitOk;
}

int RunStopWorker(const Env& env, const ParsedArgs& args) {
  coordinator::v1::StopWorkerRequest request;
  request.set_run_id(args.positional[0]);
  request.set_worker_id(args.positional[1]);
  request.set_reason(args.get("reason"));
  auto stub = WorkService::NewStub(env.channel);
  coordinator::v1::RunWorker worker;
  grpc::Status s = stub->StopWorker(env.NewContext().get(), request, &worker);
  if (!s.ok()) return ReportRpcError(env, s);
  *env.out << worker.worker_id() << " " << WorkerStatusName(worker.status()) << std::endl;
  return kExitOk;
}

int RunLevelMerge(const Env& env, const ParsedArgs& args) {
  absl::StatusOr<int64_t> level = ParseIntArg("level", args.positional[1]);
  if (!level.ok() || *level < 0) {
    return Fail(
        env, absl::StrCat("the level must be a number 0 or more, not \"", args.positional[1], "\""),
        kExitUsage);
  }
  coordinator::v1::MergeLevelRequest request;
  request.set_run_id(args.positional[0]);
  request.set_level(*level);
  request.set_merge_commit(args.get("commit"));
  auto stub = WorkService::NewStub(env.channel);
  coordinator::v1::Run run;
  grpc::Status s = stub->MergeLevel(env.NewContext().get(), request, &run);
  if (!s.ok()) return ReportRpcError(env, s);
  if (args.flag("json")) {
    *env.out << ToJson(run) << std::endl;
  } else {
    *env.out << "level " << *level << " merged" << LevelsSummary(run) << std::endl;
  }
  return kExitOk;
}

int RunAdd(const Env& env, const ParsedArgs& args) {
  const bool from_file = args.has("items");
  const bool from_specs = args.has("spec");
  if (from_file == from_specs) {
    return Fail(env, "give either --items <file> or --spec <file.md> (repeatable)", kExitUsage);
  }
  for (const char* spec_only :
       {"level", "depends-on", "adapter", "capability", "worktree-root", "naming"}) {
    if (from_file && args.has(spec_only)) {
      return Fail(env, absl::StrCat("--", spec_only, " goes with --spec; put it in the items file"),
                  kExitUsage);
    }
  }
  coordinator::v1::AddItemsRequest request;
  request.set_run_id(args.positional[0]);
  if (from_file) {
    const std::string path = args.get("items");
    std::ifstream in(path, std::ios::binary);
    if (!in) return Fail(env, absl::StrCat("cannot read ", path));
    std::string json(kMaxTaskGraphBytes + 1, '\0');
    in.read(json.data(), static_cast<std::streamsize>(json.size()));
    json.resize(static_cast<size_t>(in.gcount()));
    if (json.size() > kMaxTaskGraphBytes) {
      return Fail(env, absl::StrCat(path, " is larger than ", kMaxTaskGraphBytes, " bytes"));
    }
    absl::StatusOr<std::vector<WorkItem>> items = ParseItemsJson(json, kMaxSpecFiles);
    if (!items.ok()) return Fail(env, absl::StrCat(path, ": ", items.status().message()));
    for (WorkItem& item : *items) *request.add_items() = std::move(item);
  } else {
    int64_t level = 0;
    if (args.has("level")) {
      absl::StatusOr<int64_t> n = ParseIntArg("--level", args.get("level"));
      if (!n.ok() || *n < 0) return Fail(env, "--level takes a number 0 or more", kExitUsage);
      level = *n;
    }
    absl::StatusOr<Naming> naming = ParseNaming(args.get("naming", "coordinator"));
    if (!naming.ok()) return Fail(env, std::string(naming.status().message()), kExitUsage);
    absl::flat_hash_set<std::string> used;
    for (const std::string& spec : args.options.at("spec")) {
      const std::string stem = std::filesystem::path(spec).stem().string();
      std::string id = Slug(stem);
      for (int n = 2; used.contains(id); ++n) id = absl::StrCat(Slug(stem), "-", n);
      used.insert(id);
      absl::StatusOr<WorkItem> item = ReadSpecItem(spec, id, args.get("worktree-root"), *naming);
      if (!item.ok()) return Fail(env, std::string(item.status().message()));
      item->set_level(level);
      item->set_adapter(args.get("adapter"));
      if (auto it = args.options.find("depends-on"); it != args.options.end()) {
        for (const std::string& dep : it->second) item->add_dependencies(dep);
      }
      AddCapabilities(args, item->mutable_required_capabilities());
      *request.add_items() = *std::move(item);
    }
  }
  auto stub = WorkService::NewStub(env.channel);
  coordinator::v1::AddItemsResponse response;
  grpc::Status s = stub->AddItems(env.NewContext().get(), request, &response);
  if (!s.ok()) return ReportRpcError(env, s);
  if (args.flag("json")) {
    *env.out << ToJson(response) << std::endl;
  } else {
    for (const WorkItem& item : response.items()) *env.out << item.item_id() << "\n";
    env.out->flush();
  }
  return kExitOk;
}

int RunEvents(const Env& env, const ParsedArgs& args) {
  int64_t after = 0;
  if (args.has("after")) {
    absl::StatusOr<int64_t> n = ParseIntArg("--after", args.get("after"));
    if (!n.ok() || *n < 0)
      return Fail(env, "--after takes a sequence number 0 or more", kExitUsage);
    after = *n;
  }
  absl::StatusOr<absl::Duration> poll = ParseDurationArg("poll", args.get("poll", "1s"));
  if (!poll.ok() || *poll <= absl::ZeroDuration()) {
    return Fail(env, "--poll takes a positive duration", kExitUsage);
  }
  const bool follow = args.flag("follow");
  auto stub = WorkService::NewStub(env.channel);
  coordinator::v1::ListEventsRequest request;
  request.set_run_id(args.positional[0]);
  request.set_page_size(1000);
  while (true) {
    request.set_after_seq(after);
    const grpc::Status listed =
        ForEachPage(env, *stub, &WorkService::Stub::ListEvents, request,
                    [&](const coordinator::v1::ListEventsResponse& page) {
                      for (const coordinator::v1::WorkEvent& event : page.events()) {
                        *env.out << EventJsonLine(event) << "\n";
                        after = event.seq();
                      }
                      env.out->flush();
                    });
    if (!listed.ok()) return ReportRpcError(env, listed);
    if (!follow) return kExitOk;
    // Following ends once the run has ended and every entry is out.
    coordinator::v1::GetRunRequest get;
    get.set_run_id(args.positional[0]);
    coordinator::v1::Run run;
    grpc::Status s = stub->GetRun(env.NewContext().get(), get, &run);
    if (!s.ok()) return ReportRpcError(env, s);
    const bool ended = run.status() == coordinator::v1::RUN_STATUS_COMPLETED ||
                       (run.status() == coordinator::v1::RUN_STATUS_FAILED &&
                        run.counts().pending() == 0 && run.counts().running() == 0);
    if (ended && run.last_event_seq() <= after) return kExitOk;
    if (run.last_event_seq() <= after) absl::SleepFor(*poll);
  }
}

}  // namespace

std::string EventJsonLine(const coordinator::v1::WorkEvent& event) {
  using coordinator::v1::WorkEvent;
  std::string line = absl::StrCat(
      "{\"seq\":", event.seq(), ",\"ts\":",
      common::JsonQuote(absl::FormatTime(
          "%Y-%m-%dT%H:%M:%E3SZ",
          absl::FromUnixSeconds(event.time().seconds()) + absl::Nanoseconds(event.time().nanos()),
          absl::UTCTimeZone())),
      ",\"event\":", common::JsonQuote(EventKindName(event.kind())),
      ",\"run_id\":", common::JsonQuote(event.run_id()));
  if (!event.item_id().empty())
    absl::StrAppend(&line, ",\"item_id\":", common::JsonQuote(event.item_id()));
  if (!event.worker_id().empty()) {
    absl::StrAppend(&line, ",\"worker_id\":", common::JsonQuote(event.worker_id()));
  }
  const bool about_level = event.kind() == WorkEvent::KIND_LEVEL_CHANGED;
  const bool about_item = !event.item_id().empty();
  if (about_level || about_item) absl::StrAppend(&line, ",\"level\":", event.level());
  if (event.item_status() != coordinator::v1::ITEM_STATUS_UNSPECIFIED) {
    absl::StrAppend(&line,
                    ",\"item_status\":", common::JsonQuote(ItemStatusName(event.item_status())));
  }
  if (event.level_status() != coordinator::v1::LEVEL_STATUS_UNSPECIFIED) {
    absl::StrAppend(&line,
                    ",\"level_status\":", common::JsonQuote(LevelStatusName(event.level_status())));
  }
  if (event.worker_status() != coordinator::v1::WORKER_STATUS_UNSPECIFIED) {
    absl::StrAppend(
        &line, ",\"worker_status\":", common::JsonQuote(WorkerStatusName(event.worker_status())));
  }
  if (event.run_status() != coordinator::v1::RUN_STATUS_UNSPECIFIED) {
    absl::StrAppend(&line,
                    ",\"run_status\":", common::JsonQuote(RunStatusName(event.run_status())));
  }
  if (event.attempt() != 0) absl::StrAppend(&line, ",\"attempt\":", event.attempt());
  if (event.epoch() != 0) absl::StrAppend(&line, ",\"epoch\":", event.epoch());
  if (!event.message().empty())
    absl::StrAppend(&line, ",\"message\":", common::JsonQuote(event.message()));
  line += "}";
  return line;
}

namespace {

// claim, heartbeat, checkpoint, complete, fail, retry: one lease's life.
void AddLeaseCommands(std::vector<Command>* commands) {
  commands->push_back({{"run", "claim"},
                       "<run> --worker W [--ttl 30s] [--capability NAME ...] [--pid N]",
                       "claim one item whose required capabilities yours cover; prints the item "
                       "and lease as JSON (exit 1: none now)",
                       {"worker", "ttl", "capability", "pid"},
                       {},
                       1,
                       1,
                       false,
                       RunClaim});
  commands->push_back({{"run", "heartbeat"},
                       "<lease> [--progress TEXT] [--ttl 30s] [--pid N]",
                       "extend a lease and store a progress payload (and the pid running it)",
                       {"progress", "ttl", "pid"},
                       {},
                       1,
                       1,
                       false,
                       RunHeartbeat});
  commands->push_back({{"run", "checkpoint"},
                       "<lease> --note TEXT",
                       "store a checkpoint note for whoever claims the item next",
                       {"note"},
                       {},
                       1,
                       1,
                       false,
                       RunCheckpoint});
  commands->push_back({{"run", "complete"},
                       "<lease> [--summary TEXT]",
                       "mark the leased item done",
                       {"summary"},
                       {},
                       1,
                       1,
                       false,
                       RunComplete});
  commands->push_back({{"run", "fail"},
                       "<lease> --error TEXT [--no-retry]",
                       "record a failed attempt (retried after a backoff unless --no-retry)",
                       {"error"},
                       {"no-retry"},
                       1,
                       1,
                       false,
                       RunWorkFail});
  commands->push_back({{"run", "retry"},
                       "<run> <item>",
                       "send a blocked or failed item back to pending",
                       {},
                       {},
                       2,
                       2,
                       false,
                       RunRetry});
}

// watch, workers, stop-worker, level merge, add, events: following and steering a run.
void AddRunSteeringCommands(std::vector<Command>* commands) {
  commands->push_back({{"run", "watch"},
                       "<run> [--json] [--plain]",
                       "show the run's items live until interrupted: on a terminal a line per "
                       "item updated in place, otherwise (or with --plain) a line per change",
                       {},
                       {"json", "plain"},
                       1,
                       1,
                       false,
                       RunWorkWatch});
  AddRunWorkCommand(commands);  // run_work.cc
  commands->push_back({{"run", "workers"},
                       "<run> [--json]",
                       "the run's workers: number (its id in MAHABHARATHA's files), status (idle, "
                       "busy, stopped, lost), current item, last heartbeat, items completed and "
                       "failed, pid, capabilities",
                       {},
                       {"json"},
                       1,
                       1,
                       false,
                       RunWorkers});
  commands->push_back({{"run", "stop-worker"},
                       "<run> <worker> [--reason TEXT]",
                       "mark an idle worker stopped in the run's registry",
                       {"reason"},
                       {},
                       2,
                       2,
                       false,
                       RunStopWorker});
  commands->push_back({{"run", "level", "merge"},
                       "<run> <level> [--commit SHA] [--json]",
                       "mark a complete level merged (lower levels first)",
                       {"commit"},
                       {"json"},
                       2,
                       2,
                       false,
                       RunLevelMerge});
  commands->push_back(
      {{"run", "add"},
       "<run> (--items <file.json> | --spec <file.md> ... [--level N] [--depends-on ID ...] "
       "[--adapter NAME] [--capability NAME ...] [--worktree-root DIR] "
       "[--naming coordinator|arial]) [--json]",
       "add items to a run that has not ended, all or none: from a JSON array of items (or a "
       "task graph's \"tasks\"), or one workstream per spec file; prints the new ids",
       {"items", "spec", "level", "depends-on", "adapter", "capability", "worktree-root", "naming"},
       {"json"},
       1,
       1,
       false,
       RunAdd});
  commands->push_back({{"run", "events"},
                       "<run> [--after SEQ] [--follow] [--poll 1s]",
                       "the run's event log as JSON lines, from after SEQ; --follow prints new "
                       "entries as they come until the run has ended",
                       {"after", "poll"},
                       {"follow"},
                       1,
                       1,
                       false,
                       RunEvents});
}

}  // namespace

void AddRunCommands(std::vector<Command>* commands) {
  commands->push_back(
      {{"run", "create"},
       "--workstreams <specs dir> [--base-branch main] [--run-id ID] [--worktree-root DIR] "
       "[--naming coordinator|arial] "
       "[--max-attempts N] [--backoff-base 10s] [--backoff-max 5m] [--non-retryable TEXT ...] "
       "[--claimant PRINCIPAL ...] [--json]",
       "create a run with one workstream per spec file (*.md); prints the run id. Only the "
       "claimants' agents (default: your principal) and admins may claim its items",
       WithPolicyOptions(
           {"workstreams", "base-branch", "run-id", "worktree-root", "naming", "claimant"}),
       {"json"},
       0,
       0,
       false,
       RunCreate});
  commands->push_back(
      {{"run", "import"},
       "<task-graph.json> [--feature NAME] [--run-id ID] [--max-attempts N] [--backoff-base 10s] "
       "[--backoff-max 5m] [--non-retryable TEXT ...] [--claimant PRINCIPAL ...] [--json]",
       "create a run from a task graph; prints the run id. Only the claimants' agents (default: "
       "your principal) and admins may claim its items",
       WithPolicyOptions({"feature", "run-id", "claimant"}),
       {"json"},
       1,
       1,
       false,
       RunImport});
  commands->push_back({{"run", "status"},
                       "<run> [--status pending|running|done|failed|blocked] [--json]",
                       "show a run (with its current level and level states) and a table of its "
                       "items, or only those with --status: state, attempts, holder, lease "
                       "expiry, level, last error or summary",
                       {"status"},
                       {"json"},
                       1,
                       1,
                       false,
                       RunWorkStatus});
  commands->push_back(
      {{"run", "list"}, "[--json]", "list runs", {}, {"json"}, 0, 0, false, RunWorkList});
  AddLeaseCommands(commands);
  AddRunSteeringCommands(commands);
}

}  // namespace coordctl
