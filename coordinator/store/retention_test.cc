// Retention (garbage collection of records that ended long ago) and the context export, on a
// real RocksStore with the real domain stores writing the records.
#include "coordinator/store/retention.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "coordinator/store/a2a/tasks.h"
#include "coordinator/store/contexts/context_store.h"
#include "coordinator/store/contexts/conversation_store.h"
#include "coordinator/store/exporter.h"
#include "coordinator/store/records/keys.h"
#include "coordinator/store/retry/task_state_store.h"
#include "coordinator/store/work/work_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/key_codec.h"
#include "storage/rocks_store.h"
#include "storage/testing/test_store.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

using storage::ColumnFamily;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;
using ::testing_util::TempDir;

constexpr ColumnFamily kDataFamilies[] = {ColumnFamily::kContexts, ColumnFamily::kIndex,
                                          ColumnFamily::kTasks, ColumnFamily::kA2A,
                                          ColumnFamily::kWork};

class RetentionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<storage::Store>> store =
        storage::testing::OpenTestStore(dir_.path());
    ASSERT_OK(store);
    store_ = *std::move(store);
    contexts_ = std::make_unique<ContextStore>(store_.get(), Limits());
    conversations_ = std::make_unique<ConversationStore>(store_.get(), Limits());
    a2a_ = std::make_unique<A2ATasks>(store_.get(), /*notifier=*/nullptr, Limits());
    work_ = std::make_unique<WorkStore>(store_.get(), nullptr, WorkLimits());
    retention_ = std::make_unique<Retention>(store_.get());
  }

  // A context with `commands` command records and `messages` conversation messages.
  void MakeContext(const std::string& id, v1::ContextStatus status, int commands = 3,
                   int messages = 4) {
    v1::TaskContext context;
    context.set_context_id(id);
    context.set_agent("green");
    context.set_status(status);
    ASSERT_OK(contexts_->Create(context));
    for (int i = 0; i < commands; ++i) {
      v1::RecordCommandRequest r;
      r.set_context_id(id);
      r.set_command(absl::StrCat("make ", i));
      r.set_exit_code(i % 2);
      ASSERT_OK(contexts_->RecordCommand(r));
    }
    for (int i = 0; i < messages; ++i) AppendMessage(id, absl::StrCat("step ", i));
  }

  void AppendMessage(const std::string& id, const std::string& text) {
    v1::AppendMessageRequest m;
    m.set_context_id(id);
    m.set_role(v1::ROLE_AGENT);
    m.set_text(text);
    ASSERT_OK(conversations_->Append(m));
  }

  // An A2A task of `context_id` for agent "ghost", ended (COMPLETED) when `ended`.
  std::string MakeA2ATask(const std::string& context_id, bool ended) {
    lf::a2a::v1::Message message;
    message.set_message_id(absl::StrCat("m-", ++message_seq_));
    message.set_context_id(context_id);
    message.set_role(lf::a2a::v1::ROLE_USER);
    message.add_parts()->set_text("hello");
    absl::StatusOr<A2ATasks::Change> change = a2a_->AcceptMessage("ghost", message);
    EXPECT_OK(change);
    if (!change.ok()) return "";
    const std::string id = change->header.task().id();
    if (ended) {
      lf::a2a::v1::StreamResponse update;
      update.mutable_status_update()->mutable_status()->set_state(
          lf::a2a::v1::TASK_STATE_COMPLETED);
      // Its delivery stays queued: collection must remove the queue entry as well.
      EXPECT_OK(a2a_->ApplyAgentUpdate(id, update));
    }
    return id;
  }

  // A workstreams run with two items, both done when `completed`.
  void MakeRun(const std::string& id, bool completed) {
    v1::CreateRunRequest request;
    request.mutable_run()->set_run_id(id);
    request.mutable_run()->set_kind(v1::RUN_KIND_WORKSTREAMS);
    for (const char* item : {"a", "b"}) {
      v1::WorkItem* w = request.add_items();
      w->set_item_id(item);
      w->set_title(item);
    }
    ASSERT_OK(work_->CreateRun(request));
    if (!completed) return;
    for (int i = 0; i < 2; ++i) {
      v1::ClaimRequest claim;
      claim.set_run_id(id);
      claim.set_worker_id("w");
      absl::StatusOr<v1::ClaimResponse> claimed = work_->Claim(claim);
      ASSERT_OK(claimed);
      v1::CompleteRequest done;
      done.set_lease(claimed->lease());
      ASSERT_OK(work_->Complete(done));
    }
  }

  // Keys in [prefix, PrefixUpperBound(prefix)) of `cf`.
  int Count(ColumnFamily cf, const std::string& prefix) {
    std::unique_ptr<storage::Iterator> it =
        store_->NewIterator(cf, prefix, storage::PrefixUpperBound(prefix));
    int n = 0;
    for (; it->Valid(); it->Next()) ++n;
    EXPECT_OK(it->status());
    return n;
  }

  // Every key of `cf` that mentions `id` anywhere (index entries included).
  int Mentions(ColumnFamily cf, const std::string& id) {
    std::unique_ptr<storage::Iterator> it = store_->NewIterator(cf, "", "");
    int n = 0;
    for (; it->Valid(); it->Next()) {
      if (it->key().find(id) != absl::string_view::npos ||
          it->value().find(id) != absl::string_view::npos) {
        ++n;
      }
    }
    EXPECT_OK(it->status());
    return n;
  }

  int MentionsAnywhere(const std::string& id) {
    int n = 0;
    for (ColumnFamily cf : kDataFamilies) n += Mentions(cf, id);
    return n;
  }

  std::string Dump() {
    std::string out;
    for (ColumnFamily cf : kDataFamilies) {
      std::unique_ptr<storage::Iterator> it = store_->NewIterator(cf, "", "");
      for (; it->Valid(); it->Next()) {
        absl::StrAppend(&out, static_cast<int>(cf), ":", it->key(), "=", it->value(), "\n");
      }
    }
    return out;
  }

  TempDir dir_;
  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<ContextStore> contexts_;
  std::unique_ptr<ConversationStore> conversations_;
  std::unique_ptr<A2ATasks> a2a_;
  std::unique_ptr<WorkStore> work_;
  std::unique_ptr<Retention> retention_;
  int message_seq_ = 0;
};

