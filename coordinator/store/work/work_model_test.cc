// The work model added for the systems we replace (issue 18, docs/work.md): per-item times, pid,
// adapter and required capabilities; the worker registry; level states and MergeLevel; adding
// items to a run; the status filter; the event log (written with each change, paged, purged with
// the run); and runs stored before these existed. A fake clock, no sleeping.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "common/status_macros.h"
#include "coordinator/store/records/keys.h"
#include "coordinator/store/records/record_codec.h"
#include "coordinator/store/records/time_util.h"
#include "coordinator/store/work/work_store.h"
#include "coordinator/store/work/work_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/rocks_store.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using ::testing_util::FakeClock;

class WorkModelTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }

  void Open() {
    storage::StoreOptions options;
    options.path = dir_.Sub("db");
    absl::StatusOr<std::unique_ptr<storage::RocksStore>> store = storage::RocksStore::Open(options);
    ASSERT_OK(store);
    store_ = *std::move(store);
    work_ = std::make_unique<WorkStore>(store_.get(), nullptr, WorkLimits(),
                                        [this] { return clock_.Now(); });
  }

  void Reopen() {
    work_.reset();
    store_.reset();
    Open();
  }

  v1::Run CreateRun(const std::string& run_id, const std::vector<std::string>& items) {
    v1::CreateRunRequest request;
    request.mutable_run()->set_run_id(run_id);
    request.mutable_run()->set_kind(v1::RUN_KIND_TASK_GRAPH);
    for (const std::string& spec : items) *request.add_items() = ItemSpec(spec);
    absl::StatusOr<v1::Run> run = work_->CreateRun(request);
    EXPECT_OK(run);
    return run.ok() ? *run : v1::Run();
  }

  absl::StatusOr<v1::ClaimResponse> Claim(const std::string& run_id, const std::string& worker,
                                          const std::vector<std::string>& capabilities = {},
                                          int64_t pid = 0) {
    v1::ClaimRequest request;
    request.set_run_id(run_id);
    request.set_worker_id(worker);
    *request.mutable_lease_ttl() = ToProtoDuration(absl::Seconds(10));
    for (const std::string& c : capabilities) request.add_capabilities(c);
    request.set_pid(pid);
    return work_->Claim(request);
  }

  v1::ClaimResponse MustClaim(const std::string& run_id, const std::string& worker,
                              const std::vector<std::string>& capabilities = {}) {
    absl::StatusOr<v1::ClaimResponse> claimed = Claim(run_id, worker, capabilities);
    EXPECT_OK(claimed);
    EXPECT_TRUE(claimed.ok() && claimed->has_item()) << "no item for " << worker;
    return claimed.ok() ? *claimed : v1::ClaimResponse();
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

  absl::StatusOr<v1::AddItemsResponse> Add(const std::string& run_id,
                                           const std::vector<std::string>& items) {
    v1::AddItemsRequest request;
    request.set_run_id(run_id);
    for (const std::string& spec : items) *request.add_items() = ItemSpec(spec);
    return work_->AddItems(request);
  }

  absl::StatusOr<v1::Run> Merge(const std::string& run_id, int64_t level,
                                const std::string& commit = "") {
    v1::MergeLevelRequest request;
    request.set_run_id(run_id);
    request.set_level(level);
    request.set_merge_commit(commit);
    return work_->MergeLevel(request);
  }

  v1::Run GetRun(const std::string& run_id) {
    absl::StatusOr<v1::Run> run = work_->GetRun(run_id);
    EXPECT_OK(run);
    return run.ok() ? *run : v1::Run();
  }

  v1::WorkItem Item(const std::string& run_id, const std::string& item_id) {
    absl::StatusOr<v1::WorkItem> item = work_->GetItem(run_id, item_id);
    EXPECT_OK(item);
    return item.ok() ? *item : v1::WorkItem();
  }

  std::map<std::string, v1::RunWorker> Workers(const std::string& run_id) {
    v1::ListWorkersRequest request;
    request.set_run_id(run_id);
    absl::StatusOr<v1::ListWorkersResponse> listed = work_->ListWorkers(request);
    EXPECT_OK(listed);
    std::map<std::string, v1::RunWorker> out;
    if (listed.ok()) {
      for (const v1::RunWorker& w : listed->workers()) out[w.worker_id()] = w;
    }
    return out;
  }

  std::vector<v1::WorkEvent> Events(const std::string& run_id, int64_t after = 0) {
    std::vector<v1::WorkEvent> out;
    v1::ListEventsRequest request;
    request.set_run_id(run_id);
    request.set_after_seq(after);
    while (true) {
      absl::StatusOr<v1::ListEventsResponse> page = work_->ListEvents(request);
      EXPECT_OK(page);
      if (!page.ok()) break;
      out.insert(out.end(), page->events().begin(), page->events().end());
      if (page->next_page_token().empty()) break;
      request.set_page_token(page->next_page_token());
    }
    return out;
  }

  // The log as "kind item/level/worker status" words, for compact comparisons.
  std::vector<std::string> EventWords(const std::string& run_id, int64_t after = 0) {
    std::vector<std::string> out;
    for (const v1::WorkEvent& e : Events(run_id, after)) {
      switch (e.kind()) {
        case v1::WorkEvent::KIND_RUN_CREATED:
          out.push_back("run_created");
          break;
        case v1::WorkEvent::KIND_ITEM_CREATED:
          out.push_back(absl::StrCat("created ", e.item_id()));
          break;
        case v1::WorkEvent::KIND_ITEM_CLAIMED:
          out.push_back(absl::StrCat("claimed ", e.item_id(), " by ", e.worker_id()));
          break;
        case v1::WorkEvent::KIND_ITEM_HEARTBEAT_LOST:
          out.push_back(absl::StrCat("lost ", e.item_id()));
          break;
        case v1::WorkEvent::KIND_ITEM_COMPLETED:
          out.push_back(absl::StrCat("completed ", e.item_id()));
          break;
        case v1::WorkEvent::KIND_ITEM_FAILED:
          out.push_back(
              absl::StrCat("failed ", e.item_id(), " ", v1::ItemStatus_Name(e.item_status())));
          break;
        case v1::WorkEvent::KIND_ITEM_RETRIED:
          out.push_back(absl::StrCat("retried ", e.item_id()));
          break;
        case v1::WorkEvent::KIND_LEVEL_CHANGED:
          out.push_back(
              absl::StrCat("level ", e.level(), " ", v1::LevelStatus_Name(e.level_status())));
          break;
        case v1::WorkEvent::KIND_WORKER_CHANGED:
          out.push_back(absl::StrCat("worker ", e.worker_id(), " ",
                                     v1::WorkerStatus_Name(e.worker_status())));
          break;
        case v1::WorkEvent::KIND_RUN_STATUS_CHANGED:
          out.push_back(absl::StrCat("run ", v1::RunStatus_Name(e.run_status())));
          break;
        default:
          out.push_back("?");
      }
    }
    return out;
  }

  testing_util::TempDir dir_;
  FakeClock clock_;
  std::unique_ptr<storage::RocksStore> store_;
  std::unique_ptr<WorkStore> work_;
};

