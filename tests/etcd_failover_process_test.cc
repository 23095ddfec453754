// Issue 21's failover test: 16 clients load two coordinator replicas on one etcd cluster of the
// test's own (contexts' commands, work items claimed and completed, A2A messages to an echo
// agent), while one etcd member is killed, then the replica that runs the background jobs, and
// both come back (the replica restarted on its own data dir, flags and port). Nothing
// acknowledged may be lost or applied twice; no work item may be held under two leases at once;
// a WatchRun on the surviving replica sees every change of every item, in order; an A2A
// subscription there sees every chunk an agent streams on a task, in order, through the kill;
// the background jobs never run on two replicas at once and move on when their replica dies;
// and the queued A2A messages are all delivered. Runs as etcd.EtcdFailoverTest.* (the etcd
// label); the cluster is its own because it kills a member.
#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "a2a/v1/a2a.grpc.pb.h"
#include "a2a_protocol/errors.h"
#include "a2a_protocol/version.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/grpc_status.h"
#include "coordinator/v1/agent_registry.grpc.pb.h"
#include "coordinator/v1/context.grpc.pb.h"
#include "coordinator/v1/work.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "storage/testing/test_store.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace {

namespace a2apb = ::lf::a2a::v1;
namespace v1 = ::coordinator::v1;
using testing_util::BinaryPath;
using testing_util::CoordinatorProcess;
using testing_util::EtcdCluster;
using testing_util::Process;
using testing_util::TempDir;

constexpr int kClients = 16;
constexpr int kItems = 2000;
constexpr absl::Duration kPhase = absl::Seconds(3);
// How often the agent streams a chunk on the held task, and /metrics is sampled.
constexpr absl::Duration kTickEvery = absl::Milliseconds(100);
constexpr absl::Duration kSampleEvery = absl::Milliseconds(100);

using ::testing_util::kProcessWait;
using testing_util::WaitFor;

std::unique_ptr<grpc::ClientContext> Ctx(absl::Duration timeout = absl::Seconds(10)) {
  auto c = std::make_unique<grpc::ClientContext>();
  c->set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(timeout));
  a2a_protocol::AddVersion(c.get());
  return c;
}

// A channel over several replicas, in the order given (pick_first moves on when one is down).
// Each has connections of its own, as separate client processes would: gRPC otherwise shares a
// connection (subchannel) between channels of one process with the same address and arguments,
// and a new channel to a restarted replica would inherit the backoff of another channel's
// attempt that failed while the replica was starting.
std::shared_ptr<grpc::Channel> Channel(const std::vector<std::string>& targets) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
  return grpc::CreateCustomChannel("ipv4:" + absl::StrJoin(targets, ","),
                                   grpc::InsecureChannelCredentials(), args);
}

// Runs `fn` when the scope ends: stops and joins the test's threads when an ASSERT returns early,
// so that no std::thread is destroyed while joinable.
class AtExit {
 public:
  explicit AtExit(std::function<void()> fn) : fn_(std::move(fn)) {}
  ~AtExit() { fn_(); }
  AtExit(const AtExit&) = delete;
  AtExit& operator=(const AtExit&) = delete;

 private:
  std::function<void()> fn_;
};

bool IsTerminal(a2apb::TaskState s) {
  return s == a2apb::TASK_STATE_COMPLETED || s == a2apb::TASK_STATE_FAILED ||
         s == a2apb::TASK_STATE_CANCELED || s == a2apb::TASK_STATE_REJECTED;
}

// The agent of the held task. It keeps its tasks, as agents on the A2A SDKs do (GetTask and
// SubscribeToTask answer from them), and adds a chunk to each running task's artifact "ticks"
// ("0", "1", ...) every time the test calls Tick(), until the task is canceled. A stream cut
// short does not stop the task: the replica that delivered the message may die, and the next
// leader reads the task back and subscribes, getting the task with every chunk so far (the
// agent on the coordinator's runtime keeps no tasks, so its message would be sent again and the
// chunks streamed into the dead call lost). Synchronous gRPC API: a test double whose few open
// streams each hold a thread.
class TickerAgent final : public a2apb::A2AService::Service {
 public:
  static constexpr char kArtifact[] = "ticks";

  ~TickerAgent() override { Stop(); }

