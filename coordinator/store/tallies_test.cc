// The running totals (tallies.h) through the real stores: they follow every way a context or a
// run comes, changes class and goes, stay exact past any number of records and under concurrent
// writers, and are built again from the records of a database that has none.
#include "coordinator/store/records/tallies.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/store/all_tallies.h"
#include "coordinator/store/contexts/context_store.h"
#include "coordinator/store/contexts/scores.h"
#include "coordinator/store/records/keys.h"
#include "coordinator/store/records/purge.h"
#include "coordinator/store/work/work_store.h"
#include "gtest/gtest.h"
#include "storage/key_codec.h"
#include "storage/testing/test_store.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

using storage::ColumnFamily;
using ::testing_util::TempDir;

class TalliesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Many records are written; durability is not what is tested here (RocksDB skips its
    // fsyncs; on etcd they stay).
    absl::StatusOr<std::unique_ptr<storage::Store>> store =
        storage::testing::OpenTestStore(dir_.path(), /*sync_writes=*/false);
    ASSERT_OK(store);
    store_ = *std::move(store);
    contexts_ = std::make_unique<ContextStore>(store_.get(), Limits());
    work_ = std::make_unique<WorkStore>(store_.get(), nullptr, WorkLimits());
  }

  int64_t Count(Tally tally, const std::string& group = "") {
    absl::StatusOr<TallyTotal> total = Tallies::Read(*store_, tally, group);
    EXPECT_OK(total);
    return total.ok() ? total->count : -1;
  }

  v1::TaskContext Create(const std::string& id,
                         v1::ContextStatus status = v1::CONTEXT_STATUS_ACTIVE,
                         const std::string& task = "", const std::string& purple = "",
                         const std::string& score = "") {
    v1::TaskContext context;
    context.set_context_id(id);
    context.set_status(status);
    context.set_external_task_id(task);
    if (!purple.empty()) (*context.mutable_labels())["purple_agent"] = purple;
    if (!score.empty()) (*context.mutable_labels())["score"] = score;
    absl::StatusOr<v1::TaskContext> created = contexts_->Create(context);
    EXPECT_OK(created);
    return created.ok() ? *created : context;
  }

  v1::TaskContext Update(v1::TaskContext context) {
    v1::UpdateContextRequest request;
    *request.mutable_context() = context;
    absl::StatusOr<v1::TaskContext> updated = contexts_->Update(request);
    EXPECT_OK(updated);
    return updated.ok() ? *updated : context;
  }

  // Every key of the totals, for "unchanged" checks.
  std::string DumpTallies() {
    std::string out;
    const std::string prefix = keys::AllTalliesPrefix();
    std::unique_ptr<storage::Iterator> it =
        store_->NewIterator(ColumnFamily::kIndex, prefix, storage::PrefixUpperBound(prefix));
    for (; it->Valid(); it->Next()) absl::StrAppend(&out, it->key(), "=", it->value(), "\n");
    EXPECT_OK(it->status());
    return out;
  }

  // Deletes the totals and their marker, as in a database written before they were kept.
  void ForgetTallies() {
    ASSERT_OK(store_->RunTransaction([](storage::Transaction& txn) -> absl::Status {
      for (const std::string& prefix : {keys::AllTalliesPrefix(), keys::DerivedBuilt("tallies")}) {
        std::unique_ptr<storage::Iterator> it =
            txn.NewIterator(ColumnFamily::kIndex, prefix, storage::PrefixUpperBound(prefix));
        for (; it->Valid(); it->Next()) {
          if (absl::Status s = txn.Delete(ColumnFamily::kIndex, it->key()); !s.ok()) return s;
        }
        if (!it->status().ok()) return it->status();
      }
      return absl::OkStatus();
    }));
  }

  v1::Run CreateRun(const std::string& run_id, int items) {
    v1::CreateRunRequest request;
    request.mutable_run()->set_run_id(run_id);
    request.mutable_run()->set_kind(v1::RUN_KIND_TASK_GRAPH);
    for (int i = 0; i < items; ++i) request.add_items()->set_item_id(absl::StrCat("item-", i));
    absl::StatusOr<v1::Run> run = work_->CreateRun(request);
    EXPECT_OK(run);
    return run.ok() ? *run : v1::Run();
  }

  // Claims and completes every item of `run_id`.
  void Finish(const std::string& run_id) {
    while (true) {
      v1::ClaimRequest claim;
      claim.set_run_id(run_id);
      claim.set_worker_id("w");
      absl::StatusOr<v1::ClaimResponse> claimed = work_->Claim(claim);
      ASSERT_OK(claimed);
      if (claimed->lease().empty()) return;
      v1::CompleteRequest complete;
      complete.set_lease(claimed->lease());
      ASSERT_OK(work_->Complete(complete));
    }
  }

  TempDir dir_;
  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<ContextStore> contexts_;
  std::unique_ptr<WorkStore> work_;
};

