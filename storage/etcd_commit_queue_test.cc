// Which commits go together into one etcd Txn. The batches on a real cluster (lost updates,
// write skew, the counts) are EtcdStoreTest.ConcurrentCommitsGoTogetherAndLoseNothing and
// EtcdStoreTest.ABatchNeverLetsTwoTransactionsActOnEachOthersStaleReads.
#include "storage/etcd_commit_queue.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace storage {
namespace {

using ::testing::ElementsAre;

EtcdCommit Commit(std::vector<std::string> reads, std::vector<std::string> writes,
                  size_t value_bytes = 1) {
  EtcdCommit commit;
  for (const std::string& key : reads) commit.txn.add_compare()->set_key(key);
  for (const std::string& key : writes) {
    etcdserverpb::PutRequest* put = commit.txn.add_success()->mutable_request_put();
    put->set_key(key);
    put->set_value(std::string(value_bytes, 'v'));
  }
  commit.bytes = static_cast<int64_t>(commit.txn.ByteSizeLong());
  commit.reads = std::move(reads);
  commit.writes = std::move(writes);
  return commit;
}

std::vector<size_t> Choose(const std::vector<EtcdCommit>& commits, int64_t max_commits = 100,
                           int64_t max_bytes = 1 << 20) {
  std::vector<const EtcdCommit*> pending;
  for (const EtcdCommit& c : commits) pending.push_back(&c);
  return ChooseBatch(pending, max_commits, max_bytes);
}

TEST(EtcdCommitBatch, CommitsOnDifferentKeysGoTogetherInArrivalOrder) {
  EXPECT_THAT(Choose({Commit({"a"}, {"a"}), Commit({"b"}, {"b"}), Commit({}, {"c"})}),
              ElementsAre(0, 1, 2));
  EXPECT_THAT(Choose({}), ElementsAre());
}

TEST(EtcdCommitBatch, TwoWritersOfOneKeyNeverShareABatch) {
  // The second writer of "a" waits; the commit after it on another key does not.
  EXPECT_THAT(Choose({Commit({"a"}, {"a"}), Commit({"a"}, {"a"}), Commit({"b"}, {"b"})}),
              ElementsAre(0, 2));
  // Blind writes (no read) of one key too: etcd refuses a Txn that puts a key twice.
  EXPECT_THAT(Choose({Commit({}, {"a"}), Commit({}, {"a"})}), ElementsAre(0));
}

TEST(EtcdCommitBatch, NoCommitReadsWhatAnotherOfItsBatchWrites) {
  // Write skew: each reads both and writes one. etcd checks every nested compare before any
  // nested write, so together both would apply on a read the other made stale.
  EXPECT_THAT(Choose({Commit({"x", "y"}, {"x"}), Commit({"x", "y"}, {"y"})}), ElementsAre(0));
  // A reader after a writer of its key, and a writer after a reader of its key.
  EXPECT_THAT(Choose({Commit({}, {"k"}), Commit({"k"}, {"m"})}), ElementsAre(0));
  EXPECT_THAT(Choose({Commit({"k"}, {"m"}), Commit({}, {"k"})}), ElementsAre(0));
  // Readers of one key that write other keys do not conflict with each other.
  EXPECT_THAT(Choose({Commit({"k"}, {"m"}), Commit({"k"}, {"n"})}), ElementsAre(0, 1));
}

TEST(EtcdCommitBatch, ABatchKeepsToTheClustersLimits) {
  std::vector<EtcdCommit> many;
  for (int i = 0; i < 10; ++i) many.push_back(Commit({}, {std::string(1, 'a' + i)}));
  EXPECT_THAT(Choose(many, /*max_commits=*/3), ElementsAre(0, 1, 2));
  // Bytes: three commits of about 1 KiB each fit in 2.5 KiB two at a time; one too large to
  // join is skipped, a smaller one after it still joins.
  std::vector<EtcdCommit> sized = {Commit({}, {"a"}, 1000), Commit({}, {"b"}, 1000),
                                   Commit({}, {"c"}, 1000), Commit({}, {"d"}, 100)};
  EXPECT_THAT(Choose(sized, 100, 2500), ElementsAre(0, 1, 3));
  // The first commit goes even alone over the batch limits (the store refused any commit over
  // the cluster's limits before it queued).
  EXPECT_THAT(Choose({Commit({}, {"a"}, 5000), Commit({}, {"b"})}, 100, 2500), ElementsAre(0));
}

}  // namespace
}  // namespace storage