const absl::Duration kHour = absl::Hours(1);

TEST_F(RetentionTest, DeletesEndedRecordsAndEverythingDerivedKeepsLiveAndYoungOnes) {
  MakeContext("done-ctx", v1::CONTEXT_STATUS_COMPLETED);
  const std::string done_task = MakeA2ATask("done-ctx", /*ended=*/true);
  MakeContext("failed-ctx", v1::CONTEXT_STATUS_FAILED);
  MakeContext("live-ctx", v1::CONTEXT_STATUS_ACTIVE);
  // Ended itself, but one of its A2A tasks still runs: kept whole.
  MakeContext("busy-ctx", v1::CONTEXT_STATUS_COMPLETED);
  const std::string busy_task = MakeA2ATask("busy-ctx", /*ended=*/false);
  // A conversation without a TaskContext (the purple side alone).
  AppendMessage("convo-only", "hi");
  const std::string lone_done = MakeA2ATask("elsewhere", /*ended=*/true);
  const std::string lone_live = MakeA2ATask("elsewhere2", /*ended=*/false);
  MakeRun("run-done", /*completed=*/true);
  MakeRun("run-open", /*completed=*/false);
  ASSERT_GT(MentionsAnywhere("done-ctx"), 8);

  // Nothing is old enough yet: nothing goes.
  const std::string before = Dump();
  absl::StatusOr<v1::CollectGarbageResponse> young =
      retention_->RunPass(absl::Now() - kHour, 100000, /*dry_run=*/false);
  ASSERT_OK(young);
  EXPECT_EQ(young->records(), 0);
  EXPECT_EQ(Dump(), before);

  absl::StatusOr<v1::CollectGarbageResponse> pass =
      retention_->RunPass(absl::Now() + kHour, 100000, /*dry_run=*/false);
  ASSERT_OK(pass);
  EXPECT_THAT(pass->context_ids(), UnorderedElementsAre("done-ctx", "failed-ctx", "convo-only"));
  EXPECT_THAT(pass->a2a_task_ids(), ElementsAre(lone_done));
  EXPECT_THAT(pass->run_ids(), ElementsAre("run-done"));
  EXPECT_FALSE(pass->more());
  // Every record that belonged to them, index entries included, is gone.
  for (const std::string& id :
       {std::string("done-ctx"), std::string("failed-ctx"), std::string("convo-only"), done_task,
        lone_done, std::string("run-done")}) {
    EXPECT_EQ(MentionsAnywhere(id), 0) << id;
  }
  // The live and the busy ones are whole.
  EXPECT_OK(contexts_->Get("live-ctx"));
  EXPECT_OK(contexts_->Get("busy-ctx"));
  EXPECT_EQ(Count(ColumnFamily::kContexts, keys::ContextPrefix("busy-ctx")), 1 + 3 + 1 + 4);
  EXPECT_OK(a2a_->GetHeader(busy_task));
  EXPECT_OK(a2a_->GetHeader(lone_live));
  EXPECT_GT(Count(ColumnFamily::kWork, keys::RunPrefix("run-open")), 2);
  EXPECT_EQ(Mentions(ColumnFamily::kIndex, "live-ctx"), 2);  // its agent and time index entries
  EXPECT_GT(pass->records(), 30);
}