TEST_F(WorkModelTest, ItemsRecordStartCompletePidAndAdapter) {
  v1::CreateRunRequest request;
  request.mutable_run()->set_run_id("r");
  request.mutable_run()->set_kind(v1::RUN_KIND_WORKSTREAMS);
  v1::WorkItem* item = request.add_items();
  item->set_item_id("auth");
  item->set_adapter("claude-code");
  // Output-only fields of the input are ignored.
  item->set_pid(99);
  *item->mutable_start_time() = ToProtoTime(absl::FromUnixSeconds(5));
  ASSERT_OK(work_->CreateRun(request));
  v1::WorkItem stored = Item("r", "auth");
  EXPECT_EQ(stored.adapter(), "claude-code");
  EXPECT_EQ(stored.pid(), 0);
  EXPECT_FALSE(stored.has_start_time());

  const absl::Time claimed_at = clock_.Now();
  absl::StatusOr<v1::ClaimResponse> claim = Claim("r", "w1", {}, 4242);
  ASSERT_OK(claim);
  EXPECT_EQ(claim->item().pid(), 4242);
  EXPECT_EQ(FromProtoTime(claim->item().start_time()), claimed_at);
  EXPECT_FALSE(claim->item().has_complete_time());

  // A heartbeat names the pid of the command the worker started.
  clock_.Advance(absl::Seconds(1));
  v1::HeartbeatRequest beat;
  beat.set_lease(claim->lease());
  beat.set_pid(4243);
  ASSERT_OK(work_->Heartbeat(beat));
  EXPECT_EQ(Item("r", "auth").pid(), 4243);
  EXPECT_EQ(Workers("r")["w1"].pid(), 4243);

  clock_.Advance(absl::Seconds(4));
  ASSERT_OK(Complete(claim->lease(), "done"));
  v1::WorkItem done = Item("r", "auth");
  EXPECT_EQ(done.pid(), 0) << "a pid is kept only while the item runs";
  EXPECT_EQ(FromProtoTime(done.start_time()), claimed_at);
  EXPECT_EQ(FromProtoTime(done.complete_time()), claimed_at + absl::Seconds(5));
}

TEST_F(WorkModelTest, AWorkerGetsOnlyItemsItsCapabilitiesCover) {
  CreateRun("r", {"gpu-job:0::gpu", "plain:0", "both:0::gpu,docker"});
  // Items go in id order: "both" needs gpu and docker, which w1 lacks; "gpu-job" needs gpu.
  v1::ClaimResponse first = MustClaim("r", "w1", {"docker"});
  EXPECT_EQ(first.item().item_id(), "plain");
  absl::StatusOr<v1::ClaimResponse> none = Claim("r", "w1", {"docker"});
  ASSERT_OK(none);
  EXPECT_FALSE(none->has_item());
  EXPECT_FALSE(none->stalled()) << "another worker can take them";
  EXPECT_THAT(none->missing_capabilities(), ElementsAre("gpu"));
  EXPECT_EQ(MustClaim("r", "w2", {"gpu"}).item().item_id(), "gpu-job");
  EXPECT_EQ(MustClaim("r", "w3", {"gpu", "docker", "extra"}).item().item_id(), "both");
  EXPECT_THAT(Workers("r")["w3"].capabilities(), ElementsAre("gpu", "docker", "extra"));
}

