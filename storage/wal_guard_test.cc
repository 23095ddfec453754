// A write-ahead-log write that fails while other writes wait for a WAL sync: no sync may reach
// the failed log (Debian's librocksdb asserts that none does and aborts the process), the
// waiting writes get the failure's status, what was synced stays readable, and the store
// writes again once the file system recovers. Faults are injected by a file system under the
// store that fails WAL appends and holds WAL syncs on demand.
#include "storage/wal_guard.h"

#include <atomic>
#include <initializer_list>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "rocksdb/file_system.h"
#include "storage/durability_scope.h"
#include "storage/rocks_store.h"
#include "tests/test_util.h"

namespace storage {
namespace {

using ::testing_util::TempDir;

// The faults, shared by the file system and the files it opens.
class Faults {
 public:
  void set_fail_appends(bool fail) { fail_appends_.store(fail); }
  void set_fail_info_log(bool fail) { fail_info_log_.store(fail); }
  void set_fail_syncs(bool fail) { fail_syncs_.store(fail); }
  bool fail_syncs() const { return fail_syncs_.load(); }
  bool fail_info_log() const { return fail_info_log_.load(); }
  int failed_info_log_appends() const { return failed_info_log_appends_.load(); }
  void CountFailedInfoLogAppend() { ++failed_info_log_appends_; }
  int appends() const { return appends_.load(); }
  int failed_appends() const { return failed_appends_.load(); }

  rocksdb::IOStatus OnAppend() {
    if (fail_appends_.load()) {
      ++failed_appends_;
      return rocksdb::IOStatus::NoSpace("injected: no space left on device");
    }
    ++appends_;
    return rocksdb::IOStatus::OK();
  }

  // While held, a WAL sync blocks until Release.
  void Hold() {
    absl::MutexLock lock(&mu_);
    held_ = true;
  }
  void Release() {
    absl::MutexLock lock(&mu_);
    held_ = false;
  }
  void WaitForHeldSync() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](int* n) { return *n > 0; }, &syncs_waiting_));
  }
  void OnSync() {
    absl::MutexLock lock(&mu_);
    if (!held_) return;
    ++syncs_waiting_;
    mu_.Await(absl::Condition(
        +[](bool* held) { return !*held; }, &held_));
    --syncs_waiting_;
  }

 private:
  std::atomic<bool> fail_appends_{false};
  std::atomic<bool> fail_info_log_{false};
  std::atomic<bool> fail_syncs_{false};
  std::atomic<int> failed_info_log_appends_{0};
  std::atomic<int> appends_{0};
  std::atomic<int> failed_appends_{0};
  absl::Mutex mu_;
  bool held_ ABSL_GUARDED_BY(mu_) = false;
  int syncs_waiting_ ABSL_GUARDED_BY(mu_) = 0;
};

class FaultyWalFile final : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  FaultyWalFile(std::unique_ptr<rocksdb::FSWritableFile> file, Faults* faults)
      : FSWritableFileOwnerWrapper(std::move(file)), faults_(faults) {}

  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           rocksdb::IODebugContext* dbg) override {
    rocksdb::IOStatus s = faults_->OnAppend();
    return s.ok() ? target()->Append(data, options, dbg) : s;
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           const rocksdb::DataVerificationInfo& info,
                           rocksdb::IODebugContext* dbg) override {
    rocksdb::IOStatus s = faults_->OnAppend();
    return s.ok() ? target()->Append(data, options, info, dbg) : s;
  }
  rocksdb::IOStatus Sync(const rocksdb::IOOptions& options, rocksdb::IODebugContext* dbg) override {
    faults_->OnSync();
    if (faults_->fail_syncs()) return rocksdb::IOStatus::IOError("injected: fdatasync failed");
    return target()->Sync(options, dbg);
  }
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions& options,
                          rocksdb::IODebugContext* dbg) override {
    faults_->OnSync();
    if (faults_->fail_syncs()) return rocksdb::IOStatus::IOError("injected: fsync failed");
    return target()->Fsync(options, dbg);
  }

 private:
  Faults* const faults_;
};

// RocksDB's info log, failing every append while armed.
class FaultyInfoLogFile final : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  FaultyInfoLogFile(std::unique_ptr<rocksdb::FSWritableFile> file, Faults* faults)
      : FSWritableFileOwnerWrapper(std::move(file)), faults_(faults) {}

  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           rocksdb::IODebugContext* dbg) override {
    if (faults_->fail_info_log()) {
      faults_->CountFailedInfoLogAppend();
      return rocksdb::IOStatus::NoSpace("injected: no space left on device");
    }
    return target()->Append(data, options, dbg);
  }

 private:
  Faults* const faults_;
};

