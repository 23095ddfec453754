#include "storage/rocks_store.h"

#include <atomic>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/barrier.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "rocksdb/db.h"
#include "rocksdb/status.h"
#include "storage/key_codec.h"
#include "storage/testing/rocks_test_util.h"
#include "tests/test_util.h"

namespace storage {
namespace {

using ::testing_util::TempDir;

constexpr char kSchemaKey[] = "\x01schema_version";

using ::storage::testing::OpenAt;

using ::storage::testing::Put;

// Every key/value of `cf` in order.
std::vector<std::pair<std::string, std::string>> Scan(Store& store, ColumnFamily cf,
                                                      const std::string& lower = "",
                                                      const std::string& upper = "") {
  std::vector<std::pair<std::string, std::string>> out;
  std::unique_ptr<Iterator> it = store.NewIterator(cf, lower, upper);
  for (; it->Valid(); it->Next()) out.emplace_back(it->key(), it->value());
  EXPECT_OK(it->status());
  return out;
}

// Opens the database at `path` with plain RocksDB (every column family it has) and writes
// `value` under `key` in the default family, as a newer or a foreign program would.
void PutRawDefault(const std::string& path, const std::string& key, const std::string& value) {
  rocksdb::DBOptions options;
  options.create_if_missing = true;
  std::vector<std::string> names;
  if (!rocksdb::DB::ListColumnFamilies(options, path, &names).ok()) names = {"default"};
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  for (const std::string& name : names)
    descriptors.emplace_back(name, rocksdb::ColumnFamilyOptions());
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(options, path, descriptors, &handles, &db);
  ASSERT_TRUE(s.ok()) << s.ToString();
  rocksdb::WriteOptions wo;
  wo.sync = true;
  s = db->Put(wo, handles[0], key, value);
  EXPECT_TRUE(s.ok()) << s.ToString();
  for (rocksdb::ColumnFamilyHandle* h : handles) EXPECT_TRUE(db->DestroyColumnFamilyHandle(h).ok());
  EXPECT_TRUE(db->Close().ok());
  delete db;
}

std::string SchemaValue(uint32_t version) {
  std::string out;
  AppendUint32BigEndian(version, &out);
  return out;
}

TEST(RocksStoreTest, OpenCreatesDatabaseAndRecordsSchemaVersion) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<RocksStore>> store = OpenAt(dir.Sub("db"));
  ASSERT_OK(store);
  EXPECT_EQ((*store)->schema_version(), kSchemaVersion);
  absl::StatusOr<std::string> recorded = (*store)->Get(ColumnFamily::kDefault, kSchemaKey);
  ASSERT_OK(recorded);
  EXPECT_EQ(*recorded, SchemaValue(kSchemaVersion));
}

TEST(RocksStoreTest, EmptyPathIsInvalidArgument) {
  EXPECT_EQ(OpenAt("").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RocksStoreTest, GetOfMissingKeyIsNotFound) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<RocksStore>> store = OpenAt(dir.path());
  ASSERT_OK(store);
  EXPECT_EQ((*store)->Get(ColumnFamily::kContexts, "nope").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(RocksStoreTest, ColumnFamiliesAreSeparate) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<RocksStore>> store = OpenAt(dir.path());
  ASSERT_OK(store);
  ASSERT_OK(Put(**store, ColumnFamily::kContexts, "k", "in contexts"));
  ASSERT_OK(Put(**store, ColumnFamily::kIndex, "k", "in index"));
  EXPECT_EQ(*(*store)->Get(ColumnFamily::kContexts, "k"), "in contexts");
  EXPECT_EQ(*(*store)->Get(ColumnFamily::kIndex, "k"), "in index");
  EXPECT_EQ((*store)->Get(ColumnFamily::kTasks, "k").status().code(), absl::StatusCode::kNotFound);
}

TEST(RocksStoreTest, ReopenKeepsData) {
  TempDir dir;
  {
    absl::StatusOr<std::unique_ptr<RocksStore>> store = OpenAt(dir.path());
    ASSERT_OK(store);
    for (int i = 0; i < 100; ++i) {
      ASSERT_OK(
          Put(**store, ColumnFamily::kContexts, absl::StrCat("key", i), absl::StrCat("value", i)));
    }
    ASSERT_OK((*store)->RunTransaction([](Transaction& txn) -> absl::Status {
      return txn.Delete(ColumnFamily::kContexts, "key7");
    }));
  }
  absl::StatusOr<std::unique_ptr<RocksStore>> reopened = OpenAt(dir.path());
  ASSERT_OK(reopened);
  EXPECT_EQ((*reopened)->schema_version(), kSchemaVersion);
  for (int i = 0; i < 100; ++i) {
    absl::StatusOr<std::string> v =
        (*reopened)->Get(ColumnFamily::kContexts, absl::StrCat("key", i));
    if (i == 7) {
      EXPECT_EQ(v.status().code(), absl::StatusCode::kNotFound);
    } else {
      ASSERT_OK(v);
      EXPECT_EQ(*v, absl::StrCat("value", i));
    }
  }
}

TEST(RocksStoreTest, IteratorHonoursBoundsAndSeek) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<RocksStore>> store = OpenAt(dir.path());
  ASSERT_OK(store);
  for (const char* k : {"a", "b", "ba", "c", "d"}) {
    ASSERT_OK(Put(**store, ColumnFamily::kContexts, k, absl::StrCat("v-", k)));
  }
  using KV = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(Scan(**store, ColumnFamily::kContexts, "b", "c"), (KV{{"b", "v-b"}, {"ba", "v-ba"}}));
  EXPECT_EQ(Scan(**store, ColumnFamily::kContexts, "c").size(), 2u);  // no upper bound
  EXPECT_EQ(Scan(**store, ColumnFamily::kContexts).size(), 5u);
  EXPECT_TRUE(Scan(**store, ColumnFamily::kIndex).empty());

  std::unique_ptr<Iterator> it = (*store)->NewIterator(ColumnFamily::kContexts, "b", "d");
  it->Seek("bb");
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key(), "c");
  it->Next();
  EXPECT_FALSE(it->Valid());  // "d" is excluded
  EXPECT_OK(it->status());
}

