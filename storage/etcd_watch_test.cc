// Changes between replicas (storage/etcd_watch.h), on ctest's etcd fixture: what one store
// commits reaches a watch, one commit at a time in commit order, deletes included, other families
// left out, history replayed from a revision, and nothing lost or repeated across the loss of
// the member the watch used. Waits are bounded polls.
#include "storage/etcd_watch.h"

#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "storage/testing/test_store.h"

namespace storage {
namespace {

using CF = ColumnFamily;

struct Seen {
  absl::Mutex mu;
  std::vector<std::vector<EtcdChange>> commits ABSL_GUARDED_BY(mu);

  void Add(const std::vector<EtcdChange>& c) {
    absl::MutexLock lock(&mu);
    commits.push_back(c);
  }
  // Waits (bounded) for `n` commits; returns a copy.
  std::vector<std::vector<EtcdChange>> WaitFor(size_t n) {
    absl::MutexLock lock(&mu);
    auto enough = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu) { return commits.size() >= n; };
    mu.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(30));
    return commits;
  }
};

class EtcdWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::UseEtcd()) GTEST_SKIP() << "runs as etcd.EtcdWatchTest.* (ctest's etcd fixture)";
    absl::StatusOr<std::string> url = testing::TestEtcdUrl();
    ASSERT_TRUE(url.ok()) << url.status();
    ASSERT_TRUE(ParseEtcdUrl(*url, &options_).ok());
    options_.prefix = absl::StrCat("/watch-test/", absl::ToUnixNanos(absl::Now()), "/");
    absl::StatusOr<std::unique_ptr<EtcdStore>> store = EtcdStore::Open(options_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }

  std::unique_ptr<EtcdWatch> Watch(std::vector<CF> families, int64_t after = 0) {
    absl::StatusOr<std::unique_ptr<EtcdWatch>> w = EtcdWatch::Start(
        options_, std::move(families), after,
        [this](const std::vector<EtcdChange>& c) { seen_.Add(c); }, nullptr);
    EXPECT_TRUE(w.ok()) << w.status();
    return w.ok() ? *std::move(w) : nullptr;
  }

  EtcdStoreOptions options_;
  std::unique_ptr<EtcdStore> store_;
  Seen seen_;
};

TEST_F(EtcdWatchTest, CommitsArriveWholeAndInOrderWithDeletesAndOnlyTheirFamilies) {
  std::unique_ptr<EtcdWatch> watch = Watch({CF::kWork, CF::kA2A});
  ASSERT_NE(watch, nullptr);
  ASSERT_TRUE(store_
                  ->RunTransaction([](Transaction& t) -> absl::Status {
                    EXPECT_TRUE(t.Put(CF::kWork, "run/1", "v1").ok());
                    EXPECT_TRUE(t.Put(CF::kA2A, "task/1", "t1").ok());
                    return t.Put(CF::kContexts, "not-watched", "x");
                  })
                  .ok());
  ASSERT_TRUE(
      store_->RunTransaction([](Transaction& t) { return t.Delete(CF::kWork, "run/1"); }).ok());
  std::vector<std::vector<EtcdChange>> commits = seen_.WaitFor(2);
  ASSERT_EQ(commits.size(), 2u);
  ASSERT_EQ(commits[0].size(), 2u);  // one commit, both watched families, not the third
  EXPECT_EQ(commits[0][0].revision, commits[0][1].revision);
  EXPECT_EQ(commits[0][0].cf, CF::kA2A);  // in key order: a2a/ before work/
  EXPECT_EQ(commits[0][0].key, "task/1");
  EXPECT_EQ(commits[0][1].key, "run/1");
  EXPECT_EQ(*commits[0][1].value, "v1");
  ASSERT_EQ(commits[1].size(), 1u);
  EXPECT_FALSE(commits[1][0].value.has_value());
  EXPECT_GT(commits[1][0].revision, commits[0][0].revision);
  EXPECT_EQ(watch->delivered_revision(), commits[1][0].revision);
}

TEST_F(EtcdWatchTest, HistoryIsReplayedFromARevision) {
  ASSERT_TRUE(
      store_->RunTransaction([](Transaction& t) { return t.Put(CF::kWork, "a", "1"); }).ok());
  std::unique_ptr<EtcdWatch> first = Watch({CF::kWork});
  ASSERT_TRUE(
      store_->RunTransaction([](Transaction& t) { return t.Put(CF::kWork, "b", "2"); }).ok());
  std::vector<std::vector<EtcdChange>> commits = seen_.WaitFor(1);
  ASSERT_EQ(commits.size(), 1u);
  const int64_t b_revision = commits[0][0].revision;
  first.reset();
  // From just before b's commit: b again, then what came after.
  std::unique_ptr<EtcdWatch> again = Watch({CF::kWork}, b_revision - 1);
  ASSERT_TRUE(
      store_->RunTransaction([](Transaction& t) { return t.Put(CF::kWork, "c", "3"); }).ok());
  commits = seen_.WaitFor(3);
  ASSERT_EQ(commits.size(), 3u);
  EXPECT_EQ(commits[1][0].key, "b");
  EXPECT_EQ(commits[2][0].key, "c");
}

TEST(EtcdWatchStart, RefusesNoFamilies) {
  EtcdStoreOptions options;
  options.endpoints = {"127.0.0.1:1"};
  EXPECT_TRUE(absl::IsInvalidArgument(EtcdWatch::Start(options, {}, 0, nullptr, nullptr).status()));
}

}  // namespace
}  // namespace storage
