#include "coordinator/store/work/work_store.h"

#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "coordinator/store/records/keys.h"
#include "coordinator/store/records/time_util.h"
#include "coordinator/store/work/reaper.h"
#include "coordinator/store/work/work_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/rocks_store.h"
#include "storage/testing/test_store.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

using ::testing::HasSubstr;

using ::testing_util::FakeClock;

// Collects what the notifier publishes.
class RecordingWatcher : public WorkWatcher {
 public:
  void OnEvent(const v1::RunEvent& event) override {
    absl::MutexLock lock(&mu_);
    events_.push_back(event);
  }
  void OnClose(const absl::Status&) override {}
  std::vector<v1::RunEvent> events() {
    absl::MutexLock lock(&mu_);
    return events_;
  }

 private:
  absl::Mutex mu_;
  std::vector<v1::RunEvent> events_;
};

class WorkStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }

  void Open() {
    absl::StatusOr<std::unique_ptr<storage::Store>> store =
        storage::testing::OpenTestStore(dir_.Sub("db"));
    ASSERT_OK(store);
    store_ = *std::move(store);
    work_ = std::make_unique<WorkStore>(store_.get(), &notifier_, WorkLimits(),
                                        [this] { return clock_.Now(); });
  }

  // Closes and reopens the database, as a restart of the coordinator does.
  void Reopen() {
    work_.reset();
    store_.reset();
    Open();
  }

  // Creates a run of `items` ("id:level:dep1,dep2").
  v1::Run CreateRun(const std::string& run_id, const std::vector<std::string>& items,
                    const v1::RetryPolicy& policy = v1::RetryPolicy()) {
    v1::CreateRunRequest request;
    request.mutable_run()->set_run_id(run_id);
    request.mutable_run()->set_kind(v1::RUN_KIND_TASK_GRAPH);
    *request.mutable_run()->mutable_retry_policy() = policy;
    for (const std::string& spec : items) *request.add_items() = ItemSpec(spec);
    absl::StatusOr<v1::Run> run = work_->CreateRun(request);
    EXPECT_OK(run);
    return run.ok() ? *run : v1::Run();
  }

  absl::StatusOr<v1::ClaimResponse> Claim(const std::string& run_id, const std::string& worker,
                                          absl::Duration ttl = absl::Seconds(10)) {
    v1::ClaimRequest request;
    request.set_run_id(run_id);
    request.set_worker_id(worker);
    *request.mutable_lease_ttl() = ToProtoDuration(ttl);
    return work_->Claim(request);
  }

  // Claims and expects an item; returns the response.
  v1::ClaimResponse MustClaim(const std::string& run_id, const std::string& worker,
                              absl::Duration ttl = absl::Seconds(10)) {
    absl::StatusOr<v1::ClaimResponse> claimed = Claim(run_id, worker, ttl);
    EXPECT_OK(claimed);
    EXPECT_TRUE(claimed.ok() && claimed->has_item()) << "no item claimable in " << run_id;
    return claimed.ok() ? *claimed : v1::ClaimResponse();
  }

  // The id of the claimed item, or "" when none was claimable.
  std::string ClaimId(const std::string& run_id, const std::string& worker) {
    absl::StatusOr<v1::ClaimResponse> claimed = Claim(run_id, worker);
    EXPECT_OK(claimed);
    return claimed.ok() && claimed->has_item() ? claimed->item().item_id() : "";
  }

  absl::StatusOr<v1::WorkItem> Complete(const std::string& lease, const std::string& summary = "") {
    v1::CompleteRequest request;
    request.set_lease(lease);
    request.set_summary(summary);
    return work_->Complete(request);
  }

  absl::StatusOr<v1::WorkItem> Fail(const std::string& lease, const std::string& error,
                                    bool retryable = true) {
    v1::FailRequest request;
    request.set_lease(lease);
    request.set_error(error);
    request.set_retryable(retryable);
    return work_->Fail(request);
  }

  absl::StatusOr<v1::HeartbeatResponse> Heartbeat(const std::string& lease,
                                                  const std::string& progress = "") {
    v1::HeartbeatRequest request;
    request.set_lease(lease);
    request.set_progress(progress);
    return work_->Heartbeat(request);
  }

  v1::WorkItem Item(const std::string& run_id, const std::string& item_id) {
    absl::StatusOr<v1::WorkItem> item = work_->GetItem(run_id, item_id);
    EXPECT_OK(item);
    return item.ok() ? *item : v1::WorkItem();
  }

  v1::Run Run(const std::string& run_id) {
    absl::StatusOr<v1::Run> run = work_->GetRun(run_id);
    EXPECT_OK(run);
    return run.ok() ? *run : v1::Run();
  }

  testing_util::TempDir dir_;
  FakeClock clock_;
  WorkNotifier notifier_;
  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<WorkStore> work_;
};

