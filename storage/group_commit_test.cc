// The group commit against a log whose syncs the test holds, releases and fails: a completion
// runs only after the sync that covers its position returned, a failed sync fails exactly the
// completions it covered, and one sync serves every completion registered meanwhile.
#include "storage/group_commit.h"

#include <deque>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tests/sync_fakes.h"
#include "tests/test_util.h"

namespace storage {
namespace {

// A log whose newest position the test sets, and whose syncs the test holds and fails.
class FakeLog : public testing_util::HeldSync {
 public:
  GroupCommit::Log log() {
    GroupCommit::Log log;
    log.newest = [this] {
      absl::MutexLock lock(&mu_);
      return newest_;
    };
    log.sync = Hook();
    return log;
  }
  void set_newest(uint64_t position) {
    absl::MutexLock lock(&mu_);
    newest_ = position;
  }
  void FailNextSync(absl::Status status) { FailNext(std::move(status)); }
  void WaitForSyncsStarted(int n) { WaitForStarted(n); }

 private:
  absl::Mutex mu_;
  uint64_t newest_ ABSL_GUARDED_BY(mu_) = 0;
};

using Outcome = testing_util::CompletionRecorder;

TEST(GroupCommitTest, ACompletionRunsOnlyAfterTheSyncThatCoversIt) {
  FakeLog fake;
  GroupCommit commit(fake.log());
  fake.set_newest(1);
  fake.Hold();
  Outcome a;
  commit.WhenDurable(1, a.Callback());
  fake.WaitForSyncsStarted(1);
  // The sync is under way and held: nothing is acknowledged before it returns.
  EXPECT_FALSE(a.done());
  EXPECT_EQ(commit.durable(), 0u);
  EXPECT_EQ(commit.waiting(), 1);
  fake.Release();
  EXPECT_OK(a.Wait());
  EXPECT_EQ(commit.durable(), 1u);
}

TEST(GroupCommitTest, APositionWrittenAfterASyncStartedWaitsForTheNextSync) {
  FakeLog fake;
  GroupCommit commit(fake.log());
  fake.set_newest(1);
  fake.Hold();
  Outcome first;
  commit.WhenDurable(1, first.Callback());
  fake.WaitForSyncsStarted(1);
  // Position 2 is written while the sync for position 1 runs: that sync does not cover it.
  fake.set_newest(2);
  Outcome second;
  commit.WhenDurable(2, second.Callback());
  fake.Release();
  EXPECT_OK(first.Wait());
  EXPECT_OK(second.Wait());
  EXPECT_EQ(commit.durable(), 2u);
  EXPECT_EQ(commit.syncs(), 2u);
}

TEST(GroupCommitTest, AFailedSyncFailsExactlyTheCompletionsItCovered) {
  FakeLog fake;
  GroupCommit commit(fake.log());
  fake.set_newest(10);
  fake.Hold();
  fake.FailNextSync(absl::UnavailableError("injected: fdatasync failed"));
  std::vector<std::unique_ptr<Outcome>> covered;
  for (uint64_t position = 1; position <= 10; ++position) {
    covered.push_back(std::make_unique<Outcome>());
    commit.WhenDurable(position, covered.back()->Callback());
  }
  fake.WaitForSyncsStarted(1);
  // Written after the failing sync started: the next sync, which succeeds, covers it.
  fake.set_newest(11);
  Outcome later;
  commit.WhenDurable(11, later.Callback());
  fake.Release();
  for (auto& outcome : covered) {
    absl::Status s = outcome->Wait();
    EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  }
  EXPECT_OK(later.Wait());
  EXPECT_EQ(commit.durable(), 11u);
}

TEST(GroupCommitTest, AFailedSyncLeavesDurableWhereItWas) {
  FakeLog fake;
  GroupCommit commit(fake.log());
  fake.set_newest(1);
  ASSERT_OK(commit.WaitDurable(1));
  fake.set_newest(2);
  fake.FailNextSync(absl::ResourceExhaustedError("injected: no space"));
  EXPECT_EQ(commit.WaitDurable(2).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(commit.durable(), 1u);
  // A position already durable needs no sync, whatever happened since.
  EXPECT_OK(commit.WaitDurable(1));
  EXPECT_OK(commit.WaitDurable(2));  // the next sync succeeds
  EXPECT_EQ(commit.durable(), 2u);
}

TEST(GroupCommitTest, OneSyncServesEveryCompletionRegisteredWhileItWaited) {
  FakeLog fake;
  GroupCommit commit(fake.log(), /*threads=*/1);
  constexpr int kCompletions = 1000;
  fake.set_newest(kCompletions);
  fake.Hold();
  std::vector<std::unique_ptr<Outcome>> outcomes;
  for (int i = 0; i < kCompletions; ++i) outcomes.push_back(std::make_unique<Outcome>());
  commit.WhenDurable(1, outcomes[0]->Callback());
  fake.WaitForSyncsStarted(1);
  // Registered from several threads while the one sync is held; none waits on a thread.
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 1 + t; i < kCompletions; i += 4) {
        commit.WhenDurable(static_cast<uint64_t>(i + 1), outcomes[i]->Callback());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(commit.waiting(), kCompletions);
  for (auto& outcome : outcomes) EXPECT_FALSE(outcome->done());
  fake.Release();
  for (auto& outcome : outcomes) EXPECT_OK(outcome->Wait());
  EXPECT_EQ(commit.syncs(), 1u);
  EXPECT_EQ(commit.waiting(), 0);
}

TEST(GroupCommitTest, ABlockingCallerRunsTheSyncItselfWhenNoneIsRunning) {
  std::thread::id synced_on;
  GroupCommit::Log log;
  log.newest = [] { return uint64_t{7}; };
  log.sync = [&synced_on] {
    synced_on = std::this_thread::get_id();
    return absl::OkStatus();
  };
  GroupCommit commit(std::move(log));
  ASSERT_OK(commit.WaitDurable(7));
  EXPECT_EQ(synced_on, std::this_thread::get_id());
  EXPECT_EQ(commit.durable(), 7u);
}

TEST(GroupCommitTest, ADurablePositionCompletesAtOnceOnTheCallingThread) {
  FakeLog fake;
  GroupCommit commit(fake.log());
  fake.set_newest(5);
  ASSERT_OK(commit.WaitDurable(5));
  const std::thread::id caller = std::this_thread::get_id();
  std::thread::id ran_on;
  bool ran = false;
  commit.WhenDurable(3, [&](absl::Status s) {
    EXPECT_OK(s);
    ran = true;
    ran_on = std::this_thread::get_id();
  });
  EXPECT_TRUE(ran);
  EXPECT_EQ(ran_on, caller);
  commit.WhenDurable(0, [&](absl::Status s) { EXPECT_OK(s); });
}

TEST(GroupCommitTest, ACompletionThatWaitsForDurabilityIsRefusedRatherThanHung) {
  FakeLog fake;
  GroupCommit commit(fake.log(), /*threads=*/1);
  fake.set_newest(1);
  absl::Status inner;
  absl::Notification done;
  commit.WhenDurable(1, [&](absl::Status s) {
    EXPECT_OK(s);
    fake.set_newest(2);
    inner = commit.WaitDurable(2);
    done.Notify();
  });
  done.WaitForNotification();
  EXPECT_EQ(inner.code(), absl::StatusCode::kInternal) << inner;
}

TEST(GroupCommitTest, ClosingRunsTheCompletionsStillRegistered) {
  FakeLog fake;
  Outcome a;
  std::thread release;
  {
    GroupCommit commit(fake.log());
    fake.set_newest(1);
    fake.Hold();
    commit.WhenDurable(1, a.Callback());
    fake.WaitForSyncsStarted(1);
    release = std::thread([&] {
      absl::SleepFor(absl::Milliseconds(20));
      fake.Release();
    });
  }  // waits for the held sync and runs the completion
  release.join();
  EXPECT_TRUE(a.done());
  EXPECT_OK(a.Wait());
}

}  // namespace
}  // namespace storage
