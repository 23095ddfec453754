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
#include "coordinator/v1/work.grpc.pb.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

extern char** environ;

namespace coordctl {

using coordinator::v1::WorkItem;
using coordinator::v1::WorkService;

std::string Slug(absl::string_view name) {
  std::string slug;
  for (char c : name) {
    if (absl::ascii_isalnum(static_cast<unsigned char>(c))) {
      slug.push_back(absl::ascii_tolower(static_cast<unsigned char>(c)));
    } else if (!slug.empty() && slug.back() != '-') {
      slug.push_back('-');
    }
    if (slug.size() >= 64) break;
  }
  while (!slug.empty() && slug.back() == '-') slug.pop_back();
  return slug.empty() ? "spec" : slug;
}

absl::StatusOr<Naming> ParseNaming(absl::string_view word) {
  if (word == "coordinator") return Naming::kCoordinator;
  if (word == "arial") return Naming::kArial;
  return absl::InvalidArgumentError(
      absl::StrCat("--naming takes coordinator or arial, not \"", word.substr(0, 40), "\""));
}

absl::StatusOr<std::vector<WorkItem>> ReadWorkstreams(const std::string& specs_dir,
                                                      const std::string& worktree_root,
                                                      Naming naming) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = fs::weakly_canonical(fs::path(specs_dir), ec);
  if (ec || !fs::is_directory(dir, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(specs_dir, " is not a directory"));
  }
  std::vector<fs::path> specs;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    if (absl::AsciiStrToLower(it->path().extension().string()) != ".md") continue;
    if (specs.size() == kMaxSpecFiles) {
      return absl::ResourceExhaustedError(
          absl::StrCat(specs_dir, " holds more than ", kMaxSpecFiles, " spec files"));
    }
    specs.push_back(it->path());
  }
  if (ec)
    return absl::InvalidArgumentError(absl::StrCat("cannot list ", specs_dir, ": ", ec.message()));
  if (specs.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(specs_dir, " holds no spec files (*.md)"));
  }
  std::sort(specs.begin(), specs.end());
  const fs::path root =
      worktree_root.empty() ? dir.parent_path() / ".worktrees" : fs::absolute(worktree_root);

  std::vector<WorkItem> items;
  absl::flat_hash_set<std::string> used;
  for (const fs::path& spec : specs) {
    std::string id = Slug(spec.stem().string());
    for (int n = 2; used.contains(id); ++n) id = absl::StrCat(Slug(spec.stem().string()), "-", n);
    used.insert(id);
    absl::StatusOr<WorkItem> item = ReadSpecItem(spec.string(), id, root.string(), naming);
    if (!item.ok()) return item.status();
    items.push_back(*std::move(item));
  }
  return items;
}

absl::StatusOr<WorkItem> ReadSpecItem(const std::string& spec_path, const std::string& id,
                                      const std::string& worktree_root, Naming naming) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path spec = fs::weakly_canonical(fs::path(spec_path), ec);
  if (ec || !fs::is_regular_file(spec, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(spec_path, " is not a file"));
  }
  const fs::path root = worktree_root.empty() ? spec.parent_path().parent_path() / ".worktrees"
                                              : fs::absolute(worktree_root);
  std::string title = spec.filename().string();
  std::ifstream in(spec);
  std::string line;
  size_t read = 0;
  while (read < kMaxSpecBytesRead && std::getline(in, line)) {
    read += line.size() + 1;
    absl::string_view text = absl::StripAsciiWhitespace(line);
    if (absl::ConsumePrefix(&text, "# ")) {
      title = std::string(absl::StripAsciiWhitespace(text)).substr(0, 200);
      break;
    }
  }
  WorkItem item;
  item.set_item_id(id);
  item.set_title(title);
  item.set_description(spec.string());
  if (naming == Naming::kArial) {
    item.set_branch(absl::StrCat("arial/", id));
    item.set_worktree(absl::StrCat(".arial/worktrees/", id));
  } else {
    item.set_branch(id);
    item.set_worktree((root / id).string());
  }
  return item;
}

