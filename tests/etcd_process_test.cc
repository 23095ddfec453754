// The coordinator binary on the etcd backend (--store=etcd://...): several replicas serving one
// data set, a replica killed while the others go on, and the start-up refusals of bad store
// flags. Runs as etcd.EtcdProcessTest.* on ctest's etcd fixture (tests/etcd_cluster.sh).
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/testing/test_store.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace {

using ::testing::HasSubstr;
using ::testing_util::BinaryPath;
using ::testing_util::CoordinatorProcess;
using ::testing_util::ProcessResult;
using ::testing_util::RunCoordctl;
using ::testing_util::RunProcess;
using ::testing_util::TempDir;

class EtcdProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!storage::testing::UseEtcd()) {
      GTEST_SKIP() << "runs as etcd.EtcdProcessTest.* (ctest's etcd fixture)";
    }
    absl::StatusOr<std::string> url = storage::testing::TestEtcdUrl();
    ASSERT_TRUE(url.ok()) << url.status();
    url_ = *url;
    prefix_ = absl::StrCat("/process-test/", absl::ToUnixNanos(absl::Now()), "/");
  }

  std::vector<std::string> StoreFlags() const {
    return {"--store=" + url_, "--etcd_prefix=" + prefix_};
  }

  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> StartReplica(const std::string& name) {
    return CoordinatorProcess::Start(dir_.Sub(name), StoreFlags());
  }

  static void Ok(const absl::StatusOr<ProcessResult>& r) {
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->exit_code, 0) << r->Describe();
  }

  TempDir dir_;
  std::string url_;
  std::string prefix_;
};

TEST_F(EtcdProcessTest, ReplicasServeOneDataSetAndOneMaySurviveTheOther) {
  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> a = StartReplica("a");
  ASSERT_TRUE(a.ok()) << a.status();
  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> b = StartReplica("b");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_THAT((*a)->process().stderr_text(), HasSubstr("opened etcd store"));

  // Written through one replica, read and changed through the other.
  Ok(RunCoordctl((*a)->target(), {"context", "put", "eval-1", "--agent", "green"}));
  absl::StatusOr<ProcessResult> got = RunCoordctl((*b)->target(), {"context", "get", "eval-1"});
  Ok(got);
  EXPECT_THAT(got->out, HasSubstr("green"));
  absl::StatusOr<ProcessResult> init = RunCoordctl((*b)->target(), {"task", "init", "demo task"});
  Ok(init);
  const std::string task(absl::StripAsciiWhitespace(init->out));
  ASSERT_FALSE(task.empty());
  Ok(RunCoordctl((*a)->target(), {"task", "fail", task, "Error: boom"}));

  // A client given both replicas uses the first, and moves to the other when it is gone.
  const std::string both = absl::StrCat((*a)->target(), ",", (*b)->target());
  Ok(RunCoordctl(both, {"context", "put", "eval-3", "--agent", "green"}));

  // Replica A dies without warning; B keeps serving everything A acknowledged.
  ASSERT_TRUE((*a)->Kill().ok());
  got = RunCoordctl(both, {"context", "get", "eval-3"});
  Ok(got);
  EXPECT_THAT(got->out, HasSubstr("green"));
  got = RunCoordctl((*b)->target(), {"task", "state", task});
  Ok(got);
  EXPECT_THAT(got->out, HasSubstr("boom"));
  Ok(RunCoordctl((*b)->target(), {"context", "put", "eval-2", "--agent", "green"}));

  // A comes back on the same prefix and sees what B wrote meanwhile.
  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> again = StartReplica("a2");
  ASSERT_TRUE(again.ok()) << again.status();
  got = RunCoordctl((*again)->target(), {"context", "get", "eval-2"});
  Ok(got);
  EXPECT_THAT(got->out, HasSubstr("green"));
}

TEST_F(EtcdProcessTest, BadStoreFlagsStopTheStartWithTheReason) {
  struct Case {
    std::vector<std::string> flags;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--store=etcd://no-port-here"}, "is not host:port"},
      {{"--store=http://127.0.0.1:2379"}, "is not etcd://"},
      {{"--store=" + url_, "--etcd_prefix=no-slash"}, "must be non-empty and end with '/'"},
      {{"--store=etcd://127.0.0.1:1", "--etcd_timeout=1s"}, "no etcd member"},
      {{"--store=" + url_, "--restore_from=" + dir_.Sub("backup")}, "--restore_from"},
      {{"--store=" + url_, "--etcd_user=coord"}, "--etcd_user and --etcd_password_file"},
      {{"--store=" + url_, "--etcd_user=coord", "--etcd_password_file=" + dir_.Sub("missing")},
       "cannot read"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"--listen=127.0.0.1:0", "--http_listen=127.0.0.1:0",
                                     "--data_dir=" + dir_.Sub("unused")};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    absl::StatusOr<ProcessResult> r =
        RunProcess(BinaryPath("coordinator"), args, absl::Seconds(60));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_NE(r->exit_code, 0) << r->Describe();
    EXPECT_THAT(r->err, HasSubstr(c.says)) << r->Describe();
  }
}

}  // namespace
