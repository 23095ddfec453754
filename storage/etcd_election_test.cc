// The election of one replica for the background jobs (storage/etcd_election.h), on ctest's etcd
// fixture: one leader among candidates, a resignation hands over at once, a candidate that dies
// hands over when its lease expires, followers take over when they see the key go (their watch)
// and not at their next round, and never two leaders at once. Waits are bounded polls.
#include "storage/etcd_election.h"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "storage/etcd_client.h"
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

  // `follower_round` zero: the default, a quarter of the TTL. `stepping_down`: how long the
  // candidate's on_change(false) takes (a replica stopping its jobs), during which it still
  // counts as a leader.
  std::unique_ptr<EtcdElection> Candidate(const std::string& name,
                                          absl::Duration ttl = absl::Seconds(2),
                                          absl::Duration follower_round = absl::ZeroDuration(),
                                          absl::Duration stepping_down = absl::ZeroDuration()) {
    absl::StatusOr<std::unique_ptr<EtcdElection>> e = EtcdElection::Start(
        options_, "jobs", name, ttl,
        [this, stepping_down](bool leader) {
          if (!leader) absl::SleepFor(stepping_down);
          // Never two leaders at once, as the candidates themselves see it.
          const int now = leaders_.fetch_add(leader ? 1 : -1) + (leader ? 1 : -1);
          if (now > 1) overlap_ = true;
        },
        follower_round);
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? *std::move(e) : nullptr;
  }

  // The candidates of `cs` as OneLeader takes them (nullptr for one already gone).
  static std::vector<EtcdElection*> Views(const std::vector<std::unique_ptr<EtcdElection>>& cs) {
    std::vector<EtcdElection*> v;
    for (const auto& c : cs) v.push_back(c.get());
    return v;
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
  int leader = OneLeader(Views(cs));
  ASSERT_GE(leader, 0);
  cs[leader].reset();  // resigns: the lease is revoked
  leader = OneLeader(Views(cs));
  ASSERT_GE(leader, 0);
  cs[leader]->AbandonForTest();  // dies: nobody revokes, the lease runs out
  EXPECT_TRUE(cs[leader]->leader() == false);
  cs[leader].reset();
  leader = OneLeader(Views(cs));
  ASSERT_GE(leader, 0);
  EXPECT_FALSE(overlap_);
}

// A leader that resigns finishes stepping down (its jobs stopped) before the role can move:
// the follower, watching the key, would take over within milliseconds of the revocation.
TEST_F(EtcdElectionTest, AResigningLeaderHasSteppedDownBeforeAnotherTakesOver) {
  std::vector<std::unique_ptr<EtcdElection>> cs;
  for (const char* n : {"a", "b"}) {
    cs.push_back(Candidate(n, absl::Seconds(2), absl::ZeroDuration(), absl::Milliseconds(500)));
  }
  int leader = OneLeader(Views(cs));
  ASSERT_GE(leader, 0);
  cs[leader].reset();
  leader = OneLeader(Views(cs));
  ASSERT_GE(leader, 0);
  EXPECT_FALSE(overlap_);
}

// Followers that campaign on their own only every ten minutes: a takeover within OneLeader's
// 20 s wait can only be their watch of the key's deletion.
constexpr absl::Duration kNoRound = absl::Minutes(10);

TEST_F(EtcdElectionTest, ADeadLeadersRoleMovesWhenItsLeaseExpiresNotAtAFollowersRound) {
  std::vector<std::unique_ptr<EtcdElection>> cs;
  for (const char* n : {"a", "b", "c"}) cs.push_back(Candidate(n, absl::Seconds(2), kNoRound));
  int leader = OneLeader(Views(cs));
  ASSERT_GE(leader, 0);
  // Dies: nobody revokes; etcd deletes the key when the lease expires. The followers' own
  // leases have lapsed too meanwhile (2 s, no round to keep them): they get new ones.
  cs[leader]->AbandonForTest();
  cs[leader].reset();
  leader = OneLeader(Views(cs));
  ASSERT_GE(leader, 0);
  absl::StatusOr<std::string> named = cs[leader]->Leader();
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_EQ(*named, std::string(1, static_cast<char>('a' + leader)));
  // And a resignation, the same way.
  cs[leader].reset();
  leader = OneLeader(Views(cs));
  ASSERT_GE(leader, 0);
  EXPECT_FALSE(overlap_);
}

// With a long TTL, the lease of a leader that stopped is revoked by hand (as its expiry would
// delete the key): a follower takes over long before the TTL or its round.
TEST_F(EtcdElectionTest, AFollowerTakesOverWhenTheLeadersLeaseIsRevoked) {
  std::unique_ptr<EtcdElection> a = Candidate("a", absl::Seconds(60), kNoRound);
  std::unique_ptr<EtcdElection> b = Candidate("b", absl::Seconds(60), kNoRound);
  const int leader = OneLeader({a.get(), b.get()});
  ASSERT_GE(leader, 0);
  std::unique_ptr<EtcdElection>& old = leader == 0 ? a : b;
  std::unique_ptr<EtcdElection>& next = leader == 0 ? b : a;
  old->AbandonForTest();

  absl::StatusOr<std::unique_ptr<EtcdClient>> client =
      EtcdClient::Connect(ClientOptionsOf(options_));
  ASSERT_TRUE(client.ok()) << client.status();
  etcdserverpb::RangeRequest range;
  range.set_key(options_.prefix + "election/jobs");
  absl::StatusOr<etcdserverpb::RangeResponse> held = (*client)->Range(range);
  ASSERT_TRUE(held.ok()) << held.status();
  ASSERT_EQ(held->kvs_size(), 1);
  ASSERT_NE(held->kvs(0).lease(), 0);
  EXPECT_FALSE(next->leader());  // still held: the old leader's lease has 60 s to run
  ASSERT_TRUE((*client)->LeaseRevoke(held->kvs(0).lease()).ok());

  EXPECT_EQ(OneLeader({nullptr, next.get()}), 1);
  absl::StatusOr<std::string> named = next->Leader();
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_EQ(*named, leader == 0 ? "b" : "a");
  EXPECT_FALSE(overlap_);
}

TEST_F(EtcdElectionTest, BadArgumentsAreRefused) {
  EXPECT_TRUE(absl::IsInvalidArgument(
      EtcdElection::Start(options_, "", "a", absl::Seconds(2), nullptr).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      EtcdElection::Start(options_, "jobs", "", absl::Seconds(2), nullptr).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      EtcdElection::Start(options_, "jobs", "a", absl::Milliseconds(500), nullptr).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      EtcdElection::Start(options_, "jobs", "a", absl::Seconds(2), nullptr, absl::Seconds(-1))
          .status()));
}

}  // namespace
}  // namespace storage