TEST(RocksStoreTest, TransactionSeesItsOwnWritesOthersOnlyAfterCommit) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<RocksStore>> store = OpenAt(dir.path());
  ASSERT_OK(store);
  ASSERT_OK(Put(**store, ColumnFamily::kContexts, "p/1", "old"));
  ASSERT_OK(Put(**store, ColumnFamily::kContexts, "p/2", "old"));
  ASSERT_OK((*store)->RunTransaction([&](Transaction& txn) -> absl::Status {
    EXPECT_OK(txn.Put(ColumnFamily::kContexts, "p/3", "new"));
    EXPECT_OK(txn.Delete(ColumnFamily::kContexts, "p/1"));
    // Not visible outside the transaction yet.
    EXPECT_EQ((*store)->Get(ColumnFamily::kContexts, "p/3").status().code(),
              absl::StatusCode::kNotFound);
    std::vector<std::string> seen;
    std::unique_ptr<Iterator> it = txn.NewIterator(ColumnFamily::kContexts, "p/", "p0");
    for (; it->Valid(); it->Next()) seen.emplace_back(it->key());
    EXPECT_OK(it->status());
    EXPECT_EQ(seen, (std::vector<std::string>{"p/2", "p/3"}));
    return absl::OkStatus();
  }));
  EXPECT_EQ(*(*store)->Get(ColumnFamily::kContexts, "p/3"), "new");
  EXPECT_EQ((*store)->Get(ColumnFamily::kContexts, "p/1").status().code(),
            absl::StatusCode::kNotFound);
}

