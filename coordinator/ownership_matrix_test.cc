// Per-principal ownership of retry tasks, the breaker and work runs (docs/security.md,
// "Ownership"), as clients see it: every TaskStateService, BreakerService and WorkService RPC,
// called by each of admin, reader, green, purple and mallory (an agent that owns nothing), on a
// resource owned by green, by purple and by nobody (stored before ownership: the coordinator ran
// without authentication first, then with a token file on the same data). Each cell gets fresh
// resources and one expected gRPC code; a refused call must change nothing. On etcd (as
// etcd.OwnershipMatrixTest.*) the resources are made through one replica and every cell is called
// through a second replica of the same data set.
#include <sys/stat.h>

#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/server.h"
#include "coordinator/v1/breaker.grpc.pb.h"
#include "coordinator/v1/task_state.grpc.pb.h"
#include "coordinator/v1/work.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "storage/testing/test_store.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

using ::testing_util::TempDir;

constexpr char kAdminToken[] = "admin-0f3b9c2e7d41a8b5c6d7e8f9";
constexpr char kReaderToken[] = "reader-1b2c3d4e5f6a7b8c9d0e1f2";
constexpr char kGreenToken[] = "green-5a1c7e9b3d2f4a6c8e0b1d3f";
constexpr char kPurpleToken[] = "purple-9e8d7c6b5a4f3e2d1c0b9a8";
constexpr char kMalloryToken[] = "mallory-3c4d5e6f7a8b9c0d1e2f3a4";

struct Principal {
  const char* name;
  const char* token;
  const char* role;
};
const Principal kPrincipals[] = {
    {"ops", kAdminToken, "admin"},       {"dash", kReaderToken, "reader"},
    {"green", kGreenToken, "agent"},     {"purple", kPurpleToken, "agent"},
    {"mallory", kMalloryToken, "agent"},
};
// Who owns the resource of a cell; "" is nobody.
const char* const kOwners[] = {"green", "purple", ""};

// What an RPC does with its resource, which decides the expected code.
enum class Kind {
  kTaskRead,   // reads one task: NOT_FOUND for an agent that does not own it
  kTaskWrite,  // changes one task: PERMISSION_DENIED for an agent that does not own it
  kTaskList,   // lists tasks, blocked tasks or log entries: OK, an agent sees only its own
  kRunRead,    // reads a run: every role
  kRunClaim,   // claims or uses a lease: admins and the run's claimants
  kAdminOnly,  // admins only
};

// One resource: a retry task (by description and id) and a run (by id, with one item claimed
// by the admin when the cell needs a lease).
struct Resource {
  std::string owner;
  std::string description;
  std::string task_id;
  std::string run_id;
  std::string lease;
};