namespace {
// A parser's message on one line (protobuf's JSON errors span several).
std::string OneLine(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return std::string(absl::StripAsciiWhitespace(text));
}
}  // namespace

absl::StatusOr<std::vector<WorkItem>> ParseItemsJson(absl::string_view json, size_t max_items) {
  google::protobuf::Value root;
  google::protobuf::util::JsonParseOptions strict;
  if (auto s = google::protobuf::util::JsonStringToMessage(std::string(json), &root, strict);
      !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the items are not JSON: ", OneLine(std::string(s.message()))));
  }
  const google::protobuf::ListValue* list = nullptr;
  if (root.has_list_value()) {
    list = &root.list_value();
  } else if (root.has_struct_value()) {
    auto it = root.struct_value().fields().find("tasks");
    if (it != root.struct_value().fields().end() && it->second.has_list_value()) {
      list = &it->second.list_value();
    }
  }
  if (list == nullptr) {
    return absl::InvalidArgumentError(
        "the items must be a JSON array of items, or an object with a \"tasks\" array");
  }
  if (static_cast<size_t>(list->values_size()) > max_items) {
    return absl::InvalidArgumentError(
        absl::StrCat("the file holds ", list->values_size(), " items; at most ", max_items));
  }
  // WorkItem's input fields; its other fields are the coordinator's (ignored here).
  static const auto* kInput = new absl::flat_hash_set<std::string>{
      "item_id",     "title",   "description",          "level",  "dependencies",
      "owned_files", "files",   "verification",         "branch", "worktree",
      "metadata",    "adapter", "required_capabilities"};
  const google::protobuf::Descriptor* descriptor = WorkItem::descriptor();
  std::vector<WorkItem> items;
  for (int i = 0; i < list->values_size(); ++i) {
    const google::protobuf::Value& value = list->values(i);
    if (!value.has_struct_value()) {
      return absl::InvalidArgumentError(absl::StrCat("item ", i + 1, " is not a JSON object"));
    }
    google::protobuf::Struct known;
    google::protobuf::Struct extra;
    for (const auto& [key, field_value] : value.struct_value().fields()) {
      const google::protobuf::FieldDescriptor* field =
          key == "id" ? descriptor->FindFieldByName("item_id") : descriptor->FindFieldByName(key);
      if (field == nullptr) field = descriptor->FindFieldByCamelcaseName(key);
      if (field == nullptr) {
        (*extra.mutable_fields())[key] = field_value;
      } else if (kInput->contains(field->name())) {
        // Protobuf's parser would take a lone value for a list; a list field must be a list.
        if (field->is_repeated() && !field_value.has_list_value()) {
          return absl::InvalidArgumentError(
              absl::StrCat("item ", i + 1, ": \"", key, "\" must be a list"));
        }
        (*known.mutable_fields())[field->name()] = field_value;
      }
    }
    std::string text;
    (void)google::protobuf::util::MessageToJsonString(known, &text);
    WorkItem& item = items.emplace_back();
    if (auto s = google::protobuf::util::JsonStringToMessage(text, &item, strict); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("item ", i + 1, ": ", OneLine(std::string(s.message()))));
    }
    for (const auto& [key, field_value] : extra.fields()) {
      (*item.mutable_metadata()->mutable_fields())[key] = field_value;
    }
  }
  return items;
}

absl::StatusOr<coordinator::v1::ItemStatus> ParseItemStatus(absl::string_view word) {
  for (coordinator::v1::ItemStatus status :
       {coordinator::v1::ITEM_STATUS_PENDING, coordinator::v1::ITEM_STATUS_RUNNING,
        coordinator::v1::ITEM_STATUS_DONE, coordinator::v1::ITEM_STATUS_FAILED,
        coordinator::v1::ITEM_STATUS_BLOCKED}) {
    std::string name = coordinator::v1::ItemStatus_Name(status);
    absl::string_view lower(name);
    absl::ConsumePrefix(&lower, "ITEM_STATUS_");
    if (absl::AsciiStrToLower(lower) == word) return status;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--status takes pending, running, done, failed or blocked, not \"", word, "\""));
}