// Deleting or rewriting each key while scanning it (a cascading delete, a migration) must visit
// every key exactly once. RocksDB warns that a write invalidates a transaction iterator's
// current key, so the store has to make this safe.
TEST(RocksStoreTest, WritingWhileIteratingInATransactionVisitsEachKeyOnce) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<RocksStore>> store = OpenAt(dir.path());
  ASSERT_OK(store);
  constexpr int kKeys = 500;
  auto key = [](int i) { return absl::StrCat("k/", 10000 + i); };
  ASSERT_OK((*store)->RunTransaction([&](Transaction& txn) -> absl::Status {
    for (int i = 0; i < kKeys; ++i) {
      if (absl::Status s = txn.Put(ColumnFamily::kContexts, key(i), "v0"); !s.ok()) return s;
    }
    return absl::OkStatus();
  }));
  // Also with some keys written earlier in the same transaction (they live in the batch).
  for (const bool own_writes_first : {false, true}) {
    SCOPED_TRACE(own_writes_first ? "with own writes" : "committed keys only");
    std::vector<std::string> visited;
    ASSERT_OK((*store)->RunTransaction([&](Transaction& txn) -> absl::Status {
      visited.clear();
      if (own_writes_first) {
        for (int i = 0; i < kKeys; i += 3) {
          if (absl::Status s = txn.Put(ColumnFamily::kContexts, key(i), "own"); !s.ok()) return s;
        }
      }
      std::unique_ptr<Iterator> it = txn.NewIterator(ColumnFamily::kContexts, "k/", "k0");
      for (; it->Valid(); it->Next()) {
        const std::string k(it->key());
        visited.push_back(k);
        if (absl::Status s = txn.Put(ColumnFamily::kContexts, it->key(), "v1"); !s.ok()) return s;
      }
      return it->status();
    }));
    ASSERT_EQ(visited.size(), static_cast<size_t>(kKeys));
    for (int i = 0; i < kKeys; ++i) EXPECT_EQ(visited[i], key(i));
  }
  std::vector<std::string> deleted;
  ASSERT_OK((*store)->RunTransaction([&](Transaction& txn) -> absl::Status {
    deleted.clear();
    std::unique_ptr<Iterator> it = txn.NewIterator(ColumnFamily::kContexts, "k/", "k0");
    for (; it->Valid(); it->Next()) {
      deleted.emplace_back(it->key());
      if (absl::Status s = txn.Delete(ColumnFamily::kContexts, it->key()); !s.ok()) return s;
    }
    return it->status();
  }));
  EXPECT_EQ(deleted.size(), static_cast<size_t>(kKeys));
  EXPECT_TRUE(Scan(**store, ColumnFamily::kContexts).empty());
}