  [[nodiscard]] absl::Status Start() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
    if (server_ == nullptr || port_ == 0) return absl::UnavailableError("agent cannot listen");
    return absl::OkStatus();
  }

  // Ends the open streams and stops serving. Idempotent.
  void Stop() {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now());
    server_.reset();
  }

  std::string endpoint() const { return absl::StrCat("127.0.0.1:", port_); }

  // Streams the next chunk on every running task.
  void Tick() {
    absl::MutexLock lock(&mu_);
    for (auto& [id, held] : tasks_) {
      if (IsTerminal(held.task.status().state())) continue;
      a2apb::StreamResponse event;
      a2apb::TaskArtifactUpdateEvent* chunk = event.mutable_artifact_update();
      chunk->set_task_id(id);
      chunk->set_context_id(held.task.context_id());
      chunk->mutable_artifact()->set_artifact_id(kArtifact);
      chunk->mutable_artifact()->add_parts()->set_text(absl::StrCat(held.ticks));
      chunk->set_append(held.ticks > 0);
      chunk->set_last_chunk(false);
      if (held.ticks == 0) {
        *held.task.add_artifacts() = chunk->artifact();
      } else {
        *held.task.mutable_artifacts(0)->add_parts() = chunk->artifact().parts(0);
      }
      ++held.ticks;
      held.log.push_back(std::move(event));
    }
  }

  // The chunks streamed on task `id` so far.
  int ticks(const std::string& id) {
    absl::MutexLock lock(&mu_);
    auto it = tasks_.find(id);
    return it == tasks_.end() ? 0 : it->second.ticks;
  }
  // Every task id given out, in order.
  std::vector<std::string> task_ids() {
    absl::MutexLock lock(&mu_);
    std::vector<std::string> ids;
    for (const auto& [id, held] : tasks_) ids.push_back(id);
    return ids;
  }

  grpc::Status SendStreamingMessage(grpc::ServerContext* context,
                                    const a2apb::SendMessageRequest* request,
                                    grpc::ServerWriter<a2apb::StreamResponse>* writer) override {
    std::string id;
    {
      absl::MutexLock lock(&mu_);
      id = absl::StrCat("ticker-", tasks_.size() + 1);
      Held& held = tasks_[id];
      held.task.set_id(id);
      held.task.set_context_id(request->message().context_id());
      held.task.mutable_status()->set_state(a2apb::TASK_STATE_WORKING);
      a2apb::StreamResponse opening;
      *opening.mutable_task() = held.task;
      held.log.push_back(std::move(opening));
    }
    return Follow(context, writer, id, 0);
  }

  grpc::Status SubscribeToTask(grpc::ServerContext* context,
                               const a2apb::SubscribeToTaskRequest* request,
                               grpc::ServerWriter<a2apb::StreamResponse>* writer) override {
    a2apb::StreamResponse snapshot;
    size_t from = 0;
    {
      absl::MutexLock lock(&mu_);
      auto it = tasks_.find(request->id());
      if (it == tasks_.end()) {
        return common::ToGrpcStatus(a2a_protocol::TaskNotFound(request->id()));
      }
      if (IsTerminal(it->second.task.status().state())) {
        return common::ToGrpcStatus(a2a_protocol::UnsupportedOperation("the task has ended"));
      }
      *snapshot.mutable_task() = it->second.task;
      from = it->second.log.size();
    }
    if (!writer->Write(snapshot)) return grpc::Status::CANCELLED;
    return Follow(context, writer, request->id(), from);
  }

  grpc::Status GetTask(grpc::ServerContext*, const a2apb::GetTaskRequest* request,
                       a2apb::Task* response) override {
    absl::MutexLock lock(&mu_);
    auto it = tasks_.find(request->id());
    if (it == tasks_.end()) return common::ToGrpcStatus(a2a_protocol::TaskNotFound(request->id()));
    *response = it->second.task;
    return grpc::Status::OK;
  }

  grpc::Status CancelTask(grpc::ServerContext*, const a2apb::CancelTaskRequest* request,
                          a2apb::Task* response) override {
    absl::MutexLock lock(&mu_);
    auto it = tasks_.find(request->id());
    if (it == tasks_.end()) return common::ToGrpcStatus(a2a_protocol::TaskNotFound(request->id()));
    Held& held = it->second;
    if (IsTerminal(held.task.status().state())) {
      return common::ToGrpcStatus(a2a_protocol::TaskNotCancelable("the task has ended"));
    }
    held.task.mutable_status()->set_state(a2apb::TASK_STATE_CANCELED);
    a2apb::StreamResponse end;
    end.mutable_status_update()->set_task_id(held.task.id());
    end.mutable_status_update()->set_context_id(held.task.context_id());
    *end.mutable_status_update()->mutable_status() = held.task.status();
    held.log.push_back(std::move(end));
    *response = held.task;
    return grpc::Status::OK;
  }

 private:
  struct Held {
    a2apb::Task task;
    // Every event of the task, in order; a stream follows it from where it joined.
    std::vector<a2apb::StreamResponse> log;
    int ticks = 0;
  };

  // Writes task `id`'s events from log position `next` on, until the one that ends the task,
  // the caller goes away or the agent stops.
  grpc::Status Follow(grpc::ServerContext* context,
                      grpc::ServerWriter<a2apb::StreamResponse>* writer, const std::string& id,
                      size_t next) {
    while (!context->IsCancelled()) {
      std::vector<a2apb::StreamResponse> batch;
      {
        absl::MutexLock lock(&mu_);
        const std::vector<a2apb::StreamResponse>& log = tasks_[id].log;
        auto more = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return stopping_ || log.size() > next;
        };
        mu_.AwaitWithTimeout(absl::Condition(&more), absl::Milliseconds(100));
        if (stopping_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "agent stopping");
        batch.assign(log.begin() + static_cast<std::ptrdiff_t>(next), log.end());
        next = log.size();
      }
      for (const a2apb::StreamResponse& event : batch) {
        if (!writer->Write(event)) return grpc::Status::CANCELLED;
        if (event.has_status_update() && IsTerminal(event.status_update().status().state())) {
          return grpc::Status::OK;
        }
      }
    }
    return grpc::Status::CANCELLED;
  }

  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, Held> tasks_ ABSL_GUARDED_BY(mu_);
};