class FaultyFileSystem final : public rocksdb::FileSystemWrapper {
 public:
  explicit FaultyFileSystem(Faults* faults)
      : FileSystemWrapper(rocksdb::FileSystem::Default()), faults_(faults) {}
  static const char* kClassName() { return "FaultyFileSystem"; }
  const char* Name() const override { return kClassName(); }

  rocksdb::IOStatus NewWritableFile(const std::string& fname, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* result,
                                    rocksdb::IODebugContext* dbg) override {
    rocksdb::IOStatus s = target()->NewWritableFile(fname, options, result, dbg);
    if (s.ok() && IsWalFileName(fname)) {
      *result = std::make_unique<FaultyWalFile>(std::move(*result), faults_);
    } else if (s.ok() && IsInfoLogFileName(fname)) {
      *result = std::make_unique<FaultyInfoLogFile>(std::move(*result), faults_);
    }
    return s;
  }

 private:
  Faults* const faults_;
};

absl::Status Put(Store& store, const std::string& key) {
  return store.RunTransaction([&](Transaction& txn) -> absl::Status {
    return txn.Put(ColumnFamily::kDefault, key, "value of " + key);
  });
}

// A store directory whose file system injects the faults of `faults`.
class WalGuardStoreTest : public ::testing::Test {
 protected:
  WalGuardStoreTest() {
    options.path = dir.Sub("db");
    options.file_system = std::make_shared<FaultyFileSystem>(&faults);
  }

  // Each of `keys` reads back from `store`.
  static void ExpectReadable(RocksStore& store, std::initializer_list<const char*> keys) {
    for (const char* key : keys) {
      SCOPED_TRACE(key);
      absl::StatusOr<std::string> value = store.Get(ColumnFamily::kDefault, key);
      ASSERT_OK(value);
      EXPECT_EQ(*value, std::string("value of ") + key);
    }
  }

  TempDir dir;
  Faults faults;
  StoreOptions options;
};

TEST(WalGuardTest, RecognisesWalFileNames) {
  EXPECT_TRUE(IsWalFileName("/data/000012.log"));
  EXPECT_TRUE(IsWalFileName("000004.log"));
  EXPECT_FALSE(IsWalFileName("/data/LOG"));
  EXPECT_FALSE(IsWalFileName("/data/LOG.old.1700000000"));
  EXPECT_FALSE(IsWalFileName("/data/000012.sst"));
  EXPECT_FALSE(IsWalFileName("/data/MANIFEST-000005"));
  EXPECT_FALSE(IsWalFileName("/data/.log"));
  EXPECT_FALSE(IsWalFileName("/data/x12.log"));
  EXPECT_TRUE(IsInfoLogFileName("/data/LOG"));
  EXPECT_FALSE(IsInfoLogFileName("/data/LOG.old.1700000000"));
  EXPECT_FALSE(IsInfoLogFileName("/data/000012.log"));
}

TEST_F(WalGuardStoreTest, FailedWalWriteDuringASyncStopsSyncsUntilTheStoreResumes) {
  absl::StatusOr<std::unique_ptr<RocksStore>> opened = RocksStore::Open(options);
  ASSERT_OK(opened);
  RocksStore& store = **opened;
  ASSERT_OK(Put(store, "a"));

  // b's sync is held inside the file system.
  faults.Hold();
  absl::Status b, c, d;
  std::thread tb([&] { b = Put(store, "b"); });
  faults.WaitForHeldSync();
  // c commits after the sync under way started, so it needs a later one.
  const int appended = faults.appends();
  std::thread tc([&] { c = Put(store, "c"); });
  while (faults.appends() == appended) absl::SleepFor(absl::Milliseconds(1));
  // d's WAL write fails while b's sync is still under way.
  faults.set_fail_appends(true);
  std::thread td([&] { d = Put(store, "d"); });
  while (faults.failed_appends() == 0) absl::SleepFor(absl::Milliseconds(1));
  faults.Release();
  tb.join();
  tc.join();
  td.join();

  EXPECT_OK(b);  // its sync started before the failure and succeeded
  EXPECT_EQ(d.code(), absl::StatusCode::kResourceExhausted) << d;
  // c was written to the log before d, but the sync that would confirm it cannot run now.
  EXPECT_EQ(c.code(), absl::StatusCode::kResourceExhausted) << c;
  // What was synced stays readable while writes fail.
  ASSERT_OK(store.Get(ColumnFamily::kDefault, "a"));
  ASSERT_OK(store.Get(ColumnFamily::kDefault, "b"));
  EXPECT_EQ(Put(store, "e").code(), absl::StatusCode::kResourceExhausted);

  // The file system recovers: the store resumes by itself and writes again.
  faults.set_fail_appends(false);
  absl::Status f;
  for (int attempt = 0; attempt < 600; ++attempt) {
    f = Put(store, "f");
    if (f.ok()) break;
    absl::SleepFor(absl::Milliseconds(100));
  }
  ASSERT_OK(f);
  ASSERT_OK(Put(store, "g"));
  ExpectReadable(store, {"a", "b", "f", "g"});

  // And all of it survives reopening.
  opened->reset();
  options.file_system = nullptr;
  opened = RocksStore::Open(options);
  ASSERT_OK(opened);
  ExpectReadable(**opened, {"a", "b", "f", "g"});
}