TEST(RocksStoreTest, FailedTransactionWritesNothing) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<RocksStore>> store = OpenAt(dir.path());
  ASSERT_OK(store);
  ASSERT_OK(Put(**store, ColumnFamily::kContexts, "existing", "before"));
  const absl::Status result = (*store)->RunTransaction([](Transaction& txn) -> absl::Status {
    EXPECT_OK(txn.Put(ColumnFamily::kContexts, "a", "1"));
    EXPECT_OK(txn.Put(ColumnFamily::kIndex, "b", "2"));
    EXPECT_OK(txn.Put(ColumnFamily::kContexts, "existing", "after"));
    EXPECT_OK(txn.Delete(ColumnFamily::kDefault, kSchemaKey));
    return absl::FailedPreconditionError("changed my mind");
  });
  EXPECT_EQ(result.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(result.message(), "changed my mind");
  EXPECT_EQ((*store)->Get(ColumnFamily::kContexts, "a").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ((*store)->Get(ColumnFamily::kIndex, "b").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(*(*store)->Get(ColumnFamily::kContexts, "existing"), "before");
  EXPECT_OK((*store)->Get(ColumnFamily::kDefault, kSchemaKey));
}

TEST(RocksStoreTest, GetForUpdateOfMissingKeyIsNotFound) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<RocksStore>> store = OpenAt(dir.path());
  ASSERT_OK(store);
  ASSERT_OK((*store)->RunTransaction([](Transaction& txn) -> absl::Status {
    EXPECT_EQ(txn.GetForUpdate(ColumnFamily::kContexts, "missing").status().code(),
              absl::StatusCode::kNotFound);
    return absl::OkStatus();
  }));
}

// Adds one to the decimal counter under `key`, read and written in one transaction.
absl::Status Increment(Store& store, const std::string& key) {
  return store.RunTransaction([&](Transaction& txn) -> absl::Status {
    absl::StatusOr<std::string> raw = txn.GetForUpdate(ColumnFamily::kTasks, key);
    int64_t value = 0;
    if (raw.ok()) {
      if (!absl::SimpleAtoi(*raw, &value)) return absl::DataLossError("not a number");
    } else if (!absl::IsNotFound(raw.status())) {
      return raw.status();
    }
    return txn.Put(ColumnFamily::kTasks, key, absl::StrCat(value + 1));
  });
}

TEST(RocksStoreTest, ConcurrentIncrementsLoseNothing) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<RocksStore>> store = OpenAt(dir.path());
  ASSERT_OK(store);
  constexpr int kThreads = 16;
  constexpr int kPerThread = 50;
  absl::Barrier start(kThreads);
  std::vector<std::thread> threads;
  std::vector<absl::Status> failures[kThreads];
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.Block();
      for (int i = 0; i < kPerThread; ++i) {
        absl::Status s = Increment(**store, "counter");
        if (!s.ok()) failures[t].push_back(s);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_TRUE(failures[t].empty()) << failures[t][0];
  absl::StatusOr<std::string> final_value = (*store)->Get(ColumnFamily::kTasks, "counter");
  ASSERT_OK(final_value);
  EXPECT_EQ(*final_value, absl::StrCat(kThreads * kPerThread));
}

TEST(RocksStoreTest, DeadlockedTransactionsAreRetriedAndCountExactly) {
  // Half the threads lock "x" then "y", the other half "y" then "x": deadlocks happen and are
  // retried. Whatever gives up is reported, and every success is counted exactly once.
  TempDir dir;
  absl::StatusOr<std::unique_ptr<RocksStore>> store = OpenAt(dir.path());
  ASSERT_OK(store);
  constexpr int kThreads = 8;
  constexpr int kPerThread = 25;
  absl::Barrier start(kThreads);
  std::atomic<int> successes{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::string first = t % 2 == 0 ? "x" : "y";
      const std::string second = t % 2 == 0 ? "y" : "x";
      start.Block();
      for (int i = 0; i < kPerThread; ++i) {
        absl::Status s = (*store)->RunTransaction([&](Transaction& txn) -> absl::Status {
          for (const std::string& key : {first, second}) {
            absl::StatusOr<std::string> raw = txn.GetForUpdate(ColumnFamily::kTasks, key);
            int64_t value = 0;
            if (raw.ok()) {
              if (!absl::SimpleAtoi(*raw, &value)) return absl::DataLossError("not a number");
            } else if (!absl::IsNotFound(raw.status())) {
              return raw.status();
            }
            if (absl::Status p = txn.Put(ColumnFamily::kTasks, key, absl::StrCat(value + 1));
                !p.ok()) {
              return p;
            }
          }
          return absl::OkStatus();
        });
        if (s.ok()) {
          ++successes;
        } else {
          EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_GT(successes.load(), 0);
  EXPECT_EQ(*(*store)->Get(ColumnFamily::kTasks, "x"), absl::StrCat(successes.load()));
  EXPECT_EQ(*(*store)->Get(ColumnFamily::kTasks, "y"), absl::StrCat(successes.load()));
}

TEST(RocksStoreTest, LockWaitTimeoutIsRetriedThenAborted) {
  TempDir dir;
  StoreOptions options;
  options.path = dir.path();
  options.lock_timeout_ms = 20;
  options.max_transaction_retries = 2;
  absl::StatusOr<std::unique_ptr<RocksStore>> store = RocksStore::Open(options);
  ASSERT_OK(store);
  absl::Notification holding;
  absl::Notification release;
  std::thread holder([&] {
    EXPECT_OK((*store)->RunTransaction([&](Transaction& txn) -> absl::Status {
      EXPECT_EQ(txn.GetForUpdate(ColumnFamily::kTasks, "hot").status().code(),
                absl::StatusCode::kNotFound);
      if (!holding.HasBeenNotified()) holding.Notify();
      release.WaitForNotification();
      return txn.Put(ColumnFamily::kTasks, "hot", "holder");
    }));
  });
  holding.WaitForNotification();
  int attempts = 0;
  const absl::Status s = (*store)->RunTransaction([&](Transaction& txn) -> absl::Status {
    ++attempts;
    absl::StatusOr<std::string> raw = txn.GetForUpdate(ColumnFamily::kTasks, "hot");
    if (!raw.ok() && !absl::IsNotFound(raw.status())) return raw.status();
    return txn.Put(ColumnFamily::kTasks, "hot", "waiter");
  });
  release.Notify();
  holder.join();
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  EXPECT_EQ(attempts, options.max_transaction_retries + 1);
  EXPECT_EQ(*(*store)->Get(ColumnFamily::kTasks, "hot"), "holder");
}

TEST(RocksStoreTest, CheckpointOpensAsAStoreWithTheSameData) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<RocksStore>> store = OpenAt(dir.Sub("db"));
  ASSERT_OK(store);
  for (int i = 0; i < 50; ++i) {
    ASSERT_OK(Put(**store, ColumnFamily::kContexts, absl::StrCat("c", i), absl::StrCat(i)));
  }
  ASSERT_OK(Put(**store, ColumnFamily::kWork, "w", "work"));
  ASSERT_OK((*store)->Checkpoint(dir.Sub("checkpoint")));
  // Writes after the checkpoint are not in it.
  ASSERT_OK(Put(**store, ColumnFamily::kContexts, "after", "x"));

  // The source stays open: the copy is independent of it.
  absl::StatusOr<std::unique_ptr<RocksStore>> copy = OpenAt(dir.Sub("checkpoint"));
  ASSERT_OK(copy);
  EXPECT_EQ((*copy)->schema_version(), kSchemaVersion);
  auto original = Scan(**store, ColumnFamily::kContexts);
  auto copied = Scan(**copy, ColumnFamily::kContexts);
  EXPECT_EQ(copied.size(), 50u);
  EXPECT_EQ(original.size(), 51u);
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(*(*copy)->Get(ColumnFamily::kContexts, absl::StrCat("c", i)), absl::StrCat(i));
  }
  EXPECT_EQ(*(*copy)->Get(ColumnFamily::kWork, "w"), "work");
  EXPECT_EQ((*copy)->Get(ColumnFamily::kContexts, "after").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(RocksStoreTest, CheckpointIntoExistingDirectoryFails) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<RocksStore>> store = OpenAt(dir.Sub("db"));
  ASSERT_OK(store);
  EXPECT_FALSE((*store)->Checkpoint(dir.path()).ok());
}

TEST(RocksStoreTest, NewerSchemaVersionIsRefused) {
  TempDir dir;
  ASSERT_OK(OpenAt(dir.path()));  // creates it, then closes it
  PutRawDefault(dir.path(), kSchemaKey, SchemaValue(kSchemaVersion + 1));
  absl::StatusOr<std::unique_ptr<RocksStore>> store = OpenAt(dir.path());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition) << store.status();
  EXPECT_NE(store.status().message().find("newer"), absl::string_view::npos) << store.status();
}

TEST(RocksStoreTest, NewerSchemaWithUnknownColumnFamilyIsRefusedClearly) {
  // A newer binary may have added a column family; the refusal must still be about the
  // schema, not RocksDB's complaint about an unopened family.
  TempDir dir;
  ASSERT_OK(OpenAt(dir.path()));
  {
    rocksdb::DBOptions options;
    std::vector<std::string> names;
    ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(options, dir.path(), &names).ok());
    std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
    for (const std::string& name : names) {
      descriptors.emplace_back(name, rocksdb::ColumnFamilyOptions());
    }
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* db = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(options, dir.path(), descriptors, &handles, &db).ok());
    rocksdb::ColumnFamilyHandle* future = nullptr;
    ASSERT_TRUE(
        db->CreateColumnFamily(rocksdb::ColumnFamilyOptions(), "from_the_future", &future).ok());
    handles.push_back(future);
    for (rocksdb::ColumnFamilyHandle* h : handles)
      ASSERT_TRUE(db->DestroyColumnFamilyHandle(h).ok());
    ASSERT_TRUE(db->Close().ok());
    delete db;
  }
  PutRawDefault(dir.path(), kSchemaKey, SchemaValue(kSchemaVersion + 7));
  absl::StatusOr<std::unique_ptr<RocksStore>> store = OpenAt(dir.path());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition) << store.status();
  EXPECT_NE(store.status().message().find("newer"), absl::string_view::npos) << store.status();
}

