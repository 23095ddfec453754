// The replica feed (replica_feed.h): first what each kind of committed key tells whom, on
// changes built here (both backends: no cluster needed); then two coordinator replicas on one
// etcd prefix, in process, where a stream on one replica must see what the other wrote (etcd
// only: those run as etcd.ReplicaFeedAcrossReplicas.*).
#include "coordinator/replica_feed.h"

#include <memory>
#include <string>
#include <vector>

#include "a2a/v1/a2a.grpc.pb.h"
#include "a2a_protocol/version.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "agent_runtime/agent_runtime.h"
#include "agent_runtime/echo_agent.h"
#include "coordinator/server.h"
#include "coordinator/store/records/keys.h"
#include "coordinator/store/records/record_codec.h"
#include "coordinator/v1/work.grpc.pb.h"
#include "gtest/gtest.h"
#include "storage/testing/test_store.h"
#include "tests/a2a_test_util.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

using storage::ColumnFamily;
using storage::EtcdChange;

constexpr absl::Duration kWait = absl::Seconds(30);

using testing_util::WaitFor;

EtcdChange Put(ColumnFamily cf, std::string key, std::string value, int64_t revision) {
  EtcdChange change;
  change.cf = cf;
  change.key = std::move(key);
  change.value = std::move(value);
  change.revision = revision;
  return change;
}

EtcdChange Delete(ColumnFamily cf, std::string key, int64_t revision) {
  EtcdChange change;
  change.cf = cf;
  change.key = std::move(key);
  change.revision = revision;
  return change;
}

// Records what a WorkNotifier delivers.
class RecordingWatcher : public WorkWatcher {
 public:
  void OnEvent(const v1::RunEvent& event) override {
    absl::MutexLock lock(&mu_);
    events_.push_back(event);
  }
  void OnClose(const absl::Status& status) override {
    absl::MutexLock lock(&mu_);
    closed_ = status;
  }
  std::vector<v1::RunEvent> events() {
    absl::MutexLock lock(&mu_);
    return events_;
  }
  std::optional<absl::Status> closed() {
    absl::MutexLock lock(&mu_);
    return closed_;
  }

 private:
  absl::Mutex mu_;
  std::vector<v1::RunEvent> events_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Status> closed_ ABSL_GUARDED_BY(mu_);
};

class ReplicaFeedTest : public ::testing::Test {
 protected:
  ReplicaFeedTest()
      : feed_(ReplicaFeedListeners{&a2a_, nullptr, &work_, &console_},
              [this](int64_t revision) { return revision == own_revision_; }) {}

  // The console's changes after `after`, as (kind, id) pairs.
  std::vector<std::pair<std::string, std::string>> ConsoleChanges(int64_t after = 0) {
    ConsoleFeed::Batch batch = console_.Wait(after, absl::ZeroDuration());
    std::vector<std::pair<std::string, std::string>> out;
    for (const ConsoleChange& change : batch.changes) out.emplace_back(change.kind, change.id);
    return out;
  }

  TaskNotifier a2a_;
  WorkNotifier work_;
  ConsoleFeed console_;
  int64_t own_revision_ = -1;
  ReplicaFeed feed_;
};

TEST_F(ReplicaFeedTest, AnA2ATaskEventWakesItsListenersOncePerCommit) {
  int woken = 0;
  int other = 0;
  a2a_.Subscribe("t1", [&woken] { ++woken; });
  a2a_.Subscribe("t2", [&other] { ++other; });
  // Two events and the header of t1 in one commit: one wake-up.
  feed_.Apply(
      {Put(ColumnFamily::kA2A, keys::A2ATaskSeqRecord("t1", keys::kA2ATaskEvent, 1), "e", 10),
       Put(ColumnFamily::kA2A, keys::A2ATaskSeqRecord("t1", keys::kA2ATaskEvent, 2), "e", 10),
       Put(ColumnFamily::kA2A, keys::A2ATaskHeader("t1"), "h", 10)});
  EXPECT_EQ(woken, 1);
  EXPECT_EQ(other, 0);
  // The history alone (no event) wakes nobody: listeners follow the event log.
  feed_.Apply(
      {Put(ColumnFamily::kA2A, keys::A2ATaskSeqRecord("t1", keys::kA2ATaskHistory, 1), "m", 11)});
  EXPECT_EQ(woken, 1);
  EXPECT_EQ(feed_.applied(), 2);
}