TEST_F(RetentionTest, DryRunListsAndCountsButChangesNothing) {
  MakeContext("done-ctx", v1::CONTEXT_STATUS_CANCELED, 2, 2);
  MakeRun("run-done", true);
  const std::string before = Dump();
  absl::StatusOr<v1::CollectGarbageResponse> dry =
      retention_->RunPass(absl::Now() + kHour, 100000, /*dry_run=*/true);
  ASSERT_OK(dry);
  EXPECT_TRUE(dry->dry_run());
  EXPECT_THAT(dry->context_ids(), ElementsAre("done-ctx"));
  EXPECT_THAT(dry->run_ids(), ElementsAre("run-done"));
  EXPECT_EQ(Dump(), before);
  // The dry run's count is what the real pass deletes.
  absl::StatusOr<v1::CollectGarbageResponse> real =
      retention_->RunPass(absl::Now() + kHour, 100000, /*dry_run=*/false);
  ASSERT_OK(real);
  EXPECT_EQ(real->records(), dry->records());
  EXPECT_EQ(MentionsAnywhere("done-ctx") + MentionsAnywhere("run-done"), 0);
}

TEST_F(RetentionTest, APassDeletesAtMostItsBudgetAndTheNextOneFinishes) {
  MakeContext("big", v1::CONTEXT_STATUS_COMPLETED, 40, 1200);  // more than two batches
  MakeContext("small", v1::CONTEXT_STATUS_COMPLETED, 1, 1);
  const int total = MentionsAnywhere("big") + MentionsAnywhere("small");
  int passes = 0;
  int64_t deleted = 0;
  while (true) {
    absl::StatusOr<v1::CollectGarbageResponse> pass =
        retention_->RunPass(absl::Now() + kHour, 300, /*dry_run=*/false);
    ASSERT_OK(pass);
    ++passes;
    EXPECT_LE(pass->records(), 300);
    deleted += pass->records();
    if (!pass->more()) break;
    ASSERT_LT(passes, 100);
  }
  EXPECT_GE(passes, 5);
  EXPECT_EQ(MentionsAnywhere("big") + MentionsAnywhere("small"), 0);
  // Header, meta, commands, messages and the agent index entry of each context.
  EXPECT_EQ(deleted, total);
}

TEST_F(RetentionTest, AContextThatCameBackToLifeIsKept) {
  MakeContext("revived", v1::CONTEXT_STATUS_COMPLETED, 1, 1);
  // A dry run at this moment lists it...
  absl::StatusOr<v1::CollectGarbageResponse> dry =
      retention_->RunPass(absl::Now() + kHour, 1000, /*dry_run=*/true);
  ASSERT_OK(dry);
  EXPECT_THAT(dry->context_ids(), ElementsAre("revived"));
  // ...but it is active again before the real pass.
  v1::UpdateContextRequest update;
  update.mutable_context()->set_context_id("revived");
  update.mutable_context()->set_status(v1::CONTEXT_STATUS_ACTIVE);
  absl::StatusOr<v1::TaskContext> current = contexts_->Get("revived");
  ASSERT_OK(current);
  update.mutable_context()->set_version(current->version());
  update.mutable_update_mask()->add_paths("status");
  ASSERT_OK(contexts_->Update(update));
  absl::StatusOr<v1::CollectGarbageResponse> real =
      retention_->RunPass(absl::Now() + kHour, 1000, /*dry_run=*/false);
  ASSERT_OK(real);
  EXPECT_THAT(real->context_ids(), IsEmpty());
  EXPECT_OK(contexts_->Get("revived"));
}

