// What is particular to the etcd backend: its URL, its layout under a prefix, its limits, its
// schema check, authentication, TLS, and losing a member under load. The Store contract itself is
// store_contract_test.cc. Tests that need a cluster use ctest's shared one (etcd.EtcdStore*) or,
// when they kill members or turn authentication or TLS on, start one of their own with
// tests/etcd_cluster.sh; without etcd they skip.
#include "storage/etcd_store.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/etcd_client.h"
#include "storage/etcd_election.h"
#include "storage/etcd_watch.h"
#include "storage/key_codec.h"
#include "storage/testing/test_store.h"
#include "tests/test_util.h"

namespace storage {
namespace {

using CF = ColumnFamily;
using ::testing::HasSubstr;

TEST(EtcdUrl, ParsesEndpointsAndTls) {
  EtcdStoreOptions options;
  ASSERT_TRUE(ParseEtcdUrl("etcd://h1:2379,10.0.0.2:2379,[::1]:2379", &options).ok());
  EXPECT_EQ(options.endpoints,
            (std::vector<std::string>{"h1:2379", "10.0.0.2:2379", "[::1]:2379"}));
  EXPECT_FALSE(options.tls);
  ASSERT_TRUE(ParseEtcdUrl("etcds://etcd.internal:2379", &options).ok());
  EXPECT_TRUE(options.tls);
  EXPECT_EQ(options.endpoints, (std::vector<std::string>{"etcd.internal:2379"}));
}

TEST(EtcdUrl, RefusesMalformedUrlsWithTheReason) {
  for (const char* bad :
       {"", "etcd://", "http://h:2379", "etcd://h", "etcd://h:0", "etcd://h:65536", "etcd://:2379",
        "etcd://h:2379,", "etcd://h:2379/path", "etcd://user@h:2379", "etcd://h:port",
        "etcd://h:2379,,h2:2379", "etcd://h: 2379"}) {
    EtcdStoreOptions options;
    options.endpoints = {"unchanged:1"};
    absl::Status s = ParseEtcdUrl(bad, &options);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << bad << ": " << s;
    EXPECT_EQ(options.endpoints, std::vector<std::string>{"unchanged:1"}) << bad;
  }
  // Oversized: a megabyte of endpoints is refused on its first bad one, not parsed forever.
  std::string huge = "etcd://" + std::string(1 << 20, 'h');
  EtcdStoreOptions options;
  EXPECT_TRUE(absl::IsInvalidArgument(ParseEtcdUrl(huge, &options)));
}

TEST(EtcdStoreOpen, RefusesABadPrefixBeforeConnecting) {
  EtcdStoreOptions options;
  options.endpoints = {"127.0.0.1:1"};
  for (const char* prefix : {"", "/no-trailing-slash"}) {
    options.prefix = prefix;
    absl::Status s = EtcdStore::Open(options).status();
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << prefix << ": " << s;
  }
}

TEST(EtcdStoreOpen, UnreachableClusterFailsNamingTheEndpoints) {
  EtcdStoreOptions options;
  options.endpoints = {"127.0.0.1:1", "127.0.0.1:2"};
  options.request_timeout_ms = 1000;
  absl::Status s = EtcdStore::Open(options).status();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_NE(s.message().find("127.0.0.1:1,127.0.0.1:2"), std::string::npos) << s;
}

// Tests on ctest's shared cluster.
class EtcdStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::UseEtcd()) GTEST_SKIP() << "runs as etcd.EtcdStoreTest.* (ctest's etcd fixture)";
    absl::StatusOr<std::string> url = testing::TestEtcdUrl();
    ASSERT_TRUE(url.ok()) << url.status();
    ASSERT_TRUE(ParseEtcdUrl(*url, &options_).ok());
    options_.prefix = absl::StrCat("/etcd-store-test/", absl::ToUnixNanos(absl::Now()), "/");
    EtcdClientOptions client_options;
    client_options.endpoints = options_.endpoints;
    absl::StatusOr<std::unique_ptr<EtcdClient>> client = EtcdClient::Connect(client_options);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
  }

  // Writes a raw etcd key, as another program sharing the cluster would.
  void RawPut(const std::string& key, const std::string& value) {
    etcdserverpb::TxnRequest txn;
    etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
    put->set_key(key);
    put->set_value(value);
    ASSERT_TRUE(client_->Txn(txn).ok());
  }

  EtcdStoreOptions options_;
  std::unique_ptr<EtcdClient> client_;
};