TEST_F(TalliesTest, ContextCountsFollowCreateUpdateAndDelete) {
  EXPECT_EQ(Count(Tally::kContextsActive), 0);
  v1::TaskContext a = Create("a");
  Create("b", v1::CONTEXT_STATUS_COMPLETED);
  EXPECT_EQ(Count(Tally::kContextsActive), 1);
  EXPECT_EQ(Count(Tally::kContextsEnded), 1);

  // A change that keeps the class (a label, a command) leaves the totals as they are.
  const std::string before = DumpTallies();
  (*a.mutable_labels())["phase"] = "running";
  a = Update(a);
  v1::RecordCommandRequest command;
  command.set_context_id("a");
  command.set_command("ls");
  ASSERT_OK(contexts_->RecordCommand(command));
  EXPECT_EQ(DumpTallies(), before);

  a = *contexts_->Get("a");
  a.set_status(v1::CONTEXT_STATUS_FAILED);
  a = Update(a);
  EXPECT_EQ(Count(Tally::kContextsActive), 0);
  EXPECT_EQ(Count(Tally::kContextsEnded), 2);

  ASSERT_OK(contexts_->Delete("a", 0));
  ASSERT_OK(contexts_->Delete("b", 0));
  EXPECT_EQ(Count(Tally::kContextsActive), 0);
  EXPECT_EQ(Count(Tally::kContextsEnded), 0);
  // Stripes back at zero go: nothing is left behind.
  EXPECT_EQ(DumpTallies(), "");
}

// The console's overview used to count contexts by reading at most 20,000 of them. The totals
// have no such bound: past it they are still exact, from a few point reads.
TEST_F(TalliesTest, CountsStayExactPastTwentyThousandContexts) {
  // The totals are the same few keys on either backend; on etcd the 20,500 writes only make the
  // same check three minutes long (the other tests here run there).
  SKIP_ON_ETCD("the scale run: the same keys, read the same way, on both backends");
  constexpr int kContexts = 20500;
  for (int i = 0; i < kContexts; ++i) {
    Create(absl::StrCat("ctx-", i),
           i % 5 == 0 ? v1::CONTEXT_STATUS_COMPLETED : v1::CONTEXT_STATUS_ACTIVE);
  }
  EXPECT_EQ(Count(Tally::kContextsEnded), kContexts / 5);
  EXPECT_EQ(Count(Tally::kContextsActive), kContexts - kContexts / 5);
  // As many keys as stripes, whatever the number of contexts.
  int keys_read = 0;
  const std::string prefix = keys::TallyPrefix(static_cast<uint8_t>(Tally::kContextsActive));
  std::unique_ptr<storage::Iterator> it =
      store_->NewIterator(ColumnFamily::kIndex, prefix, storage::PrefixUpperBound(prefix));
  for (; it->Valid(); it->Next()) ++keys_read;
  EXPECT_LE(keys_read, kTallyStripes);
  // And a rebuild from the records agrees.
  ForgetTallies();
  ASSERT_OK(RebuildTallies(*store_));
  EXPECT_EQ(Count(Tally::kContextsEnded), kContexts / 5);
  EXPECT_EQ(Count(Tally::kContextsActive), kContexts - kContexts / 5);
}

