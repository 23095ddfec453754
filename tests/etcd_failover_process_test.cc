// Issue 21's failover test: 16 clients load two coordinator replicas on one etcd cluster of the
// test's own (contexts' commands, work items claimed and completed, A2A messages to an echo
// agent), while one etcd member is killed, then the replica that runs the background jobs, and
// both come back. Nothing acknowledged may be lost or applied twice, no work item may be held
// under two leases at once, a WatchRun and an A2A subscription on the surviving replica miss
// nothing, and the queued A2A messages are all delivered. Runs as etcd.EtcdFailoverTest.* (the
// etcd label); the cluster is its own because it kills a member.
#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "a2a/v1/a2a.grpc.pb.h"
#include "a2a_protocol/version.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "coordinator/v1/context.grpc.pb.h"
#include "coordinator/v1/work.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "storage/testing/test_store.h"
#include "tests/a2a_test_util.h"
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
constexpr absl::Duration kWait = absl::Seconds(60);

using testing_util::WaitFor;

std::unique_ptr<grpc::ClientContext> Ctx(absl::Duration timeout = absl::Seconds(10)) {
  auto c = std::make_unique<grpc::ClientContext>();
  c->set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(timeout));
  a2a_protocol::AddVersion(c.get());
  return c;
}

// A channel over several replicas, in the order given (pick_first moves on when one is down).
std::shared_ptr<grpc::Channel> Channel(const std::vector<std::string>& targets) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
  return grpc::CreateCustomChannel("ipv4:" + absl::StrJoin(targets, ","),
                                   grpc::InsecureChannelCredentials(), args);
}

// What the clients saw acknowledged, for the checks at the end.
struct Acks {
  absl::Mutex mu;
  std::map<std::string, std::set<std::string>> commands ABSL_GUARDED_BY(mu);  // context -> texts
  std::map<std::string, std::set<int64_t>> claims ABSL_GUARDED_BY(mu);        // item -> epochs
  std::map<std::string, std::set<int64_t>> completions ABSL_GUARDED_BY(mu);   // item -> epochs
  std::vector<std::string> a2a_tasks ABSL_GUARDED_BY(mu);
  int claim_refusals ABSL_GUARDED_BY(mu) = 0;
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