TEST_F(ReplicaFeedTest, QueuedWebhooksWakeThePushListener) {
  int pushes = 0;
  a2a_.SetPushListener([&pushes] { ++pushes; });
  feed_.Apply({Put(ColumnFamily::kA2A, keys::A2APushPending("t1", 3, "cfg"), "p", 5)});
  EXPECT_EQ(pushes, 1);
  // A sent webhook leaves the queue: nothing new to send.
  feed_.Apply({Delete(ColumnFamily::kA2A, keys::A2APushPending("t1", 3, "cfg"), 6)});
  EXPECT_EQ(pushes, 1);
  a2a_.SetPushListener(nullptr);
}

TEST_F(ReplicaFeedTest, AnItemChangeReachesTheRunsWatchersWithTheRunOfTheSameCommit) {
  RecordingWatcher run_watcher;
  RecordingWatcher all_watcher;
  RecordingWatcher other_run;
  ASSERT_TRUE(work_.Subscribe("r1", &run_watcher));
  ASSERT_TRUE(work_.Subscribe(WorkNotifier::kAllRuns, &all_watcher));
  ASSERT_TRUE(work_.Subscribe("r2", &other_run));
  v1::WorkItem item;
  item.set_run_id("r1");
  item.set_item_id("a");
  item.set_status(v1::ITEM_STATUS_RUNNING);
  item.set_version(4);
  v1::WorkRunRecord header;
  header.mutable_run()->set_run_id("r1");
  header.mutable_run()->set_status(v1::RUN_STATUS_RUNNING);
  feed_.Apply({Put(ColumnFamily::kWork, keys::RunHeader("r1"), EncodeRecord(header), 20),
               Put(ColumnFamily::kWork, keys::RunItem("r1", "a"), EncodeRecord(item), 20),
               Put(ColumnFamily::kWork, keys::RunEvent("r1", 9), "log", 20)});
  ASSERT_EQ(run_watcher.events().size(), 1u);
  const v1::RunEvent event = run_watcher.events()[0];
  EXPECT_EQ(event.type(), v1::RunEvent::TYPE_CHANGED);
  EXPECT_EQ(event.item().item_id(), "a");
  EXPECT_EQ(event.item().version(), 4);
  EXPECT_EQ(event.run().status(), v1::RUN_STATUS_RUNNING);
  EXPECT_EQ(all_watcher.events().size(), 1u);
  EXPECT_TRUE(other_run.events().empty());
  // A change of the run's header or registry alone reaches the console's watcher of all runs.
  feed_.Apply({Put(ColumnFamily::kWork, keys::RunWorker("r1", "w1"), "w", 21)});
  EXPECT_EQ(all_watcher.events().size(), 2u);
  EXPECT_FALSE(all_watcher.events()[1].has_item());
  work_.Unsubscribe(&run_watcher);
  work_.Unsubscribe(&all_watcher);
  work_.Unsubscribe(&other_run);
}

TEST_F(ReplicaFeedTest, ContextsConversationsRetryTasksAndAgentsReachTheConsole) {
  feed_.Apply({Put(ColumnFamily::kContexts, keys::ContextHeader("c1"), "h", 30),
               Put(ColumnFamily::kContexts, keys::CommandRecord("c1", 1), "x", 30)});
  feed_.Apply({Put(ColumnFamily::kContexts, keys::ConversationMessage("c1", 1), "m", 31),
               Put(ColumnFamily::kTasks, keys::TaskHeader("retry-1"), "t", 31),
               Put(ColumnFamily::kA2A, keys::A2AAgent("purple"), "a", 31)});
  const auto changes = ConsoleChanges();
  EXPECT_EQ(
      changes,
      (std::vector<std::pair<std::string, std::string>>{
          {"context", "c1"}, {"agent", "purple"}, {"conversation", "c1"}, {"retry", "retry-1"}}));
}

TEST_F(ReplicaFeedTest, ThisReplicasOwnCommitsAreSkipped) {
  int woken = 0;
  a2a_.Subscribe("t1", [&woken] { ++woken; });
  own_revision_ = 40;
  feed_.Apply(
      {Put(ColumnFamily::kA2A, keys::A2ATaskSeqRecord("t1", keys::kA2ATaskEvent, 1), "e", 40)});
  EXPECT_EQ(woken, 0);
  EXPECT_EQ(feed_.skipped_own(), 1);
  feed_.Apply(
      {Put(ColumnFamily::kA2A, keys::A2ATaskSeqRecord("t1", keys::kA2ATaskEvent, 2), "e", 41)});
  EXPECT_EQ(woken, 1);
}

