// The Store contract (storage/store.h), checked on whichever backend the process runs on
// (storage/testing/test_store.h): RocksDB by default, etcd as etcd.StoreContract.* under ctest.
#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "storage/rocks_store.h"
#include "storage/testing/test_store.h"
#include "tests/test_util.h"

namespace storage {
namespace {

using CF = ColumnFamily;

class StoreContract : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Store>> store = testing::OpenTestStore(dir_.path() + "/db");
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }

  absl::Status Put(CF cf, const std::string& key, const std::string& value) {
    return store_->RunTransaction([&](Transaction& txn) { return txn.Put(cf, key, value); });
  }

  std::vector<std::string> Keys(Iterator& it) {
    std::vector<std::string> keys;
    for (; it.Valid(); it.Next()) keys.emplace_back(it.key());
    EXPECT_TRUE(it.status().ok()) << it.status();
    return keys;
  }

  ::testing_util::TempDir dir_;
  std::unique_ptr<Store> store_;
};

TEST_F(StoreContract, GetAfterCommitAndNotFoundBefore) {
  EXPECT_TRUE(absl::IsNotFound(store_->Get(CF::kContexts, "a").status()));
  ASSERT_TRUE(Put(CF::kContexts, "a", "1").ok());
  absl::StatusOr<std::string> got = store_->Get(CF::kContexts, "a");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "1");
}

TEST_F(StoreContract, ColumnFamiliesAreSeparate) {
  ASSERT_TRUE(Put(CF::kContexts, "k", "contexts").ok());
  ASSERT_TRUE(Put(CF::kWork, "k", "work").ok());
  EXPECT_EQ(*store_->Get(CF::kContexts, "k"), "contexts");
  EXPECT_EQ(*store_->Get(CF::kWork, "k"), "work");
  EXPECT_TRUE(absl::IsNotFound(store_->Get(CF::kTasks, "k").status()));
  std::unique_ptr<Iterator> it = store_->NewIterator(CF::kA2A, "", "");
  EXPECT_TRUE(Keys(*it).empty());
}

TEST_F(StoreContract, BinaryKeysAndValuesRoundTripInByteOrder) {
  const std::vector<std::string> keys = {std::string("\0", 1),
                                         std::string("\0\xff", 2),
                                         "a",
                                         std::string("a\0b", 3),
                                         "\x7f",
                                         "\xff\xff"};
  for (const std::string& k : keys) ASSERT_TRUE(Put(CF::kIndex, k, k + std::string("\0v", 2)).ok());
  std::unique_ptr<Iterator> it = store_->NewIterator(CF::kIndex, "", "");
  std::vector<std::string> seen;
  for (; it->Valid(); it->Next()) {
    seen.emplace_back(it->key());
    EXPECT_EQ(it->value(), std::string(it->key()) + std::string("\0v", 2));
  }
  EXPECT_EQ(seen, keys);  // `keys` is in byte order
}

TEST_F(StoreContract, ScanHonoursBoundsAndSeek) {
  for (const char* k : {"a", "b1", "b2", "b3", "c"}) ASSERT_TRUE(Put(CF::kWork, k, "v").ok());
  std::unique_ptr<Iterator> it = store_->NewIterator(CF::kWork, "b", "c");
  EXPECT_EQ(Keys(*it), (std::vector<std::string>{"b1", "b2", "b3"}));
  it = store_->NewIterator(CF::kWork, "b2", "");
  EXPECT_EQ(Keys(*it), (std::vector<std::string>{"b2", "b3", "c"}));
  it = store_->NewIterator(CF::kWork, "b", "c");
  it->Seek("b2");
  EXPECT_EQ(Keys(*it), (std::vector<std::string>{"b2", "b3"}));
  it = store_->NewIterator(CF::kWork, "b", "c");
  it->Seek("a");  // before the lower bound: starts at it
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key(), "b1");
  it->Seek("z");  // past the upper bound: nothing
  EXPECT_FALSE(it->Valid());
}

