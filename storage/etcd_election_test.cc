// The election of one replica for the background jobs (storage/etcd_election.h), on ctest's etcd
// fixture: one leader among candidates, a resignation hands over at once, a candidate that dies
// hands over when its lease expires, and never two leaders at once. Waits are bounded polls.
#include "storage/etcd_election.h"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "storage/testing/test_store.h"

namespace storage {
namespace {

class EtcdElectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::UseEtcd())
      GTEST_SKIP() << "runs as etcd.EtcdElectionTest.* (ctest's etcd fixture)";
    absl::StatusOr<std::string> url = testing::TestEtcdUrl();
    ASSERT_TRUE(url.ok()) << url.status();
    ASSERT_TRUE(ParseEtcdUrl(*url, &options_).ok());
    options_.prefix = absl::StrCat("/election-test/", absl::ToUnixNanos(absl::Now()), "/");
  }

  std::unique_ptr<EtcdElection> Candidate(const std::string& name) {
    absl::StatusOr<std::unique_ptr<EtcdElection>> e =
        EtcdElection::Start(options_, "jobs", name, absl::Seconds(2), [this](bool leader) {
          // Never two leaders at once, as the candidates themselves see it.
          const int now = leaders_.fetch_add(leader ? 1 : -1) + (leader ? 1 : -1);
          if (now > 1) overlap_ = true;
        });
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? *std::move(e) : nullptr;
  }

  // Waits (bounded) until exactly one of `es` leads; returns its index, or -1.
  static int OneLeader(const std::vector<EtcdElection*>& es) {
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (absl::Now() < deadline) {
      int count = 0, which = -1;
      for (size_t i = 0; i < es.size(); ++i) {
        if (es[i] != nullptr && es[i]->leader()) {
          ++count;
          which = static_cast<int>(i);
        }
      }
      if (count == 1) return which;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return -1;
  }

  EtcdStoreOptions options_;
  std::atomic<int> leaders_{0};
  std::atomic<bool> overlap_{false};
};

TEST_F(EtcdElectionTest, OneOfSeveralCandidatesLeadsAndTheClusterNamesIt) {
  std::unique_ptr<EtcdElection> a = Candidate("replica-a");
  std::unique_ptr<EtcdElection> b = Candidate("replica-b");
  std::unique_ptr<EtcdElection> c = Candidate("replica-c");
  const int leader = OneLeader({a.get(), b.get(), c.get()});
  ASSERT_GE(leader, 0);
  absl::StatusOr<std::string> named = a->Leader();
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_EQ(*named, std::string("replica-") + static_cast<char>('a' + leader));
  EXPECT_FALSE(overlap_);
}

TEST_F(EtcdElectionTest, AResignationHandsOverAndADeadLeaderIsReplacedAfterItsLease) {
  std::vector<std::unique_ptr<EtcdElection>> cs;
  for (const char* n : {"a", "b", "c"}) cs.push_back(Candidate(n));
  auto view = [&] {
    std::vector<EtcdElection*> v;
    for (auto& c : cs) v.push_back(c.get());
    return v;
  };
  int leader = OneLeader(view());
  ASSERT_GE(leader, 0);
  cs[leader].reset();  // resigns: the lease is revoked
  leader = OneLeader(view());
  ASSERT_GE(leader, 0);
  cs[leader]->AbandonForTest();  // dies: nobody revokes, the lease runs out
  EXPECT_TRUE(cs[leader]->leader() == false);
  cs[leader].reset();
  leader = OneLeader(view());
  ASSERT_GE(leader, 0);
  EXPECT_FALSE(overlap_);
}

TEST_F(EtcdElectionTest, BadArgumentsAreRefused) {
  EXPECT_TRUE(absl::IsInvalidArgument(
      EtcdElection::Start(options_, "", "a", absl::Seconds(2), nullptr).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      EtcdElection::Start(options_, "jobs", "", absl::Seconds(2), nullptr).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      EtcdElection::Start(options_, "jobs", "a", absl::Milliseconds(500), nullptr).status()));
}

}  // namespace
}  // namespace storage