// What the clients saw acknowledged, for the checks at the end.
struct Acks {
  absl::Mutex mu;
  std::map<std::string, std::set<std::string>> commands ABSL_GUARDED_BY(mu);  // context -> texts
  std::map<std::string, std::set<int64_t>> claims ABSL_GUARDED_BY(mu);        // item -> epochs
  std::map<std::string, std::set<int64_t>> completions ABSL_GUARDED_BY(mu);   // item -> epochs
  std::vector<std::string> a2a_tasks ABSL_GUARDED_BY(mu);
  int claim_refusals ABSL_GUARDED_BY(mu) = 0;
};

// One change of an item as a WatchRun stream showed it.
struct Seen {
  v1::RunEvent::Type type;
  v1::ItemStatus status;
  int64_t epoch;
  int64_t version;
  std::string worker;
};

std::string Describe(const std::vector<Seen>& seen) {
  return absl::StrJoin(seen, ", ", [](std::string* out, const Seen& s) {
    absl::StrAppend(out, "v", s.version, " ", v1::ItemStatus_Name(s.status), " e", s.epoch,
                    s.worker.empty() ? "" : " ", s.worker);
  });
}

// Every sample of coordinator_background_jobs_leader over the replicas alive at the time.
struct LeaderSamples {
  absl::Mutex mu;
  // The replicas to sample: name -> HTTP port.
  std::map<std::string, int> live ABSL_GUARDED_BY(mu);
  int taken ABSL_GUARDED_BY(mu) = 0;
  // Samples in which two or more replicas said they lead, as "a+b".
  std::vector<std::string> doubles ABSL_GUARDED_BY(mu);
};

class EtcdFailoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!storage::testing::UseEtcd()) {
      GTEST_SKIP() << "runs as etcd.EtcdFailoverTest.* (on an etcd cluster of its own)";
    }
    absl::StatusOr<std::unique_ptr<EtcdCluster>> cluster = EtcdCluster::Start(dir_.Sub("etcd"));
    ASSERT_OK(cluster);
    cluster_ = *std::move(cluster);
  }

  std::vector<std::string> Flags() const {
    return {"--store=" + cluster_->url(), "--etcd_prefix=/failover/",
            "--a2a_retry_initial_backoff=50ms", "--a2a_retry_max_backoff=500ms",
            "--a2a_delivery_max_attempts=1000"};
  }

  // A replica with its data dir `name`; on `port` when given (a replica started again where its
  // clients look for it).
  std::unique_ptr<CoordinatorProcess> StartReplica(const std::string& name, int port = 0) {
    std::vector<std::string> flags = Flags();
    if (port != 0) flags.push_back(absl::StrCat("--listen=127.0.0.1:", port));
    absl::StatusOr<std::unique_ptr<CoordinatorProcess>> r =
        CoordinatorProcess::Start(dir_.Sub(name), flags);
    EXPECT_OK(r);
    return r.ok() ? *std::move(r) : nullptr;
  }

  // One client's loop until `stop_`: a command recorded in its own context, and every few
  // rounds a work item claimed and completed and a message sent to the echo agent. A call that
  // fails (a replica or member just died) is sent again with the same request id or lease, so
  // an outcome that was lost is never applied twice.
  void Client(int id, std::shared_ptr<grpc::Channel> channel) {
    auto contexts = v1::ContextService::NewStub(channel);
    auto work = v1::WorkService::NewStub(channel);
    auto a2a = a2apb::A2AService::NewStub(channel);
    const std::string context_id = absl::StrCat("ctx-", id);
    for (int round = 0; !stop_.load(); ++round) {
      v1::RecordCommandRequest record;
      record.set_context_id(context_id);
      record.set_command(absl::StrCat("cmd ", round));
      record.set_request_id(absl::StrCat(id, "-", round));
      if (Retry([&] {
            v1::RecordCommandResponse response;
            return contexts->RecordCommand(Ctx().get(), record, &response);
          })) {
        absl::MutexLock lock(&acks_.mu);
        acks_.commands[context_id].insert(record.command());
      }
      if (round % 4 == 0) ClaimAndComplete(id, work.get());
      if (round % 8 == 0) {
        a2apb::SendMessageRequest send;
        send.set_tenant("echo");
        send.mutable_message()->set_message_id(absl::StrCat("m-", id, "-", round));
        send.mutable_message()->set_role(a2apb::ROLE_USER);
        send.mutable_message()->add_parts()->set_text(absl::StrCat("hello ", id, "-", round));
        send.mutable_configuration()->set_return_immediately(true);
        a2apb::SendMessageResponse response;
        grpc::Status s = a2a->SendMessage(Ctx().get(), send, &response);
        if (s.ok()) {
          absl::MutexLock lock(&acks_.mu);
          acks_.a2a_tasks.push_back(response.task().id());
        }
      }
    }
  }

  void ClaimAndComplete(int id, v1::WorkService::Stub* work) {
    v1::ClaimRequest claim;
    claim.set_run_id("load");
    claim.set_worker_id(absl::StrCat("w", id));
    v1::ClaimResponse claimed;
    grpc::Status s = work->Claim(Ctx().get(), claim, &claimed);
    // A claim whose answer was lost leaves an item held by this worker: the lease expires and
    // the item goes back, which the checks allow (a second epoch after the first ended).
    if (!s.ok() || !claimed.has_item()) return;
    {
      absl::MutexLock lock(&acks_.mu);
      acks_.claims[claimed.item().item_id()].insert(claimed.epoch());
    }
    v1::CompleteRequest complete;
    complete.set_lease(claimed.lease());
    complete.set_summary("done");
    grpc::Status done;
    const bool completed = Retry(
        [&] {
          v1::WorkItem item;
          done = work->Complete(Ctx().get(), complete, &item);
          return done;
        },
        /*give_up_on=*/grpc::StatusCode::FAILED_PRECONDITION);
    absl::MutexLock lock(&acks_.mu);
    if (completed) {
      acks_.completions[claimed.item().item_id()].insert(claimed.epoch());
    } else {
      ++acks_.claim_refusals;
    }
  }

  // Calls `call` until it succeeds (true), fails with `give_up_on` (false), or kProcessWait passes.
  template <typename Call>
  static bool Retry(Call call, grpc::StatusCode give_up_on = grpc::StatusCode::OK) {
    const absl::Time deadline = absl::Now() + kProcessWait;
    while (absl::Now() < deadline) {
      grpc::Status s = call();
      if (s.ok()) return true;
      if (give_up_on != grpc::StatusCode::OK && s.error_code() == give_up_on) return false;
      absl::SleepFor(absl::Milliseconds(50));
    }
    ADD_FAILURE() << "a call kept failing for " << kProcessWait;
    return false;
  }

  // What a replica's /metrics says of coordinator_background_jobs_leader; none when it does not
  // answer.
  static std::optional<bool> LeaderGauge(int http_port) {
    httplib::Client http("127.0.0.1", http_port);
    http.set_connection_timeout(std::chrono::seconds(2));
    http.set_read_timeout(std::chrono::seconds(5));
    httplib::Result r = http.Get("/metrics");
    if (!r || r->status != 200) return std::nullopt;
    if (r->body.find("\ncoordinator_background_jobs_leader 1") != std::string::npos) return true;
    if (r->body.find("\ncoordinator_background_jobs_leader 0") != std::string::npos) return false;
    return std::nullopt;
  }
  static bool RunsBackgroundJobs(CoordinatorProcess& replica) {
    absl::StatusOr<int> port = replica.HttpPort();
    return port.ok() && LeaderGauge(*port).value_or(false);
  }

  // Samples the leader gauge of every live replica until `stop_sampling_`. A replica counts as
  // leading in a sample when it says so both on a pass over the replicas and on the pass back
  // in the reverse order: two replicas counted together then both said 1 at one moment between
  // the passes, whatever the time each answer took (the role moves only after a lease of whole
  // seconds runs out, never twice within one sample).
  void SampleLeaders() {
    while (!stop_sampling_.load()) {
      std::map<std::string, int> live;
      {
        absl::MutexLock lock(&samples_.mu);
        live = samples_.live;
      }
      std::map<std::string, int> said;
      for (const auto& [name, port] : live) said[name] += LeaderGauge(port).value_or(false);
      for (auto it = live.rbegin(); it != live.rend(); ++it) {
        said[it->first] += LeaderGauge(it->second).value_or(false);
      }
      std::vector<std::string> leaders;
      for (const auto& [name, times] : said) {
        if (times == 2) leaders.push_back(name);
      }
      {
        absl::MutexLock lock(&samples_.mu);
        ++samples_.taken;
        if (leaders.size() > 1) samples_.doubles.push_back(absl::StrJoin(leaders, "+"));
      }
      absl::SleepFor(kSampleEvery);
    }
  }
  void SetLive(const std::string& name, std::optional<int> http_port) {
    absl::MutexLock lock(&samples_.mu);
    if (http_port.has_value()) {
      samples_.live[name] = *http_port;
    } else {
      samples_.live.erase(name);
    }
  }

  TempDir dir_;
  std::unique_ptr<EtcdCluster> cluster_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> stop_sampling_{false};
  Acks acks_;
  LeaderSamples samples_;
};

