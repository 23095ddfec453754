// coord_torture: kill -9 the real coordinator again and again under load, then check that every
// acknowledged write survived and that the invariants hold (docs/reliability.md).
//
// Clients (threads, one gRPC channel each) drive a mix of mutations: contexts (create, update),
// commands, conversation appends, retry state (init, attempts, failures, escalations) and work
// (runs made with CreateRun and ImportTaskGraph, claims, heartbeats, completions). Each client
// appends every acknowledged reply to its own log file, one line per ack, written before the
// next call. A call that fails, or that is in flight when the coordinator dies, has an unknown
// outcome and is not logged. The main thread kills the coordinator with SIGKILL at random
// moments and restarts it on the same data dir; clients reconnect and carry on.
//
// After the last restart the checker reads the logs back from disk (the logs, not the server,
// are what is trusted) and compares every ack with the store:
//   lost writes      an acked record that is missing or older than its ack;
//   invariant breaks command_count == command records (and failed_commands, contiguous seqs),
//                    message_count == messages, step_count == AGENT messages (and
//                    total_tokens), no item held by two leases at
//                    once (checked live on every claim and heartbeat, and again at the end), and
//                    versions only grow (strictly, in each client's ack order; the final
//                    version is at least every acked one).
// Exit 0 only with 0 lost writes and 0 breaks.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "coordinator/v1/context.grpc.pb.h"
#include "coordinator/v1/conversation.grpc.pb.h"
#include "coordinator/v1/task_state.grpc.pb.h"
#include "coordinator/v1/work.grpc.pb.h"
#include "google/protobuf/util/message_differencer.h"
#include "grpcpp/grpcpp.h"
#include "tests/process_util.h"

ABSL_FLAG(int, crashes, 20, "how many times the coordinator is killed with SIGKILL and restarted");
ABSL_FLAG(int, clients, 16, "concurrent clients");
ABSL_FLAG(std::string, seconds_between_crashes, "1:4",
          "MIN:MAX seconds of load between two kills; each gap is drawn uniformly from it");
ABSL_FLAG(uint64_t, seed, 0, "random seed (0: from the clock; the seed used is printed)");
ABSL_FLAG(std::string, coordinator_bin, "",
          "the coordinator binary (default: `coordinator` next to this tool)");
ABSL_FLAG(std::string, work_dir, "",
          "where the data dir and the client logs go (default: a fresh temporary directory)");
ABSL_FLAG(bool, keep_data, false, "keep the data dir and the logs after the run");
ABSL_FLAG(int, self_check_fake_acks, 0,
          "self-check of the checker: after the load stops, append this many acks of writes "
          "that never happened to client 0's log; the summary must then count them lost");

namespace {

namespace v1 = coordinator::v1;
using testing_util::ParseListeningPort;
using testing_util::Process;

constexpr absl::Duration kCallDeadline = absl::Seconds(10);
// Short, so that leases given up (see WorkOp) or lost while the coordinator is down expire and
// their items are claimed again within the run: that is when two leases could overlap.
constexpr absl::Duration kLeaseTtl = absl::Seconds(1);
constexpr int kContextsPerClient = 3;
constexpr int kTasksPerClient = 2;
constexpr int kItemsPerRun = 8;
constexpr int kMaxReports = 30;  // detail lines printed per kind of finding

int64_t ToNanos(const google::protobuf::Timestamp& t) {
  return t.seconds() * 1000000000 + t.nanos();
}

google::protobuf::Duration DurationProto(absl::Duration d) {
  google::protobuf::Duration out;
  out.set_seconds(absl::IDivDuration(d, absl::Seconds(1), &d));
  out.set_nanos(static_cast<int32_t>(absl::ToInt64Nanoseconds(d)));
  return out;
}

// ---- The coordinator under test and the address clients should use now. ----

class Cluster {
 public:
  Cluster(std::string bin, std::string data_dir)
      : bin_(std::move(bin)), data_dir_(std::move(data_dir)) {}

  absl::Status Start() {
    std::vector<std::string> args = {"--listen=127.0.0.1:0", "--http_listen=127.0.0.1:0",
                                     absl::StrCat("--data_dir=", data_dir_),
                                     "--reaper_period=200ms"};
    absl::StatusOr<std::unique_ptr<Process>> process = Process::Start(bin_, args);
    if (!process.ok()) return process.status();
    absl::StatusOr<std::string> line =
        (*process)->WaitForStderrLine("listening on ", absl::Seconds(60));
    if (!line.ok()) return line.status();
    absl::StatusOr<int> port = ParseListeningPort(*line);
    if (!port.ok()) return port.status();
    process_ = *std::move(process);
    absl::MutexLock lock(&mu_);
    target_ = absl::StrCat("127.0.0.1:", *port);
    ++generation_;
    return absl::OkStatus();
  }

  absl::Status Kill() {
    if (process_ == nullptr) return absl::OkStatus();
    absl::StatusOr<testing_util::ProcessResult> result = process_->Kill();
    if (!result.ok()) return result.status();
    if (result->term_signal != SIGKILL) {
      return absl::InternalError(
          absl::StrCat("the coordinator had already ended: ", result->Describe()));
    }
    process_.reset();
    return absl::OkStatus();
  }

  // The current address and a number that changes with every restart.
  std::pair<std::string, uint64_t> Current() {
    absl::MutexLock lock(&mu_);
    return {target_, generation_};
  }

  bool Alive() const { return process_ != nullptr && !process_->ended(); }
  std::string Stderr() const { return process_ ? process_->stderr_text() : ""; }