TEST_F(EtcdStoreTest, RecordsLiveUnderThePrefixByFamily) {
  absl::StatusOr<std::unique_ptr<EtcdStore>> store = EtcdStore::Open(options_);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE(
      (*store)->RunTransaction([](Transaction& txn) { return txn.Put(CF::kWork, "k", "v"); }).ok());
  etcdserverpb::RangeRequest range;
  range.set_key(options_.prefix + "work/k");
  absl::StatusOr<etcdserverpb::RangeResponse> got = client_->Range(range);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->kvs_size(), 1);
  EXPECT_EQ(got->kvs(0).value(), "v");
}

TEST_F(EtcdStoreTest, PrefixesAreSeparateDataSets) {
  EtcdStoreOptions other = options_;
  other.prefix = options_.prefix + "other/";
  absl::StatusOr<std::unique_ptr<EtcdStore>> a = EtcdStore::Open(options_);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(
      (*a)->RunTransaction([](Transaction& txn) { return txn.Put(CF::kContexts, "x", "a"); }).ok());
  // `other` lies inside a's key space but not inside any of a's families.
  absl::StatusOr<std::unique_ptr<EtcdStore>> b = EtcdStore::Open(other);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE(absl::IsNotFound((*b)->Get(CF::kContexts, "x").status()));
}