TEST_F(RetentionTest, BadBudgetIsRefused) {
  EXPECT_EQ(retention_->RunPass(absl::Now(), 0, false).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(retention_->RunPass(absl::Now(), -5, true).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TokenBucketTest, RefillsAtItsRateUpToItsCapacity) {
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  TokenBucket bucket(100, 500, t0);
  EXPECT_EQ(bucket.Available(t0), 0);
  EXPECT_EQ(bucket.Available(t0 + absl::Seconds(2)), 200);
  bucket.Take(150);
  EXPECT_EQ(bucket.Available(t0 + absl::Seconds(2)), 50);
  EXPECT_EQ(bucket.Available(t0 + absl::Seconds(60)), 500);  // capped
  bucket.Take(10000);
  EXPECT_EQ(bucket.Available(t0 + absl::Seconds(60)), 0);
  // A clock that goes back adds nothing.
  EXPECT_EQ(bucket.Available(t0), 0);
}

TEST_F(RetentionTest, BackgroundPassesSpendOnlyTheTokensTheBucketHolds) {
  for (int i = 0; i < 5; ++i) {
    MakeContext(absl::StrCat("ctx", i), v1::CONTEXT_STATUS_COMPLETED, 10, 10);
  }
  absl::Time now = absl::Now() + absl::Hours(2);
  RetentionOptions options;
  options.max_deletes_per_second = 7;
  options.period = absl::Seconds(1);
  // Passes are driven by hand on a fake clock; a zero ttl keeps the task's own thread off, so
  // the cutoff is `now` itself (everything above ended before it).
  options.terminal_ttl = absl::ZeroDuration();
  RetentionTask task(retention_.get(), options, [&] { return now; });
  absl::StatusOr<v1::CollectGarbageResponse> first = task.RunOnce();
  ASSERT_OK(first);
  EXPECT_EQ(first->records(), 0);  // an empty bucket deletes nothing
  EXPECT_TRUE(first->more());
  int64_t total = 0;
  for (int second = 1; second <= 20; ++second) {
    now += absl::Seconds(1);
    absl::StatusOr<v1::CollectGarbageResponse> pass = task.RunOnce();
    ASSERT_OK(pass);
    EXPECT_LE(pass->records(), 7);
    total += pass->records();
    EXPECT_LE(total, 7 * second);
  }
  EXPECT_GT(total, 0);
}

TEST_F(RetentionTest, ExportReadsEveryPartOfAnEvaluation) {
  MakeContext("eval-1", v1::CONTEXT_STATUS_ACTIVE, 3, 4);
  const std::string task = MakeA2ATask("eval-1", /*ended=*/true);
  MakeA2ATask("other", true);
  TaskStateStore tasks(store_.get(), TaskStateOptions());
  ASSERT_OK(tasks.Init("rca-eval eval-1"));
  const std::string retry_id = EvaluationRetryTaskId("eval-1");
  ASSERT_OK(tasks.RecordFailure(retry_id, "segfault"));
  Exporter exporter(store_.get(), Limits(), TaskStateOptions(), BreakerOptions());
  v1::ExportContextRequest request;
  request.set_context_id("eval-1");
  absl::StatusOr<v1::ContextExport> out = exporter.Export(request);
  ASSERT_OK(out);
  EXPECT_EQ(out->context().command_count(), 3);
  EXPECT_EQ(out->commands_size(), 3);
  EXPECT_EQ(out->messages_size(), 4);
  EXPECT_EQ(out->step_count(), 4);
  EXPECT_EQ(out->message_count(), 4);
  ASSERT_EQ(out->a2a_tasks_size(), 1);
  EXPECT_EQ(out->a2a_tasks(0).task().id(), task);
  EXPECT_EQ(out->a2a_tasks(0).tenant(), "ghost");
  EXPECT_GE(out->a2a_tasks(0).events_size(), 2);
  EXPECT_EQ(out->a2a_tasks(0).task().history_size(), 1);
  ASSERT_EQ(out->retry_tasks_size(), 1);
  EXPECT_EQ(out->retry_tasks(0).state().failures_size(), 1);

  request.set_context_id("nothing-here");
  EXPECT_EQ(exporter.Export(request).status().code(), absl::StatusCode::kNotFound);
  request.set_context_id(std::string(300, 'x'));
  EXPECT_EQ(exporter.Export(request).status().code(), absl::StatusCode::kInvalidArgument);
  request.set_context_id("eval-1");
  for (int i = 0; i < kMaxExportRetryTaskIds + 1; ++i) request.add_retry_task_ids("abc");
  EXPECT_EQ(exporter.Export(request).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coordinator