class OwnershipMatrixTest : public ::testing::Test {
 protected:
  void Start(bool with_tokens) {
    server_.reset();
    ServerOptions options;
    options.listen = "127.0.0.1:0";
    options.http_listen = "";
    options.data_dir = dir_.Sub("db");
    ASSERT_OK(
        storage::testing::SetTestServerStore(options.data_dir, &options.store_url, &options.etcd));
    options.worker_threads = 4;
    if (with_tokens) {
      const std::string path = dir_.Sub("tokens.json");
      std::ofstream file(path);
      file << R"({"tokens": [)";
      for (const Principal& p : kPrincipals) {
        file << (&p == kPrincipals ? "" : ",") << R"({"token": ")" << p.token
             << R"(", "principal": ")" << p.name << R"(", "role": ")" << p.role << R"("})";
      }
      file << "]}";
      file.close();
      ::chmod(path.c_str(), 0600);
      options.token_file = path;
    }
    absl::StatusOr<std::unique_ptr<CoordinatorServer>> server = CoordinatorServer::Start(options);
    ASSERT_OK(server);
    server_ = *std::move(server);
    CallThrough(*server_);
    // On etcd, a second replica of the same data set with the same tokens: the matrix's calls go
    // through it (CallThrough), so every rule holds for records another replica wrote.
    if (with_tokens && storage::testing::UseEtcd()) {
      absl::StatusOr<std::unique_ptr<CoordinatorServer>> replica =
          CoordinatorServer::Start(options);
      ASSERT_OK(replica);
      replica_ = *std::move(replica);
    }
  }

  void CallThrough(CoordinatorServer& server) {
    auto channel = grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials());
    tasks_ = v1::TaskStateService::NewStub(channel);
    breaker_ = v1::BreakerService::NewStub(channel);
    work_ = v1::WorkService::NewStub(channel);
  }

  // A context for `token` ("" sends none: authentication is off in the first phase).
  static std::unique_ptr<grpc::ClientContext> Ctx(const std::string& token) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    if (!token.empty()) ctx->AddMetadata("authorization", absl::StrCat("Bearer ", token));
    return ctx;
  }

  static std::string CellName(const std::string& owner, const Principal& p, const char* rpc) {
    return absl::StrCat(owner.empty() ? "nobody" : owner, "-", p.name, "-", rpc);
  }

  // Creates the cell's task and run. Nobody's are made while authentication is off; green's and
  // purple's by their own tokens (the task) and by the admin naming them claimants (the run).
  void MakeResource(const std::string& cell, const std::string& owner, const std::string& token) {
    Resource r;
    r.owner = owner;
    r.description = "task of " + cell;
    v1::InitTaskRequest init;
    init.set_description(r.description);
    v1::InitTaskResponse inited;
    grpc::Status s = tasks_->InitTask(Ctx(token).get(), init, &inited);
    ASSERT_TRUE(s.ok()) << cell << ": " << s.error_message();
    r.task_id = inited.task_id();
    v1::CreateRunRequest create;
    create.mutable_run()->set_run_id("run-" + cell);
    create.mutable_run()->set_kind(v1::RUN_KIND_WORKSTREAMS);
    if (!owner.empty()) create.mutable_run()->add_claimants(owner);
    create.add_items()->set_item_id("a");
    create.add_items()->set_item_id("b");
    v1::Run run;
    s = work_->CreateRun(Ctx(owner.empty() ? "" : kAdminToken).get(), create, &run);
    ASSERT_TRUE(s.ok()) << cell << ": " << s.error_message();
    r.run_id = run.run_id();
    resources_[cell] = r;
  }

  // What the admin sees of the cell's task and run: a refused call must leave it as it was.
  std::string Snapshot(const Resource& r) {
    std::string out;
    v1::GetTaskStateRequest get;
    get.set_task_id(r.task_id);
    v1::TaskState state;
    grpc::Status s = tasks_->GetTaskState(Ctx(kAdminToken).get(), get, &state);
    absl::StrAppend(&out, s.error_code(), state.DebugString());
    v1::GetBreakSummaryRequest summary_request;
    summary_request.set_task_id(r.task_id);
    v1::GetBreakSummaryResponse summary;
    s = breaker_->GetBreakSummary(Ctx(kAdminToken).get(), summary_request, &summary);
    absl::StrAppend(&out, s.error_code(), summary.DebugString());
    v1::ListItemsRequest items_request;
    items_request.set_run_id(r.run_id);
    v1::ListItemsResponse items;
    s = work_->ListItems(Ctx(kAdminToken).get(), items_request, &items);
    absl::StrAppend(&out, s.error_code(), items.DebugString());
    return out;
  }

  TempDir dir_;
  std::unique_ptr<CoordinatorServer> server_;
  std::unique_ptr<CoordinatorServer> replica_;  // etcd only
  std::unique_ptr<v1::TaskStateService::Stub> tasks_;
  std::unique_ptr<v1::BreakerService::Stub> breaker_;
  std::unique_ptr<v1::WorkService::Stub> work_;
  std::map<std::string, Resource> resources_;
};

// One RPC of the matrix: `setup` (optional) prepares the cell's resource as the admin; `call`
// makes the call with `token` and, for listings, sets `*listed` to whether the resource's task
// appears in what came back.
struct Rpc {
  const char* name;
  Kind kind;
  std::function<void(Resource& r)> setup;
  std::function<grpc::Status(const std::string& token, const Resource& r, bool* listed)> call;
};

grpc::StatusCode Expected(Kind kind, const Principal& p, const std::string& owner) {
  const std::string role = p.role;
  if (role == "admin") return grpc::StatusCode::OK;
  if (role == "reader") {
    return kind == Kind::kTaskRead || kind == Kind::kTaskList || kind == Kind::kRunRead
               ? grpc::StatusCode::OK
               : grpc::StatusCode::PERMISSION_DENIED;
  }
  const bool owns = !owner.empty() && owner == p.name;
  switch (kind) {
    case Kind::kTaskRead:
      return owns ? grpc::StatusCode::OK : grpc::StatusCode::NOT_FOUND;
    case Kind::kTaskWrite:
    case Kind::kRunClaim:
      return owns ? grpc::StatusCode::OK : grpc::StatusCode::PERMISSION_DENIED;
    case Kind::kTaskList:
    case Kind::kRunRead:
      return grpc::StatusCode::OK;
    case Kind::kAdminOnly:
      return grpc::StatusCode::PERMISSION_DENIED;
  }
  return grpc::StatusCode::UNKNOWN;
}