TEST_F(EtcdStoreTest, TooLargeATransactionIsRefusedAndWritesNothing) {
  options_.max_txn_ops = 10;
  options_.max_request_bytes = 64 << 10;
  absl::StatusOr<std::unique_ptr<EtcdStore>> store = EtcdStore::Open(options_);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::Status many = (*store)->RunTransaction([](Transaction& txn) -> absl::Status {
    for (int i = 0; i < 11; ++i) {
      absl::Status s = txn.Put(CF::kTasks, absl::StrCat("t", i), "v");
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  });
  EXPECT_TRUE(absl::IsResourceExhausted(many)) << many;
  EXPECT_NE(many.message().find("--max-txn-ops=10"), std::string::npos) << many;
  absl::Status big = (*store)->RunTransaction(
      [](Transaction& txn) { return txn.Put(CF::kTasks, "big", std::string(100 << 10, 'x')); });
  EXPECT_TRUE(absl::IsResourceExhausted(big)) << big;
  std::unique_ptr<Iterator> it = (*store)->NewIterator(CF::kTasks, "", "");
  EXPECT_FALSE(it->Valid());
  EXPECT_TRUE(it->status().ok());
}

// A transaction that lost runs again holding the turn of its own keys only: while a loser of key
// "a" is held up in its second run, a loser of another key runs again and commits. (With one
// turn for the whole process, as before, the second would wait for the first.)
TEST_F(EtcdStoreTest, ALoserRunsAgainBesideTheLosersOfOtherKeys) {
  absl::StatusOr<std::unique_ptr<EtcdStore>> opened = EtcdStore::Open(options_);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EtcdStore& store = **opened;
  const auto etcd_key = [this](const std::string& key) { return options_.prefix + "work/" + key; };
  std::string other = "b0";
  for (int i = 1;
       EtcdStore::RetryStripeOf(etcd_key(other)) == EtcdStore::RetryStripeOf(etcd_key("a")); ++i) {
    other = absl::StrCat("b", i);
  }
  // Reads `key`, loses once (another writer changes it between the read and the commit), and
  // in its second run calls `second_run` before it writes.
  const auto lose_once = [&](const std::string& key, const std::function<void()>& second_run) {
    int runs = 0;
    return store.RunTransaction([&](Transaction& txn) -> absl::Status {
      (void)txn.GetForUpdate(CF::kWork, key);
      if (++runs == 1) {
        RawPut(etcd_key(key), "someone else's");
      } else {
        second_run();
      }
      return txn.Put(CF::kWork, key, "mine");
    });
  };
  absl::Notification a_second_run;
  absl::Notification a_may_end;
  absl::Status a_status;
  std::thread a([&] {
    a_status = lose_once("a", [&] {
      a_second_run.Notify();
      a_may_end.WaitForNotificationWithTimeout(absl::Seconds(60));
    });
  });
  ASSERT_TRUE(a_second_run.WaitForNotificationWithTimeout(absl::Seconds(60)));
  absl::Notification b_done;
  absl::Status b_status;
  std::thread b([&] {
    b_status = lose_once(other, [] {});
    b_done.Notify();
  });
  // b commits while a still holds its turn (bounded: a is let go after 30 s whatever happens).
  EXPECT_TRUE(b_done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  a_may_end.Notify();
  a.join();
  b.join();
  EXPECT_TRUE(a_status.ok()) << a_status;
  EXPECT_TRUE(b_status.ok()) << b_status;
  for (const std::string& key : {std::string("a"), other}) {
    absl::StatusOr<std::string> value = store.Get(CF::kWork, key);
    ASSERT_TRUE(value.ok()) << key << ": " << value.status();
    EXPECT_EQ(*value, "mine") << key;
  }
}

// Concurrent transactions commit in batches (etcd_commit_queue.h): fewer etcd Txns than
// commits, and not one increment lost, on a key every thread writes or on each thread's own.
TEST_F(EtcdStoreTest, ConcurrentCommitsGoTogetherAndLoseNothing) {
  absl::StatusOr<std::unique_ptr<EtcdStore>> opened = EtcdStore::Open(options_);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EtcdStore& store = **opened;
  const auto increment = [&store](const std::string& key) {
    return store.RunTransaction([&](Transaction& txn) -> absl::Status {
      absl::StatusOr<std::string> value = txn.GetForUpdate(CF::kWork, key);
      int64_t n = 0;
      if (value.ok() && !absl::SimpleAtoi(*value, &n)) return absl::InternalError(*value);
      return txn.Put(CF::kWork, key, absl::StrCat(n + 1));
    });
  };
  constexpr int kThreads = 8;
  constexpr int kRounds = 25;
  const uint64_t commits_before = store.commits_sent();
  const uint64_t requests_before = store.commit_requests();
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        if (!increment(absl::StrCat("own-", t)).ok()) ++failures;
        if (!increment("shared").ok()) ++failures;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(store.Get(CF::kWork, absl::StrCat("own-", t)).value_or("?"), absl::StrCat(kRounds));
  }
  EXPECT_EQ(store.Get(CF::kWork, "shared").value_or("?"), absl::StrCat(kThreads * kRounds));
  const uint64_t commits = store.commits_sent() - commits_before;
  const uint64_t requests = store.commit_requests() - requests_before;
  // Every successful transaction committed once, plus the losers' tries.
  EXPECT_GE(commits, uint64_t{2 * kThreads * kRounds});
  // Eight threads committing 400 times at once: some commits shared a Txn.
  EXPECT_LT(requests, commits) << requests << " Txns for " << commits << " commits";
}

// Gets and transactions' first reads of many threads at once share read-only Txns of Ranges, and
// each still sees its own key's latest value (or its absence), at a revision no older than its
// own last write.
TEST_F(EtcdStoreTest, ConcurrentReadsGoTogetherAndEachSeesItsOwnKey) {
  absl::StatusOr<std::unique_ptr<EtcdStore>> opened = EtcdStore::Open(options_);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EtcdStore& store = **opened;
  constexpr int kThreads = 8;
  constexpr int kRounds = 30;
  const uint64_t reads_before = store.latest_reads();
  const uint64_t requests_before = store.read_requests();
  std::atomic<int> failures{0};
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::string key = absl::StrCat("reader-", t);
      const auto fail = [&](const std::string& what) {
        ++failures;
        errors[t] = what;
      };
      for (int i = 0; i < kRounds; ++i) {
        // Nothing under "absent-" is ever written.
        absl::StatusOr<std::string> absent = store.Get(CF::kWork, absl::StrCat("absent-", t));
        if (!absl::IsNotFound(absent.status()))
          fail(absl::StrCat("absent: ", absent.status().ToString()));
        absl::Status written = store.RunTransaction([&](Transaction& txn) -> absl::Status {
          absl::StatusOr<std::string> value = txn.GetForUpdate(CF::kWork, key);
          const std::string expected = i == 0 ? "" : absl::StrCat(t, ":", i - 1);
          if (value.value_or("") != expected) {
            return absl::InternalError(
                absl::StrCat("read ", value.value_or("nothing"), ", wanted ", expected));
          }
          return txn.Put(CF::kWork, key, absl::StrCat(t, ":", i));
        });
        if (!written.ok()) fail(std::string(written.message()));
        absl::StatusOr<std::string> read = store.Get(CF::kWork, key);
        if (read.value_or("?") != absl::StrCat(t, ":", i)) {
          fail(absl::StrCat("get after write: ", read.value_or(read.status().ToString())));
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0) << absl::StrJoin(errors, "; ");
  const uint64_t reads = store.latest_reads() - reads_before;
  const uint64_t requests = store.read_requests() - requests_before;
  EXPECT_GE(reads, uint64_t{3 * kThreads * kRounds});
  // Eight threads reading 720 times at once: some reads shared a request.
  EXPECT_LT(requests, reads) << requests << " requests for " << reads << " reads";
}

// Write skew: each transaction reads both x and y and sets one of them to one more than the
// larger, so each commit raises max(x, y) by exactly one. Two of them in one batch would both
// act on the same old pair (their compares checked before either writes): two commits, one step.
TEST_F(EtcdStoreTest, ABatchNeverLetsTwoTransactionsActOnEachOthersStaleReads) {
  absl::StatusOr<std::unique_ptr<EtcdStore>> opened = EtcdStore::Open(options_);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EtcdStore& store = **opened;
  const auto read_number = [](Transaction& txn, const char* key) -> absl::StatusOr<int64_t> {
    absl::StatusOr<std::string> value = txn.GetForUpdate(CF::kWork, key);
    if (absl::IsNotFound(value.status())) return 0;
    RETURN_IF_ERROR(value.status());
    int64_t n = 0;
    if (!absl::SimpleAtoi(*value, &n)) return absl::InternalError(*value);
    return n;
  };
  constexpr int kThreads = 8;
  constexpr int kRounds = 15;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const char* mine = t % 2 == 0 ? "x" : "y";
      for (int i = 0; i < kRounds; ++i) {
        absl::Status s = store.RunTransaction([&](Transaction& txn) -> absl::Status {
          ASSIGN_OR_RETURN(const int64_t x, read_number(txn, "x"));
          ASSIGN_OR_RETURN(const int64_t y, read_number(txn, "y"));
          return txn.Put(CF::kWork, mine, absl::StrCat(std::max(x, y) + 1));
        });
        if (!s.ok()) ++failures;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  int64_t x = 0;
  int64_t y = 0;
  ASSERT_TRUE(absl::SimpleAtoi(store.Get(CF::kWork, "x").value_or("?"), &x));
  ASSERT_TRUE(absl::SimpleAtoi(store.Get(CF::kWork, "y").value_or("?"), &y));
  EXPECT_EQ(std::max(x, y), kThreads * kRounds) << "x=" << x << " y=" << y;
}

TEST_F(EtcdStoreTest, APrefixHoldingForeignDataIsRefused) {
  RawPut(options_.prefix + "someone-elses-key", "x");
  absl::Status s = EtcdStore::Open(options_).status();
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_NE(s.message().find("--etcd_prefix"), std::string::npos) << s;
}

TEST_F(EtcdStoreTest, ANewerOrMalformedSchemaIsRefused) {
  std::string newer;
  AppendUint32BigEndian(kSchemaVersion + 1, &newer);
  RawPut(options_.prefix + "default/\x01schema_version", newer);
  absl::Status s = EtcdStore::Open(options_).status();
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  RawPut(options_.prefix + "default/\x01schema_version", "garbage");
  s = EtcdStore::Open(options_).status();
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
}

// Opens the data set from `replicas` threads at once; how many saw the current schema.
int OpenTogether(const EtcdStoreOptions& options, int replicas) {
  std::vector<std::thread> threads;
  std::atomic<int> opened{0};
  for (int i = 0; i < replicas; ++i) {
    threads.emplace_back([&] {
      absl::StatusOr<std::unique_ptr<EtcdStore>> store = EtcdStore::Open(options);
      EXPECT_TRUE(store.ok()) << store.status();
      if (store.ok() && (*store)->schema_version() == kSchemaVersion) ++opened;
    });
  }
  for (std::thread& t : threads) t.join();
  return opened.load();
}

TEST_F(EtcdStoreTest, ReplicasOpeningTogetherRecordOneSchema) {
  EXPECT_EQ(OpenTogether(options_, 4), 4);
}

// A data set of the first layout moves to the current one on open, once, whichever replica of
// several opening together does it.
TEST_F(EtcdStoreTest, SchemaVersionOneIsUpgradedByReplicasOpeningTogether) {
  std::string one;
  AppendUint32BigEndian(1, &one);
  RawPut(options_.prefix + "default/\x01schema_version", one);
  EXPECT_EQ(OpenTogether(options_, 4), 4);
  absl::StatusOr<std::unique_ptr<EtcdStore>> store = EtcdStore::Open(options_);
  ASSERT_TRUE(store.ok()) << store.status();
  std::string current;
  AppendUint32BigEndian(kSchemaVersion, &current);
  EXPECT_EQ(*(*store)->Get(CF::kDefault, "\x01schema_version"), current);
}

// A cluster of this test's own (it kills members, turns authentication on or serves TLS). With
// `tls`, clients need TLS and a client certificate; tls_file() names the files
// tests/etcd_cluster.sh made (ca.pem, client.pem, client.key, other-ca.pem, ...).
class OwnCluster {
 public:
  explicit OwnCluster(int members, bool tls = false) : dir_(temp_.path() + "/etcd") {
    const std::string cmd = absl::StrCat(Script(), " start ", dir_, " ", members, tls ? " tls" : "",
                                         " >", dir_, ".out 2>&1");
    const int rc = std::system(cmd.c_str());
    skipped_ = WEXITSTATUS(rc) == 77;
    ok_ = rc == 0;
    std::ifstream in(dir_ + "/url");
    std::getline(in, url_);
  }
  ~OwnCluster() {
    const std::string cmd = absl::StrCat(Script(), " stop ", dir_);
    if (std::system(cmd.c_str()) != 0) ADD_FAILURE() << "could not stop the etcd cluster";
  }
  bool skipped() const { return skipped_; }
  bool ok() const { return ok_; }
  const std::string& url() const { return url_; }
  std::string tls_file(const std::string& name) const { return dir_ + "/tls/" + name; }
  void Kill(int member) { Run("kill", member); }
  void Restart(int member) { Run("restart", member); }
  std::string Log() const {
    std::ifstream in(dir_ + ".out");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

 private:
  static std::string Script() { return std::string(COORD_SOURCE_DIR) + "/tests/etcd_cluster.sh"; }
  void Run(const char* what, int member) {
    const std::string cmd = absl::StrCat(Script(), " ", what, " ", dir_, " ", member);
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }

  ::testing_util::TempDir temp_;
  const std::string dir_;
  std::string url_;
  bool skipped_ = false;
  bool ok_ = false;
};

#define START_OWN_CLUSTER(var, ...)                                                \
  if (!testing::UseEtcd()) GTEST_SKIP() << "runs as etcd.EtcdStore*";              \
  OwnCluster var(__VA_ARGS__);                                                     \
  if (var.skipped())                                                               \
    GTEST_SKIP() << "etcd (or, for TLS, openssl) is not installed: " << var.Log(); \
  ASSERT_TRUE(var.ok()) << var.Log()

// Four writers keep incrementing their counters while the member they talk to is killed: every
// acknowledged increment is kept, none is applied twice, and writing goes on through the others.
TEST(EtcdStoreCluster, LosingTheMemberInUseLosesNoAcknowledgedWrite) {
  START_OWN_CLUSTER(cluster, 3);
  EtcdStoreOptions options;
  ASSERT_TRUE(ParseEtcdUrl(cluster.url(), &options).ok());
  options.request_timeout_ms = 15000;
  absl::StatusOr<std::unique_ptr<EtcdStore>> opened = EtcdStore::Open(options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EtcdStore& store = **opened;
  constexpr int kWriters = 4;
  constexpr int kEach = 40;
  std::atomic<int> progress{0};
  std::atomic<int> after_kill{0};
  std::atomic<bool> killed{false};
  std::vector<int> acked(kWriters, 0), unknown(kWriters, 0);
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      const std::string key = absl::StrCat("counter", w);
      for (int i = 0; i < kEach; ++i) {
        absl::Status s = store.RunTransaction([&](Transaction& txn) -> absl::Status {
          absl::StatusOr<std::string> v = txn.GetForUpdate(CF::kTasks, key);
          int n = 0;
          if (v.ok() && !absl::SimpleAtoi(*v, &n)) return absl::DataLossError(*v);
          if (!v.ok() && !absl::IsNotFound(v.status())) return v.status();
          return txn.Put(CF::kTasks, key, absl::StrCat(n + 1));
        });
        if (s.ok()) {
          ++acked[w];
          if (killed) ++after_kill;
        } else {
          EXPECT_TRUE(absl::IsUnavailable(s)) << s;
          ++unknown[w];
        }
        ++progress;
      }
    });
  }
  while (progress < kWriters * kEach / 3) absl::SleepFor(absl::Milliseconds(5));
  cluster.Kill(0);  // the first endpoint: the one the store talks to
  killed = true;
  for (std::thread& t : writers) t.join();
  cluster.Restart(0);
  EXPECT_GT(after_kill.load(), 0);
  for (int w = 0; w < kWriters; ++w) {
    absl::StatusOr<std::string> v = store.Get(CF::kTasks, absl::StrCat("counter", w));
    ASSERT_TRUE(v.ok()) << v.status();
    int n = 0;
    ASSERT_TRUE(absl::SimpleAtoi(*v, &n));
    // Acknowledged increments are all there; an unknown outcome may or may not have applied.
    EXPECT_GE(n, acked[w]) << "writer " << w;
    EXPECT_LE(n, acked[w] + unknown[w]) << "writer " << w;
  }
}

// A watch on the member that dies resumes on another from the revision after the last one it
// delivered: every acknowledged commit arrives once, in order.
TEST(EtcdStoreCluster, AWatchMissesNothingWhenItsMemberDies) {
  START_OWN_CLUSTER(cluster, 3);
  EtcdStoreOptions options;
  ASSERT_TRUE(ParseEtcdUrl(cluster.url(), &options).ok());
  absl::StatusOr<std::unique_ptr<EtcdStore>> store = EtcdStore::Open(options);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::Mutex mu;
  std::vector<std::pair<int64_t, std::string>> seen;  // (revision, value)
  absl::StatusOr<std::unique_ptr<EtcdWatch>> watch = EtcdWatch::Start(
      options, {CF::kWork}, 0,
      [&](const std::vector<EtcdChange>& commit) {
        absl::MutexLock lock(&mu);
        for (const EtcdChange& c : commit) seen.emplace_back(c.revision, c.value.value_or(""));
      },
      nullptr);
  ASSERT_TRUE(watch.ok()) << watch.status();
  std::vector<std::string> acked;
  for (int i = 0; i < 60; ++i) {
    if (i == 20) cluster.Kill(0);  // the member both the store and the watch started on
    const std::string value = absl::StrCat("v", i);
    absl::Status s = (*store)->RunTransaction(
        [&](Transaction& txn) { return txn.Put(CF::kWork, absl::StrCat("k", i), value); });
    if (s.ok()) acked.push_back(value);
  }
  ASSERT_GE(acked.size(), 50u);
  {
    absl::MutexLock lock(&mu);
    auto all = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu) { return seen.size() >= acked.size(); };
    mu.AwaitWithTimeout(absl::Condition(&all), absl::Seconds(30));
    for (size_t i = 1; i < seen.size(); ++i) {
      EXPECT_LT(seen[i - 1].first, seen[i].first) << "out of order or repeated at " << i;
    }
    for (const std::string& value : acked) {
      EXPECT_TRUE(
          std::any_of(seen.begin(), seen.end(), [&](const auto& s) { return s.second == value; }))
          << value << " was acknowledged but never seen";
    }
  }
  cluster.Restart(0);
}

TEST(EtcdStoreCluster, PasswordAuthenticationIsUsedAndAWrongPasswordRefused) {
  START_OWN_CLUSTER(cluster, 1);
  const std::string endpoint(absl::StripPrefix(cluster.url(), "etcd://"));
  const std::string etcdctl = absl::StrCat("ETCDCTL_API=3 etcdctl --endpoints=", endpoint);
  for (const std::string& cmd :
       {etcdctl + " user add root:rootpw", etcdctl + " user grant-role root root",
        etcdctl + " user add coord:s3cret", etcdctl + " role add coordinator",
        etcdctl + " role grant-permission coordinator --prefix=true readwrite /auth-test/",
        etcdctl + " user grant-role coord coordinator", etcdctl + " auth enable"}) {
    ASSERT_EQ(std::system((cmd + " >/dev/null").c_str()), 0) << cmd;
  }
  EtcdStoreOptions options;
  ASSERT_TRUE(ParseEtcdUrl(cluster.url(), &options).ok());
  options.prefix = "/auth-test/";
  options.user = "coord";
  options.password = "wrong";
  absl::Status s = EtcdStore::Open(options).status();
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  options.password = "s3cret";
  // Outside the role's prefix: refused.
  EtcdStoreOptions outside = options;
  outside.prefix = "/elsewhere/";
  s = EtcdStore::Open(outside).status();
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  absl::StatusOr<std::unique_ptr<EtcdStore>> store = EtcdStore::Open(options);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE(
      (*store)->RunTransaction([](Transaction& txn) { return txn.Put(CF::kWork, "k", "v"); }).ok());
  EXPECT_EQ(*(*store)->Get(CF::kWork, "k"), "v");
  // A second replica as the same user: both keep working (each has a token of its own).
  absl::StatusOr<std::unique_ptr<EtcdStore>> second = EtcdStore::Open(options);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(*(*second)->Get(CF::kWork, "k"), "v");
  EXPECT_EQ(*(*store)->Get(CF::kWork, "k"), "v");
}

// TLS (etcds://) against a member that requires client certificates (etcd --client-cert-auth),
// with a CA and certificates tests/etcd_cluster.sh makes with openssl.
EtcdStoreOptions TlsOptions(const OwnCluster& cluster) {
  EtcdStoreOptions options;
  EXPECT_TRUE(ParseEtcdUrl(cluster.url(), &options).ok()) << cluster.url();
  EXPECT_TRUE(options.tls) << cluster.url();
  options.ca_file = cluster.tls_file("ca.pem");
  options.cert_file = cluster.tls_file("client.pem");
  options.key_file = cluster.tls_file("client.key");
  // A refused connection is not going to be accepted later: fail the refusal tests soon.
  options.request_timeout_ms = 1000;
  return options;
}

TEST(EtcdStoreTls, TheCaAndAClientCertificateGiveAWorkingStoreWatchAndElection) {
  START_OWN_CLUSTER(cluster, 1, /*tls=*/true);
  EtcdStoreOptions options = TlsOptions(cluster);
  options.request_timeout_ms = 10000;
  absl::StatusOr<std::unique_ptr<EtcdStore>> opened = EtcdStore::Open(options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EtcdStore& store = **opened;
  absl::Mutex mu;
  std::vector<std::string> watched;
  absl::StatusOr<std::unique_ptr<EtcdWatch>> watch = EtcdWatch::Start(
      options, {CF::kWork}, 0,
      [&](const std::vector<EtcdChange>& commit) {
        absl::MutexLock lock(&mu);
        for (const EtcdChange& c : commit) watched.push_back(c.key);
      },
      nullptr);
  ASSERT_TRUE(watch.ok()) << watch.status();

  ASSERT_TRUE(store
                  .RunTransaction([](Transaction& txn) -> absl::Status {
                    for (const char* k : {"a", "b", "c"}) {
                      absl::Status s = txn.Put(CF::kWork, k, absl::StrCat("v-", k));
                      if (!s.ok()) return s;
                    }
                    return absl::OkStatus();
                  })
                  .ok());
  absl::StatusOr<std::string> b = store.Get(CF::kWork, "b");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(*b, "v-b");
  // A read-modify-write transaction.
  ASSERT_TRUE(store
                  .RunTransaction([](Transaction& txn) -> absl::Status {
                    absl::StatusOr<std::string> a = txn.GetForUpdate(CF::kWork, "a");
                    if (!a.ok()) return a.status();
                    absl::Status s = txn.Put(CF::kWork, "a", *a + "+1");
                    if (!s.ok()) return s;
                    return txn.Delete(CF::kWork, "c");
                  })
                  .ok());
  std::vector<std::pair<std::string, std::string>> scanned;
  std::unique_ptr<Iterator> it = store.NewIterator(CF::kWork, "", "");
  for (it->Seek(""); it->Valid(); it->Next()) {
    scanned.emplace_back(std::string(it->key()), std::string(it->value()));
  }
  ASSERT_TRUE(it->status().ok()) << it->status();
  EXPECT_EQ(scanned,
            (std::vector<std::pair<std::string, std::string>>{{"a", "v-a+1"}, {"b", "v-b"}}));
  {
    // The watch saw both commits: a, b, c, then a and c's deletion.
    absl::MutexLock lock(&mu);
    auto all = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu) { return watched.size() >= 5; };
    mu.AwaitWithTimeout(absl::Condition(&all), absl::Seconds(30));
    EXPECT_EQ(watched.size(), 5u);
  }
  // The election's own client takes the same TLS options.
  std::atomic<bool> leads{false};
  absl::StatusOr<std::unique_ptr<EtcdElection>> election = EtcdElection::Start(
      options, "jobs", "tls-replica", absl::Seconds(5), [&](bool leader) { leads = leader; });
  ASSERT_TRUE(election.ok()) << election.status();
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (!leads && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(20));
  EXPECT_TRUE(leads);
  absl::StatusOr<std::string> leader = (*election)->Leader();
  ASSERT_TRUE(leader.ok()) << leader.status();
  EXPECT_EQ(*leader, "tls-replica");
}

TEST(EtcdStoreTls, ACaThatDidNotSignTheMemberIsRefusedNamingTheCertificate) {
  START_OWN_CLUSTER(cluster, 1, /*tls=*/true);
  EtcdStoreOptions options = TlsOptions(cluster);
  options.ca_file = cluster.tls_file("other-ca.pem");
  absl::Status s = EtcdStore::Open(options).status();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("certificate verify failed")) << s;
  EXPECT_THAT(
      std::string(s.message()),
      HasSubstr("TLS: the member's certificate is not signed by the CA in " + options.ca_file))
      << s;
}