TEST_F(WorkStoreTest, LowerLevelsMustBeDoneFirst) {
  CreateRun("r", {"a:0", "b:0", "c:1", "d:1:c"});
  v1::ClaimResponse a = MustClaim("r", "w1");
  v1::ClaimResponse b = MustClaim("r", "w2");
  EXPECT_EQ(std::set<std::string>({a.item().item_id(), b.item().item_id()}),
            std::set<std::string>({"a", "b"}));
  // Level 1 waits for all of level 0, even with nothing else to hand out.
  absl::StatusOr<v1::ClaimResponse> none = Claim("r", "w3");
  ASSERT_OK(none);
  EXPECT_FALSE(none->has_item());
  EXPECT_FALSE(none->stalled());
  ASSERT_OK(Complete(a.lease()));
  EXPECT_EQ(ClaimId("r", "w3"), "");
  ASSERT_OK(Complete(b.lease()));
  // d depends on c (same level), so c comes first and d only once c is done.
  v1::ClaimResponse c = MustClaim("r", "w3");
  EXPECT_EQ(c.item().item_id(), "c");
  EXPECT_EQ(ClaimId("r", "w4"), "");
  ASSERT_OK(Complete(c.lease()));
  v1::ClaimResponse d = MustClaim("r", "w4");
  EXPECT_EQ(d.item().item_id(), "d");
  ASSERT_OK(Complete(d.lease(), "all good"));

  v1::Run run = Run("r");
  EXPECT_EQ(run.status(), v1::RUN_STATUS_COMPLETED);
  EXPECT_EQ(run.counts().done(), 4);
  EXPECT_EQ(run.claim_count(), 4);
  absl::StatusOr<v1::ClaimResponse> finished = Claim("r", "w1");
  ASSERT_OK(finished);
  EXPECT_FALSE(finished->has_item());
  EXPECT_TRUE(finished->stalled());
  EXPECT_EQ(Item("r", "d").summary(), "all good");
}

TEST_F(WorkStoreTest, RunStatusFollowsItems) {
  CreateRun("r", {"a", "b"});
  EXPECT_EQ(Run("r").status(), v1::RUN_STATUS_PLANNING);
  v1::ClaimResponse a = MustClaim("r", "w1");
  EXPECT_EQ(a.run().status(), v1::RUN_STATUS_RUNNING);
  ASSERT_OK(Complete(a.lease()));
  EXPECT_EQ(Run("r").status(), v1::RUN_STATUS_PENDING);
  v1::ClaimResponse b = MustClaim("r", "w1");
  ASSERT_OK(Fail(b.lease(), "broken", /*retryable=*/false));
  v1::Run run = Run("r");
  EXPECT_EQ(run.status(), v1::RUN_STATUS_FAILED);
  EXPECT_EQ(run.counts().total(), 2);
  EXPECT_EQ(run.counts().done(), 1);
  EXPECT_EQ(run.counts().failed(), 1);
  EXPECT_EQ(run.counts().pending() + run.counts().running() + run.counts().blocked(), 0);
}