 private:
  const std::string bin_;
  const std::string data_dir_;
  std::unique_ptr<Process> process_;
  absl::Mutex mu_;
  std::string target_ ABSL_GUARDED_BY(mu_);
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
};

// ---- Leases seen acked, shared by the clients, checked on every claim and heartbeat. ----

struct LeaseSpan {
  int client = 0;
  int64_t epoch = 0;
  int64_t claim_ns = 0;   // server time of the claim
  int64_t expire_ns = 0;  // latest acked expiry (claim or heartbeat)
};

class LeaseBook {
 public:
  // Records an acked claim (claim_ns set) or heartbeat (claim_ns 0) and reports each lease of
  // the same item whose span overlaps it.
  void Ack(const std::string& item_key, int client, int64_t epoch, int64_t claim_ns,
           int64_t expire_ns) {
    absl::MutexLock lock(&mu_);
    std::vector<LeaseSpan>& spans = items_[item_key];
    LeaseSpan* mine = nullptr;
    for (LeaseSpan& s : spans) {
      if (s.epoch == epoch) mine = &s;
    }
    if (mine == nullptr) {
      spans.push_back(LeaseSpan{client, epoch, claim_ns, expire_ns});
      mine = &spans.back();
    } else {
      if (claim_ns != 0 && mine->claim_ns != 0) {
        Break(absl::StrCat("item ", item_key, ": epoch ", epoch, " was claimed twice (clients ",
                           mine->client, " and ", client, ")"));
      }
      if (claim_ns != 0) mine->claim_ns = claim_ns;
      mine->expire_ns = std::max(mine->expire_ns, expire_ns);
    }
    for (const LeaseSpan& other : spans) {
      if (&other == mine || other.claim_ns == 0 || mine->claim_ns == 0) continue;
      const LeaseSpan& earlier = other.epoch < mine->epoch ? other : *mine;
      const LeaseSpan& later = other.epoch < mine->epoch ? *mine : other;
      if (later.claim_ns < earlier.expire_ns) {
        Break(absl::StrCat("item ", item_key, ": client ", later.client, " claimed epoch ",
                           later.epoch, " at ", later.claim_ns, " ns while client ", earlier.client,
                           "'s epoch ", earlier.epoch, " was held until ", earlier.expire_ns));
      }
    }
  }

  int breaks() {
    absl::MutexLock lock(&mu_);
    return breaks_;
  }

 private:
  void Break(const std::string& what) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (++breaks_ <= kMaxReports) std::fprintf(stderr, "BREAK (live) leases: %s\n", what.c_str());
  }

  absl::Mutex mu_;
  std::map<std::string, std::vector<LeaseSpan>> items_ ABSL_GUARDED_BY(mu_);
  int breaks_ ABSL_GUARDED_BY(mu_) = 0;
};

// Runs that clients may claim from; each client adds the runs it created.
class RunBoard {
 public:
  void Add(const std::string& run_id) {
    absl::MutexLock lock(&mu_);
    runs_.push_back(run_id);
  }
  void Remove(const std::string& run_id) {
    absl::MutexLock lock(&mu_);
    runs_.erase(std::remove(runs_.begin(), runs_.end(), run_id), runs_.end());
  }
  std::string Pick(std::mt19937_64& rng) {
    absl::MutexLock lock(&mu_);
    if (runs_.empty()) return "";
    return runs_[std::uniform_int_distribution<size_t>(0, runs_.size() - 1)(rng)];
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> runs_ ABSL_GUARDED_BY(mu_);
};

// ---- The append-only ack log of one client. ----

class AckLog {
 public:
  explicit AckLog(const std::string& path) {
    fd_ = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      std::fprintf(stderr, "cannot open %s: %s\n", path.c_str(), std::strerror(errno));
      std::exit(2);
    }
  }
  ~AckLog() { close(fd_); }
  AckLog(const AckLog&) = delete;
  AckLog& operator=(const AckLog&) = delete;

  // One record per line, fields separated by tabs (no field holds a tab or a newline). Written
  // with one write(2) on an O_APPEND descriptor, before the client makes its next call.
  void Write(const std::vector<std::string>& fields) {
    const std::string line = absl::StrCat(absl::StrJoin(fields, "\t"), "\n");
    size_t done = 0;
    while (done < line.size()) {
      const ssize_t n = write(fd_, line.data() + done, line.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        std::fprintf(stderr, "ack log write failed: %s\n", std::strerror(errno));
        std::exit(2);
      }
      done += static_cast<size_t>(n);
    }
    ++records_;
  }
  int64_t records() const { return records_; }

 private:
  int fd_ = -1;
  int64_t records_ = 0;
};

// ---- One client. ----

struct ContextState {
  std::string id;
  bool created = false;
  int64_t version = 0;
  int64_t next_n = 1;  // label n: a new value for every update attempt, so acked ones grow
};

struct TaskStateLocal {
  std::string description;
  std::string task_id;  // empty until InitTask is acked
};

struct Lease {
  std::string run_id;
  std::string item_id;
  std::string token;
  int64_t epoch = 0;
};

struct ClientStats {
  int64_t calls = 0;
  int64_t acks = 0;
  std::map<int, int64_t> errors;  // by gRPC code
};

class Client {
 public:
  Client(int index, Cluster* cluster, LeaseBook* leases, RunBoard* runs, const std::string& log,
         uint64_t seed)
      : index_(index), cluster_(cluster), leases_(leases), runs_(runs), log_(log), rng_(seed) {
    for (int k = 0; k < kContextsPerClient; ++k) {
      contexts_.push_back(ContextState{absl::StrCat("c", index, "-", k)});
    }
    for (int k = 0; k < kTasksPerClient; ++k) {
      tasks_.push_back(TaskStateLocal{absl::StrCat("torture client ", index, " task ", k), ""});
    }
    worker_ = absl::StrCat("worker-", index);
  }

  void Run(const std::atomic<bool>* stop) {
    while (!stop->load()) {
      Refresh();
      const int dice = std::uniform_int_distribution<int>(0, 99)(rng_);
      ContextState& ctx = contexts_[Uniform(contexts_.size())];
      if (!ctx.created) {
        CreateContext(ctx);
      } else if (dice < 18) {
        RecordCommand(ctx);
      } else if (dice < 36) {
        AppendMessage(ctx);
      } else if (dice < 44) {
        UpdateContext(ctx);
      } else if (dice < 60) {
        TaskOp(tasks_[Uniform(tasks_.size())]);
      } else {
        WorkOp();
      }
    }
  }

  const ClientStats& stats() const { return stats_; }
  int64_t acks() const { return log_.records(); }