namespace {

std::string Lower(absl::string_view name, absl::string_view prefix) {
  absl::ConsumePrefix(&name, prefix);
  return absl::AsciiStrToLower(name);
}
std::string ItemStatusName(coordinator::v1::ItemStatus s) {
  return Lower(coordinator::v1::ItemStatus_Name(s), "ITEM_STATUS_");
}
std::string RunStatusName(coordinator::v1::RunStatus s) {
  return Lower(coordinator::v1::RunStatus_Name(s), "RUN_STATUS_");
}
std::string LevelStatusName(coordinator::v1::LevelStatus s) {
  return Lower(coordinator::v1::LevelStatus_Name(s), "LEVEL_STATUS_");
}
std::string WorkerStatusName(coordinator::v1::WorkerStatus s) {
  return Lower(coordinator::v1::WorkerStatus_Name(s), "WORKER_STATUS_");
}
std::string EventKindName(coordinator::v1::WorkEvent::Kind k) {
  return Lower(coordinator::v1::WorkEvent::Kind_Name(k), "KIND_");
}
std::string RunKindName(coordinator::v1::RunKind k) {
  return absl::StrReplaceAll(Lower(coordinator::v1::RunKind_Name(k), "RUN_KIND_"), {{"_", "-"}});
}

std::string FormatTime(const google::protobuf::Timestamp& ts) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(ts.seconds()),
                          absl::UTCTimeZone());
}

google::protobuf::Duration ToProto(absl::Duration d) {
  google::protobuf::Duration out;
  const int64_t nanos = absl::ToInt64Nanoseconds(d);
  out.set_seconds(nanos / 1000000000);
  out.set_nanos(static_cast<int32_t>(nanos % 1000000000));
  return out;
}

absl::Duration FromProto(const google::protobuf::Duration& d) {
  return absl::Seconds(d.seconds()) + absl::Nanoseconds(d.nanos());
}

// One line of free text for a table cell.
std::string Cell(absl::string_view text, size_t max = 80) {
  std::string line = absl::StrReplaceAll(text, {{"\n", " "}, {"\t", " "}, {"\r", " "}});
  if (line.size() > max) line = absl::StrCat(line.substr(0, max - 3), "...");
  return line.empty() ? "-" : line;
}

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