TEST_F(OwnershipMatrixTest, EveryPrincipalOnEveryResourceOfEveryRpc) {
  auto ctx = [](const std::string& token) { return Ctx(token); };
  auto admin_claim = [&](Resource& r) {
    v1::ClaimRequest claim;
    claim.set_run_id(r.run_id);
    claim.set_worker_id("ops-worker");
    v1::ClaimResponse claimed;
    grpc::Status s = work_->Claim(ctx(kAdminToken).get(), claim, &claimed);
    ASSERT_TRUE(s.ok() && claimed.has_item()) << s.error_message();
    r.lease = claimed.lease();
  };
  auto admin_break = [&](Resource& r) {
    v1::BreakRequest request;
    request.set_task_id(r.task_id);
    v1::BreakResponse response;
    grpc::Status s = breaker_->Break(ctx(kAdminToken).get(), request, &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
  };
  auto admin_check = [&](Resource& r) {
    v1::CheckLoopRequest request;
    request.set_task_id(r.task_id);
    v1::CheckLoopResponse response;
    grpc::Status s = breaker_->CheckLoop(ctx(kAdminToken).get(), request, &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
  };
  // Runs every item of the cell's run to completion as the admin's worker, so that level 0 is
  // complete and "ops-worker" is registered and idle.
  auto admin_finish = [&](Resource& r) {
    for (int i = 0; i < 2; ++i) {
      ASSERT_NO_FATAL_FAILURE(admin_claim(r));
      v1::CompleteRequest complete;
      complete.set_lease(r.lease);
      v1::WorkItem done;
      grpc::Status s = work_->Complete(ctx(kAdminToken).get(), complete, &done);
      ASSERT_TRUE(s.ok()) << s.error_message();
    }
  };
  const std::vector<Rpc> rpcs = {
      // ---- TaskStateService ----
      {"InitTask", Kind::kTaskWrite, nullptr,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::InitTaskRequest q;
         q.set_description(r.description);
         v1::InitTaskResponse a;
         return tasks_->InitTask(ctx(t).get(), q, &a);
       }},
      {"GetTaskState", Kind::kTaskRead, nullptr,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::GetTaskStateRequest q;
         q.set_task_id(r.task_id);
         v1::TaskState a;
         return tasks_->GetTaskState(ctx(t).get(), q, &a);
       }},
      {"GetTaskField", Kind::kTaskRead, nullptr,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::GetTaskFieldRequest q;
         q.set_task_id(r.task_id);
         q.set_field("attempt_count");
         v1::GetTaskFieldResponse a;
         return tasks_->GetTaskField(ctx(t).get(), q, &a);
       }},
      {"SetTaskField", Kind::kTaskWrite, nullptr,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::SetTaskFieldRequest q;
         q.set_task_id(r.task_id);
         q.set_field("note");
         q.set_value("changed");
         v1::SetTaskFieldResponse a;
         return tasks_->SetTaskField(ctx(t).get(), q, &a);
       }},
      {"IncrementAttempt", Kind::kTaskWrite, nullptr,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::IncrementAttemptRequest q;
         q.set_task_id(r.task_id);
         v1::IncrementAttemptResponse a;
         return tasks_->IncrementAttempt(ctx(t).get(), q, &a);
       }},
      {"GetTier", Kind::kTaskRead, nullptr,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::GetTierRequest q;
         q.set_task_id(r.task_id);
         v1::GetTierResponse a;
         return tasks_->GetTier(ctx(t).get(), q, &a);
       }},
      {"Escalate", Kind::kTaskWrite, nullptr,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::EscalateRequest q;
         q.set_task_id(r.task_id);
         v1::EscalateResponse a;
         return tasks_->Escalate(ctx(t).get(), q, &a);
       }},
      {"RecordFailure", Kind::kTaskWrite, nullptr,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::RecordFailureRequest q;
         q.set_task_id(r.task_id);
         q.set_error("boom");
         v1::RecordFailureResponse a;
         return tasks_->RecordFailure(ctx(t).get(), q, &a);
       }},
      {"RecordQualityGate", Kind::kTaskWrite, nullptr,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::RecordQualityGateRequest q;
         q.set_task_id(r.task_id);
         q.set_check("lint");
         v1::RecordQualityGateResponse a;
         return tasks_->RecordQualityGate(ctx(t).get(), q, &a);
       }},
      {"GetFailureContext", Kind::kTaskRead, nullptr,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::GetFailureContextRequest q;
         q.set_task_id(r.task_id);
         v1::GetFailureContextResponse a;
         return tasks_->GetFailureContext(ctx(t).get(), q, &a);
       }},
      {"CleanupTask", Kind::kTaskWrite, nullptr,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::CleanupTaskRequest q;
         q.set_task_id(r.task_id);
         v1::CleanupTaskResponse a;
         return tasks_->CleanupTask(ctx(t).get(), q, &a);
       }},
      {"ListTasks", Kind::kTaskList, nullptr,
       [&](const std::string& t, const Resource& r, bool* listed) {
         v1::ListTasksRequest q;
         q.set_page_size(1000);
         grpc::Status s;
         do {
           v1::ListTasksResponse a;
           s = tasks_->ListTasks(ctx(t).get(), q, &a);
           for (const v1::TaskSummary& task : a.tasks()) {
             if (task.task_id() == r.task_id) *listed = true;
           }
           q.set_page_token(a.next_page_token());
         } while (s.ok() && !q.page_token().empty());
         return s;
       }},
      {"ImportTask", Kind::kTaskWrite, nullptr,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::GetTaskStateRequest get;
         get.set_task_id(r.task_id);
         v1::ImportTaskRequest q;
         grpc::Status s = tasks_->GetTaskState(ctx(kAdminToken).get(), get, q.mutable_state());
         if (!s.ok()) return s;
         q.mutable_state()->clear_owner();  // the caller's own
         q.set_replace(true);
         v1::ImportTaskResponse a;
         return tasks_->ImportTask(ctx(t).get(), q, &a);
       }},
      // ---- BreakerService ----
      {"CheckLoop", Kind::kTaskWrite, nullptr,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::CheckLoopRequest q;
         q.set_task_id(r.task_id);
         v1::CheckLoopResponse a;
         return breaker_->CheckLoop(ctx(t).get(), q, &a);
       }},
      {"AnalyzeLoop", Kind::kTaskWrite, nullptr,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::AnalyzeLoopRequest q;
         q.set_task_id(r.task_id);
         v1::LoopAnalysis a;
         return breaker_->AnalyzeLoop(ctx(t).get(), q, &a);
       }},
      {"ForceEscalate", Kind::kTaskWrite, nullptr,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::ForceEscalateRequest q;
         q.set_task_id(r.task_id);
         v1::ForceEscalateResponse a;
         return breaker_->ForceEscalate(ctx(t).get(), q, &a);
       }},
      {"Break", Kind::kTaskWrite, nullptr,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::BreakRequest q;
         q.set_task_id(r.task_id);
         v1::BreakResponse a;
         return breaker_->Break(ctx(t).get(), q, &a);
       }},
      {"GetBreakerStatus", Kind::kTaskList, admin_break,
       [&](const std::string& t, const Resource& r, bool* listed) {
         v1::GetBreakerStatusResponse a;
         grpc::Status s =
             breaker_->GetBreakerStatus(ctx(t).get(), v1::GetBreakerStatusRequest(), &a);
         for (const v1::BlockedTask& task : a.blocked_tasks()) {
           if (task.task_id() == r.task_id) *listed = true;
         }
         return s;
       }},
      {"GetBreakSummary", Kind::kTaskRead, admin_break,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::GetBreakSummaryRequest q;
         q.set_task_id(r.task_id);
         v1::GetBreakSummaryResponse a;
         return breaker_->GetBreakSummary(ctx(t).get(), q, &a);
       }},
      {"Cleanup", Kind::kTaskWrite, nullptr,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::CleanupBreakerRequest q;
         q.set_task_id(r.task_id);
         v1::CleanupBreakerResponse a;
         return breaker_->Cleanup(ctx(t).get(), q, &a);
       }},
      {"ReadBreakerLog", Kind::kTaskList, admin_check,
       [&](const std::string& t, const Resource& r, bool* listed) {
         v1::ReadBreakerLogRequest q;
         q.set_page_size(1000);
         grpc::Status s;
         do {
           v1::ReadBreakerLogResponse a;
           s = breaker_->ReadBreakerLog(ctx(t).get(), q, &a);
           for (const v1::BreakerLogEntry& e : a.entries()) {
             if (e.task_id() == r.task_id) *listed = true;
           }
           q.set_page_token(a.next_page_token());
         } while (s.ok() && !q.page_token().empty());
         return s;
       }},
      // ---- WorkService ----
      {"CreateRun", Kind::kAdminOnly, nullptr,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::CreateRunRequest q;
         q.mutable_run()->set_run_id("new-" + r.run_id);
         q.mutable_run()->set_kind(v1::RUN_KIND_WORKSTREAMS);
         if (!r.owner.empty()) q.mutable_run()->add_claimants(r.owner);
         q.add_items()->set_item_id("a");
         v1::Run a;
         return work_->CreateRun(ctx(t).get(), q, &a);
       }},
      {"ImportTaskGraph", Kind::kAdminOnly, nullptr,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::ImportTaskGraphRequest q;
         q.set_run_id("graph-" + r.run_id);
         q.set_graph_json(R"({"feature": "f", "tasks": [{"id": "T-1"}]})");
         if (!r.owner.empty()) q.add_claimants(r.owner);
         v1::Run a;
         return work_->ImportTaskGraph(ctx(t).get(), q, &a);
       }},
      {"ImportRun", Kind::kAdminOnly, nullptr,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::ImportRunRequest q;
         q.mutable_run()->set_run_id("imported-" + r.run_id);
         q.mutable_run()->set_kind(v1::RUN_KIND_WORKSTREAMS);
         if (!r.owner.empty()) q.mutable_run()->add_claimants(r.owner);
         v1::WorkItem* item = q.add_items();
         item->set_item_id("a");
         item->set_status(v1::ITEM_STATUS_RUNNING);
         item->set_worker_id("w1");
         item->set_attempts(1);
         v1::ImportRunResponse a;
         return work_->ImportRun(ctx(t).get(), q, &a);
       }},
      {"GetRun", Kind::kRunRead, nullptr,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::GetRunRequest q;
         q.set_run_id(r.run_id);
         v1::Run a;
         return work_->GetRun(ctx(t).get(), q, &a);
       }},
      {"ListRuns", Kind::kRunRead, nullptr,
       [&](const std::string& t, const Resource&, bool*) {
         v1::ListRunsResponse a;
         return work_->ListRuns(ctx(t).get(), v1::ListRunsRequest(), &a);
       }},
      {"ListItems", Kind::kRunRead, nullptr,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::ListItemsRequest q;
         q.set_run_id(r.run_id);
         v1::ListItemsResponse a;
         return work_->ListItems(ctx(t).get(), q, &a);
       }},
      {"GetItem", Kind::kRunRead, nullptr,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::GetItemRequest q;
         q.set_run_id(r.run_id);
         q.set_item_id("a");
         v1::WorkItem a;
         return work_->GetItem(ctx(t).get(), q, &a);
       }},
      {"WatchRun", Kind::kRunRead, nullptr,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::WatchRunRequest q;
         q.set_run_id(r.run_id);
         auto c = ctx(t);
         auto stream = work_->WatchRun(c.get(), q);
         v1::RunEvent event;
         if (stream->Read(&event)) {
           c->TryCancel();
           stream->Finish().IgnoreError();
           return grpc::Status::OK;
         }
         return stream->Finish();
       }},
      {"Claim", Kind::kRunClaim, nullptr,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::ClaimRequest q;
         q.set_run_id(r.run_id);
         q.set_worker_id("worker");
         v1::ClaimResponse a;
         return work_->Claim(ctx(t).get(), q, &a);
       }},
      {"Heartbeat", Kind::kRunClaim, admin_claim,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::HeartbeatRequest q;
         q.set_lease(r.lease);
         q.set_progress("changed");
         v1::HeartbeatResponse a;
         return work_->Heartbeat(ctx(t).get(), q, &a);
       }},
      {"Checkpoint", Kind::kRunClaim, admin_claim,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::CheckpointRequest q;
         q.set_lease(r.lease);
         q.set_note("changed");
         v1::WorkItem a;
         return work_->Checkpoint(ctx(t).get(), q, &a);
       }},
      {"Complete", Kind::kRunClaim, admin_claim,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::CompleteRequest q;
         q.set_lease(r.lease);
         v1::WorkItem a;
         return work_->Complete(ctx(t).get(), q, &a);
       }},
      {"Fail", Kind::kRunClaim, admin_claim,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::FailRequest q;
         q.set_lease(r.lease);
         q.set_error("boom");
         v1::WorkItem a;
         return work_->Fail(ctx(t).get(), q, &a);
       }},
      {"Retry", Kind::kAdminOnly,
       [&](Resource& r) {
         admin_claim(r);
         v1::FailRequest fail;
         fail.set_lease(r.lease);
         fail.set_error("for good");
         v1::WorkItem failed;
         grpc::Status s = work_->Fail(ctx(kAdminToken).get(), fail, &failed);
         ASSERT_TRUE(s.ok()) << s.error_message();
       },
       [&](const std::string& t, const Resource& r, bool*) {
         v1::RetryRequest q;
         q.set_run_id(r.run_id);
         q.set_item_id("a");
         v1::WorkItem a;
         return work_->Retry(ctx(t).get(), q, &a);
       }},
      {"AddItems", Kind::kAdminOnly, nullptr,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::AddItemsRequest q;
         q.set_run_id(r.run_id);
         q.add_items()->set_item_id("added");
         v1::AddItemsResponse a;
         return work_->AddItems(ctx(t).get(), q, &a);
       }},
      {"MergeLevel", Kind::kAdminOnly, admin_finish,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::MergeLevelRequest q;
         q.set_run_id(r.run_id);
         q.set_level(0);
         v1::Run a;
         return work_->MergeLevel(ctx(t).get(), q, &a);
       }},
      {"ListWorkers", Kind::kRunRead, admin_finish,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::ListWorkersRequest q;
         q.set_run_id(r.run_id);
         v1::ListWorkersResponse a;
         return work_->ListWorkers(ctx(t).get(), q, &a);
       }},
      {"ListEvents", Kind::kRunRead, nullptr,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::ListEventsRequest q;
         q.set_run_id(r.run_id);
         v1::ListEventsResponse a;
         return work_->ListEvents(ctx(t).get(), q, &a);
       }},
      {"StopWorker", Kind::kRunClaim, admin_finish,
       [&](const std::string& t, const Resource& r, bool*) {
         v1::StopWorkerRequest q;
         q.set_run_id(r.run_id);
         q.set_worker_id("ops-worker");
         v1::RunWorker a;
         return work_->StopWorker(ctx(t).get(), q, &a);
       }},
  };

  // Phase 1, before ownership: the coordinator without a token file stores nobody's resources.
  Start(/*with_tokens=*/false);
  for (const Principal& p : kPrincipals) {
    for (const Rpc& rpc : rpcs) {
      ASSERT_NO_FATAL_FAILURE(MakeResource(CellName("", p, rpc.name), "", ""));
    }
  }
  // Phase 2: the same data with tokens; green and purple make their own.
  server_->Shutdown();
  Start(/*with_tokens=*/true);
  for (const char* owner : {"green", "purple"}) {
    const char* token = std::string(owner) == "green" ? kGreenToken : kPurpleToken;
    for (const Principal& p : kPrincipals) {
      for (const Rpc& rpc : rpcs) {
        ASSERT_NO_FATAL_FAILURE(MakeResource(CellName(owner, p, rpc.name), owner, token));
      }
    }
  }

  // The resources were made through the first replica; on etcd the cells are called through
  // the second.
  if (replica_ != nullptr) CallThrough(*replica_);
  int cells = 0;
  for (const char* owner : kOwners) {
    for (const Principal& p : kPrincipals) {
      for (const Rpc& rpc : rpcs) {
        const std::string cell = CellName(owner, p, rpc.name);
        SCOPED_TRACE(cell);
        Resource& r = resources_.at(cell);
        if (rpc.setup) {
          ASSERT_NO_FATAL_FAILURE(rpc.setup(r));
        }
        const std::string before = Snapshot(r);
        bool listed = false;
        const grpc::Status status = rpc.call(p.token, r, &listed);
        const grpc::StatusCode expected = Expected(rpc.kind, p, owner);
        EXPECT_EQ(status.error_code(), expected) << cell << ": " << status.error_message();
        if (status.ok() && rpc.kind == Kind::kTaskList) {
          const bool visible = std::string(p.role) != "agent" || owner == std::string(p.name);
          EXPECT_EQ(listed, visible) << cell;
        }
        if (!status.ok()) {
          EXPECT_FALSE(status.error_message().empty()) << cell;
          EXPECT_EQ(Snapshot(r), before) << cell << " changed something";
        }
        ++cells;
      }
    }
  }
  EXPECT_EQ(cells, 3 * 5 * 40);
}

}  // namespace
}  // namespace coordinator