 private:
  size_t Uniform(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

  // Reconnects after a restart (the port changes).
  void Refresh() {
    auto [target, generation] = cluster_->Current();
    if (channel_ != nullptr && generation == generation_) return;
    generation_ = generation;
    channel_ = grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
    contexts_stub_ = v1::ContextService::NewStub(channel_);
    conversations_stub_ = v1::ConversationService::NewStub(channel_);
    tasks_stub_ = v1::TaskStateService::NewStub(channel_);
    work_stub_ = v1::WorkService::NewStub(channel_);
  }

  void Prepare(grpc::ClientContext* context) {
    context->set_deadline(absl::ToChronoTime(absl::Now() + kCallDeadline));
    ++stats_.calls;
  }

  // Counts a failed call; after a transport error waits a little (the server may be restarting).
  void Failed(const grpc::Status& status) {
    ++stats_.errors[status.error_code()];
    if (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
        status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
        status.error_code() == grpc::StatusCode::CANCELLED) {
      absl::SleepFor(absl::Milliseconds(std::uniform_int_distribution<int>(20, 60)(rng_)));
    }
  }

  std::string Next() { return absl::StrCat(++counter_); }

  void CreateContext(ContextState& ctx) {
    v1::CreateContextRequest request;
    request.mutable_context()->set_context_id(ctx.id);
    request.mutable_context()->set_agent(absl::StrCat("torture-", index_));
    (*request.mutable_context()->mutable_labels())["n"] = "0";
    v1::TaskContext reply;
    grpc::ClientContext context;
    Prepare(&context);
    grpc::Status s = contexts_stub_->CreateContext(&context, request, &reply);
    if (s.ok()) {
      ctx.created = true;
      ctx.version = reply.version();
      log_.Write({"CTX", ctx.id, absl::StrCat(reply.version()), "0"});
      return;
    }
    Failed(s);
    // A create whose reply was lost may have happened: learn the state from the store.
    if (s.error_code() == grpc::StatusCode::ALREADY_EXISTS) Reload(ctx);
  }

  void Reload(ContextState& ctx) {
    v1::GetContextRequest request;
    request.set_context_id(ctx.id);
    v1::TaskContext reply;
    grpc::ClientContext context;
    Prepare(&context);
    grpc::Status s = contexts_stub_->GetContext(&context, request, &reply);
    if (!s.ok()) {
      Failed(s);
      return;
    }
    ctx.created = true;
    ctx.version = reply.version();
  }

  void UpdateContext(ContextState& ctx) {
    const std::string n = absl::StrCat(ctx.next_n++);
    v1::UpdateContextRequest request;
    request.mutable_context()->set_context_id(ctx.id);
    request.mutable_context()->set_version(ctx.version);
    (*request.mutable_context()->mutable_labels())["n"] = n;
    request.mutable_update_mask()->add_paths("labels");
    v1::TaskContext reply;
    grpc::ClientContext context;
    Prepare(&context);
    grpc::Status s = contexts_stub_->UpdateContext(&context, request, &reply);
    if (s.ok()) {
      ctx.version = reply.version();
      log_.Write({"CTX", ctx.id, absl::StrCat(reply.version()), n});
      return;
    }
    Failed(s);
    // A version conflict: an earlier call whose reply was lost changed the context.
    if (s.error_code() == grpc::StatusCode::ABORTED) Reload(ctx);
  }

  void RecordCommand(ContextState& ctx) {
    v1::RecordCommandRequest request;
    request.set_context_id(ctx.id);
    request.set_command(absl::StrCat("cmd ", index_, " ", Next()));
    request.set_exit_code(std::uniform_int_distribution<int>(0, 3)(rng_) == 0 ? 2 : 0);
    v1::RecordCommandResponse reply;
    grpc::ClientContext context;
    Prepare(&context);
    grpc::Status s = contexts_stub_->RecordCommand(&context, request, &reply);
    if (!s.ok()) {
      Failed(s);
      return;
    }
    ctx.version = reply.context().version();
    log_.Write({"CMD", ctx.id, absl::StrCat(reply.record().seq()),
                absl::StrCat(request.exit_code()), request.command(),
                absl::StrCat(reply.context().command_count()),
                absl::StrCat(reply.context().version())});
  }

  void AppendMessage(ContextState& ctx) {
    v1::AppendMessageRequest request;
    request.set_context_id(ctx.id);
    request.set_role(static_cast<v1::Role>(std::uniform_int_distribution<int>(1, 3)(rng_)));
    request.set_text(absl::StrCat("msg ", index_, " ", Next()));
    request.set_tokens(std::uniform_int_distribution<int>(0, 500)(rng_));
    v1::AppendMessageResponse reply;
    grpc::ClientContext context;
    Prepare(&context);
    grpc::Status s = conversations_stub_->AppendMessage(&context, request, &reply);
    if (!s.ok()) {
      Failed(s);
      return;
    }
    log_.Write({"MSG", ctx.id, absl::StrCat(reply.message().seq()), request.text(),
                absl::StrCat(request.tokens()), absl::StrCat(reply.message_count())});
  }

  void TaskOp(TaskStateLocal& task) {
    grpc::ClientContext context;
    Prepare(&context);
    if (task.task_id.empty()) {
      v1::InitTaskRequest request;
      request.set_description(task.description);
      v1::InitTaskResponse reply;
      grpc::Status s = tasks_stub_->InitTask(&context, request, &reply);
      if (!s.ok()) return Failed(s);
      task.task_id = reply.task_id();
      log_.Write({"TASK", task.task_id, task.description});
      return;
    }
    const int dice = std::uniform_int_distribution<int>(0, 2)(rng_);
    if (dice == 0) {
      v1::IncrementAttemptRequest request;
      request.set_task_id(task.task_id);
      v1::IncrementAttemptResponse reply;
      grpc::Status s = tasks_stub_->IncrementAttempt(&context, request, &reply);
      if (!s.ok()) return Failed(s);
      log_.Write({"ATTEMPT", task.task_id, absl::StrCat(reply.attempt_count())});
    } else if (dice == 1) {
      v1::RecordFailureRequest request;
      request.set_task_id(task.task_id);
      request.set_error(absl::StrCat("error ", index_, " ", Next()));
      v1::RecordFailureResponse reply;
      grpc::Status s = tasks_stub_->RecordFailure(&context, request, &reply);
      if (!s.ok()) return Failed(s);
      log_.Write({"FAIL", task.task_id, absl::StrCat(reply.failure().seq()), request.error()});
    } else {
      v1::EscalateRequest request;
      request.set_task_id(task.task_id);
      request.set_reason(absl::StrCat("reason ", index_, " ", Next()));
      v1::EscalateResponse reply;
      grpc::Status s = tasks_stub_->Escalate(&context, request, &reply);
      if (!s.ok()) return Failed(s);
      log_.Write({"ESC", task.task_id, absl::StrCat(reply.escalation().seq()), request.reason(),
                  absl::StrCat(reply.model_tier())});
    }
  }

  void WorkOp() {
    if (lease_.has_value()) {
      const int dice = std::uniform_int_distribution<int>(0, 9)(rng_);
      if (dice == 0) {
        lease_.reset();  // a worker that died: its lease expires and the item goes to another
      } else if (dice < 4) {
        Heartbeat();
      } else {
        Complete();
      }
      return;
    }
    const std::string run_id = runs_->Pick(rng_);
    if (run_id.empty() || std::uniform_int_distribution<int>(0, 29)(rng_) == 0) {
      CreateRun();
      return;
    }
    Claim(run_id);
  }

  v1::RetryPolicy Policy() {
    // Lost leases (the coordinator was down) come back soon and are never blocked.
    v1::RetryPolicy policy;
    policy.set_max_attempts(1000);
    policy.mutable_backoff_base()->set_nanos(50000000);
    policy.mutable_backoff_max()->set_nanos(200000000);
    return policy;
  }

  void CreateRun() {
    const std::string run_id = absl::StrCat("r", index_, "-", Next());
    grpc::ClientContext context;
    Prepare(&context);
    v1::Run reply;
    grpc::Status s;
    if (std::uniform_int_distribution<int>(0, 1)(rng_) == 0) {
      v1::CreateRunRequest request;
      request.mutable_run()->set_run_id(run_id);
      request.mutable_run()->set_kind(v1::RUN_KIND_WORKSTREAMS);
      *request.mutable_run()->mutable_retry_policy() = Policy();
      for (int i = 0; i < kItemsPerRun; ++i) {
        v1::WorkItem* item = request.add_items();
        item->set_item_id(absl::StrCat("item-", i));
        item->set_title(absl::StrCat("item ", i, " of ", run_id));
      }
      s = work_stub_->CreateRun(&context, request, &reply);
    } else {
      // A two-level task graph: the second level waits for the first.
      std::vector<std::string> tasks;
      for (int i = 0; i < kItemsPerRun; ++i) {
        tasks.push_back(absl::StrCat(R"({"id": "T-)", i, R"(", "title": "task )", i,
                                     R"(", "level": )", i < kItemsPerRun / 2 ? 0 : 1,
                                     i < kItemsPerRun / 2 ? "" : R"(, "dependencies": ["T-0"])",
                                     "}"));
      }
      v1::ImportTaskGraphRequest request;
      request.set_run_id(run_id);
      request.set_graph_json(
          absl::StrCat(R"({"feature": "torture", "tasks": [)", absl::StrJoin(tasks, ","), "]}"));
      *request.mutable_retry_policy() = Policy();
      s = work_stub_->ImportTaskGraph(&context, request, &reply);
    }
    if (!s.ok()) return Failed(s);
    log_.Write({"RUN", run_id, absl::StrCat(reply.counts().total())});
    runs_->Add(run_id);
  }

  void Claim(const std::string& run_id) {
    v1::ClaimRequest request;
    request.set_run_id(run_id);
    request.set_worker_id(worker_);
    *request.mutable_lease_ttl() = DurationProto(kLeaseTtl);
    v1::ClaimResponse reply;
    grpc::ClientContext context;
    Prepare(&context);
    grpc::Status s = work_stub_->Claim(&context, request, &reply);
    if (!s.ok()) return Failed(s);
    if (!reply.has_item()) {
      if (reply.run().status() == v1::RUN_STATUS_COMPLETED) runs_->Remove(run_id);
      return;
    }
    const int64_t expire_ns = ToNanos(reply.lease_expire_time());
    const int64_t claim_ns = expire_ns - absl::ToInt64Nanoseconds(kLeaseTtl);
    log_.Write({"CLAIM", run_id, reply.item().item_id(), absl::StrCat(reply.epoch()),
                absl::StrCat(claim_ns), absl::StrCat(expire_ns),
                absl::StrCat(reply.item().version())});
    leases_->Ack(absl::StrCat(run_id, "/", reply.item().item_id()), index_, reply.epoch(), claim_ns,
                 expire_ns);
    lease_ = Lease{run_id, reply.item().item_id(), reply.lease(), reply.epoch()};
  }

  void Heartbeat() {
    v1::HeartbeatRequest request;
    request.set_lease(lease_->token);
    request.set_progress(absl::StrCat("progress ", Next()));
    v1::HeartbeatResponse reply;
    grpc::ClientContext context;
    Prepare(&context);
    grpc::Status s = work_stub_->Heartbeat(&context, request, &reply);
    if (!s.ok()) {
      Failed(s);
      // Fenced: the lease expired (the coordinator was down) and the item moved on.
      if (s.error_code() == grpc::StatusCode::FAILED_PRECONDITION) lease_.reset();
      return;
    }
    const int64_t expire_ns = ToNanos(reply.lease_expire_time());
    log_.Write({"HB", lease_->run_id, lease_->item_id, absl::StrCat(lease_->epoch),
                absl::StrCat(expire_ns), absl::StrCat(reply.item().version())});
    leases_->Ack(absl::StrCat(lease_->run_id, "/", lease_->item_id), index_, lease_->epoch, 0,
                 expire_ns);
  }

  void Complete() {
    v1::CompleteRequest request;
    request.set_lease(lease_->token);
    request.set_summary(absl::StrCat("done by ", index_, " ", Next()));
    v1::WorkItem reply;
    grpc::ClientContext context;
    Prepare(&context);
    grpc::Status s = work_stub_->Complete(&context, request, &reply);
    if (!s.ok()) {
      Failed(s);
      if (s.error_code() == grpc::StatusCode::FAILED_PRECONDITION) lease_.reset();
      return;
    }
    log_.Write({"DONE", lease_->run_id, lease_->item_id, absl::StrCat(lease_->epoch),
                reply.summary(), absl::StrCat(reply.version())});
    lease_.reset();
  }

  const int index_;
  Cluster* const cluster_;
  LeaseBook* const leases_;
  RunBoard* const runs_;
  AckLog log_;
  std::mt19937_64 rng_;
  std::string worker_;
  uint64_t generation_ = 0;
  int64_t counter_ = 0;
  std::vector<ContextState> contexts_;
  std::vector<TaskStateLocal> tasks_;
  std::optional<Lease> lease_;
  ClientStats stats_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::ContextService::Stub> contexts_stub_;
  std::unique_ptr<v1::ConversationService::Stub> conversations_stub_;
  std::unique_ptr<v1::TaskStateService::Stub> tasks_stub_;
  std::unique_ptr<v1::WorkService::Stub> work_stub_;
};