TEST(EtcdStoreTls, NoClientCertificateIsRefusedWhenTheClusterRequiresOne) {
  START_OWN_CLUSTER(cluster, 1, /*tls=*/true);
  EtcdStoreOptions options = TlsOptions(cluster);
  options.cert_file.clear();
  options.key_file.clear();
  absl::Status s = EtcdStore::Open(options).status();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("no client certificate was given, and a cluster run with "
                        "--client-cert-auth refuses a client without one"))
      << s;
  // A certificate the cluster's CA did not sign is refused too.
  options.cert_file = cluster.tls_file("other-ca.pem");
  options.key_file = cluster.tls_file("other-ca.key");
  s = EtcdStore::Open(options).status();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("it did not accept the client certificate " + options.cert_file +
                        ", which must be signed by a CA in the cluster's --trusted-ca-file"))
      << s;
}

TEST(EtcdStoreTls, PlainEtcdAgainstATlsMemberFailsSayingToUseEtcds) {
  START_OWN_CLUSTER(cluster, 1, /*tls=*/true);
  EtcdStoreOptions options = TlsOptions(cluster);
  ASSERT_TRUE(
      ParseEtcdUrl(absl::StrCat("etcd://", absl::StripPrefix(cluster.url(), "etcds://")), &options)
          .ok());
  ASSERT_FALSE(options.tls);
  absl::Status s = EtcdStore::Open(options).status();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("as one that serves TLS does to a plain client: "
                                                  "use etcds://"))
      << s;
  // And the other way round: etcds:// against ctest's shared cluster, which is plain.
  absl::StatusOr<std::string> plain = testing::TestEtcdUrl();
  ASSERT_TRUE(plain.ok()) << plain.status();
  options = TlsOptions(cluster);
  ASSERT_TRUE(
      ParseEtcdUrl(absl::StrCat("etcds://", absl::StripPrefix(*plain, "etcd://")), &options).ok());
  s = EtcdStore::Open(options).status();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("or it does not serve TLS, and then the URL is "
                                                  "etcd://"))
      << s;
}