int RunStatus(const Env& env, const ParsedArgs& args) {
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
  do {
    coordinator::v1::ListItemsResponse page;
    s = stub->ListItems(env.NewContext().get(), list, &page);
    if (!s.ok()) return ReportRpcError(env, s);
    for (WorkItem& item : *page.mutable_items()) *all.add_items() = std::move(item);
    list.set_page_token(page.next_page_token());
  } while (!list.page_token().empty());
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

int RunList(const Env& env, const ParsedArgs& args) {
  auto stub = WorkService::NewStub(env.channel);
  coordinator::v1::ListRunsRequest request;
  request.set_page_size(1000);
  coordinator::v1::ListRunsResponse all;
  do {
    coordinator::v1::ListRunsResponse page;
    grpc::Status s = stub->ListRuns(env.NewContext().get(), request, &page);
    if (!s.ok()) return ReportRpcError(env, s);
    for (auto& run : *page.mutable_runs()) *all.add_runs() = std::move(run);
    request.set_page_token(page.next_page_token());
  } while (!request.page_token().empty());
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

// --capability NAME, repeated: what the worker declares when it claims.
template <typename Repeated>
void AddCapabilities(const ParsedArgs& args, Repeated* capabilities) {
  if (auto it = args.options.find("capability"); it != args.options.end()) {
    for (const std::string& name : it->second) *capabilities->Add() = name;
  }
}

absl::StatusOr<absl::Duration> TtlArg(const ParsedArgs& args, const char* fallback) {
  return ParseDurationArg("ttl", args.get("ttl", fallback));
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

int RunFail(const Env& env, const ParsedArgs& args) {
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

int RunWatch(const Env& env, const ParsedArgs& args) {
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

// ---- run work: a worker loop around a command. ----

bool Retriable(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::UNAVAILABLE ||
         s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
         s.error_code() == grpc::StatusCode::ABORTED;
}

// Starts `argv` with `env_add` added to the environment. The child is killed when this process
// dies (PR_SET_PDEATHSIG), so a worker killed with kill -9 leaves no command running without a
// lease.
absl::StatusOr<pid_t> StartChild(const std::vector<std::string>& argv,
                                 const std::vector<std::string>& env_add) {
  // Everything the child needs is built before fork: only async-signal-safe calls after it.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    absl::string_view entry(*e);
    bool replaced = false;
    for (const std::string& add : env_add) {
      if (absl::StartsWith(entry, add.substr(0, add.find('=') + 1))) replaced = true;
    }
    if (!replaced) env_strings.emplace_back(entry);
  }
  env_strings.insert(env_strings.end(), env_add.begin(), env_add.end());
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the worker died before prctl took effect
    execvpe(cargs[0], cargs.data(), envp.data());
    _exit(127);
  }
  return pid;
}

// Calls `rpc` until it returns something other than a transient error or `deadline` passes.
template <typename Rpc>
grpc::Status CallWithRetry(const Env& env, absl::Time deadline, Rpc rpc) {
  while (true) {
    grpc::Status s = rpc(env.NewContext().get());
    if (!Retriable(s) || absl::Now() >= deadline) return s;
    absl::SleepFor(absl::Milliseconds(200));
  }
}

// Marks the worker stopped in the run's registry as `run work` ends; a failure only warns.
void StopWorkerQuietly(const Env& env, WorkService::Stub* stub, const std::string& run_id,
                       const std::string& worker, const std::string& reason) {
  coordinator::v1::StopWorkerRequest request;
  request.set_run_id(run_id);
  request.set_worker_id(worker);
  request.set_reason(reason);
  coordinator::v1::RunWorker stopped;
  grpc::Status s = stub->StopWorker(env.NewContext().get(), request, &stopped);
  if (!s.ok()) {
    *env.err << "coordctl: could not mark " << worker << " stopped: " << s.error_message()
             << std::endl;
  }
}

int RunWork(const Env& env, const ParsedArgs& args) {
  if (!args.has("worker")) return Fail(env, "--worker is required", kExitUsage);
  if (args.rest.empty()) return Fail(env, "the command goes after \"--\"", kExitUsage);
  absl::StatusOr<absl::Duration> ttl = TtlArg(args, "30s");
  if (!ttl.ok() || *ttl <= absl::ZeroDuration()) {
    return Fail(env, "--ttl takes a positive duration", kExitUsage);
  }
  absl::StatusOr<absl::Duration> poll = ParseDurationArg("poll", args.get("poll", "1s"));
  if (!poll.ok() || *poll <= absl::ZeroDuration()) {
    return Fail(env, "--poll takes a positive duration", kExitUsage);
  }
  int64_t max_items = -1;
  if (args.has("max-items")) {
    absl::StatusOr<int64_t> n = ParseIntArg("--max-items", args.get("max-items"));
    if (!n.ok() || *n <= 0) return Fail(env, "--max-items takes a positive number", kExitUsage);
    max_items = *n;
  }
  // How long the coordinator may be unreachable before the worker gives up.
  absl::StatusOr<absl::Duration> patience =
      ParseDurationArg("patience", args.get("patience", "5m"));
  if (!patience.ok()) return Fail(env, std::string(patience.status().message()), kExitUsage);

  const std::string run_id = args.positional[0];
  const std::string worker = args.get("worker");
  auto stub = WorkService::NewStub(env.channel);
  int64_t processed = 0;
  while (max_items < 0 || processed < max_items) {
    coordinator::v1::ClaimRequest claim;
    claim.set_run_id(run_id);
    claim.set_worker_id(worker);
    *claim.mutable_lease_ttl() = ToProto(*ttl);
    AddCapabilities(args, claim.mutable_capabilities());
    claim.set_pid(getpid());
    coordinator::v1::ClaimResponse claimed;
    grpc::Status s = CallWithRetry(env, absl::Now() + *patience, [&](grpc::ClientContext* c) {
      return stub->Claim(c, claim, &claimed);
    });
    if (!s.ok()) return ReportRpcError(env, s);
    if (!claimed.has_item()) {
      if (claimed.stalled()) {
        *env.err << "coordctl: run " << run_id << " is " << RunStatusName(claimed.run().status())
                 << "; nothing left to claim" << std::endl;
        StopWorkerQuietly(env, stub.get(), run_id, worker, "the run has nothing left to claim");
        return claimed.run().status() == coordinator::v1::RUN_STATUS_COMPLETED ? kExitOk : kExitNo;
      }
      absl::Duration wait = *poll;
      if (claimed.has_retry_after()) wait = std::min(wait, FromProto(claimed.retry_after()));
      absl::SleepFor(std::max(wait, absl::Milliseconds(10)));
      continue;
    }
    const WorkItem& item = claimed.item();
    const std::string lease = claimed.lease();
    *env.err << "coordctl: " << worker << " claimed " << item.item_id() << " epoch "
             << claimed.epoch() << " lease " << lease << std::endl;
    absl::StatusOr<pid_t> child = StartChild(
        args.rest,
        {absl::StrCat("COORD_RUN_ID=", run_id), absl::StrCat("COORD_ITEM_ID=", item.item_id()),
         absl::StrCat("COORD_LEASE=", lease), absl::StrCat("COORD_EPOCH=", claimed.epoch()),
         absl::StrCat("COORD_ATTEMPT=", item.attempts()),
         absl::StrCat("COORD_BRANCH=", item.branch()),
         absl::StrCat("COORD_WORKTREE=", item.worktree()),
         absl::StrCat("COORD_CHECKPOINT=", item.checkpoint()),
         absl::StrCat("COORD_PROGRESS=", item.progress())});
    if (!child.ok()) return Fail(env, std::string(child.status().message()));

    // Heartbeat every third of the lease while the command runs; a refused heartbeat means the
    // lease is gone (another worker may hold the item), so the command is stopped.
    absl::Time expire = absl::Now() + *ttl;
    // The first heartbeat, at once, records the command's pid as the item's.
    absl::Time next_beat = absl::Now();
    bool pid_sent = false;
    int wait_status = 0;
    bool lost = false;
    while (true) {
      const pid_t done = waitpid(*child, &wait_status, WNOHANG);
      if (done == *child) break;
      const absl::Time now = absl::Now();
      if (now >= next_beat) {
        coordinator::v1::HeartbeatRequest beat;
        beat.set_lease(lease);
        if (!pid_sent) beat.set_pid(*child);
        coordinator::v1::HeartbeatResponse beat_response;
        grpc::Status hs = stub->Heartbeat(env.NewContext().get(), beat, &beat_response);
        if (hs.ok()) {
          pid_sent = true;
          expire = absl::Now() + *ttl;
          next_beat = absl::Now() + *ttl / 3;
        } else if (Retriable(hs) && now < expire) {
          next_beat = now + absl::Milliseconds(200);
        } else {
          *env.err << "coordctl: lost the lease on " << item.item_id() << ": " << hs.error_message()
                   << std::endl;
          kill(*child, SIGKILL);
          waitpid(*child, &wait_status, 0);
          lost = true;
          break;
        }
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
    ++processed;
    if (lost) continue;

    const bool ok = WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
    WorkItem result;
    if (ok) {
      coordinator::v1::CompleteRequest complete;
      complete.set_lease(lease);
      complete.set_summary(absl::StrCat("command exited 0 on worker ", worker));
      s = CallWithRetry(env, expire, [&](grpc::ClientContext* c) {
        return stub->Complete(c, complete, &result);
      });
    } else {
      coordinator::v1::FailRequest fail;
      fail.set_lease(lease);
      fail.set_error(WIFEXITED(wait_status)
                         ? absl::StrCat("command exited with status ", WEXITSTATUS(wait_status))
                         : absl::StrCat("command killed by signal ", WTERMSIG(wait_status)));
      fail.set_retryable(true);
      s = CallWithRetry(env, expire,
                        [&](grpc::ClientContext* c) { return stub->Fail(c, fail, &result); });
    }
    if (s.ok()) {
      *env.err << "coordctl: " << worker << " " << (ok ? "completed " : "failed ") << item.item_id()
               << " epoch " << claimed.epoch() << " -> " << ItemStatusName(result.status())
               << std::endl;
    } else {
      *env.err << "coordctl: result of " << item.item_id() << " not recorded: " << s.error_message()
               << std::endl;
    }
  }
  StopWorkerQuietly(env, stub.get(), run_id, worker,
                    absl::StrCat("processed --max-items ", max_items));
  return kExitOk;
}

// ---- The worker registry, levels, adding items, the event log. ----

int RunWorkers(const Env& env, const ParsedArgs& args) {
  auto stub = WorkService::NewStub(env.channel);
  coordinator::v1::ListWorkersRequest request;
  request.set_run_id(args.positional[0]);
  request.set_page_size(1000);
  coordinator::v1::ListWorkersResponse all;
  do {
    coordinator::v1::ListWorkersResponse page;
    grpc::Status s = stub->ListWorkers(env.NewContext().get(), request, &page);
    if (!s.ok()) return ReportRpcError(env, s);
    for (auto& worker : *page.mutable_workers()) *all.add_workers() = std::move(worker);
    request.set_page_token(page.next_page_token());
  } while (!request.page_token().empty());
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
    request.clear_page_token();
    do {
      coordinator::v1::ListEventsResponse page;
      grpc::Status s = stub->ListEvents(env.NewContext().get(), request, &page);
      if (!s.ok()) return ReportRpcError(env, s);
      for (const coordinator::v1::WorkEvent& event : page.events()) {
        *env.out << EventJsonLine(event) << "\n";
        after = event.seq();
      }
      env.out->flush();
      request.set_page_token(page.next_page_token());
    } while (!request.page_token().empty());
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
                       RunStatus});
  commands->push_back(
      {{"run", "list"}, "[--json]", "list runs", {}, {"json"}, 0, 0, false, RunList});
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
                       RunFail});
  commands->push_back({{"run", "retry"},
                       "<run> <item>",
                       "send a blocked or failed item back to pending",
                       {},
                       {},
                       2,
                       2,
                       false,
                       RunRetry});
  commands->push_back({{"run", "watch"},
                       "<run> [--json] [--plain]",
                       "show the run's items live until interrupted: on a terminal a line per "
                       "item updated in place, otherwise (or with --plain) a line per change",
                       {},
                       {"json", "plain"},
                       1,
                       1,
                       false,
                       RunWatch});
  commands->push_back(
      {{"run", "work"},
       "<run> --worker W [--ttl 30s] [--poll 1s] [--max-items N] [--patience 5m] "
       "[--capability NAME ...] -- <command...>",
       "worker loop: claim an item, run the command with COORD_* variables (COORD_ITEM_ID, "
       "COORD_LEASE, ...) while heartbeating, complete on exit 0, else fail (retryable); stops "
       "(and is marked stopped) when nothing is left",
       {"worker", "ttl", "poll", "max-items", "patience", "capability"},
       {},
       1,
       1,
       true,
       RunWork});
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

}  // namespace coordctl