// The first write after the store opened (every memtable empty) fails on the log. RocksDB 7.8
// then has nothing to flush when it resumes and keeps the failed log as its current one; a
// write reaching it would abort the process in Debian's build. The store refuses writes
// instead, says a restart is needed, keeps serving reads, and a reopened store writes again.
TEST_F(WalGuardStoreTest, FailedFirstWriteToAFreshLogRefusesWritesUntilReopened) {
  {
    absl::StatusOr<std::unique_ptr<RocksStore>> created = RocksStore::Open(options);
    ASSERT_OK(created);
    ASSERT_OK(Put(**created, "a"));
  }  // closing flushes the memtables
  absl::StatusOr<std::unique_ptr<RocksStore>> opened = RocksStore::Open(options);
  ASSERT_OK(opened);
  RocksStore& store = **opened;

  faults.set_fail_appends(true);
  EXPECT_EQ(Put(store, "b").code(), absl::StatusCode::kResourceExhausted);
  faults.set_fail_appends(false);
  absl::Status c;
  for (int attempt = 0; attempt < 600; ++attempt) {
    c = Put(store, "c");
    if (c.code() == absl::StatusCode::kUnavailable) break;
    ASSERT_EQ(c.code(), absl::StatusCode::kResourceExhausted) << c;
    absl::SleepFor(absl::Milliseconds(100));
  }
  ASSERT_EQ(c.code(), absl::StatusCode::kUnavailable) << c;
  EXPECT_TRUE(absl::StrContains(c.message(), "restart")) << c;
  ASSERT_OK(store.Get(ColumnFamily::kDefault, "a"));

  opened->reset();
  opened = RocksStore::Open(options);
  ASSERT_OK(opened);
  ASSERT_OK(Put(**opened, "d"));
  ExpectReadable(**opened, {"a", "d"});
}

// A WAL fdatasync fails under calls that deferred their wait (storage/durability_scope.h): the
// calls it covered fail, nothing is synced after it on that log, and what was acknowledged
// before stays readable, also after reopening.
TEST_F(WalGuardStoreTest, AFailedWalSyncFailsTheDeferredCallsItCovered) {
  absl::StatusOr<std::unique_ptr<RocksStore>> opened = RocksStore::Open(options);
  ASSERT_OK(opened);
  RocksStore& store = **opened;
  ASSERT_OK(Put(store, "a"));

  faults.set_fail_syncs(true);
  DurabilityScope scope(&store);
  ASSERT_OK(Put(store, "b"));  // committed; its sync is the completion's
  scope.Close();
  absl::Status durable = absl::UnknownError("completion not run");
  absl::Notification done;
  store.WhenDurable(scope.needed(), [&](absl::Status s) {
    durable = std::move(s);
    done.Notify();
  });
  done.WaitForNotification();
  EXPECT_EQ(durable.code(), absl::StatusCode::kUnavailable) << durable;
  // Nothing more is confirmed on the log whose sync failed.
  faults.set_fail_syncs(false);
  EXPECT_FALSE(Put(store, "c").ok());
  ASSERT_OK(store.Get(ColumnFamily::kDefault, "a"));

  opened->reset();
  options.file_system = nullptr;
  opened = RocksStore::Open(options);
  ASSERT_OK(opened);
  ExpectReadable(**opened, {"a"});
  ASSERT_OK(Put(**opened, "d"));
}

// RocksDB's info log on a full disk: its lines are dropped (Debian's librocksdb asserts on the
// second line after a failed one), and the database goes on.
TEST_F(WalGuardStoreTest, InfoLogThatCannotBeWrittenIsDropped) {
  {
    absl::StatusOr<std::unique_ptr<RocksStore>> opened = RocksStore::Open(options);
    ASSERT_OK(opened);
    faults.set_fail_info_log(true);
    ASSERT_OK(Put(**opened, "a"));
  }  // closing flushes the memtables, and RocksDB logs each step
  EXPECT_GE(faults.failed_info_log_appends(), 2);
  absl::StatusOr<std::unique_ptr<RocksStore>> reopened = RocksStore::Open(options);
  ASSERT_OK(reopened);
  ASSERT_OK(Put(**reopened, "b"));
  ExpectReadable(**reopened, {"a", "b"});
}

}  // namespace
}  // namespace storage