TEST_F(ReplicaFeedTest, KeysThatDoNotParseAndCorruptRecordsAreIgnored) {
  RecordingWatcher watcher;
  ASSERT_TRUE(work_.Subscribe("r1", &watcher));
  feed_.Apply({Put(ColumnFamily::kWork, "", "", 50),
               Put(ColumnFamily::kWork, std::string("\x40\xff\xff", 3), "x", 50),
               Put(ColumnFamily::kWork, keys::RunItem("r1", "a"), "not a record", 50),
               Put(ColumnFamily::kA2A, std::string(1, '\x51'), "x", 50),
               Put(ColumnFamily::kContexts, std::string(5000, '\x10'), "x", 50)});
  // The corrupt item is not sent; the run still counts as changed for the console's watcher.
  for (const v1::RunEvent& event : watcher.events()) EXPECT_FALSE(event.has_item());
  work_.Unsubscribe(&watcher);
}

TEST_F(ReplicaFeedTest, AGapEndsRunWatchesWakesEveryTaskAndResyncsTheConsole) {
  RecordingWatcher run_watcher;
  RecordingWatcher all_watcher;
  ASSERT_TRUE(work_.Subscribe("r1", &run_watcher));
  ASSERT_TRUE(work_.Subscribe(WorkNotifier::kAllRuns, &all_watcher));
  int woken = 0;
  a2a_.Subscribe("t1", [&woken] { ++woken; });
  a2a_.Subscribe("t2", [&woken] { ++woken; });
  console_.Publish("context", "c0");
  const int64_t cursor = console_.last_seq();

  feed_.Gap(77);
  ASSERT_TRUE(run_watcher.closed().has_value());
  EXPECT_EQ(run_watcher.closed()->code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(all_watcher.closed().has_value());
  EXPECT_EQ(woken, 2);
  EXPECT_TRUE(console_.Wait(cursor, absl::ZeroDuration()).resync);
  // The run's watcher was dropped; the notifier still takes new ones.
  RecordingWatcher again;
  EXPECT_TRUE(work_.Subscribe("r1", &again));
  work_.Unsubscribe(&again);
  work_.Unsubscribe(&all_watcher);
}

// ---- Two replicas on one etcd prefix. ----

class ReplicaFeedAcrossReplicas : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!storage::testing::UseEtcd()) GTEST_SKIP() << "etcd only: runs as etcd.ReplicaFeed*";
    for (int i = 0; i < 2; ++i) {
      ServerOptions options;
      options.listen = "127.0.0.1:0";
      options.http_listen = "";
      options.data_dir = dir_.Sub("data");  // one data set: the same etcd prefix
      ASSERT_OK(storage::testing::SetTestServerStore(options.data_dir, &options.store_url,
                                                     &options.etcd));
      options.worker_threads = 4;
      options.gateway.delivery_threads = 4;
      options.gateway.initial_backoff = absl::Milliseconds(20);
      absl::StatusOr<std::unique_ptr<CoordinatorServer>> server = CoordinatorServer::Start(options);
      ASSERT_OK(server);
      servers_[i] = *std::move(server);
      channels_[i] =
          grpc::CreateChannel(servers_[i]->address(), grpc::InsecureChannelCredentials());
    }
  }

  void TearDown() override {
    agent_.reset();
    for (auto& server : servers_) {
      if (server != nullptr) server->Shutdown(absl::Seconds(1));
    }
  }

  static std::unique_ptr<grpc::ClientContext> Context(absl::Duration timeout = kWait) {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(timeout));
    a2a_protocol::AddVersion(context.get());
    return context;
  }

  testing_util::TempDir dir_;
  std::unique_ptr<CoordinatorServer> servers_[2];
  std::shared_ptr<grpc::Channel> channels_[2];
  agent_runtime::EchoAgent echo_;
  std::unique_ptr<agent_runtime::AgentServer> agent_;
};