TEST_F(EtcdFailoverTest, SixteenClientsLoseNothingWhenAMemberAndTheJobReplicaDie) {
  const std::string names[2] = {"a", "b"};
  std::unique_ptr<CoordinatorProcess> replicas[2] = {StartReplica(names[0]),
                                                     StartReplica(names[1])};
  ASSERT_NE(replicas[0], nullptr);
  ASSERT_NE(replicas[1], nullptr);
  const std::string both = absl::StrCat(replicas[0]->target(), ",", replicas[1]->target());
  absl::StatusOr<std::unique_ptr<Process>> agent =
      Process::Start(BinaryPath("echo_agent"), {"--name=echo", "--coordinator=" + both});
  ASSERT_OK(agent);
  ASSERT_OK((*agent)->WaitForStderrLine("registered with the coordinator", kProcessWait));
  TickerAgent ticker;
  ASSERT_OK(ticker.Start());
  {
    v1::RegisterAgentRequest request;
    request.mutable_agent()->set_name("ticker");
    request.mutable_agent()->set_endpoint(ticker.endpoint());
    v1::Agent registered;
    grpc::Status s = v1::AgentRegistry::NewStub(Channel({replicas[0]->target()}))
                         ->RegisterAgent(Ctx().get(), request, &registered);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  // /metrics of both replicas, sampled from now to the end.
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<int> http_port = replicas[i]->HttpPort();
    ASSERT_OK(http_port);
    SetLive(names[i], *http_port);
  }
  std::thread sampler([this] { SampleLeaders(); });
  const AtExit stop_sampler([&] {
    stop_sampling_ = true;
    sampler.join();
  });

  // The replica that will die runs the background jobs; the other is watched.
  int victim = 0;
  ASSERT_TRUE(WaitFor(
      [&] {
        for (int i = 0; i < 2; ++i) {
          if (RunsBackgroundJobs(*replicas[i])) {
            victim = i;
            return true;
          }
        }
        return false;
      },
      kProcessWait))
      << "no replica says it runs the background jobs";
  CoordinatorProcess& survivor = *replicas[1 - victim];
  auto on_survivor = Channel({survivor.target()});
  auto work_on_survivor = v1::WorkService::NewStub(on_survivor);
  auto a2a_on_survivor = a2apb::A2AService::NewStub(on_survivor);

  v1::CreateRunRequest create;
  create.mutable_run()->set_run_id("load");
  create.mutable_run()->set_kind(v1::RUN_KIND_WORKSTREAMS);
  // An item whose lease is lost is claimable again at once, so the test sees it reassigned.
  create.mutable_run()->mutable_retry_policy()->set_max_attempts(10);
  create.mutable_run()->mutable_retry_policy()->mutable_backoff_base()->set_nanos(100'000'000);
  for (int i = 0; i < kItems; ++i) create.add_items()->set_item_id(absl::StrCat("item-", i));
  v1::Run run;
  {
    grpc::Status s = work_on_survivor->CreateRun(Ctx().get(), create, &run);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  for (int id = 0; id < kClients; ++id) {
    v1::CreateContextRequest context;
    context.mutable_context()->set_context_id(absl::StrCat("ctx-", id));
    context.mutable_context()->set_agent("load");
    v1::TaskContext created;
    ASSERT_TRUE(v1::ContextService::NewStub(on_survivor)
                    ->CreateContext(Ctx().get(), context, &created)
                    .ok());
  }

  // On the survivor: a watch of the run, recording every event of every item.
  grpc::ClientContext watch_context;
  watch_context.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(5));
  v1::WatchRunRequest watch;
  watch.set_run_id("load");
  auto watch_reader = work_on_survivor->WatchRun(&watch_context, watch);
  absl::Mutex watch_mu;
  std::map<std::string, std::vector<Seen>> watched;  // guarded by watch_mu
  std::atomic<bool> watch_ended{false};
  std::thread watcher([&] {
    v1::RunEvent event;
    while (watch_reader->Read(&event)) {
      if (!event.has_item()) continue;
      const v1::WorkItem& item = event.item();
      absl::MutexLock lock(&watch_mu);
      watched[item.item_id()].push_back(
          {event.type(), item.status(), item.epoch(), item.version(), item.worker_id()});
    }
    watch_ended = true;
  });
  const AtExit stop_watcher([&] {
    watch_context.TryCancel();
    if (watcher.joinable()) watcher.join();
  });
  auto last_watched_version = [&](const std::string& item) -> int64_t {
    absl::MutexLock lock(&watch_mu);
    auto it = watched.find(item);
    return it == watched.end() || it->second.empty() ? 0 : it->second.back().version;
  };

  // A worker that claims an item and is never heard of again: the leader's reaper takes the
  // item back when the short lease ends, and a client of the load claims it again.
  v1::ClaimRequest lost_claim;
  lost_claim.set_run_id("load");
  lost_claim.set_worker_id("lost");
  lost_claim.mutable_lease_ttl()->set_seconds(1);
  v1::ClaimResponse lost;
  {
    grpc::Status s = work_on_survivor->Claim(Ctx().get(), lost_claim, &lost);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_TRUE(lost.has_item());
  }
  const std::string lost_item = lost.item().item_id();
  ASSERT_TRUE(WaitFor(
      [&] {
        v1::GetItemRequest get;
        get.set_run_id("load");
        get.set_item_id(lost_item);
        v1::WorkItem item;
        return work_on_survivor->GetItem(Ctx().get(), get, &item).ok() &&
               item.status() == v1::ITEM_STATUS_PENDING;
      },
      kProcessWait))
      << lost_item << " was not taken back from a worker that went silent";

  // On the survivor: a subscription to a task the ticker agent works on until canceled,
  // streaming a chunk every kTickEvery. Its message is delivered by the victim (it runs the
  // deliveries), so the chunks reach the survivor through etcd, then through the survivor's own
  // delivery once it has taken over.
  a2apb::SendMessageRequest hold;
  hold.set_tenant("ticker");
  hold.mutable_message()->set_message_id("hold");
  hold.mutable_message()->set_role(a2apb::ROLE_USER);
  hold.mutable_message()->add_parts()->set_text("tick");
  hold.mutable_configuration()->set_return_immediately(true);
  a2apb::SendMessageResponse held;
  ASSERT_TRUE(a2a_on_survivor->SendMessage(Ctx().get(), hold, &held).ok());
  const std::string held_id = held.task().id();
  ASSERT_TRUE(WaitFor(
      [&] {
        a2apb::GetTaskRequest get;
        get.set_id(held_id);
        a2apb::Task task;
        return a2a_on_survivor->GetTask(Ctx().get(), get, &task).ok() &&
               task.status().state() == a2apb::TASK_STATE_WORKING;
      },
      kProcessWait));
  auto subscribe_context = Ctx(absl::Minutes(5));
  a2apb::SubscribeToTaskRequest subscribe;
  subscribe.set_id(held_id);
  auto subscription = a2a_on_survivor->SubscribeToTask(subscribe_context.get(), subscribe);
  std::vector<a2apb::StreamResponse> streamed;  // read by the test after subscriber ends
  std::thread subscriber([&] {
    a2apb::StreamResponse event;
    while (subscription->Read(&event)) streamed.push_back(event);
  });
  const AtExit stop_subscriber([&] {
    subscribe_context->TryCancel();
    if (subscriber.joinable()) subscriber.join();
  });
  std::atomic<bool> stop_ticking{false};
  std::thread ticking([&] {
    while (!stop_ticking.load()) {
      ticker.Tick();
      absl::SleepFor(kTickEvery);
    }
  });
  const AtExit stop_ticker([&] {
    stop_ticking = true;
    if (ticking.joinable()) ticking.join();
  });

  // The load: half the clients list the victim first, half the survivor.
  std::vector<std::thread> clients;
  for (int id = 0; id < kClients; ++id) {
    const int first_replica = id % 2 == 0 ? victim : 1 - victim;
    clients.emplace_back(
        [this, id,
         channel = Channel({replicas[first_replica]->target(),
                            replicas[1 - first_replica]->target()})] { Client(id, channel); });
  }
  const AtExit stop_clients([&] {
    stop_ = true;
    for (std::thread& client : clients) {
      if (client.joinable()) client.join();
    }
  });
  absl::SleepFor(kPhase);
  ASSERT_OK(cluster_->Kill(0));
  absl::SleepFor(kPhase);
  // The member's death did not move the role: the replica about to die holds it.
  EXPECT_TRUE(RunsBackgroundJobs(*replicas[victim]));
  const int victim_port = replicas[victim]->port();
  SetLive(names[victim], std::nullopt);
  ASSERT_OK(replicas[victim]->Kill());
  absl::SleepFor(kPhase);
  ASSERT_OK(cluster_->Restart(0));
  // The survivor takes the role over (within the election TTL) ...
  ASSERT_TRUE(WaitFor([&] { return RunsBackgroundJobs(survivor); }, kProcessWait))
      << "the survivor never took the background jobs over";
  // ... and the dead replica comes back as it was (data dir, flags, port), as a follower.
  replicas[victim] = StartReplica(names[victim], victim_port);
  ASSERT_NE(replicas[victim], nullptr);
  CoordinatorProcess& restarted = *replicas[victim];
  {
    absl::StatusOr<int> http_port = restarted.HttpPort();
    ASSERT_OK(http_port);
    SetLive(names[victim], *http_port);
  }
  // It serves calls under the load, and sees what was written while it was down. (Its calls
  // wait for the connection: "listening on" came before a loaded machine let it answer one.)
  {
    auto on_restarted = Channel({restarted.target()});
    const auto ready_ctx = [] {
      std::unique_ptr<grpc::ClientContext> c = Ctx();
      c->set_wait_for_ready(true);
      return c;
    };
    v1::RecordCommandRequest record;
    record.set_context_id("ctx-0");
    record.set_command("after the restart");
    record.set_request_id("after-restart");
    v1::RecordCommandResponse recorded;
    grpc::Status s = v1::ContextService::NewStub(on_restarted)
                         ->RecordCommand(ready_ctx().get(), record, &recorded);
    EXPECT_TRUE(s.ok()) << s.error_message();
    if (s.ok()) {
      absl::MutexLock lock(&acks_.mu);  // checked below, read on the survivor
      acks_.commands["ctx-0"].insert(record.command());
    }
    v1::GetRunRequest get_run;
    get_run.set_run_id("load");
    v1::Run seen_run;
    s = v1::WorkService::NewStub(on_restarted)->GetRun(ready_ctx().get(), get_run, &seen_run);
    EXPECT_TRUE(s.ok()) << s.error_message();
    EXPECT_GT(seen_run.counts().done(), 0);
    a2apb::GetTaskRequest get_task;
    get_task.set_id(held_id);
    a2apb::Task task;
    s = a2apb::A2AService::NewStub(on_restarted)->GetTask(ready_ctx().get(), get_task, &task);
    EXPECT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(task.status().state(), a2apb::TASK_STATE_WORKING);
  }
  absl::SleepFor(kPhase / 3);
  stop_ = true;
  for (std::thread& client : clients) client.join();
  stop_ticking = true;
  ticking.join();

  // The background jobs never ran on two replicas at once, and stayed with the survivor.
  {
    absl::MutexLock lock(&samples_.mu);
    EXPECT_GT(samples_.taken, 0);
    EXPECT_TRUE(samples_.doubles.empty())
        << samples_.doubles.size() << " of " << samples_.taken
        << " samples had two leaders: " << absl::StrJoin(samples_.doubles, ", ");
  }
  EXPECT_TRUE(RunsBackgroundJobs(survivor));
  EXPECT_FALSE(RunsBackgroundJobs(restarted));

  absl::MutexLock lock(&acks_.mu);
  // Every acknowledged command is stored exactly once, in its context.
  auto contexts = v1::ContextService::NewStub(on_survivor);
  int64_t acknowledged = 0;
  for (const auto& [context_id, commands] : acks_.commands) {
    std::multiset<std::string> stored;
    v1::ListCommandsRequest list;
    list.set_context_id(context_id);
    list.set_page_size(1000);
    do {
      v1::ListCommandsResponse page;
      ASSERT_TRUE(contexts->ListCommands(Ctx().get(), list, &page).ok());
      for (const v1::CommandRecord& c : page.commands()) stored.insert(c.command());
      list.set_page_token(page.next_page_token());
    } while (!list.page_token().empty());
    for (const std::string& command : commands) {
      EXPECT_EQ(stored.count(command), 1u) << context_id << ": " << command;
    }
    acknowledged += static_cast<int64_t>(commands.size());
  }
  EXPECT_GT(acknowledged, kClients);

  // No item was held under two leases at once: an item completed once, under one epoch; one
  // claimed again had its earlier lease end (the claim's answer was lost, then it expired).
  int completed = 0;
  for (const auto& [item, epochs] : acks_.completions) {
    EXPECT_EQ(epochs.size(), 1u) << item << " was completed under two leases";
    ++completed;
  }
  EXPECT_GT(completed, 0);

  // The survivor's watch saw every change of every item, through both deaths: from the
  // snapshot to the item as stored now, each version once and in order, each a change the
  // work model allows (a claim starts the next epoch from pending; the holder completes, or
  // the reaper takes the item back, in the same epoch; nothing follows done).
  std::map<std::string, v1::WorkItem> stored_items;
  {
    v1::ListItemsRequest list;
    list.set_run_id("load");
    list.set_page_size(1000);
    do {
      v1::ListItemsResponse page;
      grpc::Status s = work_on_survivor->ListItems(Ctx().get(), list, &page);
      ASSERT_TRUE(s.ok()) << s.error_message();
      for (const v1::WorkItem& item : page.items()) stored_items[item.item_id()] = item;
      list.set_page_token(page.next_page_token());
    } while (!list.page_token().empty());
  }
  ASSERT_EQ(stored_items.size(), static_cast<size_t>(kItems));
  EXPECT_TRUE(WaitFor(
      [&] {
        for (const auto& [id, item] : stored_items) {
          if (last_watched_version(id) < item.version()) return false;
        }
        return true;
      },
      kProcessWait))
      << "the watch did not catch up with the stored items";
  EXPECT_FALSE(watch_ended.load()) << "the watch on the survivor ended by itself";
  watch_context.TryCancel();
  watcher.join();
  int reassigned = 0;
  for (const auto& [id, item] : stored_items) {
    const std::vector<Seen>& seen = watched[id];
    ASSERT_FALSE(seen.empty()) << id;
    EXPECT_EQ(seen.front().type, v1::RunEvent::TYPE_SNAPSHOT) << id;
    EXPECT_EQ(seen.front().status, v1::ITEM_STATUS_PENDING) << id;
    std::map<int64_t, Seen> by_epoch_running;
    for (size_t i = 1; i < seen.size(); ++i) {
      const Seen& before = seen[i - 1];
      const Seen& now = seen[i];
      ASSERT_EQ(now.type, v1::RunEvent::TYPE_CHANGED) << id << ": " << Describe(seen);
      ASSERT_EQ(now.version, before.version + 1)
          << id << ": a change missing or out of order: " << Describe(seen);
      const bool claimed = before.status == v1::ITEM_STATUS_PENDING &&
                           now.status == v1::ITEM_STATUS_RUNNING && now.epoch == before.epoch + 1;
      const bool ended =
          before.status == v1::ITEM_STATUS_RUNNING && now.epoch == before.epoch &&
          (now.status == v1::ITEM_STATUS_DONE || now.status == v1::ITEM_STATUS_PENDING);
      ASSERT_TRUE(claimed || ended) << id << ": not a change the work model makes, at v"
                                    << now.version << ": " << Describe(seen);
      if (now.status == v1::ITEM_STATUS_RUNNING) by_epoch_running[now.epoch] = now;
    }
    // The watch reached the item as stored.
    const int64_t stored_version = item.version();
    const auto at = std::find_if(seen.begin(), seen.end(),
                                 [&](const Seen& s) { return s.version == stored_version; });
    ASSERT_TRUE(at != seen.end()) << id << " stored at v" << item.version() << ": "
                                  << Describe(seen);
    EXPECT_EQ(at->status, item.status()) << id;
    EXPECT_EQ(at->epoch, item.epoch()) << id;
    // Every acknowledged claim and completion is in it, and a completion is the end.
    if (auto claims = acks_.claims.find(id); claims != acks_.claims.end()) {
      for (int64_t epoch : claims->second) {
        EXPECT_EQ(by_epoch_running.count(epoch), 1u)
            << id << ": claim of epoch " << epoch << " not watched: " << Describe(seen);
      }
    }
    if (auto done = acks_.completions.find(id); done != acks_.completions.end()) {
      EXPECT_EQ(at->status, v1::ITEM_STATUS_DONE) << id << ": " << Describe(seen);
      EXPECT_EQ(at->epoch, *done->second.begin()) << id << ": " << Describe(seen);
    }
    if (by_epoch_running.size() > 1) ++reassigned;
  }
  // The silent worker's item shows it: held by "lost", taken back, claimed by a client.
  {
    const std::vector<Seen>& seen = watched[lost_item];
    ASSERT_GE(seen.size(), 4u) << lost_item << ": " << Describe(seen);
    EXPECT_EQ(seen[1].status, v1::ITEM_STATUS_RUNNING) << Describe(seen);
    EXPECT_EQ(seen[1].worker, "lost") << Describe(seen);
    EXPECT_EQ(seen[2].status, v1::ITEM_STATUS_PENDING) << Describe(seen);
    EXPECT_EQ(seen[3].status, v1::ITEM_STATUS_RUNNING) << Describe(seen);
    EXPECT_NE(seen[3].worker, "lost") << Describe(seen);
  }
  EXPECT_GE(reassigned, 1);

  // Every message acknowledged was delivered and answered.
  for (const std::string& task_id : acks_.a2a_tasks) {
    a2apb::Task task;
    EXPECT_TRUE(WaitFor(
        [&] {
          a2apb::GetTaskRequest get;
          get.set_id(task_id);
          return a2a_on_survivor->GetTask(Ctx().get(), get, &task).ok() &&
                 task.status().state() == a2apb::TASK_STATE_COMPLETED;
        },
        kProcessWait))
        << task_id << ": " << task.DebugString();
  }
  EXPECT_FALSE(acks_.a2a_tasks.empty());

  // The held task: the coordinator stores every chunk the agent streamed (the new leader read
  // back the ones streamed into the dead replica's call), then the task is canceled.
  const std::vector<std::string> agent_tasks = ticker.task_ids();
  ASSERT_EQ(agent_tasks.size(), 1u)
      << "the message reached the agent as a new task again: " << absl::StrJoin(agent_tasks, ", ");
  const int ticks = ticker.ticks(agent_tasks[0]);
  EXPECT_GT(ticks, 0);
  std::vector<std::string> expected;
  for (int i = 0; i < ticks; ++i) expected.push_back(absl::StrCat(i));
  auto parts_of = [](const a2apb::Artifact& artifact) {
    std::vector<std::string> texts;
    for (const a2apb::Part& part : artifact.parts()) texts.push_back(part.text());
    return texts;
  };
  a2apb::Task stored_task;
  EXPECT_TRUE(WaitFor(
      [&] {
        a2apb::GetTaskRequest get;
        get.set_id(held_id);
        return a2a_on_survivor->GetTask(Ctx().get(), get, &stored_task).ok() &&
               stored_task.artifacts_size() == 1 && stored_task.artifacts(0).parts_size() == ticks;
      },
      kProcessWait))
      << stored_task.DebugString();
  a2apb::CancelTaskRequest cancel;
  cancel.set_id(held_id);
  a2apb::Task canceled;
  grpc::Status s = a2a_on_survivor->CancelTask(Ctx().get(), cancel, &canceled);
  EXPECT_TRUE(s.ok()) << s.error_message();
  subscriber.join();
  s = subscription->Finish();
  EXPECT_TRUE(s.ok()) << s.error_message();

  // The subscription on the survivor outlived both deaths and got every chunk, in order, as a
  // client applies them (append adds the parts, otherwise the artifact is replaced, as it is when
  // the new leader stores the task it read back: each replacement must extend what came before),
  // then the end.
  ASSERT_FALSE(streamed.empty());
  ASSERT_TRUE(streamed.front().has_task());
  std::vector<std::string> chunks;
  bool replaced_with_less = false;
  auto apply = [&](const a2apb::Artifact& artifact, bool append) {
    if (artifact.artifact_id() != TickerAgent::kArtifact) return;
    std::vector<std::string> parts = parts_of(artifact);
    if (append) {
      chunks.insert(chunks.end(), parts.begin(), parts.end());
      return;
    }
    if (parts.size() < chunks.size() || !std::equal(chunks.begin(), chunks.end(), parts.begin())) {
      replaced_with_less = true;
    }
    chunks = std::move(parts);
  };
  std::vector<a2apb::TaskState> states;
  for (const a2apb::StreamResponse& event : streamed) {
    if (event.has_task()) {
      for (const a2apb::Artifact& artifact : event.task().artifacts()) apply(artifact, false);
      states.push_back(event.task().status().state());
    }
    if (event.has_artifact_update()) {
      apply(event.artifact_update().artifact(), event.artifact_update().append());
    }
    if (event.has_status_update()) states.push_back(event.status_update().status().state());
  }
  EXPECT_FALSE(replaced_with_less) << "a chunk went missing or came out of order";
  EXPECT_EQ(chunks, expected);
  ASSERT_TRUE(streamed.back().has_status_update());
  EXPECT_EQ(streamed.back().status_update().status().state(), a2apb::TASK_STATE_CANCELED);
  for (size_t i = 0; i + 1 < states.size(); ++i) {
    EXPECT_EQ(states[i], a2apb::TASK_STATE_WORKING) << "state " << i << " of " << states.size();
  }
  EXPECT_EQ(parts_of(stored_task.artifacts(0)), expected);
}

}  // namespace