// ---- The checker. ----

struct Findings {
  int64_t acked = 0;
  int64_t lost = 0;
  int64_t breaks = 0;

  void Lost(const std::string& what) {
    if (++lost <= kMaxReports) std::fprintf(stderr, "LOST %s\n", what.c_str());
  }
  void Break(const std::string& what) {
    if (++breaks <= kMaxReports) std::fprintf(stderr, "BREAK %s\n", what.c_str());
  }
};

// Reads the final state through the last coordinator, with retries on transport errors.
class StoreReader {
 public:
  explicit StoreReader(const std::string& target)
      : channel_(grpc::CreateChannel(target, grpc::InsecureChannelCredentials())),
        contexts_(v1::ContextService::NewStub(channel_)),
        conversations_(v1::ConversationService::NewStub(channel_)),
        tasks_(v1::TaskStateService::NewStub(channel_)),
        work_(v1::WorkService::NewStub(channel_)) {}

  template <typename Call>
  grpc::Status Retry(Call call) {
    grpc::Status s;
    for (int attempt = 0; attempt < 50; ++attempt) {
      grpc::ClientContext context;
      context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
      context.set_wait_for_ready(true);
      s = call(&context);
      if (s.error_code() != grpc::StatusCode::UNAVAILABLE &&
          s.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
        return s;
      }
      absl::SleepFor(absl::Milliseconds(200));
    }
    return s;
  }