TEST_F(ReplicaFeedAcrossReplicas, AWatchOnOneReplicaSeesEveryClaimMadeThroughTheOther) {
  auto on_a = v1::WorkService::NewStub(channels_[0]);
  auto on_b = v1::WorkService::NewStub(channels_[1]);
  constexpr int kItems = 20;
  v1::CreateRunRequest create;
  create.mutable_run()->set_run_id("r");
  create.mutable_run()->set_kind(v1::RUN_KIND_WORKSTREAMS);
  for (int i = 0; i < kItems; ++i) create.add_items()->set_item_id(absl::StrCat("ws-", i));
  v1::Run run;
  ASSERT_TRUE(on_a->CreateRun(Context().get(), create, &run).ok());

  grpc::ClientContext watch_context;
  watch_context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  v1::WatchRunRequest watch;
  watch.set_run_id("r");
  auto reader = on_b->WatchRun(&watch_context, watch);
  v1::RunEvent event;
  while (reader->Read(&event) && event.type() != v1::RunEvent::TYPE_SNAPSHOT_END) {
  }
  ASSERT_EQ(event.type(), v1::RunEvent::TYPE_SNAPSHOT_END);

  // Every claim goes through replica A; the stream on B must see each item go RUNNING.
  for (int i = 0; i < kItems; ++i) {
    v1::ClaimRequest claim;
    claim.set_run_id("r");
    claim.set_worker_id(absl::StrCat("w", i));
    v1::ClaimResponse claimed;
    grpc::Status s = on_a->Claim(Context().get(), claim, &claimed);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_TRUE(claimed.has_item());
  }
  std::set<std::string> running;
  while (running.size() < static_cast<size_t>(kItems) && reader->Read(&event)) {
    ASSERT_EQ(event.type(), v1::RunEvent::TYPE_CHANGED);
    if (event.item().status() == v1::ITEM_STATUS_RUNNING) running.insert(event.item().item_id());
  }
  EXPECT_EQ(running.size(), static_cast<size_t>(kItems));
  watch_context.TryCancel();
  reader->Finish();
}

TEST_F(ReplicaFeedAcrossReplicas, ASubscriptionOnOneReplicaSeesATaskEndThroughTheOther) {
  agent_runtime::RuntimeOptions agent_options;
  agent_options.name = "echo";
  agent_options.coordinator = servers_[0]->address();
  absl::StatusOr<std::unique_ptr<agent_runtime::AgentServer>> agent =
      agent_runtime::AgentServer::Start(agent_options, &echo_);
  ASSERT_OK(agent);
  agent_ = *std::move(agent);
  auto on_a = a2apb::A2AService::NewStub(channels_[0]);
  auto on_b = a2apb::A2AService::NewStub(channels_[1]);

  // "hold": the agent works until the task is canceled. Sent through A, which delivers it.
  a2apb::SendMessageRequest send;
  send.set_tenant("echo");
  send.mutable_message()->set_message_id("m-hold");
  send.mutable_message()->set_role(a2apb::ROLE_USER);
  send.mutable_message()->add_parts()->set_text("hold");
  send.mutable_configuration()->set_return_immediately(true);
  a2apb::SendMessageResponse sent;
  grpc::Status s = on_a->SendMessage(Context().get(), send, &sent);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const std::string task_id = sent.task().id();
  ASSERT_TRUE(WaitFor(
      [&] {
        a2apb::GetTaskRequest get;
        get.set_id(task_id);
        a2apb::Task task;
        return on_b->GetTask(Context().get(), get, &task).ok() &&
               task.status().state() == a2apb::TASK_STATE_WORKING;
      },
      kWait));

  // B streams the task; A cancels it; the agent's CANCELED, stored by A, must reach B's stream.
  auto subscribe_context = Context();
  a2apb::SubscribeToTaskRequest subscribe;
  subscribe.set_id(task_id);
  auto reader = on_b->SubscribeToTask(subscribe_context.get(), subscribe);
  a2apb::StreamResponse first;
  ASSERT_TRUE(reader->Read(&first));
  a2apb::CancelTaskRequest cancel;
  cancel.set_id(task_id);
  a2apb::Task canceled;
  s = on_a->CancelTask(Context().get(), cancel, &canceled);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(testing_util::ReadToEndForLastState(*reader), a2apb::TASK_STATE_CANCELED);
  EXPECT_TRUE(reader->Finish().ok());
}

}  // namespace
}  // namespace coordinator