TEST_F(WorkModelTest, CapabilitiesAndPidsAreValidated) {
  v1::CreateRunRequest request;
  request.mutable_run()->set_run_id("bad");
  request.mutable_run()->set_kind(v1::RUN_KIND_WORKSTREAMS);
  v1::WorkItem* item = request.add_items();
  item->set_item_id("a");
  item->add_required_capabilities("gpu");
  item->add_required_capabilities("gpu");
  EXPECT_THAT(work_->CreateRun(request).status().message(), HasSubstr("gpu is named twice"));
  item->clear_required_capabilities();
  item->add_required_capabilities("bad\ncap");
  EXPECT_EQ(work_->CreateRun(request).status().code(), absl::StatusCode::kInvalidArgument);
  item->clear_required_capabilities();
  for (int i = 0; i < kMaxCapabilities + 1; ++i) item->add_required_capabilities(absl::StrCat(i));
  EXPECT_EQ(work_->CreateRun(request).status().code(), absl::StatusCode::kResourceExhausted);
  item->clear_required_capabilities();
  item->set_adapter(std::string(300, 'x'));
  EXPECT_EQ(work_->CreateRun(request).status().code(), absl::StatusCode::kInvalidArgument);
  item->set_adapter("bad\x01");
  EXPECT_EQ(work_->CreateRun(request).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(work_->GetRun("bad").status().code(), absl::StatusCode::kNotFound);

  CreateRun("r", {"a:0"});
  EXPECT_EQ(Claim("r", "w", {""}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Claim("r", "w", {"x", "x"}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Claim("r", "w", {std::string(257, 'c')}).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<std::string> many;
  for (int i = 0; i < kMaxCapabilities + 1; ++i) many.push_back(absl::StrCat("c", i));
  EXPECT_EQ(Claim("r", "w", many).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(Claim("r", "w", {}, -1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Claim("r", "w", {}, int64_t{1} << 40).status().code(),
            absl::StatusCode::kInvalidArgument);
  // None of those registered a worker or claimed anything.
  EXPECT_TRUE(Workers("r").empty());
  EXPECT_EQ(GetRun("r").claim_count(), 0);
  v1::ClaimResponse ok = MustClaim("r", "w");
  v1::HeartbeatRequest beat;
  beat.set_lease(ok.lease());
  beat.set_pid(-5);
  EXPECT_EQ(work_->Heartbeat(beat).status().code(), absl::StatusCode::kInvalidArgument);
}

// Formats that name workers by number (MAHABHARATHA's status reads int(worker_id)) read
// RunWorker.number: a worker named by a free number keeps it, any other follows the highest,
// in the order the workers joined; a number never changes.
TEST_F(WorkModelTest, EachWorkerGetsANumberWhenItJoinsTheRun) {
  CreateRun("r", {"a:0", "b:0", "c:0", "d:0", "e:0"});
  for (const char* worker : {"alice", "3", "bob", "0"}) MustClaim("r", worker);
  std::map<std::string, v1::RunWorker> workers = Workers("r");
  ASSERT_TRUE(workers["alice"].has_number());
  EXPECT_EQ(workers["alice"].number(), 0);
  EXPECT_EQ(workers["3"].number(), 3);
  EXPECT_EQ(workers["bob"].number(), 4);
  EXPECT_EQ(workers["0"].number(), 5);  // 0 was alice's
  MustClaim("r", "alice");
  EXPECT_EQ(Workers("r")["alice"].number(), 0);
  // Each run numbers its own workers.
  CreateRun("other", {"a:0"});
  MustClaim("other", "bob");
  EXPECT_EQ(Workers("other")["bob"].number(), 0);
}

TEST_F(WorkModelTest, TheRegistryFollowsEachWorker) {
  CreateRun("r", {"a:0", "b:0", "c:0"});
  const absl::Time start = clock_.Now();
  v1::ClaimResponse a = MustClaim("r", "w1");
  v1::RunWorker w1 = Workers("r")["w1"];
  EXPECT_EQ(w1.status(), v1::WORKER_STATUS_BUSY);
  EXPECT_EQ(w1.current_item(), "a");
  EXPECT_EQ(FromProtoTime(w1.last_heartbeat_time()), start);
  EXPECT_EQ(FromProtoTime(w1.create_time()), start);

  // A second item: both held, the newest is current; completing it leaves the other current.
  v1::ClaimResponse b = MustClaim("r", "w1");
  EXPECT_THAT(Workers("r")["w1"].held_items(), ElementsAre("a", "b"));
  EXPECT_EQ(Workers("r")["w1"].current_item(), "b");
  clock_.Advance(absl::Seconds(2));
  ASSERT_OK(Complete(b.lease()));
  w1 = Workers("r")["w1"];
  EXPECT_EQ(w1.status(), v1::WORKER_STATUS_BUSY);
  EXPECT_EQ(w1.current_item(), "a");
  EXPECT_EQ(w1.items_completed(), 1);
  EXPECT_EQ(FromProtoTime(w1.last_heartbeat_time()), start + absl::Seconds(2));
  ASSERT_OK(Fail(a.lease(), "boom"));
  w1 = Workers("r")["w1"];
  EXPECT_EQ(w1.status(), v1::WORKER_STATUS_IDLE);
  EXPECT_EQ(w1.current_item(), "");
  EXPECT_EQ(w1.items_failed(), 1);

  // w2 loses its item to the reaper: lost, with the reason.
  v1::ClaimResponse c = MustClaim("r", "w2");
  clock_.Advance(absl::Seconds(11));
  ASSERT_OK(work_->ReapExpired());
  v1::RunWorker w2 = Workers("r")["w2"];
  EXPECT_EQ(w2.status(), v1::WORKER_STATUS_LOST);
  EXPECT_THAT(w2.status_reason(), HasSubstr("lease of worker w2 expired"));
  EXPECT_TRUE(w2.held_items().empty());

  // An idle worker stops; one holding an item cannot; unknown workers are not found.
  v1::StopWorkerRequest stop;
  stop.set_run_id("r");
  stop.set_worker_id("w1");
  absl::StatusOr<v1::RunWorker> stopped = work_->StopWorker(stop);
  ASSERT_OK(stopped);
  EXPECT_EQ(stopped->status(), v1::WORKER_STATUS_STOPPED);
  v1::ClaimResponse again = MustClaim("r", "w3");
  stop.set_worker_id("w3");
  EXPECT_THAT(work_->StopWorker(stop).status().message(), HasSubstr("holds item"));
  stop.set_worker_id("nobody");
  EXPECT_EQ(work_->StopWorker(stop).status().code(), absl::StatusCode::kNotFound);
  stop.set_worker_id("bad\nid");
  EXPECT_EQ(work_->StopWorker(stop).status().code(), absl::StatusCode::kInvalidArgument);
  stop.set_worker_id("w1");
  stop.set_reason(std::string(5000, 'r'));
  EXPECT_EQ(work_->StopWorker(stop).status().code(), absl::StatusCode::kResourceExhausted);
  // A stopped worker that claims again is back.
  ASSERT_OK(Complete(again.lease()));
  absl::StatusOr<v1::ClaimResponse> back = Claim("r", "w1");
  ASSERT_OK(back);
  EXPECT_EQ(Workers("r")["w1"].status(), v1::WORKER_STATUS_BUSY);
}

TEST_F(WorkModelTest, AnIdlePollWritesAtMostOncePerInterval) {
  CreateRun("r", {"a:0"});
  v1::ClaimResponse a = MustClaim("r", "w1");
  ASSERT_OK(Claim("r", "idle"));
  const absl::Time registered = FromProtoTime(Workers("r")["idle"].last_heartbeat_time());
  const int64_t seq = GetRun("r").last_event_seq();
  clock_.Advance(absl::Milliseconds(500));
  ASSERT_OK(Claim("r", "idle"));
  EXPECT_EQ(FromProtoTime(Workers("r")["idle"].last_heartbeat_time()), registered);
  clock_.Advance(absl::Milliseconds(600));
  ASSERT_OK(Claim("r", "idle"));
  EXPECT_EQ(FromProtoTime(Workers("r")["idle"].last_heartbeat_time()),
            registered + absl::Milliseconds(1100));
  EXPECT_EQ(GetRun("r").last_event_seq(), seq) << "polls of an idle worker log nothing";
}

TEST_F(WorkModelTest, LevelsMoveFromPendingToMerged) {
  CreateRun("r", {"a:1", "b:1", "c:2:a"});
  v1::Run run = GetRun("r");
  ASSERT_EQ(run.level_states_size(), 2);
  EXPECT_EQ(run.level_states(0).level(), 1);
  EXPECT_EQ(run.level_states(0).status(), v1::LEVEL_STATUS_PENDING);
  EXPECT_EQ(run.level_states(0).total(), 2);
  EXPECT_EQ(run.level_states(1).total(), 1);
  EXPECT_EQ(run.current_level(), 1);

  EXPECT_THAT(Merge("r", 1).status().message(),
              HasSubstr("level 1 of run r is pending (0 of 2 items done); only a complete level "
                        "can be merged"));
  v1::ClaimResponse a = MustClaim("r", "w");
  EXPECT_EQ(GetRun("r").level_states(0).status(), v1::LEVEL_STATUS_RUNNING);
  EXPECT_EQ(FromProtoTime(GetRun("r").level_states(0).start_time()), clock_.Now());
  ASSERT_OK(Complete(a.lease()));
  EXPECT_THAT(Merge("r", 1).status().message(), HasSubstr("is running (1 of 2 items done)"));
  ASSERT_OK(Complete(MustClaim("r", "w").lease()));
  run = GetRun("r");
  EXPECT_EQ(run.level_states(0).status(), v1::LEVEL_STATUS_COMPLETE);
  EXPECT_EQ(run.current_level(), 2);

  // Level 2 cannot be merged before it is complete, nor before level 1 is merged.
  ASSERT_OK(Complete(MustClaim("r", "w").lease()));
  EXPECT_THAT(Merge("r", 2).status().message(),
              HasSubstr("level 1 of run r is complete: merge the levels in order"));
  EXPECT_EQ(Merge("r", 7).status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Merge("r", 7).status().message(), HasSubstr("its levels: 1, 2"));
  EXPECT_EQ(Merge("r", 1, "bad\ncommit").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Merge("r", 1, std::string(300, 'f')).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Merge("nope", 1).status().code(), absl::StatusCode::kNotFound);
  absl::StatusOr<v1::Run> merged = Merge("r", 1, "abc123");
  ASSERT_OK(merged);
  EXPECT_EQ(merged->level_states(0).status(), v1::LEVEL_STATUS_MERGED);
  EXPECT_EQ(merged->level_states(0).merge_commit(), "abc123");
  EXPECT_THAT(Merge("r", 1).status().message(), HasSubstr("is merged"));
  ASSERT_OK(Merge("r", 2));
  run = GetRun("r");
  EXPECT_EQ(run.level_states(1).status(), v1::LEVEL_STATUS_MERGED);
  EXPECT_EQ(run.current_level(), 2);
  EXPECT_EQ(run.status(), v1::RUN_STATUS_COMPLETED);
}

TEST_F(WorkModelTest, AddsItemsToARunningRun) {
  CreateRun("r", {"a:0", "b:1:a"});
  v1::ClaimResponse a = MustClaim("r", "w");
  absl::StatusOr<v1::AddItemsResponse> added = Add("r", {"c:0:a", "d:2:b,c"});
  ASSERT_OK(added);
  EXPECT_EQ(added->run().counts().total(), 4);
  EXPECT_EQ(added->run().counts().pending(), 3);
  ASSERT_EQ(added->items_size(), 2);
  EXPECT_EQ(added->items(0).status(), v1::ITEM_STATUS_PENDING);
  EXPECT_EQ(added->run().level_states_size(), 3);
  EXPECT_EQ(added->run().level_states(2).status(), v1::LEVEL_STATUS_PENDING);
  // c depends on a, so it waits; it is claimable once a is done, before b's level.
  EXPECT_FALSE(Claim("r", "w2")->has_item());
  ASSERT_OK(Complete(a.lease()));
  EXPECT_EQ(MustClaim("r", "w2").item().item_id(), "c");
}

TEST_F(WorkModelTest, BadAddsChangeNothing) {
  CreateRun("r", {"a:0", "b:1:a", "c:1"});
  ASSERT_OK(Complete(MustClaim("r", "w").lease()));  // level 0 complete, level 1 current
  const v1::Run before = GetRun("r");
  const auto expect_refused = [&](const std::vector<std::string>& items, absl::StatusCode code,
                                  const std::string& text) {
    absl::StatusOr<v1::AddItemsResponse> added = Add("r", items);
    EXPECT_EQ(added.status().code(), code) << added.status();
    EXPECT_THAT(added.status().message(), HasSubstr(text));
    EXPECT_EQ(GetRun("r").SerializeAsString(), before.SerializeAsString());
  };
  expect_refused({"x:1:nope"}, absl::StatusCode::kInvalidArgument,
                 "task x depends on unknown task nope");
  expect_refused({"x:1:y", "y:1:x"}, absl::StatusCode::kInvalidArgument, "dependency cycle");
  expect_refused({"b:1"}, absl::StatusCode::kAlreadyExists, "task b already exists");
  expect_refused({"x:1", "x:2"}, absl::StatusCode::kInvalidArgument, "appears more than once");
  expect_refused({"x:0"}, absl::StatusCode::kFailedPrecondition,
                 "task x is at level 0, below the run's current level 1 (level 0 is complete)");
  expect_refused({"x:1:d", "d:2"}, absl::StatusCode::kInvalidArgument, "at higher level 2");
  expect_refused({"bad\nid:1"}, absl::StatusCode::kInvalidArgument, "id of item 1");
  expect_refused({}, absl::StatusCode::kInvalidArgument, "items are required");
  EXPECT_EQ(Add("nope", {"x:1"}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Add("", {"x:1"}).status().code(), absl::StatusCode::kInvalidArgument);

  // Beyond the run's item limit.
  WorkLimits small;
  small.max_items = 4;
  WorkStore limited(store_.get(), nullptr, small, [this] { return clock_.Now(); });
  v1::AddItemsRequest two;
  two.set_run_id("r");
  *two.add_items() = ItemSpec("x:1");
  *two.add_items() = ItemSpec("y:1");
  EXPECT_EQ(limited.AddItems(two).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(GetRun("r").SerializeAsString(), before.SerializeAsString());

  // A run that ended takes nothing more.
  CreateRun("done", {"a:0"});
  ASSERT_OK(Complete(MustClaim("done", "w").lease()));
  EXPECT_THAT(Add("done", {"x:0"}).status().message(), HasSubstr("run done has ended (completed)"));
  CreateRun("failed", {"a:0"});
  ASSERT_OK(Fail(MustClaim("failed", "w").lease(), "no", /*retryable=*/false));
  EXPECT_EQ(Add("failed", {"x:0"}).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(WorkModelTest, ListsItemsByStatus) {
  CreateRun("r", {"a:0", "b:0", "c:0", "d:0"});
  ASSERT_OK(Complete(MustClaim("r", "w").lease()));
  MustClaim("r", "w");
  v1::ListItemsRequest request;
  request.set_run_id("r");
  request.set_status(v1::ITEM_STATUS_PENDING);
  request.set_page_size(1);
  std::vector<std::string> pending;
  std::string token;
  do {
    request.set_page_token(token);
    absl::StatusOr<v1::ListItemsResponse> page = work_->ListItems(request);
    ASSERT_OK(page);
    for (const v1::WorkItem& item : page->items()) pending.push_back(item.item_id());
    token = page->next_page_token();
  } while (!token.empty());
  EXPECT_THAT(pending, ElementsAre("c", "d"));
  request.set_status(v1::ITEM_STATUS_DONE);
  request.set_page_token("");
  absl::StatusOr<v1::ListItemsResponse> done = work_->ListItems(request);
  ASSERT_OK(done);
  ASSERT_EQ(done->items_size(), 1);
  EXPECT_EQ(done->items(0).item_id(), "a");
  // A token of one filter is refused for another; an unknown status is refused.
  request.set_status(v1::ITEM_STATUS_PENDING);
  absl::StatusOr<v1::ListItemsResponse> first = work_->ListItems(request);
  ASSERT_OK(first);
  request.set_status(v1::ITEM_STATUS_RUNNING);
  request.set_page_token(first->next_page_token());
  EXPECT_EQ(work_->ListItems(request).status().code(), absl::StatusCode::kInvalidArgument);
  request.set_page_token("");
  request.set_status(static_cast<v1::ItemStatus>(77));
  EXPECT_EQ(work_->ListItems(request).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(WorkModelTest, TheEventLogRecordsEveryChangeInOrder) {
  CreateRun("r", {"a:0", "b:1"});
  v1::ClaimResponse a = MustClaim("r", "w1");
  ASSERT_OK(Fail(a.lease(), "flaky"));
  clock_.Advance(absl::Minutes(1));
  a = MustClaim("r", "w1");
  ASSERT_OK(Complete(a.lease(), "ok"));
  v1::ClaimResponse b = MustClaim("r", "w2");
  clock_.Advance(absl::Seconds(11));
  ASSERT_OK(work_->ReapExpired());
  EXPECT_THAT(EventWords("r"),
              ElementsAre("run_created", "created a", "created b",                   //
                          "claimed a by w1", "level 0 LEVEL_STATUS_RUNNING",         //
                          "run RUN_STATUS_RUNNING", "worker w1 WORKER_STATUS_BUSY",  //
                          "failed a ITEM_STATUS_PENDING", "run RUN_STATUS_PENDING",  //
                          "worker w1 WORKER_STATUS_IDLE",                            //
                          "claimed a by w1", "run RUN_STATUS_RUNNING",               //
                          "worker w1 WORKER_STATUS_BUSY",                            //
                          "completed a", "level 0 LEVEL_STATUS_COMPLETE",            //
                          "run RUN_STATUS_PENDING", "worker w1 WORKER_STATUS_IDLE",  //
                          "claimed b by w2", "level 1 LEVEL_STATUS_RUNNING",         //
                          "run RUN_STATUS_RUNNING", "worker w2 WORKER_STATUS_BUSY",  //
                          "lost b", "run RUN_STATUS_PENDING", "worker w2 WORKER_STATUS_LOST"));
  std::vector<v1::WorkEvent> events = Events("r");
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].seq(), static_cast<int64_t>(i + 1));
    EXPECT_EQ(events[i].run_id(), "r");
  }
  EXPECT_EQ(GetRun("r").last_event_seq(), static_cast<int64_t>(events.size()));
  EXPECT_EQ(events[7].message(), "flaky");
  EXPECT_EQ(events[7].attempt(), 1);
  EXPECT_EQ(events[13].message(), "ok");
  EXPECT_EQ(events[13].epoch(), 2);
  // From a position, and in pages.
  EXPECT_EQ(Events("r", 20).size(), events.size() - 20);
  v1::ListEventsRequest request;
  request.set_run_id("r");
  request.set_page_size(5);
  absl::StatusOr<v1::ListEventsResponse> page = work_->ListEvents(request);
  ASSERT_OK(page);
  EXPECT_EQ(page->events_size(), 5);
  EXPECT_EQ(page->last_seq(), static_cast<int64_t>(events.size()));
  request.set_page_token(page->next_page_token());
  page = work_->ListEvents(request);
  ASSERT_OK(page);
  EXPECT_EQ(page->events(0).seq(), 6);
}

TEST_F(WorkModelTest, EventListingRefusesBadInput) {
  CreateRun("r", {"a:0"});
  v1::ListEventsRequest request;
  request.set_run_id("r");
  request.set_after_seq(-1);
  EXPECT_EQ(work_->ListEvents(request).status().code(), absl::StatusCode::kInvalidArgument);
  request.set_after_seq(INT64_MAX);
  absl::StatusOr<v1::ListEventsResponse> none = work_->ListEvents(request);
  ASSERT_OK(none);
  EXPECT_TRUE(none->events().empty());
  request.set_after_seq(0);
  request.set_page_size(-3);
  EXPECT_EQ(work_->ListEvents(request).status().code(), absl::StatusCode::kInvalidArgument);
  request.set_page_size(0);
  request.set_page_token("garbage!");
  EXPECT_EQ(work_->ListEvents(request).status().code(), absl::StatusCode::kInvalidArgument);
  // A token of another listing.
  v1::ListItemsRequest items;
  items.set_run_id("r");
  items.set_page_size(1);
  CreateRun("r2", {"a:0", "b:0"});
  items.set_run_id("r2");
  absl::StatusOr<v1::ListItemsResponse> page = work_->ListItems(items);
  ASSERT_OK(page);
  request.set_run_id("r2");
  request.set_page_token(page->next_page_token());
  EXPECT_EQ(work_->ListEvents(request).status().code(), absl::StatusCode::kInvalidArgument);
  request.set_page_token("");
  request.set_run_id("bad\x7f");
  EXPECT_EQ(work_->ListEvents(request).status().code(), absl::StatusCode::kInvalidArgument);
  request.set_run_id("missing");
  EXPECT_EQ(work_->ListEvents(request).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(WorkModelTest, EventMessagesAreBounded) {
  CreateRun("r", {"a:0"});
  // 2000 bytes of two-byte characters: the entry keeps whole characters of the first 1 KiB.
  std::string error;
  for (int i = 0; i < 1000; ++i) error += "\xc3\xa9";
  ASSERT_OK(Fail(MustClaim("r", "w").lease(), "x" + error));
  std::vector<v1::WorkEvent> events = Events("r");
  const v1::WorkEvent* failed = nullptr;
  for (const v1::WorkEvent& e : events) {
    if (e.kind() == v1::WorkEvent::KIND_ITEM_FAILED) failed = &e;
  }
  ASSERT_NE(failed, nullptr);
  EXPECT_LE(failed->message().size(), 1024u);
  EXPECT_GE(failed->message().size(), 1023u);
  EXPECT_EQ(failed->message().size() % 2, 1u) << "a character was cut in half";
  EXPECT_EQ(Item("r", "a").last_error().size(), error.size() + 1);
}

TEST_F(WorkModelTest, TheLogAndRegistrySurviveReopeningAndGoWithThePurge) {
  CreateRun("r", {"a:0"});
  MustClaim("r", "w");
  const std::vector<std::string> before = EventWords("r");
  Reopen();
  EXPECT_EQ(EventWords("r"), before);
  EXPECT_EQ(Workers("r")["w"].status(), v1::WORKER_STATUS_BUSY);
  PurgeProgress progress;
  do {
    ASSERT_OK(store_->RunTransaction([&](storage::Transaction& txn) -> absl::Status {
      absl::StatusOr<PurgeProgress> step =
          WorkStore::PurgeStep(txn, "r", 3, [](const v1::Run&) { return true; });
      if (!step.ok()) return step.status();
      progress = *step;
      return absl::OkStatus();
    }));
  } while (!progress.finished);
  const std::string prefix = keys::RunPrefix("r");
  std::unique_ptr<storage::Iterator> it =
      store_->NewIterator(storage::ColumnFamily::kWork, prefix, storage::PrefixUpperBound(prefix));
  EXPECT_FALSE(it->Valid()) << "a record of the run is left";
}

// A header written before level states and the event log (layout 0), with its items: readers
// see level states rebuilt from the items, and the first change upgrades the record.
TEST_F(WorkModelTest, RunsStoredBeforeTheModelAreReadAndUpgraded) {
  CreateRun("old", {"a:1", "b:1", "c:2"});
  ASSERT_OK(Complete(MustClaim("old", "w").lease()));
  // Rewrite the header as the previous version stored it.
  absl::StatusOr<std::string> raw =
      store_->Get(storage::ColumnFamily::kWork, keys::RunHeader("old"));
  ASSERT_OK(raw);
  v1::WorkRunRecord record;
  ASSERT_OK(DecodeRecord(*raw, &record));
  record.clear_layout();
  record.mutable_run()->clear_level_states();
  record.mutable_run()->clear_current_level();
  record.mutable_run()->clear_last_event_seq();
  ASSERT_OK(store_->RunTransaction([&](storage::Transaction& txn) -> absl::Status {
    RETURN_IF_ERROR(txn.Delete(storage::ColumnFamily::kWork, keys::RunWorker("old", "w")));
    for (int seq = 1; seq <= 20; ++seq) {
      RETURN_IF_ERROR(txn.Delete(storage::ColumnFamily::kWork, keys::RunEvent("old", seq)));
    }
    return txn.Put(storage::ColumnFamily::kWork, keys::RunHeader("old"), EncodeRecord(record));
  }));
  Reopen();

  v1::Run run = GetRun("old");
  ASSERT_EQ(run.level_states_size(), 2);
  EXPECT_EQ(run.level_states(0).status(), v1::LEVEL_STATUS_RUNNING);
  EXPECT_EQ(run.level_states(0).done(), 1);
  EXPECT_EQ(run.level_states(1).status(), v1::LEVEL_STATUS_PENDING);
  EXPECT_EQ(run.current_level(), 1);
  EXPECT_TRUE(Events("old").empty());
  EXPECT_TRUE(Workers("old").empty());

  // Its next change works on the rebuilt states and starts the log at 1.
  v1::ClaimResponse b = MustClaim("old", "w2");
  ASSERT_OK(Complete(b.lease()));
  run = GetRun("old");
  EXPECT_EQ(run.level_states(0).status(), v1::LEVEL_STATUS_COMPLETE);
  EXPECT_EQ(run.current_level(), 2);
  std::vector<v1::WorkEvent> events = Events("old");
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0].seq(), 1);
  EXPECT_EQ(events[0].kind(), v1::WorkEvent::KIND_ITEM_CLAIMED);
  // The stored header is now of the current layout.
  raw = store_->Get(storage::ColumnFamily::kWork, keys::RunHeader("old"));
  ASSERT_OK(raw);
  ASSERT_OK(DecodeRecord(*raw, &record));
  EXPECT_EQ(record.layout(), 1);
}

// ---- Importing a run under way (ImportRun). ----

// An imported item: ItemSpec's inputs with a status, worker and attempts.
v1::WorkItem ImportedItem(const std::string& spec, v1::ItemStatus status,
                          const std::string& worker = "", int attempts = 0) {
  v1::WorkItem item = ItemSpec(spec);
  item.set_status(status);
  item.set_worker_id(worker);
  item.set_attempts(attempts);
  return item;
}

class ImportRunTest : public WorkModelTest {
 protected:
  // A run under way: level 0 done and merged, level 1 with a running, a pending and a blocked
  // item; workers w1 (holding b) and w2 (stopped).
  v1::ImportRunRequest UnderWay() {
    v1::ImportRunRequest request;
    v1::Run* run = request.mutable_run();
    run->set_run_id("r");
    run->set_kind(v1::RUN_KIND_TASK_GRAPH);
    run->set_feature("f");
    v1::LevelState* merged = run->add_level_states();
    merged->set_level(0);
    merged->set_status(v1::LEVEL_STATUS_MERGED);
    merged->set_merge_commit("abc123");
    v1::WorkItem a = ImportedItem("a:0", v1::ITEM_STATUS_DONE, "w1", 1);
    *a.mutable_start_time() = ToProtoTime(absl::FromUnixSeconds(1'600'000'000));
    *a.mutable_complete_time() = ToProtoTime(absl::FromUnixSeconds(1'600'000'300));
    a.set_summary("did a");
    *request.add_items() = a;
    v1::WorkItem b = ImportedItem("b:1:a", v1::ITEM_STATUS_RUNNING, "w1", 2);
    *b.mutable_start_time() = ToProtoTime(absl::FromUnixSeconds(1'600'000'400));
    b.set_pid(4242);
    b.set_checkpoint("half way");
    *request.add_items() = b;
    *request.add_items() = ImportedItem("c:1", v1::ITEM_STATUS_PENDING);
    v1::WorkItem d = ImportedItem("d:1", v1::ITEM_STATUS_BLOCKED, "w2", 3);
    d.set_last_error("boom");
    *request.add_items() = d;
    v1::RunWorker* w1 = request.add_workers();
    w1->set_worker_id("w1");
    w1->set_items_completed(1);
    *w1->mutable_last_heartbeat_time() = ToProtoTime(absl::FromUnixSeconds(1'600'000'500));
    v1::RunWorker* w2 = request.add_workers();
    w2->set_worker_id("w2");
    w2->set_status(v1::WORKER_STATUS_STOPPED);
    w2->set_items_failed(3);
    *request.mutable_lease_ttl() = ToProtoDuration(absl::Minutes(2));
    return request;
  }
};

TEST_F(ImportRunTest, ARunUnderWayKeepsItsStatesAndItsWorkerGoesOnWithTheLease) {
  const absl::Time now = clock_.Now();
  absl::StatusOr<v1::ImportRunResponse> imported = work_->ImportRun(UnderWay());
  ASSERT_OK(imported);
  ASSERT_EQ(imported->leases_size(), 1);
  const v1::ImportedLease& lease = imported->leases(0);
  EXPECT_EQ(lease.item_id(), "b");
  EXPECT_EQ(lease.worker_id(), "w1");
  EXPECT_EQ(lease.epoch(), 2);
  EXPECT_EQ(FromProtoTime(lease.lease_expire_time()), now + absl::Minutes(2));

  const v1::Run run = GetRun("r");
  EXPECT_EQ(run.status(), v1::RUN_STATUS_RUNNING);
  EXPECT_EQ(run.counts().total(), 4);
  EXPECT_EQ(run.counts().done(), 1);
  EXPECT_EQ(run.counts().running(), 1);
  EXPECT_EQ(run.counts().pending(), 1);
  EXPECT_EQ(run.counts().blocked(), 1);
  EXPECT_EQ(run.current_level(), 1);
  ASSERT_EQ(run.level_states_size(), 2);
  EXPECT_EQ(run.level_states(0).status(), v1::LEVEL_STATUS_MERGED);
  EXPECT_EQ(run.level_states(0).merge_commit(), "abc123");
  EXPECT_EQ(FromProtoTime(run.level_states(0).complete_time()),
            absl::FromUnixSeconds(1'600'000'300));
  EXPECT_EQ(run.level_states(1).status(), v1::LEVEL_STATUS_RUNNING);
  EXPECT_EQ(FromProtoTime(run.level_states(1).start_time()), absl::FromUnixSeconds(1'600'000'400));

  const v1::WorkItem a = Item("r", "a");
  EXPECT_EQ(a.status(), v1::ITEM_STATUS_DONE);
  EXPECT_EQ(a.summary(), "did a");
  EXPECT_EQ(FromProtoTime(a.complete_time()), absl::FromUnixSeconds(1'600'000'300));
  EXPECT_EQ(a.version(), 1);
  const v1::WorkItem b = Item("r", "b");
  EXPECT_EQ(b.status(), v1::ITEM_STATUS_RUNNING);
  EXPECT_EQ(b.worker_id(), "w1");
  EXPECT_EQ(b.attempts(), 2);
  EXPECT_EQ(b.epoch(), 2);
  EXPECT_EQ(b.pid(), 4242);
  EXPECT_EQ(b.checkpoint(), "half way");
  EXPECT_EQ(FromProtoTime(b.lease_expire_time()), now + absl::Minutes(2));
  EXPECT_EQ(Item("r", "d").last_error(), "boom");

  std::map<std::string, v1::RunWorker> workers = Workers("r");
  ASSERT_EQ(workers.size(), 2u);
  // Numbered as if they had joined one by one (neither is named by a number).
  EXPECT_EQ(workers["w1"].number(), 0);
  EXPECT_EQ(workers["w2"].number(), 1);
  EXPECT_EQ(workers["w1"].status(), v1::WORKER_STATUS_BUSY);
  EXPECT_EQ(workers["w1"].current_item(), "b");
  EXPECT_THAT(workers["w1"].held_items(), ElementsAre("b"));
  EXPECT_EQ(workers["w1"].items_completed(), 1);
  EXPECT_EQ(FromProtoTime(workers["w1"].last_heartbeat_time()),
            absl::FromUnixSeconds(1'600'000'500));
  EXPECT_EQ(workers["w2"].status(), v1::WORKER_STATUS_STOPPED);
  EXPECT_EQ(workers["w2"].items_failed(), 3);
  EXPECT_THAT(EventWords("r"),
              ElementsAre("run_created", "created a", "created b", "created c", "created d"));

  // The living worker goes on with the lease; another worker takes the pending item.
  clock_.Advance(absl::Minutes(1));
  v1::HeartbeatRequest heartbeat;
  heartbeat.set_lease(lease.lease());
  ASSERT_OK(work_->Heartbeat(heartbeat));
  EXPECT_EQ(MustClaim("r", "w3").item().item_id(), "c");
  absl::StatusOr<v1::WorkItem> done = Complete(lease.lease(), "did b");
  ASSERT_OK(done);
  EXPECT_EQ(done->status(), v1::ITEM_STATUS_DONE);
  EXPECT_EQ(Workers("r")["w1"].status(), v1::WORKER_STATUS_IDLE);
  // A lease of another epoch is refused as for any claimed item.
  EXPECT_EQ(Complete(EncodeLease("r", "b", 1)).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(ImportRunTest, TheReaperTakesBackAnImportedItemNobodyHeartbeats) {
  ASSERT_OK(work_->ImportRun(UnderWay()));
  clock_.Advance(absl::Minutes(1));
  absl::StatusOr<int> reaped = work_->ReapExpired();
  ASSERT_OK(reaped);
  EXPECT_EQ(*reaped, 0);
  clock_.Advance(absl::Minutes(1) + absl::Seconds(1));
  reaped = work_->ReapExpired();
  ASSERT_OK(reaped);
  EXPECT_EQ(*reaped, 1);
  const v1::WorkItem b = Item("r", "b");
  EXPECT_EQ(b.status(), v1::ITEM_STATUS_PENDING);  // 2 of 3 attempts used
  EXPECT_EQ(Workers("r")["w1"].status(), v1::WORKER_STATUS_LOST);
  // The lease is refused, and the item goes to the next worker, at the next epoch.
  v1::HeartbeatRequest heartbeat;
  heartbeat.set_lease(EncodeLease("r", "b", 2));
  EXPECT_EQ(work_->Heartbeat(heartbeat).status().code(), absl::StatusCode::kFailedPrecondition);
  const v1::ClaimResponse next = MustClaim("r", "w4");
  EXPECT_EQ(next.item().item_id(), "b");
  EXPECT_EQ(next.epoch(), 3);
}

// Under observed expiry (etcd) an imported lease is judged like a claimed one: a full length
// from when the reaper first sees it, on the reaper's own clock.
TEST_F(ImportRunTest, UnderObservedExpiryTheReaperTakesItBackAfterALengthItSaw) {
  WorkStore observed(
      store_.get(), nullptr, WorkLimits(), [this] { return clock_.Now(); }, LeaseExpiry::kObserved);
  ASSERT_OK(observed.ImportRun(UnderWay()));
  FakeClock mono;
  LeaseObservations seen([&mono] { return mono.Now(); });
  EXPECT_EQ(observed.ReapExpired(&seen).value_or(-1), 0);  // first seen now
  EXPECT_EQ(seen.size(), 1u);
  mono.Advance(absl::Minutes(2) - absl::Seconds(1));
  EXPECT_EQ(observed.ReapExpired(&seen).value_or(-1), 0);
  mono.Advance(absl::Seconds(2));
  EXPECT_EQ(observed.ReapExpired(&seen).value_or(-1), 1);
  EXPECT_EQ(Item("r", "b").status(), v1::ITEM_STATUS_PENDING);
  EXPECT_EQ(Workers("r")["w1"].status(), v1::WORKER_STATUS_LOST);
}

TEST_F(ImportRunTest, BadImportsCreateNothing) {
  const auto expect_refused = [&](const v1::ImportRunRequest& request, absl::StatusCode code,
                                  const std::string& text) {
    absl::StatusOr<v1::ImportRunResponse> imported = work_->ImportRun(request);
    EXPECT_EQ(imported.status().code(), code) << imported.status();
    EXPECT_THAT(imported.status().message(), HasSubstr(text));
    EXPECT_EQ(work_->GetRun("r").status().code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(work_->CountLeases().value_or(-1), 0);
  };
  using Edit = std::function<void(v1::ImportRunRequest*)>;
  const std::vector<std::tuple<Edit, absl::StatusCode, std::string>> cases = {
      {[](v1::ImportRunRequest* r) {
         r->mutable_items(2)->set_status(static_cast<v1::ItemStatus>(99));
       },
       absl::StatusCode::kInvalidArgument, "task c has status 99, which is not an item status"},
      {[](v1::ImportRunRequest* r) { r->mutable_items(3)->set_attempts(4); },
       absl::StatusCode::kInvalidArgument,
       "task d has used 4 attempts; the run's retry policy allows 3"},
      {[](v1::ImportRunRequest* r) { r->mutable_items(2)->set_attempts(-1); },
       absl::StatusCode::kInvalidArgument, "task c has -1 attempts"},
      {[](v1::ImportRunRequest* r) { r->mutable_items(1)->clear_worker_id(); },
       absl::StatusCode::kInvalidArgument, "task b is running but names no worker_id"},
      {[](v1::ImportRunRequest* r) { r->mutable_items(1)->set_worker_id("bad\nworker"); },
       absl::StatusCode::kInvalidArgument, "worker_id of task b"},
      {[](v1::ImportRunRequest* r) { *r->add_items() = ImportedItem("c:1", v1::ITEM_STATUS_DONE); },
       absl::StatusCode::kInvalidArgument, "task c appears more than once"},
      {[](v1::ImportRunRequest* r) { r->mutable_items(2)->add_dependencies("ghost"); },
       absl::StatusCode::kInvalidArgument, "task c depends on unknown task ghost"},
      {[](v1::ImportRunRequest* r) {
         r->mutable_items(1)->add_dependencies("c");
         r->mutable_run()->clear_level_states();
       },
       absl::StatusCode::kInvalidArgument, "task b is running but its dependency c is pending"},
      {[](v1::ImportRunRequest* r) {
         r->mutable_items(0)->set_status(v1::ITEM_STATUS_RUNNING);
         r->mutable_items(0)->clear_complete_time();
         r->mutable_run()->clear_level_states();
       },
       absl::StatusCode::kInvalidArgument, "task b is running but its dependency a is running"},
      {[](v1::ImportRunRequest* r) {
         r->mutable_items(0)->set_status(v1::ITEM_STATUS_FAILED);
         r->mutable_items(0)->clear_complete_time();
         r->mutable_items(1)->clear_dependencies();
         r->mutable_run()->clear_level_states();
       },
       absl::StatusCode::kInvalidArgument,
       "task b (level 1) is running but level 0 has tasks not done"},
      {[](v1::ImportRunRequest* r) {
         *r->mutable_items(2)->mutable_complete_time() = ToProtoTime(absl::FromUnixSeconds(1));
       },
       absl::StatusCode::kInvalidArgument, "task c is pending but has a complete_time"},
      {[](v1::ImportRunRequest* r) {
         r->mutable_items(2)->mutable_start_time()->set_seconds(int64_t{1} << 60);
       },
       absl::StatusCode::kInvalidArgument, "start_time of task c is not a valid time"},
      {[](v1::ImportRunRequest* r) { r->mutable_items(1)->set_pid(-5); },
       absl::StatusCode::kInvalidArgument, "pid -5 is not a process id"},
      {[](v1::ImportRunRequest* r) { r->mutable_run()->mutable_level_states(0)->set_level(1); },
       absl::StatusCode::kInvalidArgument,
       "level 1 is marked merged but is running (0 of 3 tasks done)"},
      {[](v1::ImportRunRequest* r) { r->mutable_run()->mutable_level_states(0)->set_level(7); },
       absl::StatusCode::kInvalidArgument, "level 7 has no tasks (the run's levels: 0, 1)"},
      {[](v1::ImportRunRequest* r) {
         *r->mutable_run()->add_level_states() = r->run().level_states(0);
       },
       absl::StatusCode::kInvalidArgument, "level 0 appears more than once"},
      {[](v1::ImportRunRequest* r) {
         r->mutable_run()->mutable_level_states(0)->set_status(static_cast<v1::LevelStatus>(42));
       },
       absl::StatusCode::kInvalidArgument, "level 0 has status 42"},
      {[](v1::ImportRunRequest* r) { *r->add_workers() = r->workers(0); },
       absl::StatusCode::kInvalidArgument, "worker w1 appears more than once"},
      {[](v1::ImportRunRequest* r) {
         r->mutable_workers(1)->set_status(static_cast<v1::WorkerStatus>(9));
       },
       absl::StatusCode::kInvalidArgument, "worker w2 has status 9"},
      {[](v1::ImportRunRequest* r) { r->mutable_workers(1)->set_status(v1::WORKER_STATUS_BUSY); },
       absl::StatusCode::kInvalidArgument, "worker w2 is busy but holds no running task"},
      {[](v1::ImportRunRequest* r) { r->mutable_workers(1)->set_worker_id(""); },
       absl::StatusCode::kInvalidArgument, "worker_id"},
      {[](v1::ImportRunRequest* r) {
         r->mutable_items(3)->set_last_error(std::string(65 << 10, 'x'));
       },
       absl::StatusCode::kResourceExhausted, "last_error of task d"},
      {[](v1::ImportRunRequest* r) { *r->mutable_lease_ttl() = ToProtoDuration(absl::Hours(48)); },
       absl::StatusCode::kInvalidArgument, "lease_ttl must be between"},
  };
  for (const auto& [edit, code, text] : cases) {
    SCOPED_TRACE(text);
    v1::ImportRunRequest request = UnderWay();
    edit(&request);
    expect_refused(request, code, text);
  }

  // Beyond the run's item limit.
  WorkLimits small;
  small.max_items = 3;
  WorkStore limited(store_.get(), nullptr, small, [this] { return clock_.Now(); });
  EXPECT_EQ(limited.ImportRun(UnderWay()).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(work_->GetRun("r").status().code(), absl::StatusCode::kNotFound);

  // A run id taken: nothing of the import is written over it.
  CreateRun("r", {"x:0"});
  const v1::Run before = GetRun("r");
  EXPECT_EQ(work_->ImportRun(UnderWay()).status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(GetRun("r").SerializeAsString(), before.SerializeAsString());
  EXPECT_TRUE(Workers("r").empty());
}

}  // namespace
}  // namespace coordinator