// Concurrent writers of different contexts lose no update of the totals (guarantee 2).
TEST_F(TalliesTest, ConcurrentWritersLoseNoUpdate) {
  constexpr int kThreads = 8;
  constexpr int kEach = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        const std::string id = absl::StrCat("t", t, "-", i);
        v1::TaskContext created = Create(id);
        if (i % 2 == 0) {
          created.set_status(v1::CONTEXT_STATUS_COMPLETED);
          Update(created);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(Count(Tally::kContextsActive), kThreads * kEach / 2);
  EXPECT_EQ(Count(Tally::kContextsEnded), kThreads * kEach / 2);
}

TEST_F(TalliesTest, ScoresAddUpByTaskByAgentAndByBoth) {
  Create("e1", v1::CONTEXT_STATUS_COMPLETED, "django-1", "gpt", R"({"score": 0.75})");
  Create("e2", v1::CONTEXT_STATUS_COMPLETED, "django-1", "claude", R"({"score": 0.25})");
  v1::TaskContext e3 = Create("e3", v1::CONTEXT_STATUS_ACTIVE, "flask-2", "gpt");
  Create("e4", v1::CONTEXT_STATUS_COMPLETED, "", "", R"({"no score": 1})");  // not scored

  auto groups = [&](Tally tally) {
    absl::StatusOr<std::map<std::string, TallyTotal>> read = Tallies::ReadGroups(*store_, tally);
    EXPECT_OK(read);
    return read.ok() ? *read : std::map<std::string, TallyTotal>();
  };
  std::map<std::string, TallyTotal> by_task = groups(Tally::kScoreByTask);
  ASSERT_EQ(by_task.size(), 1u);
  EXPECT_EQ(by_task["django-1"].count, 2);
  EXPECT_DOUBLE_EQ(by_task["django-1"].sum, 1.0);

  // The running evaluation gets its score: it counts in from then on.
  (*e3.mutable_labels())["score"] = R"({"task_id": "flask-2", "score": 0.5})";
  e3 = Update(e3);
  by_task = groups(Tally::kScoreByTask);
  EXPECT_EQ(by_task["flask-2"].count, 1);
  std::map<std::string, TallyTotal> by_agent = groups(Tally::kScoreByAgent);
  EXPECT_EQ(by_agent["gpt"].count, 2);
  EXPECT_DOUBLE_EQ(by_agent["gpt"].sum, 1.25);
  EXPECT_EQ(by_agent["claude"].count, 1);

  // Scored again, and under another agent: it moves.
  (*e3.mutable_labels())["score"] = R"({"score": 1.0})";
  (*e3.mutable_labels())["purple_agent"] = "claude";
  e3 = Update(e3);
  by_agent = groups(Tally::kScoreByAgent);
  EXPECT_EQ(by_agent["gpt"].count, 1);
  EXPECT_DOUBLE_EQ(by_agent["gpt"].sum, 0.75);
  EXPECT_EQ(by_agent["claude"].count, 2);
  EXPECT_DOUBLE_EQ(by_agent["claude"].sum, 1.25);
  std::map<std::string, TallyTotal> both = groups(Tally::kScoreByTaskAndAgent);
  EXPECT_EQ(both.count(TaskAndAgentGroup("flask-2", "gpt")), 0u);
  EXPECT_EQ(both[TaskAndAgentGroup("flask-2", "claude")].count, 1);
  EXPECT_EQ(SplitTaskAndAgentGroup(TaskAndAgentGroup("flask-2", "claude")),
            std::make_pair(std::string("flask-2"), std::string("claude")));

  // Deleted: gone from the board.
  ASSERT_OK(contexts_->Delete("e1", 0));
  by_agent = groups(Tally::kScoreByAgent);
  EXPECT_EQ(by_agent.count("gpt"), 0u);
}

// A rebuild puts every total in one stripe; a score changed afterwards moves the sum in the
// context's own stripe (count unchanged there): the totals still add up.
TEST_F(TalliesTest, AScoreChangedAfterARebuildKeepsTheSumRight) {
  std::vector<v1::TaskContext> scored;
  for (int i = 0; i < 6; ++i) {
    scored.push_back(Create(absl::StrCat("e", i), v1::CONTEXT_STATUS_COMPLETED, "t", "gpt",
                            R"({"score": 0.5})"));
  }
  ASSERT_OK(RebuildTallies(*store_));
  for (v1::TaskContext& context : scored) {
    (*context.mutable_labels())["score"] = R"({"score": 1.0})";
    context = Update(context);
  }
  absl::StatusOr<TallyTotal> total = Tallies::Read(*store_, Tally::kScoreByTask, "t");
  ASSERT_OK(total);
  EXPECT_EQ(total->count, 6);
  EXPECT_DOUBLE_EQ(total->sum, 6.0);
  // Taken away again: the stripes add up to nothing, and the group is off the board.
  for (const v1::TaskContext& context : scored) {
    ASSERT_OK(contexts_->Delete(context.context_id(), 0));
  }
  total = Tallies::Read(*store_, Tally::kScoreByTask, "t");
  ASSERT_OK(total);
  EXPECT_EQ(total->count, 0);
  EXPECT_NEAR(total->sum, 0.0, 1e-9);
  absl::StatusOr<std::map<std::string, TallyTotal>> groups =
      Tallies::ReadGroups(*store_, Tally::kScoreByTask);
  ASSERT_OK(groups);
  EXPECT_TRUE(groups->empty());
  EXPECT_EQ(Count(Tally::kContextsEnded), 0);
}

TEST_F(TalliesTest, RunCountsFollowTheRunsStatus) {
  CreateRun("r1", 2);
  CreateRun("r2", 1);
  EXPECT_EQ(Count(Tally::kRunsActive), 2);
  EXPECT_EQ(Count(Tally::kRunsEnded), 0);
  Finish("r1");
  EXPECT_EQ(Count(Tally::kRunsActive), 1);
  EXPECT_EQ(Count(Tally::kRunsEnded), 1);
  // A purge (retention) takes the run out of the totals with it.
  ASSERT_OK(store_->RunTransaction([](storage::Transaction& txn) -> absl::Status {
    absl::StatusOr<PurgeProgress> progress =
        WorkStore::PurgeStep(txn, "r1", kNoPurgeLimit, [](const v1::Run&) { return true; });
    return progress.status();
  }));
  EXPECT_EQ(Count(Tally::kRunsEnded), 0);
  EXPECT_EQ(Count(Tally::kRunsActive), 1);
}

// A database written before the totals existed has records and no totals: EnsureBuilt computes
// them once, and then leaves them to the writers.
TEST_F(TalliesTest, EnsureBuiltComputesTheTotalsOfADatabaseWithout) {
  Create("a");
  Create("b", v1::CONTEXT_STATUS_CANCELED, "t", "p", R"({"score": 0.5})");
  CreateRun("r", 1);
  ForgetTallies();
  ASSERT_OK(Tallies::Built(*store_));
  EXPECT_FALSE(*Tallies::Built(*store_));
  EXPECT_EQ(Count(Tally::kContextsActive), 0);

  absl::StatusOr<bool> rebuilt = EnsureTalliesBuilt(*store_);
  ASSERT_OK(rebuilt);
  EXPECT_TRUE(*rebuilt);
  EXPECT_TRUE(*Tallies::Built(*store_));
  EXPECT_EQ(Count(Tally::kContextsActive), 1);
  EXPECT_EQ(Count(Tally::kContextsEnded), 1);
  EXPECT_EQ(Count(Tally::kRunsActive), 1);
  EXPECT_EQ(Count(Tally::kScoreByTask, "t"), 1);

  rebuilt = EnsureTalliesBuilt(*store_);
  ASSERT_OK(rebuilt);
  EXPECT_FALSE(*rebuilt);
  // From here on the writers keep them.
  ASSERT_OK(contexts_->Delete("a", 0));
  EXPECT_EQ(Count(Tally::kContextsActive), 0);
}

TEST(EvaluationScoreTest, ReadsTheScoreLabelsNumber) {
  v1::TaskContext context;
  EXPECT_EQ(EvaluationScore(context), std::nullopt);
  (*context.mutable_labels())["score"] = R"({"task_id": "x", "score": 0.625})";
  EXPECT_EQ(EvaluationScore(context), 0.625);
  (*context.mutable_labels())["score"] = R"({"score": "high"})";
  EXPECT_EQ(EvaluationScore(context), std::nullopt);
  (*context.mutable_labels())["score"] = "not json";
  EXPECT_EQ(EvaluationScore(context), std::nullopt);
  EXPECT_EQ(ScoreTask(context), "(none)");
  EXPECT_EQ(ScoreAgent(context), "(unknown)");
}

}  // namespace
}  // namespace coordinator