// A database of the first layout opens, and from then on records the current version (so a
// binary of the first layout, which does not keep the coordinator's running totals, refuses it).
TEST(RocksStoreTest, SchemaVersionOneIsUpgradedOnOpen) {
  TempDir dir;
  ASSERT_OK(OpenAt(dir.path()));
  PutRawDefault(dir.path(), kSchemaKey, SchemaValue(1));
  {
    absl::StatusOr<std::unique_ptr<RocksStore>> store = OpenAt(dir.path());
    ASSERT_OK(store);
    EXPECT_EQ((*store)->schema_version(), kSchemaVersion);
    EXPECT_EQ(*(*store)->Get(ColumnFamily::kDefault, kSchemaKey), SchemaValue(kSchemaVersion));
  }
  absl::StatusOr<std::unique_ptr<RocksStore>> reopened = OpenAt(dir.path());
  ASSERT_OK(reopened);
  EXPECT_EQ((*reopened)->schema_version(), kSchemaVersion);
}

TEST(RocksStoreTest, MalformedOrZeroSchemaVersionIsDataLoss) {
  for (const std::string& value : {std::string("\x00\x01", 2), SchemaValue(0)}) {
    TempDir dir;
    ASSERT_OK(OpenAt(dir.path()));
    PutRawDefault(dir.path(), kSchemaKey, value);
    EXPECT_EQ(OpenAt(dir.path()).status().code(), absl::StatusCode::kDataLoss);
  }
}