  grpc::Status Context(const std::string& id, v1::TaskContext* out) {
    v1::GetContextRequest request;
    request.set_context_id(id);
    return Retry([&](grpc::ClientContext* c) { return contexts_->GetContext(c, request, out); });
  }

  grpc::Status Commands(const std::string& id, std::vector<v1::CommandRecord>* out) {
    v1::ListCommandsRequest request;
    request.set_context_id(id);
    request.set_page_size(1000);
    do {
      v1::ListCommandsResponse page;
      grpc::Status s =
          Retry([&](grpc::ClientContext* c) { return contexts_->ListCommands(c, request, &page); });
      if (!s.ok()) return s;
      out->insert(out->end(), page.commands().begin(), page.commands().end());
      request.set_page_token(page.next_page_token());
    } while (!request.page_token().empty());
    return grpc::Status::OK;
  }

  grpc::Status Conversation(const std::string& id, std::vector<v1::ConversationMessage>* out,
                            int64_t* message_count, int64_t* step_count, int64_t* total_tokens) {
    v1::GetConversationRequest request;
    request.set_context_id(id);
    request.set_page_size(1000);
    do {
      v1::GetConversationResponse page;
      grpc::Status s = Retry([&](grpc::ClientContext* c) {
        return conversations_->GetConversation(c, request, &page);
      });
      if (!s.ok()) return s;
      out->insert(out->end(), page.messages().begin(), page.messages().end());
      *message_count = page.message_count();
      *step_count = page.step_count();
      *total_tokens = page.total_tokens();
      request.set_page_token(page.next_page_token());
    } while (!request.page_token().empty());
    return grpc::Status::OK;
  }

  grpc::Status Task(const std::string& id, v1::TaskState* out) {
    v1::GetTaskStateRequest request;
    request.set_task_id(id);
    return Retry([&](grpc::ClientContext* c) { return tasks_->GetTaskState(c, request, out); });
  }

  // The run and its items as of one moment. The coordinator keeps running while the checker
  // reads (its reaper takes back the leases of killed clients), and the header and the items
  // come from separate calls: the items count only when the header read before them is the
  // header read after them (every change of an item's status also stamps the header).
  grpc::Status Run(const std::string& id, v1::Run* run,
                   std::map<std::string, v1::WorkItem>* items) {
    v1::GetRunRequest get;
    get.set_run_id(id);
    grpc::Status s = Retry([&](grpc::ClientContext* c) { return work_->GetRun(c, get, run); });
    for (int attempt = 0; s.ok(); ++attempt) {
      items->clear();
      v1::ListItemsRequest request;
      request.set_run_id(id);
      request.set_page_size(1000);
      do {
        v1::ListItemsResponse page;
        s = Retry([&](grpc::ClientContext* c) { return work_->ListItems(c, request, &page); });
        if (!s.ok()) return s;
        for (const v1::WorkItem& item : page.items()) (*items)[item.item_id()] = item;
        request.set_page_token(page.next_page_token());
      } while (!request.page_token().empty());
      v1::Run after;
      s = Retry([&](grpc::ClientContext* c) { return work_->GetRun(c, get, &after); });
      if (!s.ok()) return s;
      if (google::protobuf::util::MessageDifferencer::Equals(after, *run)) return grpc::Status::OK;
      if (attempt == 20) {
        return grpc::Status(grpc::StatusCode::ABORTED,
                            "the run kept changing while its items were read");
      }
      *run = std::move(after);
    }
    return s;
  }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::ContextService::Stub> contexts_;
  std::unique_ptr<v1::ConversationService::Stub> conversations_;
  std::unique_ptr<v1::TaskStateService::Stub> tasks_;
  std::unique_ptr<v1::WorkService::Stub> work_;
};

int64_t Int(const std::string& s) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(s, &v)) return -1;
  return v;
}

// One parsed log line with the client it came from.
struct Ack {
  int client = 0;
  std::vector<std::string> f;
};

// Field counts per record kind; a malformed line is reported, not trusted.
const std::map<std::string, size_t>& Arity() {
  static const auto* arity = new std::map<std::string, size_t>{
      {"CTX", 4}, {"CMD", 7}, {"MSG", 6},   {"TASK", 3}, {"ATTEMPT", 3}, {"FAIL", 4},
      {"ESC", 5}, {"RUN", 3}, {"CLAIM", 7}, {"HB", 6},   {"DONE", 6}};
  return *arity;
}

std::vector<Ack> ReadLogs(const std::vector<std::string>& paths, Findings* findings) {
  std::vector<Ack> acks;
  for (size_t c = 0; c < paths.size(); ++c) {
    std::ifstream in(paths[c]);
    std::string line;
    while (std::getline(in, line)) {
      Ack ack{static_cast<int>(c), absl::StrSplit(line, '\t')};
      auto it = Arity().find(ack.f[0]);
      if (it == Arity().end() || it->second != ack.f.size()) {
        findings->Break(absl::StrCat("malformed log line of client ", c, ": ", line));
        continue;
      }
      acks.push_back(std::move(ack));
    }
  }
  return acks;
}

