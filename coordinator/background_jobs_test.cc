// Where the background jobs run (the work-lease reaper, retention, the A2A gateway's deliveries
// and webhooks): in the one process on RocksDB; on etcd, on the one replica that the election
// of storage/etcd_election.h picked, moving to another when that one goes. Two in-process
// CoordinatorServers on one etcd prefix stand for two replicas (etcd.BackgroundJobsTest.*).
// No sleeps: every wait polls with a bound.
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "common/metrics.h"
#include "coordinator/server.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/testing/test_store.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

using ::testing::HasSubstr;
using ::testing_util::TempDir;

constexpr absl::Duration kTtl = absl::Seconds(2);
// Beyond the TTL: the survivor's campaign rounds (TTL/4) and a loaded machine.
constexpr absl::Duration kMargin = absl::Seconds(15);

using testing_util::WaitFor;

class BackgroundJobsTest : public ::testing::Test {
 protected:
  // A replica on the data set of `dir_` (one etcd prefix for all of this test's replicas).
  std::unique_ptr<CoordinatorServer> StartReplica(const std::string& name) {
    ServerOptions options;
    options.listen = "127.0.0.1:0";
    options.http_listen = "";
    options.data_dir = dir_.Sub("data");
    options.worker_threads = 4;
    options.gateway.delivery_threads = 2;
    options.election_ttl = kTtl;
    options.replica_name = name;
    absl::Status set =
        storage::testing::SetTestServerStore(options.data_dir, &options.store_url, &options.etcd);
    EXPECT_OK(set);
    absl::StatusOr<std::unique_ptr<CoordinatorServer>> server = CoordinatorServer::Start(options);
    EXPECT_OK(server);
    return server.ok() ? *std::move(server) : nullptr;
  }

  TempDir dir_;
};

TEST_F(BackgroundJobsTest, TheOneProcessOnRocksDbRunsThemAndSaysSoInMetrics) {
  SKIP_ON_ETCD("one process, no election");
  std::unique_ptr<CoordinatorServer> server = StartReplica("only");
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(server->runs_background_jobs());
  EXPECT_THAT(common::MetricsRegistry::Default().Render(),
              HasSubstr("\ncoordinator_background_jobs_leader 1\n"));
  server->Shutdown(absl::Seconds(1));
  EXPECT_FALSE(server->runs_background_jobs());
}

TEST_F(BackgroundJobsTest, OneOfTwoReplicasRunsThemAndTheOtherTakesOverWhenItDiesOrLeaves) {
  if (!storage::testing::UseEtcd()) GTEST_SKIP() << "etcd only: runs as etcd.BackgroundJobsTest.*";
  std::unique_ptr<CoordinatorServer> a = StartReplica("replica-a");
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(WaitFor([&] { return a->runs_background_jobs(); }, kTtl + kMargin));
  std::unique_ptr<CoordinatorServer> b = StartReplica("replica-b");
  ASSERT_NE(b, nullptr);
  // B campaigns from its start; it must not get the jobs while A holds them. Each of B's
  // campaign rounds (TTL/4) would take them if it could: several rounds pass in this wait.
  EXPECT_FALSE(WaitFor([&] { return b->runs_background_jobs(); }, kTtl));
  EXPECT_TRUE(a->runs_background_jobs());

  // A dies without resigning: its jobs stop, and B takes them once A's lease expires.
  a->AbandonElectionForTest();
  EXPECT_FALSE(a->runs_background_jobs());
  ASSERT_TRUE(WaitFor([&] { return b->runs_background_jobs(); }, kTtl + kMargin));
  EXPECT_FALSE(a->runs_background_jobs());
  a->Shutdown(absl::Seconds(1));
  a.reset();

  // A replica that comes back waits; the leader that shuts down resigns, and it takes over.
  std::unique_ptr<CoordinatorServer> c = StartReplica("replica-c");
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(WaitFor([&] { return c->runs_background_jobs(); }, kTtl));
  EXPECT_TRUE(b->runs_background_jobs());
  b->Shutdown(absl::Seconds(1));
  EXPECT_FALSE(b->runs_background_jobs());
  ASSERT_TRUE(WaitFor([&] { return c->runs_background_jobs(); }, kTtl + kMargin));
}

TEST(BackgroundJobsOptionsTest, BadElectionFlagsAreRefusedWithTheReason) {
  struct Case {
    absl::Duration ttl;
    std::string name;
    std::string says;
  };
  const Case cases[] = {
      {absl::Seconds(1), "", "--election_ttl must be whole seconds from 2s to 300s, not 1s"},
      {absl::Milliseconds(2500), "", "not 2.5s"},
      {absl::Seconds(301), "", "not 5m1s"},
      {absl::Seconds(10), "bad\nname", "--replica_name"},
  };
  for (const Case& c : cases) {
    TempDir dir;
    ServerOptions options;
    options.listen = "127.0.0.1:0";
    options.http_listen = "";
    options.data_dir = dir.Sub("data");
    options.election_ttl = c.ttl;
    options.replica_name = c.name;
    absl::StatusOr<std::unique_ptr<CoordinatorServer>> server = CoordinatorServer::Start(options);
    ASSERT_FALSE(server.ok()) << c.says;
    EXPECT_TRUE(absl::IsInvalidArgument(server.status())) << server.status();
    EXPECT_THAT(std::string(server.status().message()), HasSubstr(c.says));
  }
}

}  // namespace
}  // namespace coordinator
