// RocksStore inside a DurabilityScope: transactions and reads return without waiting for the
// WAL sync and leave the wait to WhenDurable, which answers only after the sync that covers
// them (held here by StoreOptions::before_wal_sync) and fails when that sync fails. Outside a
// scope every call still waits itself.
#include "storage/durability_scope.h"

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "storage/rocks_store.h"
#include "tests/sync_fakes.h"
#include "tests/test_util.h"

namespace storage {
namespace {

using ::testing_util::TempDir;

// Holds WAL syncs while closed, and fails the next one when told to.
class SyncGate : public testing_util::HeldSync {
 public:
  void Close() { Hold(); }
  void Open() { Release(); }
};

using Completion = testing_util::CompletionRecorder;

absl::Status Put(Store& store, const std::string& key, const std::string& value) {
  return store.RunTransaction([&](Transaction& txn) -> absl::Status {
    return txn.Put(ColumnFamily::kDefault, key, value);
  });
}

class DurabilityScopeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StoreOptions options;
    options.path = dir_.Sub("db");
    options.before_wal_sync = gate_.Hook();
    absl::StatusOr<std::unique_ptr<RocksStore>> opened = RocksStore::Open(std::move(options));
    ASSERT_OK(opened);
    store_ = *std::move(opened);
  }
  void TearDown() override {
    gate_.Open();
    store_.reset();
  }

  // A second store, for scopes that are not this one's.
  std::unique_ptr<RocksStore> OtherStore() {
    StoreOptions options;
    options.path = dir_.Sub("other");
    absl::StatusOr<std::unique_ptr<RocksStore>> opened = RocksStore::Open(std::move(options));
    EXPECT_OK(opened);
    return opened.ok() ? *std::move(opened) : nullptr;
  }

  TempDir dir_;
  SyncGate gate_;
  std::unique_ptr<RocksStore> store_;
};

TEST_F(DurabilityScopeTest, ATransactionInAScopeReturnsBeforeTheSyncAndCompletesAfterIt) {
  gate_.Close();
  DurabilityScope scope(store_.get());
  // Returns although every sync is held: the scope took the wait.
  ASSERT_OK(Put(*store_, "a", "1"));
  scope.Close();
  EXPECT_GT(scope.needed(), 0u);
  Completion completion;
  store_->WhenDurable(scope.needed(), completion.Callback());
  EXPECT_FALSE(completion.done());
  EXPECT_EQ(store_->DurabilityWaiters(), 1);
  gate_.Open();
  EXPECT_OK(completion.Wait());
  EXPECT_EQ(store_->DurabilityWaiters(), 0);
}

TEST_F(DurabilityScopeTest, AReadOfAnUnsyncedWriteWaitsForItsSyncToo) {
  gate_.Close();
  uint64_t written = 0;
  {
    DurabilityScope scope(store_.get());
    ASSERT_OK(Put(*store_, "a", "1"));
    written = scope.needed();
    store_->WhenDurable(written, [](absl::Status) {});
  }
  DurabilityScope scope(store_.get());
  absl::StatusOr<std::string> read = store_->Get(ColumnFamily::kDefault, "a");
  ASSERT_OK(read);
  EXPECT_EQ(*read, "1");
  // What was read may be shown only once the write it saw is durable.
  EXPECT_GE(scope.needed(), written);
  scope.Close();
  Completion completion;
  store_->WhenDurable(scope.needed(), completion.Callback());
  EXPECT_FALSE(completion.done());
  gate_.Open();
  EXPECT_OK(completion.Wait());
}

TEST_F(DurabilityScopeTest, AFailedSyncFailsTheCompletionItCovered) {
  gate_.Close();
  gate_.FailNext(absl::UnavailableError("injected: fdatasync failed"));
  DurabilityScope scope(store_.get());
  ASSERT_OK(Put(*store_, "a", "1"));
  scope.Close();
  Completion completion;
  store_->WhenDurable(scope.needed(), completion.Callback());
  gate_.Open();
  absl::Status s = completion.Wait();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  // The next sync succeeds, and covers it.
  ASSERT_OK(Put(*store_, "b", "2"));
}

TEST_F(DurabilityScopeTest, OutsideAScopeACallWaitsForItsSyncItself) {
  gate_.Close();
  std::atomic<bool> returned{false};
  absl::Status put;
  std::thread writer([&] {
    put = Put(*store_, "a", "1");
    returned = true;
  });
  // The writer runs the sync itself (no other is running), and returns only when it does: once
  // the sync has started and is held, the writer is inside it.
  gate_.WaitForStarted(1);
  EXPECT_FALSE(returned);
  gate_.Open();
  writer.join();
  EXPECT_OK(put);
}

TEST_F(DurabilityScopeTest, EffectsPublishedAfterDurableWaitForTheScopesOwner) {
  std::vector<std::string> ran;
  {
    DurabilityScope scope(store_.get());
    ASSERT_OK(Put(*store_, "a", "1"));
    DurabilityScope::AfterDurable(store_.get(), [&] { ran.push_back("first"); });
    DurabilityScope::AfterDurable(store_.get(), [&] { ran.push_back("second"); });
    EXPECT_TRUE(ran.empty());
    std::vector<DurabilityScope::Action> actions = scope.TakeActions();
    ASSERT_EQ(actions.size(), 2u);
    for (DurabilityScope::Action& action : actions) std::move(action)();
  }
  EXPECT_EQ(ran, (std::vector<std::string>{"first", "second"}));
  // Without a scope the store calls already waited: the effect runs at once.
  DurabilityScope::AfterDurable(store_.get(), [&] { ran.push_back("now"); });
  EXPECT_EQ(ran.back(), "now");
}

TEST_F(DurabilityScopeTest, AScopeForAnotherStoreDoesNotDeferThisOne) {
  std::unique_ptr<RocksStore> other = OtherStore();
  ASSERT_NE(other, nullptr);
  DurabilityScope scope(other.get());
  ASSERT_OK(Put(*store_, "a", "1"));  // waited itself
  EXPECT_EQ(scope.needed(), 0u);
}

TEST_F(DurabilityScopeTest, ScopesNest) {
  std::unique_ptr<RocksStore> other = OtherStore();
  ASSERT_NE(other, nullptr);
  DurabilityScope outer(store_.get());
  {
    DurabilityScope inner(other.get());
    ASSERT_OK(Put(*store_, "a", "1"));
  }
  EXPECT_EQ(outer.needed(), 0u);
  ASSERT_OK(Put(*store_, "b", "2"));
  EXPECT_GT(outer.needed(), 0u);
}

}  // namespace
}  // namespace storage