TEST_F(StoreContract, LongScanCrossesPagesInOrder) {
  // More keys than a page of the etcd backend (256), in several transactions.
  constexpr int kKeys = 700;
  for (int base = 0; base < kKeys; base += 100) {
    ASSERT_TRUE(store_
                    ->RunTransaction([&](Transaction& txn) -> absl::Status {
                      for (int i = base; i < base + 100; ++i) {
                        absl::Status s = txn.Put(CF::kContexts, absl::StrFormat("k%05d", i),
                                                 std::string(100, 'x'));
                        if (!s.ok()) return s;
                      }
                      return absl::OkStatus();
                    })
                    .ok());
  }
  std::unique_ptr<Iterator> it = store_->NewIterator(CF::kContexts, "k", "l");
  int n = 0;
  for (; it->Valid(); it->Next(), ++n) ASSERT_EQ(it->key(), absl::StrFormat("k%05d", n));
  EXPECT_TRUE(it->status().ok()) << it->status();
  EXPECT_EQ(n, kKeys);
}

TEST_F(StoreContract, FailedTransactionWritesNothing) {
  absl::Status s = store_->RunTransaction([&](Transaction& txn) -> absl::Status {
    EXPECT_TRUE(txn.Put(CF::kTasks, "t1", "v").ok());
    EXPECT_TRUE(txn.Put(CF::kTasks, "t2", "v").ok());
    return absl::InvalidArgumentError("changed my mind");
  });
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_EQ(s.message(), "changed my mind");
  std::unique_ptr<Iterator> it = store_->NewIterator(CF::kTasks, "", "");
  EXPECT_TRUE(Keys(*it).empty());
}

TEST_F(StoreContract, TransactionSeesItsOwnWritesAndDeletes) {
  ASSERT_TRUE(Put(CF::kWork, "a", "old").ok());
  ASSERT_TRUE(Put(CF::kWork, "b", "old").ok());
  ASSERT_TRUE(Put(CF::kWork, "c", "old").ok());
  ASSERT_TRUE(store_
                  ->RunTransaction([&](Transaction& txn) -> absl::Status {
                    EXPECT_TRUE(txn.Put(CF::kWork, "a", "new").ok());
                    EXPECT_TRUE(txn.Delete(CF::kWork, "b").ok());
                    EXPECT_TRUE(txn.Put(CF::kWork, "bb", "added").ok());
                    EXPECT_EQ(*txn.GetForUpdate(CF::kWork, "a"), "new");
                    EXPECT_TRUE(absl::IsNotFound(txn.GetForUpdate(CF::kWork, "b").status()));
                    std::unique_ptr<Iterator> it = txn.NewIterator(CF::kWork, "", "");
                    std::vector<std::string> seen;
                    for (; it->Valid(); it->Next()) {
                      seen.push_back(absl::StrCat(it->key(), "=", it->value()));
                    }
                    EXPECT_EQ(seen, (std::vector<std::string>{"a=new", "bb=added", "c=old"}));
                    // Others do not see any of it before the commit.
                    EXPECT_EQ(*store_->Get(CF::kWork, "a"), "old");
                    return absl::OkStatus();
                  })
                  .ok());
  EXPECT_EQ(*store_->Get(CF::kWork, "a"), "new");
  EXPECT_TRUE(absl::IsNotFound(store_->Get(CF::kWork, "b").status()));
  EXPECT_EQ(*store_->Get(CF::kWork, "bb"), "added");
}

TEST_F(StoreContract, WritingWhileScanningVisitsEachKeyOnce) {
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(Put(CF::kContexts, absl::StrCat("p", i), "v").ok());
  int visited = 0;
  ASSERT_TRUE(store_
                  ->RunTransaction([&](Transaction& txn) -> absl::Status {
                    visited = 0;
                    std::unique_ptr<Iterator> it = txn.NewIterator(CF::kContexts, "p", "q");
                    for (; it->Valid(); it->Next()) {
                      const std::string key(it->key());
                      absl::Status s = txn.Delete(CF::kContexts, key);
                      if (!s.ok()) return s;
                      EXPECT_EQ(it->key(), key);
                      ++visited;
                    }
                    return it->status();
                  })
                  .ok());
  EXPECT_EQ(visited, 20);
  std::unique_ptr<Iterator> it = store_->NewIterator(CF::kContexts, "p", "q");
  EXPECT_TRUE(Keys(*it).empty());
}