TEST(RocksStoreTest, DataWithoutSchemaVersionIsRefused) {
  TempDir dir;
  PutRawDefault(dir.path(), "someone else's key", "value");
  absl::StatusOr<std::unique_ptr<RocksStore>> store = OpenAt(dir.path());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition) << store.status();
  EXPECT_NE(store.status().message().find("no schema version"), absl::string_view::npos)
      << store.status();
}

TEST(RocksStoreTest, DatabaseInUseIsRefused) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<RocksStore>> first = OpenAt(dir.path());
  ASSERT_OK(first);
  absl::StatusOr<std::unique_ptr<RocksStore>> second = OpenAt(dir.path());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition) << second.status();
  EXPECT_NE(second.status().message().find("in use"), absl::string_view::npos) << second.status();
  // The first is unaffected.
  EXPECT_OK(Put(**first, ColumnFamily::kContexts, "still", "works"));
}

TEST(RocksStoreTest, DataDirBelowARegularFileIsRefused) {
  // Tests run as root, so permissions would not stop a write; a path through a regular file
  // cannot be created by anyone.
  TempDir dir;
  const std::string file = dir.Sub("plain_file");
  std::ofstream(file) << "not a directory";
  absl::StatusOr<std::unique_ptr<RocksStore>> store = OpenAt(file + "/db");
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition) << store.status();
  EXPECT_NE(store.status().message().find("data dir"), absl::string_view::npos) << store.status();
  // And the regular file as the data dir itself.
  absl::StatusOr<std::unique_ptr<RocksStore>> on_file = OpenAt(file);
  EXPECT_FALSE(on_file.ok());
}

TEST(RocksStoreTest, RocksStatusMapping) {
  struct Case {
    rocksdb::Status status;
    absl::StatusCode code;
  };
  const Case cases[] = {
      {rocksdb::Status::OK(), absl::StatusCode::kOk},
      {rocksdb::Status::NotFound("x"), absl::StatusCode::kNotFound},
      {rocksdb::Status::Busy("x"), absl::StatusCode::kAborted},
      {rocksdb::Status::TimedOut("x"), absl::StatusCode::kAborted},
      {rocksdb::Status::TryAgain("x"), absl::StatusCode::kAborted},
      {rocksdb::Status::NoSpace("x"), absl::StatusCode::kResourceExhausted},
      {rocksdb::Status::IOError("x"), absl::StatusCode::kUnavailable},
      {rocksdb::Status::Corruption("x"), absl::StatusCode::kDataLoss},
      {rocksdb::Status::InvalidArgument("x"), absl::StatusCode::kInvalidArgument},
      {rocksdb::Status::NotSupported("x"), absl::StatusCode::kUnimplemented},
      {rocksdb::Status::Aborted("x"), absl::StatusCode::kInternal},
  };
  for (const Case& c : cases) {
    const absl::Status s = FromRocksStatus(c.status, "doing it");
    EXPECT_EQ(s.code(), c.code) << c.status.ToString();
    if (!s.ok()) {
      EXPECT_NE(s.message().find("doing it"), absl::string_view::npos);
    }
  }
}

}  // namespace
}  // namespace storage