TEST_F(WorkStoreTest, ConcurrentClaimersNeverShareAnItem) {
  constexpr int kItems = 40;
  constexpr int kClaimers = 32;
  std::vector<std::string> items;
  for (int i = 0; i < kItems; ++i) items.push_back(absl::StrCat("item-", i));
  CreateRun("r", items);

  absl::Mutex mu;
  std::vector<std::string> claimed;
  std::vector<std::thread> threads;
  for (int t = 0; t < kClaimers; ++t) {
    threads.emplace_back([&, t] {
      while (true) {
        absl::StatusOr<v1::ClaimResponse> response = Claim("r", absl::StrCat("w", t));
        if (absl::IsAborted(response.status())) continue;  // lock contention: retry
        ASSERT_OK(response);
        if (!response->has_item()) return;
        absl::MutexLock lock(&mu);
        claimed.push_back(response->item().item_id());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::set<std::string> unique(claimed.begin(), claimed.end());
  EXPECT_EQ(claimed.size(), unique.size()) << "an item was handed to two workers";
  EXPECT_EQ(unique.size(), static_cast<size_t>(kItems));
  EXPECT_EQ(Run("r").counts().running(), kItems);
}

TEST_F(WorkStoreTest, StaleLeaseIsFenced) {
  CreateRun("r", {"a"});
  v1::ClaimResponse first = MustClaim("r", "w1");
  EXPECT_EQ(first.epoch(), 1);
  clock_.Advance(absl::Seconds(11));
  // Expired but not yet reaped: the lease no longer holds.
  absl::StatusOr<v1::WorkItem> late = Complete(first.lease());
  EXPECT_EQ(late.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(late.status().message(), HasSubstr("expired"));
  ASSERT_OK(work_->ReapExpired());
  v1::WorkItem reaped = Item("r", "a");
  EXPECT_EQ(reaped.status(), v1::ITEM_STATUS_PENDING);
  EXPECT_THAT(reaped.last_error(), HasSubstr("lease of worker w1 expired"));

  v1::ClaimResponse second = MustClaim("r", "w2");
  EXPECT_EQ(second.epoch(), 2);
  EXPECT_EQ(second.item().attempts(), 2);
  for (const auto& status : {Complete(first.lease()).status(), Fail(first.lease(), "x").status(),
                             Heartbeat(first.lease()).status()}) {
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(status.message(), HasSubstr("stale"));
  }
  ASSERT_OK(Complete(second.lease(), "done by w2"));
  // Repeating the successful call (its reply may have been lost) is answered again...
  absl::StatusOr<v1::WorkItem> again = Complete(second.lease(), "done by w2");
  ASSERT_OK(again);
  EXPECT_EQ(again->summary(), "done by w2");
  // ...but the old lease still changes nothing.
  EXPECT_EQ(Complete(first.lease()).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Fail(second.lease(), "late").status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Item("r", "a").worker_id(), "w2");
  EXPECT_EQ(Run("r").counts().done(), 1);

  // A lease with an epoch that was never issued is refused too.
  EXPECT_EQ(Complete(EncodeLease("r", "a", 7)).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Complete("not a lease").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Complete(EncodeLease("r", "nope", 1)).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(WorkStoreTest, HeartbeatExtendsTheLeaseAndStoresProgress) {
  CreateRun("r", {"a"});
  v1::ClaimResponse claimed = MustClaim("r", "w1");
  clock_.Advance(absl::Seconds(8));
  absl::StatusOr<v1::HeartbeatResponse> beat = Heartbeat(claimed.lease(), R"({"step": 3})");
  ASSERT_OK(beat);
  EXPECT_EQ(FromProtoTime(beat->lease_expire_time()), clock_.Now() + absl::Seconds(10));
  clock_.Advance(absl::Seconds(8));
  absl::StatusOr<int> reaped = work_->ReapExpired();
  ASSERT_OK(reaped);
  EXPECT_EQ(*reaped, 0);
  EXPECT_EQ(Item("r", "a").status(), v1::ITEM_STATUS_RUNNING);
  EXPECT_EQ(Item("r", "a").progress(), R"({"step": 3})");
  clock_.Advance(absl::Seconds(3));
  reaped = work_->ReapExpired();
  ASSERT_OK(reaped);
  EXPECT_EQ(*reaped, 1);
  EXPECT_EQ(Item("r", "a").status(), v1::ITEM_STATUS_PENDING);
  EXPECT_EQ(Item("r", "a").attempts(), 1);
}

TEST_F(WorkStoreTest, NextWorkerGetsTheCheckpointAndProgress) {
  CreateRun("r", {"a"});
  v1::ClaimResponse first = MustClaim("r", "w1");
  v1::CheckpointRequest checkpoint;
  checkpoint.set_lease(first.lease());
  checkpoint.set_note("commit abc123; tests left");
  ASSERT_OK(work_->Checkpoint(checkpoint));
  ASSERT_OK(Heartbeat(first.lease(), "70%"));
  clock_.Advance(absl::Seconds(11));
  ASSERT_OK(work_->ReapExpired());
  v1::ClaimResponse second = MustClaim("r", "w2");
  EXPECT_EQ(second.item().checkpoint(), "commit abc123; tests left");
  EXPECT_EQ(second.item().progress(), "70%");
  // The old worker's checkpoint cannot overwrite the new worker's.
  checkpoint.set_note("stale");
  EXPECT_EQ(work_->Checkpoint(checkpoint).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(WorkStoreTest, RetryableFailuresBackOffThenBlock) {
  v1::RetryPolicy policy;
  policy.set_max_attempts(3);
  *policy.mutable_backoff_base() = ToProtoDuration(absl::Seconds(10));
  *policy.mutable_backoff_max() = ToProtoDuration(absl::Seconds(15));
  CreateRun("r", {"a"}, policy);

  v1::ClaimResponse claimed = MustClaim("r", "w1");
  absl::StatusOr<v1::WorkItem> failed = Fail(claimed.lease(), "flaky test");
  ASSERT_OK(failed);
  EXPECT_EQ(failed->status(), v1::ITEM_STATUS_PENDING);
  EXPECT_EQ(FromProtoTime(failed->not_before()), clock_.Now() + absl::Seconds(10));
  absl::StatusOr<v1::ClaimResponse> waiting = Claim("r", "w1");
  ASSERT_OK(waiting);
  EXPECT_FALSE(waiting->has_item());
  EXPECT_FALSE(waiting->stalled());
  EXPECT_EQ(FromProtoDuration(waiting->retry_after()), absl::Seconds(10));
  EXPECT_EQ(waiting->run().status(), v1::RUN_STATUS_PENDING);

  clock_.Advance(absl::Seconds(10));
  claimed = MustClaim("r", "w2");
  EXPECT_EQ(claimed.item().attempts(), 2);
  EXPECT_EQ(claimed.item().last_error(), "flaky test");
  failed = Fail(claimed.lease(), "flaky again");
  ASSERT_OK(failed);
  // 2 x 10s would be 20s; backoff_max caps it.
  EXPECT_EQ(FromProtoTime(failed->not_before()), clock_.Now() + absl::Seconds(15));
  clock_.Advance(absl::Seconds(15));
  claimed = MustClaim("r", "w3");
  failed = Fail(claimed.lease(), "still flaky");
  ASSERT_OK(failed);
  EXPECT_EQ(failed->status(), v1::ITEM_STATUS_BLOCKED);
  EXPECT_THAT(failed->status_reason(), HasSubstr("3 of 3 attempts"));
  EXPECT_THAT(failed->status_reason(), HasSubstr("still flaky"));
  EXPECT_EQ(Run("r").status(), v1::RUN_STATUS_BLOCKED);
  absl::StatusOr<v1::ClaimResponse> stalled = Claim("r", "w1");
  ASSERT_OK(stalled);
  EXPECT_TRUE(stalled->stalled());

  // A person sends it back; it gets a fresh set of attempts.
  v1::RetryRequest retry;
  retry.set_run_id("r");
  retry.set_item_id("a");
  absl::StatusOr<v1::WorkItem> retried = work_->Retry(retry);
  ASSERT_OK(retried);
  EXPECT_EQ(retried->status(), v1::ITEM_STATUS_PENDING);
  EXPECT_EQ(retried->attempts(), 0);
  claimed = MustClaim("r", "w4");
  EXPECT_EQ(claimed.item().attempts(), 1);
  EXPECT_EQ(work_->Retry(retry).status().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_OK(Complete(claimed.lease()));
  EXPECT_EQ(Run("r").status(), v1::RUN_STATUS_COMPLETED);
}

TEST_F(WorkStoreTest, NonRetryableErrorsFailForGood) {
  v1::RetryPolicy policy;
  policy.add_non_retryable_errors("syntax error");
  CreateRun("r", {"a", "b"}, policy);
  v1::ClaimResponse a = MustClaim("r", "w1");
  absl::StatusOr<v1::WorkItem> failed = Fail(a.lease(), "make: syntax error in Makefile");
  ASSERT_OK(failed);
  EXPECT_EQ(failed->status(), v1::ITEM_STATUS_FAILED);
  EXPECT_THAT(failed->status_reason(), HasSubstr("syntax error"));
  EXPECT_EQ(Run("r").status(), v1::RUN_STATUS_FAILED);
  // A failed item can be sent back by hand as well.
  v1::RetryRequest retry;
  retry.set_run_id("r");
  retry.set_item_id(a.item().item_id());
  ASSERT_OK(work_->Retry(retry));
}

TEST_F(WorkStoreTest, ReaperBlocksAnItemThatKeepsLosingItsWorker) {
  v1::RetryPolicy policy;
  policy.set_max_attempts(2);
  CreateRun("r", {"a"}, policy);
  for (int i = 0; i < 2; ++i) {
    MustClaim("r", absl::StrCat("w", i));
    clock_.Advance(absl::Seconds(11));
    absl::StatusOr<int> reaped = work_->ReapExpired();
    ASSERT_OK(reaped);
    EXPECT_EQ(*reaped, 1);
  }
  v1::WorkItem item = Item("r", "a");
  EXPECT_EQ(item.status(), v1::ITEM_STATUS_BLOCKED);
  EXPECT_THAT(item.status_reason(), HasSubstr("2 of 2 attempts"));
  EXPECT_THAT(item.status_reason(), HasSubstr("expired"));
}

TEST_F(WorkStoreTest, ReaperThreadTakesBackExpiredLeasesAndStops) {
  CreateRun("r", {"a"});
  v1::ClaimResponse claimed = MustClaim("r", "w1");
  Reaper reaper(work_.get(), absl::Milliseconds(10));
  clock_.Advance(absl::Seconds(11));
  // Bounded poll: the reaper runs on its own schedule.
  for (int i = 0; i < 3000 && Item("r", "a").status() != v1::ITEM_STATUS_PENDING; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(Item("r", "a").status(), v1::ITEM_STATUS_PENDING);
  reaper.Stop();
  reaper.Stop();  // idempotent
  EXPECT_EQ(MustClaim("r", "w2").epoch(), 2);
}

TEST_F(WorkStoreTest, StateSurvivesReopening) {
  CreateRun("r", {"a", "b:1:"});
  v1::ClaimResponse claimed = MustClaim("r", "w1", absl::Minutes(5));
  ASSERT_OK(Heartbeat(claimed.lease(), "half"));
  const v1::WorkItem before = Item("r", "a");
  Reopen();
  const v1::WorkItem after = Item("r", "a");
  EXPECT_EQ(after.status(), v1::ITEM_STATUS_RUNNING);
  EXPECT_EQ(after.worker_id(), "w1");
  EXPECT_EQ(after.progress(), "half");
  EXPECT_EQ(FromProtoTime(after.lease_expire_time()), FromProtoTime(before.lease_expire_time()));
  EXPECT_EQ(Run("r").counts().running(), 1);
  ASSERT_OK(Complete(claimed.lease()));
  EXPECT_EQ(ClaimId("r", "w2"), "b");
}

TEST_F(WorkStoreTest, BadRunsChangeNothing) {
  v1::CreateRunRequest request;
  request.mutable_run()->set_run_id("r");
  request.mutable_run()->set_kind(v1::RUN_KIND_TASK_GRAPH);
  v1::WorkItem* a = request.add_items();
  a->set_item_id("a");
  a->add_dependencies("ghost");
  EXPECT_EQ(work_->CreateRun(request).status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<v1::ListRunsResponse> runs = work_->ListRuns(v1::ListRunsRequest());
  ASSERT_OK(runs);
  EXPECT_EQ(runs->runs_size(), 0);
  EXPECT_EQ(work_->GetRun("r").status().code(), absl::StatusCode::kNotFound);

  a->clear_dependencies();
  request.mutable_run()->set_kind(v1::RUN_KIND_UNSPECIFIED);
  EXPECT_EQ(work_->CreateRun(request).status().code(), absl::StatusCode::kInvalidArgument);
  request.mutable_run()->set_kind(v1::RUN_KIND_WORKSTREAMS);
  request.mutable_run()->mutable_retry_policy()->set_max_attempts(-1);
  EXPECT_EQ(work_->CreateRun(request).status().code(), absl::StatusCode::kInvalidArgument);
  request.mutable_run()->mutable_retry_policy()->set_max_attempts(0);
  ASSERT_OK(work_->CreateRun(request));
  EXPECT_EQ(work_->CreateRun(request).status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(Run("r").retry_policy().max_attempts(), 3);

  EXPECT_EQ(Claim("r", "").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Claim("r", "w", absl::Milliseconds(1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Claim("missing", "w").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(WorkStoreTest, ImportsATaskGraphAndGeneratesARunId) {
  v1::ImportTaskGraphRequest request;
  request.set_graph_json(R"({"feature": "f", "tasks": [
      {"id": "T1", "level": 1, "files": {"create": ["a.txt"]}, "extra": true},
      {"id": "T2", "level": 2, "dependencies": ["T1"]}], "levels": {"1": "one"}})");
  absl::StatusOr<v1::Run> run = work_->ImportTaskGraph(request);
  ASSERT_OK(run);
  EXPECT_THAT(run->run_id(), HasSubstr("run-"));
  EXPECT_EQ(run->feature(), "f");
  EXPECT_EQ(run->kind(), v1::RUN_KIND_TASK_GRAPH);
  EXPECT_EQ(run->counts().total(), 2);
  v1::WorkItem t1 = Item(run->run_id(), "T1");
  EXPECT_EQ(t1.owned_files(0), "a.txt");
  EXPECT_TRUE(t1.metadata().fields().at("extra").bool_value());

  request.set_graph_json(R"({"tasks": [{"id": "T1", "dependencies": ["T9"]}]})");
  absl::Status bad = work_->ImportTaskGraph(request).status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("T9"));
}

TEST_F(WorkStoreTest, ListsRunsAndItemsInPages) {
  for (int i = 0; i < 3; ++i) CreateRun(absl::StrCat("r", i), {"a", "b", "c"});
  v1::ListRunsRequest runs_request;
  runs_request.set_page_size(2);
  absl::StatusOr<v1::ListRunsResponse> runs = work_->ListRuns(runs_request);
  ASSERT_OK(runs);
  ASSERT_EQ(runs->runs_size(), 2);
  EXPECT_EQ(runs->runs(0).run_id(), "r0");
  runs_request.set_page_token(runs->next_page_token());
  runs = work_->ListRuns(runs_request);
  ASSERT_OK(runs);
  ASSERT_EQ(runs->runs_size(), 1);
  EXPECT_EQ(runs->runs(0).run_id(), "r2");
  EXPECT_TRUE(runs->next_page_token().empty());

  v1::ListItemsRequest items_request;
  items_request.set_run_id("r1");
  items_request.set_page_size(2);
  absl::StatusOr<v1::ListItemsResponse> items = work_->ListItems(items_request);
  ASSERT_OK(items);
  ASSERT_EQ(items->items_size(), 2);
  items_request.set_page_token(items->next_page_token());
  items = work_->ListItems(items_request);
  ASSERT_OK(items);
  ASSERT_EQ(items->items_size(), 1);
  EXPECT_EQ(items->items(0).item_id(), "c");
}

TEST_F(WorkStoreTest, PublishesEveryChange) {
  RecordingWatcher watcher;
  CreateRun("r", {"a"});
  ASSERT_TRUE(notifier_.Subscribe("r", &watcher));
  v1::ClaimResponse claimed = MustClaim("r", "w1");
  ASSERT_OK(Heartbeat(claimed.lease(), "p"));
  ASSERT_OK(Complete(claimed.lease()));
  notifier_.Unsubscribe(&watcher);
  std::vector<v1::RunEvent> events = watcher.events();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].item().status(), v1::ITEM_STATUS_RUNNING);
  EXPECT_TRUE(events[0].has_run());
  EXPECT_EQ(events[1].item().progress(), "p");
  EXPECT_FALSE(events[1].has_run());  // a heartbeat does not touch the run
  EXPECT_EQ(events[2].item().status(), v1::ITEM_STATUS_DONE);
  EXPECT_EQ(events[2].run().status(), v1::RUN_STATUS_COMPLETED);
  EXPECT_LT(events[0].item().version(), events[1].item().version());
  EXPECT_LT(events[1].item().version(), events[2].item().version());
}

// A new run's items are changes like any other: a watcher of every run (the web console's
// feed) hears of a run created after it subscribed, with the run on the last event.
TEST_F(WorkStoreTest, PublishesTheItemsOfANewRun) {
  RecordingWatcher all;
  ASSERT_TRUE(notifier_.Subscribe(WorkNotifier::kAllRuns, &all));
  CreateRun("fresh", {"a:1", "b:1", "c:2:a"});
  EXPECT_FALSE(work_->CreateRun(v1::CreateRunRequest()).ok());  // refused: nothing published
  notifier_.Unsubscribe(&all);
  std::vector<v1::RunEvent> events = all.events();
  ASSERT_EQ(events.size(), 3u);
  for (const v1::RunEvent& event : events) {
    EXPECT_EQ(event.type(), v1::RunEvent::TYPE_CHANGED);
    EXPECT_EQ(event.run_id(), "fresh");
    EXPECT_EQ(event.item().status(), v1::ITEM_STATUS_PENDING);
  }
  EXPECT_EQ(events[0].item().item_id(), "a");
  EXPECT_FALSE(events[0].has_run());
  EXPECT_EQ(events[2].run().run_id(), "fresh");
  EXPECT_EQ(events[2].run().counts().total(), 3);
}

}  // namespace
}  // namespace coordinator

namespace coordinator {
namespace {

// A watcher of kAllRuns (the web console's feed) gets every run's events; a watcher of one run
// still gets only that run's.
TEST(WorkNotifierTest, AWatcherOfAllRunsGetsEveryRunsEvents) {
  WorkNotifier notifier;
  RecordingWatcher all;
  RecordingWatcher one;
  ASSERT_TRUE(notifier.Subscribe(WorkNotifier::kAllRuns, &all));
  ASSERT_TRUE(notifier.Subscribe("run-a", &one));
  for (const char* run : {"run-a", "run-b"}) {
    v1::RunEvent event;
    event.set_type(v1::RunEvent::TYPE_CHANGED);
    event.set_run_id(run);
    notifier.Publish(event);
  }
  ASSERT_EQ(all.events().size(), 2u);
  EXPECT_EQ(all.events()[1].run_id(), "run-b");
  ASSERT_EQ(one.events().size(), 1u);
  EXPECT_EQ(one.events()[0].run_id(), "run-a");
  notifier.Unsubscribe(&all);
  notifier.Unsubscribe(&one);
}

// ---- Claimants (docs/security.md, "Ownership") ----

TEST_F(WorkStoreTest, OnlyTheRunsClaimantsAndAdminsClaimAndUseLeases) {
  const Access admin = Access::Admin("ops");
  const Access green = Access::Agent("green");
  const Access purple = Access::Agent("purple");
  v1::CreateRunRequest create;
  create.mutable_run()->set_run_id("run-g");
  create.mutable_run()->set_kind(v1::RUN_KIND_WORKSTREAMS);
  create.mutable_run()->add_claimants("green");
  for (const char* id : {"a", "b", "c"}) create.add_items()->set_item_id(id);
  absl::StatusOr<v1::Run> run = work_->CreateRun(create, admin);
  ASSERT_OK(run);
  EXPECT_THAT(run->claimants(), ::testing::ElementsAre("green"));

  v1::ClaimRequest claim;
  claim.set_run_id("run-g");
  claim.set_worker_id("w");
  absl::Status denied = work_->Claim(claim, purple).status();
  EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(denied.message()), HasSubstr("purple may not claim items of run run-g"));
  absl::StatusOr<v1::ClaimResponse> mine = work_->Claim(claim, green);
  ASSERT_OK(mine);
  ASSERT_TRUE(mine->has_item());
  absl::StatusOr<v1::ClaimResponse> admins = work_->Claim(claim, admin);
  ASSERT_OK(admins);
  ASSERT_TRUE(admins->has_item());
  const absl::StatusOr<v1::Run> before = work_->GetRun("run-g");
  ASSERT_OK(before);

  // A lease does not let a stranger in, whoever took it.
  for (const std::string& lease : {mine->lease(), admins->lease()}) {
    v1::HeartbeatRequest heartbeat;
    heartbeat.set_lease(lease);
    heartbeat.set_progress("forged");
    v1::CheckpointRequest checkpoint;
    checkpoint.set_lease(lease);
    checkpoint.set_note("forged");
    v1::CompleteRequest complete;
    complete.set_lease(lease);
    v1::FailRequest fail;
    fail.set_lease(lease);
    fail.set_error("forged");
    for (const absl::Status& s :
         {work_->Heartbeat(heartbeat, purple).status(),
          work_->Checkpoint(checkpoint, purple).status(),
          work_->Complete(complete, purple).status(), work_->Fail(fail, purple).status()}) {
      EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
    }
  }
  absl::StatusOr<v1::Run> after = work_->GetRun("run-g");
  ASSERT_OK(after);
  EXPECT_EQ(after->DebugString(), before->DebugString());
  absl::StatusOr<v1::WorkItem> item = work_->GetItem("run-g", mine->item().item_id());
  ASSERT_OK(item);
  EXPECT_EQ(item->progress(), "");
  EXPECT_EQ(item->checkpoint(), "");

  // The claimant uses the admin's lease too: a lease is the capability for its item.
  v1::CompleteRequest complete;
  complete.set_lease(admins->lease());
  EXPECT_OK(work_->Complete(complete, green));
  complete.set_lease(mine->lease());
  EXPECT_OK(work_->Complete(complete, green));
}

TEST_F(WorkStoreTest, ClaimantsDefaultToTheCreatorAndAreChecked) {
  v1::CreateRunRequest create;
  create.mutable_run()->set_kind(v1::RUN_KIND_WORKSTREAMS);
  create.add_items()->set_item_id("a");
  create.mutable_run()->set_run_id("by-ops");
  absl::StatusOr<v1::Run> by_ops = work_->CreateRun(create, Access::Admin("ops"));
  ASSERT_OK(by_ops);
  EXPECT_THAT(by_ops->claimants(), ::testing::ElementsAre("ops"));
  v1::ClaimRequest claim;
  claim.set_run_id("by-ops");
  claim.set_worker_id("w");
  EXPECT_EQ(work_->Claim(claim, Access::Agent("green")).status().code(),
            absl::StatusCode::kPermissionDenied);

  // Without authentication there is no principal, and the run has no claimants: no agent may
  // claim it once authentication is on (runs stored before claimants existed read the same).
  create.mutable_run()->set_run_id("anonymous");
  absl::StatusOr<v1::Run> anonymous = work_->CreateRun(create);
  ASSERT_OK(anonymous);
  EXPECT_TRUE(anonymous->claimants().empty());
  claim.set_run_id("anonymous");
  EXPECT_EQ(work_->Claim(claim, Access::Agent("green")).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_OK(work_->Claim(claim, Access::Admin("ops")));

  // Bad claimants are refused, and no run is made.
  for (const auto& [names, code] :
       std::vector<std::pair<std::vector<std::string>, absl::StatusCode>>{
           {{"green", "green"}, absl::StatusCode::kInvalidArgument},
           {{""}, absl::StatusCode::kInvalidArgument},
           {{"bad\nname"}, absl::StatusCode::kInvalidArgument},
           {std::vector<std::string>(kMaxClaimants + 1, "x"), absl::StatusCode::kResourceExhausted},
       }) {
    create.mutable_run()->set_run_id("bad");
    create.mutable_run()->clear_claimants();
    for (const std::string& n : names) create.mutable_run()->add_claimants(n);
    EXPECT_EQ(work_->CreateRun(create, Access::Admin("ops")).status().code(), code);
    EXPECT_EQ(work_->GetRun("bad").status().code(), absl::StatusCode::kNotFound);
  }

  // ImportTaskGraph takes them too.
  v1::ImportTaskGraphRequest import;
  import.set_run_id("graph");
  import.set_graph_json(R"({"feature": "f", "tasks": [{"id": "T-1", "level": 0}]})");
  import.add_claimants("purple");
  absl::StatusOr<v1::Run> graph = work_->ImportTaskGraph(import, Access::Admin("ops"));
  ASSERT_OK(graph);
  EXPECT_THAT(graph->claimants(), ::testing::ElementsAre("purple"));
  claim.set_run_id("graph");
  EXPECT_OK(work_->Claim(claim, Access::Agent("purple")));
}

// Observed lease expiry (LeaseExpiry::kObserved, docs/work.md "Leases and fencing"): the store
// as the coordinator opens it on etcd, with two more replicas of the same data set whose wall
// clocks are an hour ahead and an hour behind. On etcd each replica has its own client; the
// embedded RocksDB store is one process's, so there they share it. Reapers keep their
// observations on `mono_`, a monotonic clock only the test moves.
class ObservedLeaseTest : public WorkStoreTest {
 protected:
  void SetUp() override {
    WorkStoreTest::SetUp();
    work_ = std::make_unique<WorkStore>(
        store_.get(), &notifier_, WorkLimits(), [this] { return clock_.Now(); },
        LeaseExpiry::kObserved);
    storage::Store* other = store_.get();
    if (storage::testing::UseEtcd()) {
      absl::StatusOr<std::unique_ptr<storage::Store>> second =
          storage::testing::OpenTestStore(dir_.Sub("db"));
      ASSERT_OK(second);
      other_store_ = *std::move(second);
      other = other_store_.get();
    }
    ahead_ = std::make_unique<WorkStore>(
        other, nullptr, WorkLimits(), [this] { return clock_.Now() + absl::Hours(1); },
        LeaseExpiry::kObserved);
    behind_ = std::make_unique<WorkStore>(
        other, nullptr, WorkLimits(), [this] { return clock_.Now() - absl::Hours(1); },
        LeaseExpiry::kObserved);
  }

  Clock Mono() {
    return [this] { return mono_.Now(); };
  }

  // One reaper pass of `replica` with `seen`; -1 on an error.
  int Reap(WorkStore* replica, LeaseObservations* seen) {
    absl::StatusOr<int> reaped = replica->ReapExpired(seen);
    EXPECT_OK(reaped);
    return reaped.ok() ? *reaped : -1;
  }

  absl::StatusOr<v1::HeartbeatResponse> HeartbeatThrough(WorkStore* replica,
                                                         const std::string& lease) {
    v1::HeartbeatRequest request;
    request.set_lease(lease);
    return replica->Heartbeat(request);
  }

  FakeClock mono_;
  std::unique_ptr<storage::Store> other_store_;
  std::unique_ptr<WorkStore> ahead_;
  std::unique_ptr<WorkStore> behind_;
};

TEST_F(ObservedLeaseTest, ReplicasAnHourApartNeitherTakeBackNorRefuseALiveLease) {
  CreateRun("r", {"a"});
  v1::ClaimResponse claimed = MustClaim("r", "w1");  // 10 s, stamped by work_'s clock
  // The reaper on the replica an hour ahead: by its wall clock the lease expired 59 minutes
  // ago, and wall-clock expiry would take it back at once. It has only just seen the lease.
  LeaseObservations seen(Mono());
  EXPECT_EQ(Reap(ahead_.get(), &seen), 0);
  EXPECT_EQ(Item("r", "a").status(), v1::ITEM_STATUS_RUNNING);
  for (int beat = 0; beat < 3; ++beat) {
    mono_.Advance(absl::Seconds(8));
    clock_.Advance(absl::Seconds(8));
    // A heartbeat through the replica an hour behind stamps an expiry an hour before the one
    // work_ stamped; it keeps the lease all the same.
    absl::StatusOr<v1::HeartbeatResponse> beat_behind =
        HeartbeatThrough(behind_.get(), claimed.lease());
    ASSERT_OK(beat_behind);
    EXPECT_LT(FromProtoTime(beat_behind->lease_expire_time()), clock_.Now());
    EXPECT_EQ(Reap(ahead_.get(), &seen), 0);
    EXPECT_EQ(Item("r", "a").status(), v1::ITEM_STATUS_RUNNING);
  }
  // work_, whose wall clock is past the expiry the replica behind stamped, still accepts the
  // holder's calls: only the reaper ends a lease.
  ASSERT_OK(Heartbeat(claimed.lease(), "still here"));
  ASSERT_OK(Complete(claimed.lease(), "done"));
  EXPECT_EQ(Item("r", "a").status(), v1::ITEM_STATUS_DONE);
  EXPECT_EQ(Reap(ahead_.get(), &seen), 0);
  EXPECT_EQ(seen.size(), 0u);
}

TEST_F(ObservedLeaseTest, AStoppedWorkerLosesItsItemAfterTheLengthTheReaperObserved) {
  CreateRun("r", {"a"});
  v1::ClaimResponse claimed = MustClaim("r", "w1");  // 10 s
  LeaseObservations seen(Mono());
  EXPECT_EQ(Reap(work_.get(), &seen), 0);  // first sighting
  EXPECT_EQ(seen.size(), 1u);
  // Wall time means nothing to the reaper: a day later on every clock, the lease holds...
  clock_.Advance(absl::Hours(24));
  mono_.Advance(absl::Seconds(9));
  EXPECT_EQ(Reap(work_.get(), &seen), 0);
  EXPECT_EQ(Reap(ahead_.get(), &seen), 0);
  EXPECT_EQ(Item("r", "a").status(), v1::ITEM_STATUS_RUNNING);
  // ...until the reaper has seen it unchanged for its length.
  mono_.Advance(absl::Seconds(1));
  EXPECT_EQ(Reap(work_.get(), &seen), 1);
  EXPECT_EQ(seen.size(), 0u);
  const v1::WorkItem item = Item("r", "a");
  EXPECT_EQ(item.status(), v1::ITEM_STATUS_PENDING);
  EXPECT_FALSE(item.has_lease_expire_time());
  EXPECT_THAT(item.last_error(), HasSubstr("lease of worker w1 expired"));
  EXPECT_THAT(item.last_error(), HasSubstr("no heartbeat for 10s"));
  // Fencing is as under wall-clock expiry: the old holder is refused everywhere.
  for (WorkStore* replica : {work_.get(), ahead_.get(), behind_.get()}) {
    absl::StatusOr<v1::HeartbeatResponse> late = HeartbeatThrough(replica, claimed.lease());
    EXPECT_EQ(late.status().code(), absl::StatusCode::kFailedPrecondition);
  }
  v1::ClaimResponse second = MustClaim("r", "w2");
  EXPECT_EQ(second.epoch(), 2);
  EXPECT_THAT(Complete(claimed.lease()).status().message(), HasSubstr("stale"));
  ASSERT_OK(Complete(second.lease()));
}

TEST_F(ObservedLeaseTest, AHeartbeatRestartsTheObservation) {
  CreateRun("r", {"a", "b"});
  v1::ClaimResponse a = MustClaim("r", "w1");
  v1::ClaimResponse b = MustClaim("r", "w2");
  LeaseObservations seen(Mono());
  EXPECT_EQ(Reap(work_.get(), &seen), 0);
  EXPECT_EQ(seen.size(), 2u);
  mono_.Advance(absl::Seconds(8));
  // The wall clock has not moved: the heartbeat still moves the lease's index entry.
  ASSERT_OK(Heartbeat(a.lease()));
  EXPECT_EQ(Reap(work_.get(), &seen), 0);
  EXPECT_EQ(seen.size(), 2u);  // a's old entry forgotten, its new one remembered
  mono_.Advance(absl::Seconds(8));
  // 16 s since the claims: b, silent, goes; a heartbeated 8 s ago and stays.
  EXPECT_EQ(Reap(work_.get(), &seen), 1);
  EXPECT_EQ(Item("r", "a").status(), v1::ITEM_STATUS_RUNNING);
  EXPECT_EQ(Item("r", "b").status(), v1::ITEM_STATUS_PENDING);
  EXPECT_EQ(seen.size(), 1u);
  mono_.Advance(absl::Seconds(2));
  EXPECT_EQ(Reap(work_.get(), &seen), 1);
  EXPECT_EQ(Item("r", "a").status(), v1::ITEM_STATUS_PENDING);
  EXPECT_EQ(seen.size(), 0u);
}

TEST_F(ObservedLeaseTest, AFailoverReaperStartsAfreshAndOnlyExtendsLeases) {
  CreateRun("r", {"a"});
  MustClaim("r", "w1");
  {
    LeaseObservations first(Mono());
    EXPECT_EQ(Reap(work_.get(), &first), 0);
    mono_.Advance(absl::Seconds(9));
    EXPECT_EQ(Reap(work_.get(), &first), 0);
  }  // the first reaper's replica loses its leadership 1 s before it would have taken it back
  LeaseObservations second(Mono());
  mono_.Advance(absl::Seconds(5));
  EXPECT_EQ(Reap(ahead_.get(), &second), 0);  // first sighting for this reaper
  mono_.Advance(absl::Seconds(9));
  EXPECT_EQ(Reap(ahead_.get(), &second), 0);
  EXPECT_EQ(Item("r", "a").status(), v1::ITEM_STATUS_RUNNING);
  mono_.Advance(absl::Seconds(1));
  EXPECT_EQ(Reap(ahead_.get(), &second), 1);
  EXPECT_EQ(Item("r", "a").status(), v1::ITEM_STATUS_PENDING);
}

TEST_F(ObservedLeaseTest, ALeftOverIndexEntryIsDeletedAndReapingNeedsObservations) {
  CreateRun("r", {"a"});
  MustClaim("r", "w1");
  // An index entry whose item is gone (never written that way; an old bug's leftovers).
  for (const std::string& stray :
       {keys::WorkLease(123, "r", "gone"), keys::WorkLease(456, "no-such-run", "a")}) {
    ASSERT_OK(store_->RunTransaction([&stray](storage::Transaction& txn) {
      return txn.Put(storage::ColumnFamily::kWork, stray, "");
    }));
  }
  absl::StatusOr<int64_t> leases = work_->CountLeases();
  ASSERT_OK(leases);
  EXPECT_EQ(*leases, 3);
  LeaseObservations seen(Mono());
  EXPECT_EQ(Reap(work_.get(), &seen), 0);
  leases = work_->CountLeases();
  ASSERT_OK(leases);
  EXPECT_EQ(*leases, 1);
  EXPECT_EQ(seen.size(), 1u);
  EXPECT_EQ(Item("r", "a").status(), v1::ITEM_STATUS_RUNNING);

  absl::StatusOr<int> without = work_->ReapExpired();
  EXPECT_EQ(without.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(without.status().message(), HasSubstr("observations"));
}

TEST_F(ObservedLeaseTest, TheReaperThreadObservesOnItsOwnClock) {
  CreateRun("r", {"a"});
  MustClaim("r", "w1");
  Reaper reaper(work_.get(), absl::Milliseconds(5), Mono());
  // The lease goes only once the reaper's clock has moved its length past its first sighting;
  // move it a second per poll until then (bounded).
  for (int i = 0; i < 3000 && Item("r", "a").status() != v1::ITEM_STATUS_PENDING; ++i) {
    mono_.Advance(absl::Seconds(1));
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(Item("r", "a").status(), v1::ITEM_STATUS_PENDING);
  EXPECT_THAT(Item("r", "a").last_error(), HasSubstr("no heartbeat for"));
  reaper.Stop();
}

}  // namespace
}  // namespace coordinator