TEST(EtcdStoreTls, AKeyThatIsNotTheCertificatesOrAHostNotInItIsRefused) {
  START_OWN_CLUSTER(cluster, 1, /*tls=*/true);
  EtcdStoreOptions options = TlsOptions(cluster);
  options.key_file = cluster.tls_file("other-ca.key");
  absl::Status s = EtcdStore::Open(options).status();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("TLS: gRPC could not load the TLS files: is the key file the "
                        "certificate's key?"))
      << s;
  // The member's certificate names 127.0.0.1 only.
  options = TlsOptions(cluster);
  const std::string port = cluster.url().substr(cluster.url().rfind(':') + 1);
  options.endpoints = {"localhost:" + port};
  s = EtcdStore::Open(options).status();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("TLS: the member's certificate does not name"))
      << s;
}

// Files that are not what they should be are refused before anything connects.
TEST(EtcdStoreTlsFiles, MissingOrNonPemFilesAreRefusedNamingTheFile) {
  ::testing_util::TempDir dir;
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir.Sub(name)) << text;
    return dir.Sub(name);
  };
  const std::string garbage = write("garbage.pem", "not a certificate\n");
  const std::string cert =
      write("cert.pem", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
  const std::string key =
      write("key.pem", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n");
  const std::string huge = write("huge.pem", std::string(1 << 20, 'x'));
  struct Case {
    std::string ca, cert, key, expected;
  };
  for (const Case& c : std::vector<Case>{
           {dir.Sub("missing.pem"), "", "",
            "cannot read the etcd CA file " + dir.Sub("missing.pem")},
           {garbage, "", "", "the etcd CA file " + garbage + " holds no PEM CERTIFICATE"},
           {huge, "", "", "the etcd CA file " + huge + " holds no PEM CERTIFICATE"},
           {key, "", "", "the etcd CA file " + key + " holds no PEM CERTIFICATE"},
           {cert, key, cert, "the etcd certificate file " + key + " holds no PEM CERTIFICATE"},
           {cert, cert, cert, "the etcd key file " + cert + " holds no PEM PRIVATE KEY"},
           {cert, cert, "", "needs both the certificate and the key file"},
           {cert, "", key, "needs both the certificate and the key file"},
       }) {
    EtcdStoreOptions options;
    ASSERT_TRUE(ParseEtcdUrl("etcds://127.0.0.1:1", &options).ok());
    options.ca_file = c.ca;
    options.cert_file = c.cert;
    options.key_file = c.key;
    absl::Status s = EtcdStore::Open(options).status();
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.expected)) << s;
  }
}

}  // namespace
}  // namespace storage