  std::unique_ptr<CoordinatorProcess> StartReplica(const std::string& name) {
    absl::StatusOr<std::unique_ptr<CoordinatorProcess>> r =
        CoordinatorProcess::Start(dir_.Sub(name), Flags());
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

  // Calls `call` until it succeeds (true), fails with `give_up_on` (false), or kWait passes.
  template <typename Call>
  static bool Retry(Call call, grpc::StatusCode give_up_on = grpc::StatusCode::OK) {
    const absl::Time deadline = absl::Now() + kWait;
    while (absl::Now() < deadline) {
      grpc::Status s = call();
      if (s.ok()) return true;
      if (give_up_on != grpc::StatusCode::OK && s.error_code() == give_up_on) return false;
      absl::SleepFor(absl::Milliseconds(50));
    }
    ADD_FAILURE() << "a call kept failing for " << kWait;
    return false;
  }

  // Which replica runs the background jobs: the one whose /metrics says so.
  static bool RunsBackgroundJobs(CoordinatorProcess& replica) {
    absl::StatusOr<int> port = replica.HttpPort();
    if (!port.ok()) return false;
    httplib::Client http("127.0.0.1", *port);
    httplib::Result r = http.Get("/metrics");
    return r && r->status == 200 &&
           r->body.find("\ncoordinator_background_jobs_leader 1") != std::string::npos;
  }

  TempDir dir_;
  std::unique_ptr<EtcdCluster> cluster_;
  std::atomic<bool> stop_{false};
  Acks acks_;
};

TEST_F(EtcdFailoverTest, SixteenClientsLoseNothingWhenAMemberAndTheJobReplicaDie) {
  std::unique_ptr<CoordinatorProcess> replicas[2] = {StartReplica("a"), StartReplica("b")};
  ASSERT_NE(replicas[0], nullptr);
  ASSERT_NE(replicas[1], nullptr);
  const std::string both = absl::StrCat(replicas[0]->target(), ",", replicas[1]->target());
  absl::StatusOr<std::unique_ptr<Process>> agent =
      Process::Start(BinaryPath("echo_agent"), {"--name=echo", "--coordinator=" + both});
  ASSERT_OK(agent);
  ASSERT_OK((*agent)->WaitForStderrLine("registered with the coordinator", kWait));

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
      kWait))
      << "no replica says it runs the background jobs";
  CoordinatorProcess& survivor = *replicas[1 - victim];
  auto on_survivor = Channel({survivor.target()});

  v1::CreateRunRequest create;
  create.mutable_run()->set_run_id("load");
  create.mutable_run()->set_kind(v1::RUN_KIND_WORKSTREAMS);
  for (int i = 0; i < kItems; ++i) create.add_items()->set_item_id(absl::StrCat("item-", i));
  v1::Run run;
  ASSERT_TRUE(v1::WorkService::NewStub(on_survivor)->CreateRun(Ctx().get(), create, &run).ok());
  for (int id = 0; id < kClients; ++id) {
    v1::CreateContextRequest context;
    context.mutable_context()->set_context_id(absl::StrCat("ctx-", id));
    context.mutable_context()->set_agent("load");
    v1::TaskContext created;
    ASSERT_TRUE(v1::ContextService::NewStub(on_survivor)
                    ->CreateContext(Ctx().get(), context, &created)
                    .ok());
  }

  // On the survivor: a watch of the run, and a subscription to a task the agent holds open.
  grpc::ClientContext watch_context;
  watch_context.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(5));
  v1::WatchRunRequest watch;
  watch.set_run_id("load");
  auto work_on_survivor = v1::WorkService::NewStub(on_survivor);
  auto watch_reader = work_on_survivor->WatchRun(&watch_context, watch);
  std::map<std::string, v1::ItemStatus> watched;
  std::thread watcher([&] {
    v1::RunEvent event;
    while (watch_reader->Read(&event)) {
      if (event.has_item()) watched[event.item().item_id()] = event.item().status();
    }
  });
  auto a2a_on_survivor = a2apb::A2AService::NewStub(on_survivor);
  a2apb::SendMessageRequest hold;
  hold.set_tenant("echo");
  hold.mutable_message()->set_message_id("hold");
  hold.mutable_message()->set_role(a2apb::ROLE_USER);
  hold.mutable_message()->add_parts()->set_text("hold");
  hold.mutable_configuration()->set_return_immediately(true);
  a2apb::SendMessageResponse held;
  ASSERT_TRUE(a2a_on_survivor->SendMessage(Ctx().get(), hold, &held).ok());
  ASSERT_TRUE(WaitFor(
      [&] {
        a2apb::GetTaskRequest get;
        get.set_id(held.task().id());
        a2apb::Task task;
        return a2a_on_survivor->GetTask(Ctx().get(), get, &task).ok() &&
               task.status().state() == a2apb::TASK_STATE_WORKING;
      },
      kWait));
  auto subscribe_context = Ctx(absl::Minutes(5));
  a2apb::SubscribeToTaskRequest subscribe;
  subscribe.set_id(held.task().id());
  auto subscription = a2a_on_survivor->SubscribeToTask(subscribe_context.get(), subscribe);
  a2apb::StreamResponse first;
  ASSERT_TRUE(subscription->Read(&first));

  // The load: half the clients list the victim first, half the survivor.
  std::vector<std::thread> clients;
  for (int id = 0; id < kClients; ++id) {
    const int first_replica = id % 2 == 0 ? victim : 1 - victim;
    clients.emplace_back(
        [this, id,
         channel = Channel({replicas[first_replica]->target(),
                            replicas[1 - first_replica]->target()})] { Client(id, channel); });
  }
  absl::SleepFor(kPhase);
  ASSERT_OK(cluster_->Kill(0));
  absl::SleepFor(kPhase);
  ASSERT_OK(replicas[victim]->Kill());
  absl::SleepFor(kPhase);
  ASSERT_OK(cluster_->Restart(0));
  std::unique_ptr<CoordinatorProcess> again = StartReplica("again");
  ASSERT_NE(again, nullptr);
  absl::SleepFor(kPhase);
  stop_ = true;
  for (std::thread& client : clients) client.join();

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
  // Every completion reached the survivor's watch, through both deaths.
  watch_context.TryCancel();
  watcher.join();
  for (const auto& [item, epochs] : acks_.completions) {
    EXPECT_EQ(watched[item], v1::ITEM_STATUS_DONE) << item;
  }

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
        kWait))
        << task_id << ": " << task.DebugString();
  }
  EXPECT_FALSE(acks_.a2a_tasks.empty());

  // The subscription on the survivor outlived both deaths and sees the task end.
  a2apb::CancelTaskRequest cancel;
  cancel.set_id(held.task().id());
  a2apb::Task canceled;
  grpc::Status s = a2a_on_survivor->CancelTask(Ctx().get(), cancel, &canceled);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(testing_util::ReadToEndForLastState(*subscription), a2apb::TASK_STATE_CANCELED);
  EXPECT_TRUE(subscription->Finish().ok());
}

}  // namespace