void Check(const std::vector<Ack>& acks, StoreReader& store, Findings* findings) {
  findings->acked = static_cast<int64_t>(acks.size());
  std::map<std::string, int64_t> by_kind;
  int64_t reclaims = 0;
  for (const Ack& a : acks) {
    ++by_kind[a.f[0]];
    if (a.f[0] == "CLAIM" && Int(a.f[3]) > 1) ++reclaims;
  }
  std::vector<std::string> kinds;
  for (const auto& [kind, n] : by_kind) kinds.push_back(absl::StrCat(kind, " ", n));
  std::printf("torture: acks by kind: %s; claims of an item claimed before: %lld\n",
              absl::StrJoin(kinds, ", ").c_str(), static_cast<long long>(reclaims));
  // Versions (and seqs, and attempt counts) only grow, in each client's ack order.
  std::map<std::pair<int, std::string>, int64_t> last_seen;
  auto grows = [&](const Ack& a, const std::string& what, int64_t value) {
    int64_t& last = last_seen[{a.client, what}];
    if (value <= last) {
      findings->Break(absl::StrCat("versions: client ", a.client, " saw ", what, " go from ", last,
                                   " to ", value));
    }
    last = std::max(last, value);
  };

  std::set<std::string> context_ids, task_ids, run_ids;
  for (const Ack& a : acks) {
    const std::string& kind = a.f[0];
    if (kind == "CTX") grows(a, "context " + a.f[1] + " version", Int(a.f[2]));
    if (kind == "CMD") grows(a, "context " + a.f[1] + " version", Int(a.f[6]));
    if (kind == "MSG") grows(a, "conversation " + a.f[1] + " seq", Int(a.f[2]));
    if (kind == "ATTEMPT") grows(a, "task " + a.f[1] + " attempt_count", Int(a.f[2]));
    if (kind == "CLAIM" || kind == "HB" || kind == "DONE") {
      grows(a, "item " + a.f[1] + "/" + a.f[2] + " version", Int(a.f[kind == "CLAIM" ? 6 : 5]));
    }
    if (kind == "CTX" || kind == "CMD" || kind == "MSG") context_ids.insert(a.f[1]);
    if (kind == "TASK" || kind == "ATTEMPT" || kind == "FAIL" || kind == "ESC") {
      task_ids.insert(a.f[1]);
    }
    if (kind == "RUN" || kind == "CLAIM" || kind == "HB" || kind == "DONE") run_ids.insert(a.f[1]);
  }

  // The final state, read once.
  struct ContextView {
    grpc::Status status;
    v1::TaskContext context;
    std::map<int64_t, v1::CommandRecord> commands;
    std::map<int64_t, v1::ConversationMessage> messages;
    int64_t message_count = 0;
    int64_t step_count = 0;
    int64_t total_tokens = 0;
  };
  std::map<std::string, ContextView> contexts;
  for (const std::string& id : context_ids) {
    ContextView& view = contexts[id];
    view.status = store.Context(id, &view.context);
    if (!view.status.ok()) continue;
    std::vector<v1::CommandRecord> commands;
    grpc::Status s = store.Commands(id, &commands);
    if (!s.ok()) {
      findings->Break(absl::StrCat("cannot list commands of ", id, ": ", s.error_message()));
    }
    int64_t failed = 0;
    for (size_t i = 0; i < commands.size(); ++i) {
      if (commands[i].seq() != static_cast<int64_t>(i) + 1) {
        findings->Break(absl::StrCat("context ", id, ": command record ", i + 1, " has seq ",
                                     commands[i].seq()));
      }
      if (commands[i].exit_code() != 0) ++failed;
      view.commands[commands[i].seq()] = commands[i];
    }
    if (view.context.command_count() != static_cast<int64_t>(commands.size())) {
      findings->Break(absl::StrCat("context ", id, ": command_count ", view.context.command_count(),
                                   " but ", commands.size(), " command records"));
    }
    if (view.context.failed_commands() != failed) {
      findings->Break(absl::StrCat("context ", id, ": failed_commands ",
                                   view.context.failed_commands(), " but ", failed,
                                   " records with a non-zero exit code"));
    }
    std::vector<v1::ConversationMessage> messages;
    s = store.Conversation(id, &messages, &view.message_count, &view.step_count,
                           &view.total_tokens);
    if (s.error_code() == grpc::StatusCode::NOT_FOUND) s = grpc::Status::OK;  // no messages yet
    if (!s.ok()) {
      findings->Break(
          absl::StrCat("cannot read the conversation of ", id, ": ", s.error_message()));
    }
    int64_t tokens = 0;
    int64_t agent_messages = 0;
    for (size_t i = 0; i < messages.size(); ++i) {
      if (messages[i].seq() != static_cast<int64_t>(i) + 1) {
        findings->Break(
            absl::StrCat("conversation ", id, ": message ", i + 1, " has seq ", messages[i].seq()));
      }
      tokens += messages[i].tokens();
      if (messages[i].role() == v1::ROLE_AGENT) ++agent_messages;
      view.messages[messages[i].seq()] = messages[i];
    }
    if (view.message_count != static_cast<int64_t>(messages.size())) {
      findings->Break(absl::StrCat("conversation ", id, ": message_count ", view.message_count,
                                   " but ", messages.size(), " messages"));
    }
    if (view.step_count != agent_messages) {
      findings->Break(absl::StrCat("conversation ", id, ": step_count ", view.step_count, " but ",
                                   agent_messages, " AGENT messages"));
    }
    if (view.total_tokens != tokens) {
      findings->Break(absl::StrCat("conversation ", id, ": total_tokens ", view.total_tokens,
                                   " but the messages hold ", tokens));
    }
  }
  std::map<std::string, std::pair<grpc::Status, v1::TaskState>> tasks;
  for (const std::string& id : task_ids) {
    auto& entry = tasks[id];
    entry.first = store.Task(id, &entry.second);
  }
  struct RunView {
    grpc::Status status;
    v1::Run run;
    std::map<std::string, v1::WorkItem> items;
  };
  std::map<std::string, RunView> runs;
  for (const std::string& id : run_ids) {
    RunView& view = runs[id];
    view.status = store.Run(id, &view.run, &view.items);
    if (!view.status.ok()) continue;
    int64_t done = 0, running = 0;
    for (const auto& [item_id, item] : view.items) {
      if (item.status() == v1::ITEM_STATUS_DONE) ++done;
      if (item.status() == v1::ITEM_STATUS_RUNNING) ++running;
    }
    if (view.run.counts().total() != static_cast<int64_t>(view.items.size()) ||
        view.run.counts().done() != done || view.run.counts().running() != running) {
      findings->Break(absl::StrCat("run ", id, ": counts ", view.run.counts().ShortDebugString(),
                                   " but ", view.items.size(), " items, ", done, " done, ", running,
                                   " running"));
    }
  }

  // Every ack against the final state.
  struct Span {
    int client = 0;
    int64_t claim_ns = 0;
    int64_t expire_ns = 0;
    bool done = false;
  };
  std::map<std::string, std::map<int64_t, Span>> spans;  // item -> epoch -> span
  for (const Ack& a : acks) {
    const std::string& kind = a.f[0];
    const std::string& id = a.f[1];
    const std::string line = absl::StrCat("client ", a.client, " ", absl::StrJoin(a.f, " "));
    if (kind == "CTX" || kind == "CMD" || kind == "MSG") {
      const ContextView& view = contexts[id];
      if (!view.status.ok()) {
        findings->Lost(absl::StrCat(line, ": context unreadable: ", view.status.error_message()));
        continue;
      }
      if (kind == "CTX") {
        auto label = view.context.labels().find("n");
        if (view.context.version() < Int(a.f[2])) {
          findings->Break(absl::StrCat(line, ": final version ", view.context.version()));
        } else if (label == view.context.labels().end() || Int(label->second) < Int(a.f[3])) {
          findings->Lost(absl::StrCat(line, ": final labels ", view.context.ShortDebugString()));
        }
      } else if (kind == "CMD") {
        auto it = view.commands.find(Int(a.f[2]));
        if (it == view.commands.end() || it->second.command() != a.f[4] ||
            it->second.exit_code() != Int(a.f[3])) {
          findings->Lost(absl::StrCat(line, ": no such command record"));
        } else if (view.context.command_count() < Int(a.f[5])) {
          findings->Lost(
              absl::StrCat(line, ": final command_count ", view.context.command_count()));
        } else if (view.context.version() < Int(a.f[6])) {
          findings->Break(absl::StrCat(line, ": final version ", view.context.version()));
        }
      } else {
        auto it = view.messages.find(Int(a.f[2]));
        if (it == view.messages.end() || it->second.text() != a.f[3] ||
            it->second.tokens() != Int(a.f[4])) {
          findings->Lost(absl::StrCat(line, ": no such message"));
        } else if (view.message_count < Int(a.f[5])) {
          findings->Lost(absl::StrCat(line, ": final message_count ", view.message_count));
        }
      }
    } else if (kind == "TASK" || kind == "ATTEMPT" || kind == "FAIL" || kind == "ESC") {
      const auto& [status, state] = tasks[id];
      if (!status.ok()) {
        findings->Lost(absl::StrCat(line, ": task unreadable: ", status.error_message()));
        continue;
      }
      if (kind == "TASK") {
        if (state.description() != a.f[2])
          findings->Lost(absl::StrCat(line, ": other description"));
      } else if (kind == "ATTEMPT") {
        if (state.attempt_count() < Int(a.f[2])) {
          findings->Lost(absl::StrCat(line, ": final attempt_count ", state.attempt_count()));
        }
      } else if (kind == "FAIL") {
        bool found = false;
        for (const v1::TaskFailure& f : state.failures()) {
          found |= f.seq() == Int(a.f[2]) && f.error() == a.f[3];
        }
        if (!found) findings->Lost(absl::StrCat(line, ": no such failure"));
      } else {
        bool found = false;
        for (const v1::TaskEscalation& e : state.escalation_log()) {
          found |= e.seq() == Int(a.f[2]) && e.reason() == a.f[3];
        }
        if (!found) {
          findings->Lost(absl::StrCat(line, ": no such escalation"));
        } else if (state.model_tier() < Int(a.f[4])) {
          findings->Lost(absl::StrCat(line, ": final tier ", state.model_tier()));
        }
      }
    } else {
      const RunView& view = runs[id];
      if (!view.status.ok()) {
        findings->Lost(absl::StrCat(line, ": run unreadable: ", view.status.error_message()));
        continue;
      }
      if (kind == "RUN") {
        if (view.run.counts().total() != Int(a.f[2])) {
          findings->Lost(absl::StrCat(line, ": final items ", view.run.counts().total()));
        }
        continue;
      }
      auto item = view.items.find(a.f[2]);
      if (item == view.items.end()) {
        findings->Lost(absl::StrCat(line, ": no such item"));
        continue;
      }
      const int64_t epoch = Int(a.f[3]);
      const int64_t version = Int(a.f[kind == "CLAIM" ? 6 : 5]);
      if (item->second.epoch() < epoch) {
        findings->Lost(absl::StrCat(line, ": final epoch ", item->second.epoch()));
      } else if (item->second.version() < version) {
        findings->Break(absl::StrCat(line, ": final version ", item->second.version()));
      }
      Span& span = spans[id + "/" + a.f[2]][epoch];
      if (kind == "CLAIM") {
        if (span.claim_ns != 0) {
          findings->Break(absl::StrCat(line, ": epoch ", epoch, " claimed twice"));
        }
        span.client = a.client;
        span.claim_ns = Int(a.f[4]);
        span.expire_ns = std::max(span.expire_ns, Int(a.f[5]));
      } else if (kind == "HB") {
        span.expire_ns = std::max(span.expire_ns, Int(a.f[4]));
      } else {
        span.done = true;
        if (item->second.status() != v1::ITEM_STATUS_DONE || item->second.epoch() != epoch ||
            item->second.summary() != a.f[4]) {
          findings->Lost(absl::StrCat(line, ": final item ", item->second.ShortDebugString()));
        }
      }
    }
  }
  // No item held by two leases: each claim starts after every earlier epoch's lease ended, and
  // nothing is claimed after a completion.
  for (const auto& [item, by_epoch] : spans) {
    const Span* previous = nullptr;
    int64_t previous_epoch = 0;
    for (const auto& [epoch, span] : by_epoch) {
      if (previous != nullptr && span.claim_ns != 0) {
        if (previous->done) {
          findings->Break(absl::StrCat("leases: item ", item, " claimed (epoch ", epoch,
                                       ") after epoch ", previous_epoch, " completed it"));
        } else if (span.claim_ns < previous->expire_ns) {
          findings->Break(absl::StrCat("leases: item ", item, " epoch ", epoch, " claimed at ",
                                       span.claim_ns, " ns, while epoch ", previous_epoch,
                                       " was held until ", previous->expire_ns));
        }
      }
      if (span.claim_ns != 0) {
        previous = &span;
        previous_epoch = epoch;
      }
    }
  }
}