// Read-modify-write from many threads: no increment is lost or applied twice.
TEST_F(StoreContract, ConcurrentIncrementsAreSerialised) {
  constexpr int kThreads = 8;
  constexpr int kEach = 15;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        absl::Status s = store_->RunTransaction([&](Transaction& txn) -> absl::Status {
          absl::StatusOr<std::string> v = txn.GetForUpdate(CF::kTasks, "counter");
          int n = 0;
          if (v.ok()) {
            if (!absl::SimpleAtoi(*v, &n)) return absl::DataLossError("not a number");
          } else if (!absl::IsNotFound(v.status())) {
            return v.status();
          }
          return txn.Put(CF::kTasks, "counter", absl::StrCat(n + 1));
        });
        if (!s.ok()) {
          ++failures;
          ADD_FAILURE() << s;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_EQ(failures.load(), 0);
  EXPECT_EQ(*store_->Get(CF::kTasks, "counter"), absl::StrCat(kThreads * kEach));
}

// Reading an absent key for update holds its absence: of many creators, exactly one creates.
TEST_F(StoreContract, AbsenceIsHeldTooSoOneCreatorWins) {
  constexpr int kThreads = 8;
  std::atomic<int> created{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      bool mine = false;
      absl::Status s = store_->RunTransaction([&](Transaction& txn) -> absl::Status {
        mine = false;
        absl::StatusOr<std::string> v = txn.GetForUpdate(CF::kA2A, "singleton");
        if (v.ok()) return absl::OkStatus();
        if (!absl::IsNotFound(v.status())) return v.status();
        mine = true;
        return txn.Put(CF::kA2A, "singleton", absl::StrCat(t));
      });
      EXPECT_TRUE(s.ok()) << s;
      if (s.ok() && mine) ++created;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(created.load(), 1);
}

TEST_F(StoreContract, SnapshotKeepsItsMomentAndRefusesWrites) {
  ASSERT_TRUE(Put(CF::kContexts, "s1", "before").ok());
  absl::StatusOr<std::unique_ptr<Store>> snapshot = store_->NewSnapshot();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  ASSERT_TRUE(Put(CF::kContexts, "s1", "after").ok());
  ASSERT_TRUE(Put(CF::kContexts, "s2", "after").ok());
  EXPECT_EQ(*(*snapshot)->Get(CF::kContexts, "s1"), "before");
  EXPECT_TRUE(absl::IsNotFound((*snapshot)->Get(CF::kContexts, "s2").status()));
  std::unique_ptr<Iterator> it = (*snapshot)->NewIterator(CF::kContexts, "", "");
  EXPECT_EQ(Keys(*it), (std::vector<std::string>{"s1"}));
  absl::Status write =
      (*snapshot)->RunTransaction([](Transaction& txn) { return txn.Put(CF::kContexts, "x", ""); });
  EXPECT_TRUE(absl::IsFailedPrecondition(write)) << write;
  EXPECT_EQ(*store_->Get(CF::kContexts, "s1"), "after");
}

TEST_F(StoreContract, CheckpointOpensAsAnEmbeddedStore) {
  ASSERT_TRUE(Put(CF::kContexts, "ctx", "record").ok());
  ASSERT_TRUE(Put(CF::kWork, "run", "items").ok());
  const std::string copy_dir = dir_.path() + "/copy";
  ASSERT_TRUE(store_->Checkpoint(copy_dir).ok());
  // A directory that exists is never overwritten.
  EXPECT_FALSE(store_->Checkpoint(copy_dir).ok());
  ASSERT_TRUE(Put(CF::kContexts, "later", "not in the copy").ok());
  StoreOptions options;
  options.path = copy_dir;
  absl::StatusOr<std::unique_ptr<RocksStore>> copy = RocksStore::Open(options);
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(*(*copy)->Get(CF::kContexts, "ctx"), "record");
  EXPECT_EQ(*(*copy)->Get(CF::kWork, "run"), "items");
  EXPECT_TRUE(absl::IsNotFound((*copy)->Get(CF::kContexts, "later").status()));
}

}  // namespace
}  // namespace storage