bool ParseRange(const std::string& text, double* lo, double* hi) {
  std::vector<std::string> parts = absl::StrSplit(text, ':');
  if (parts.size() == 1) parts.push_back(parts[0]);
  return parts.size() == 2 && absl::SimpleAtod(parts[0], lo) && absl::SimpleAtod(parts[1], hi) &&
         *lo > 0 && *hi >= *lo;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "kills the coordinator with SIGKILL under load, restarts it, and checks every "
      "acknowledged write and the invariants. Exit 0 only with 0 lost writes and 0 breaks.");
  absl::ParseCommandLine(argc, argv);
  signal(SIGPIPE, SIG_IGN);
  const int crashes = absl::GetFlag(FLAGS_crashes);
  const int clients = absl::GetFlag(FLAGS_clients);
  double gap_lo = 0, gap_hi = 0;
  if (crashes < 0 || clients < 1 || clients > 1024 ||
      !ParseRange(absl::GetFlag(FLAGS_seconds_between_crashes), &gap_lo, &gap_hi)) {
    std::fprintf(stderr,
                 "usage: --crashes >= 0, --clients 1..1024, --seconds_between_crashes MIN:MAX "
                 "with 0 < MIN <= MAX\n");
    return 2;
  }
  uint64_t seed = absl::GetFlag(FLAGS_seed);
  if (seed == 0) seed = static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
  std::string bin = absl::GetFlag(FLAGS_coordinator_bin);
  if (bin.empty()) bin = testing_util::BinaryPath("coordinator");

  std::string work_dir = absl::GetFlag(FLAGS_work_dir);
  if (work_dir.empty()) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "coord-torture-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      std::perror("mkdtemp");
      return 2;
    }
    work_dir = tmpl;
  }
  const std::string data_dir = work_dir + "/data";
  std::filesystem::create_directories(work_dir + "/logs");
  std::printf("torture: seed %llu, %d clients, %d crashes every %g-%gs, work dir %s\n",
              static_cast<unsigned long long>(seed), clients, crashes, gap_lo, gap_hi,
              work_dir.c_str());
  std::fflush(stdout);

  std::mt19937_64 rng(seed);
  Cluster cluster(bin, data_dir);
  if (absl::Status s = cluster.Start(); !s.ok()) {
    std::fprintf(stderr, "cannot start the coordinator: %s\n", s.ToString().c_str());
    return 2;
  }
  LeaseBook leases;
  RunBoard runs;
  std::vector<std::string> log_paths;
  std::vector<std::unique_ptr<Client>> workers;
  for (int i = 0; i < clients; ++i) {
    log_paths.push_back(absl::StrCat(work_dir, "/logs/client-", i, ".log"));
    workers.push_back(
        std::make_unique<Client>(i, &cluster, &leases, &runs, log_paths.back(), rng()));
  }
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (auto& w : workers) threads.emplace_back([&w, &stop] { w->Run(&stop); });

  std::uniform_real_distribution<double> gap(gap_lo, gap_hi);
  int done_crashes = 0;
  bool setup_failed = false;
  for (int c = 0; c <= crashes; ++c) {
    absl::SleepFor(absl::Seconds(gap(rng)));
    if (!cluster.Alive()) {
      std::fprintf(stderr, "the coordinator died on its own:\n%s\n", cluster.Stderr().c_str());
      setup_failed = true;
      break;
    }
    if (c == crashes) break;  // the last stretch of load runs on the last restart
    if (absl::Status s = cluster.Kill(); !s.ok()) {
      std::fprintf(stderr, "kill: %s\n", s.ToString().c_str());
      setup_failed = true;
      break;
    }
    ++done_crashes;
    if (absl::Status s = cluster.Start(); !s.ok()) {
      std::fprintf(stderr, "restart %d failed: %s\n", done_crashes, s.ToString().c_str());
      setup_failed = true;
      break;
    }
  }
  stop = true;
  for (std::thread& t : threads) t.join();

  int64_t calls = 0;
  std::map<int, int64_t> errors;
  for (const auto& w : workers) {
    calls += w->stats().calls;
    for (const auto& [code, n] : w->stats().errors) errors[code] += n;
  }
  std::vector<std::string> error_text;
  for (const auto& [code, n] : errors) error_text.push_back(absl::StrCat("code ", code, ": ", n));
  std::printf("torture: %lld calls, failed or unknown: %s\n", static_cast<long long>(calls),
              error_text.empty() ? "none" : absl::StrJoin(error_text, ", ").c_str());

  // The self-check: acks of writes that never happened, written like real ones.
  const int fakes = absl::GetFlag(FLAGS_self_check_fake_acks);
  if (fakes > 0) {
    AckLog log(log_paths[0]);
    for (int i = 0; i < fakes; ++i) {
      if (i % 2 == 0) {
        log.Write({"MSG", "c0-0", absl::StrCat(1000000000 + i), "a message never sent", "1",
                   absl::StrCat(1000000000 + i)});
      } else {
        log.Write({"CMD", "c0-1", absl::StrCat(1000000000 + i), "0", "a command never run",
                   absl::StrCat(1000000000 + i), absl::StrCat(2000000000 + i)});
      }
    }
    std::printf("torture: self-check: %d fabricated acks appended to %s\n", fakes,
                log_paths[0].c_str());
  }

  Findings findings;
  findings.breaks += leases.breaks();
  if (!setup_failed) {
    StoreReader reader(cluster.Current().first);
    const std::vector<Ack> acks = ReadLogs(log_paths, &findings);
    Check(acks, reader, &findings);
  }
  std::printf("torture: crashes %d, acked writes %lld, lost %lld, invariant breaks %lld\n",
              done_crashes, static_cast<long long>(findings.acked),
              static_cast<long long>(findings.lost), static_cast<long long>(findings.breaks));
  std::fflush(stdout);
  (void)cluster.Kill();

  if (!absl::GetFlag(FLAGS_keep_data) && absl::GetFlag(FLAGS_work_dir).empty()) {
    std::error_code ec;
    std::filesystem::remove_all(work_dir, ec);
  }
  if (setup_failed) return 2;
  return findings.lost == 0 && findings.breaks == 0 ? 0 : 1;
}
