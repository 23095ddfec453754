// Keeps the load generator and the workloads working (issue 7's CI check): each runs briefly at
// concurrency 2 against a real coordinator. No timing is asserted: only that calls complete and
// that none fails, and that a run against a broken target says it failed.
#include "bench/workloads.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "bench/loadgen.h"
#include "gtest/gtest.h"
#include "storage/testing/test_store.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace bench {
namespace {

using ::testing_util::BinaryPath;
using ::testing_util::CoordinatorProcess;
using ::testing_util::Process;
using ::testing_util::RunProcess;
using ::testing_util::TempDir;

LoadOptions OneSecondAtTwo() {
  LoadOptions options;
  options.concurrency = 2;
  options.warmup = absl::Milliseconds(200);
  options.duration = absl::Seconds(1);
  return options;
}

class WorkloadsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<CoordinatorProcess>> c =
        CoordinatorProcess::Start(dir_.Sub("data"));
    ASSERT_OK(c);
    coordinator_ = *std::move(c);
    stubs_ = std::make_unique<Stubs>(MakeChannels(coordinator_->target(), 2));
  }

  TempDir dir_;
  std::unique_ptr<CoordinatorProcess> coordinator_;
  std::unique_ptr<Stubs> stubs_;
};

TEST_F(WorkloadsTest, RecordFailureOnDistinctTasks) {
  absl::StatusOr<std::vector<std::string>> ids = InitTasks(*stubs_, "ci", 128);
  ASSERT_OK(ids);
  ASSERT_EQ(ids->size(), 128u);
  for (const std::string& id : *ids) ASSERT_EQ(id.size(), 8u) << id;
  LoadResult r = RunLoad(OneSecondAtTwo(), RecordFailureWorkload(*stubs_, *ids));
  EXPECT_EQ(r.errors, 0) << r.first_error;
  EXPECT_GT(r.calls, 0);
  EXPECT_GT(r.p50_us, 0);
}

// The server's CPU time in the measured window, read from /proc: what RESULTS.md divides by
// the calls.
TEST_F(WorkloadsTest, TheServersCpuTimeInTheWindowIsMeasured) {
  absl::StatusOr<std::vector<std::string>> ids = InitTasks(*stubs_, "cpu", 16);
  ASSERT_OK(ids);
  LoadOptions options = OneSecondAtTwo();
  options.cpu_pid = coordinator_->process().pid();
  LoadResult r = RunLoad(options, RecordFailureWorkload(*stubs_, *ids));
  EXPECT_EQ(r.errors, 0) << r.first_error;
  EXPECT_GT(r.calls, 0);
  // Serving a second of calls takes the server more than one clock tick.
  EXPECT_GT(r.cpu_seconds, 0);
  absl::StatusOr<double> total = ProcessCpuSeconds(coordinator_->process().pid());
  ASSERT_OK(total);
  EXPECT_GE(*total, r.cpu_seconds);
  // The client's own CPU comes with it; a peer's only when one is named.
  EXPECT_GT(r.client_cpu_seconds, 0);
  EXPECT_LT(r.peer_cpu_seconds, 0);
  // Not measured unless asked, and a process that does not exist is an error.
  LoadResult unasked = RunLoad(OneSecondAtTwo(), RecordFailureWorkload(*stubs_, *ids));
  EXPECT_LT(unasked.cpu_seconds, 0);
  EXPECT_LT(unasked.client_cpu_seconds, 0);
  EXPECT_FALSE(ProcessCpuSeconds(-1).ok());
}

// A peer process (here the same coordinator named twice) is measured over the same window.
TEST_F(WorkloadsTest, APeersCpuTimeIsMeasuredOverTheSameWindow) {
  absl::StatusOr<std::vector<std::string>> ids = InitTasks(*stubs_, "peer", 16);
  ASSERT_OK(ids);
  LoadOptions options = OneSecondAtTwo();
  options.cpu_pid = coordinator_->process().pid();
  options.peer_cpu_pid = coordinator_->process().pid();
  LoadResult r = RunLoad(options, RecordFailureWorkload(*stubs_, *ids));
  EXPECT_EQ(r.errors, 0) << r.first_error;
  EXPECT_GT(r.peer_cpu_seconds, 0);
  // Read moments apart, the two readings of one process differ by a few clock ticks at most.
  EXPECT_NEAR(r.peer_cpu_seconds, r.cpu_seconds, 0.05);
}

TEST_F(WorkloadsTest, IncrementAttemptOnOneTask) {
  absl::StatusOr<std::vector<std::string>> ids = InitTasks(*stubs_, "ci", 1);
  ASSERT_OK(ids);
  LoadResult r = RunLoad(OneSecondAtTwo(), IncrementAttemptWorkload(*stubs_, (*ids)[0]));
  EXPECT_EQ(r.errors, 0) << r.first_error;
  EXPECT_GT(r.calls, 0);
}

TEST_F(WorkloadsTest, AppendStopsAfterMaxCalls) {
  IssueFn append = AppendMessageWorkload(*stubs_, "ci-convo");
  ASSERT_OK(RunCount(50, 8, append));
  LoadOptions options = OneSecondAtTwo();
  options.warmup = absl::ZeroDuration();
  options.duration = absl::Seconds(60);
  options.max_calls = 20;
  LoadResult r = RunLoad(options, append);
  EXPECT_EQ(r.errors, 0) << r.first_error;
  EXPECT_EQ(r.calls, 20);
  EXPECT_LT(r.seconds, 60);
}

TEST_F(WorkloadsTest, GetContextAmongCreatedOnes) {
  ASSERT_OK(RunCount(100, 8, CreateContextWorkload(*stubs_, "ci")));
  LoadResult r = RunLoad(OneSecondAtTwo(), GetContextWorkload(*stubs_, "ci", 100));
  EXPECT_EQ(r.errors, 0) << r.first_error;
  EXPECT_GT(r.calls, 0);
}

TEST_F(WorkloadsTest, PingIsTheHealthCheck) {
  LoadResult r = RunLoad(OneSecondAtTwo(), PingWorkload(*stubs_));
  EXPECT_EQ(r.errors, 0) << r.first_error;
  EXPECT_GT(r.calls, 0);
}

// The load generator is honest: calls that fail are counted, not timed as successes.
TEST_F(WorkloadsTest, FailedCallsAreCountedAsErrors) {
  LoadResult r = RunLoad(OneSecondAtTwo(), GetContextWorkload(*stubs_, "missing", 100));
  EXPECT_GT(r.errors, 0);
  EXPECT_EQ(r.calls, 0);
  EXPECT_NE(r.first_error.find("not"), std::string::npos) << r.first_error;
}

TEST_F(WorkloadsTest, SetUpReportsTheFirstError) {
  // An unknown task: every RecordFailure is NOT_FOUND.
  absl::Status s = RunCount(10, 2, RecordFailureWorkload(*stubs_, {"deadbeef"}));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("10 of 10"), std::string::npos) << s;
}

TEST_F(WorkloadsTest, CoordBenchPrintsJsonAndExitsZero) {
  absl::StatusOr<testing_util::ProcessResult> r = RunProcess(
      BinaryPath("coord_bench"), {"--target=" + coordinator_->target(), "--workload=attempt",
                                  "--concurrency=2", "--warmup_seconds=0.1", "--seconds=1"});
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 0) << r->Describe();
  EXPECT_NE(r->out.find("\"workload\":\"attempt\",\"concurrency\":2,"), std::string::npos)
      << r->Describe();
  EXPECT_NE(r->out.find("\"errors\":0,"), std::string::npos) << r->Describe();
  EXPECT_EQ(r->out.find("cpu_us_per_call"), std::string::npos) << r->Describe();
  absl::StatusOr<testing_util::ProcessResult> with_cpu = RunProcess(
      BinaryPath("coord_bench"), {"--target=" + coordinator_->target(), "--workload=attempt",
                                  "--concurrency=2", "--warmup_seconds=0.1", "--seconds=1",
                                  absl::StrCat("--cpu_pid=", coordinator_->process().pid())});
  ASSERT_OK(with_cpu);
  EXPECT_EQ(with_cpu->exit_code, 0) << with_cpu->Describe();
  EXPECT_NE(with_cpu->out.find("\"cpu_us_per_call\":"), std::string::npos) << with_cpu->Describe();
  EXPECT_NE(with_cpu->out.find("\"client_cpu_us_per_call\":"), std::string::npos)
      << with_cpu->Describe();
  EXPECT_EQ(with_cpu->out.find("peer_cpu_us_per_call"), std::string::npos) << with_cpu->Describe();
}

TEST_F(WorkloadsTest, CoordBenchFailsWhenCallsFail) {
  // Reads of contexts that were never created: every call is NOT_FOUND.
  absl::StatusOr<testing_util::ProcessResult> r =
      RunProcess(BinaryPath("coord_bench"),
                 {"--target=" + coordinator_->target(), "--workload=get", "--create=false",
                  "--contexts=10", "--concurrency=2", "--warmup_seconds=0", "--seconds=0.5"});
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 1) << r->Describe();
  EXPECT_NE(r->err.find("calls failed"), std::string::npos) << r->Describe();
}

// W5 over JSON-RPC: the coordinator's JSON-RPC binding in front of a real echo_agent.
class JsonRpcWorkloadTest : public WorkloadsTest {
 protected:
  void SetUp() override {
    WorkloadsTest::SetUp();
    absl::StatusOr<std::unique_ptr<Process>> agent = Process::Start(
        BinaryPath("echo_agent"), {"--coordinator=" + coordinator_->target(), "--name=echo"});
    ASSERT_OK(agent);
    agent_ = *std::move(agent);
    ASSERT_OK(agent_->WaitForStderrLine("registered with the coordinator", absl::Seconds(60)));
    absl::StatusOr<int> port = coordinator_->HttpPort();
    ASSERT_OK(port);
    base_ = absl::StrCat("http://127.0.0.1:", *port);
  }

  std::unique_ptr<Process> agent_;
  std::string base_;  // the coordinator's HTTP bindings
};

TEST_F(JsonRpcWorkloadTest, SendMessageThroughTheGateway) {
  absl::StatusOr<HttpUrl> url = ParseHttpUrl(base_ + "/agents/echo");
  ASSERT_OK(url);
  LoadResult r = RunLoad(OneSecondAtTwo(), JsonRpcSendMessageWorkload(*url));
  EXPECT_EQ(r.errors, 0) << r.first_error;
  EXPECT_GT(r.calls, 0);
  EXPECT_GT(r.p50_us, 0);
}

TEST_F(JsonRpcWorkloadTest, AnUnknownAgentIsCountedAsErrors) {
  absl::StatusOr<HttpUrl> url = ParseHttpUrl(base_ + "/agents/nosuch");
  ASSERT_OK(url);
  LoadResult r = RunLoad(OneSecondAtTwo(), JsonRpcSendMessageWorkload(*url));
  EXPECT_GT(r.errors, 0);
  EXPECT_EQ(r.calls, 0);
}

TEST_F(JsonRpcWorkloadTest, CoordBenchPrintsJsonAndExitsZero) {
  absl::StatusOr<testing_util::ProcessResult> r = RunProcess(
      BinaryPath("coord_bench"),
      {"--workload=a2a", "--binding=jsonrpc", "--url=" + base_ + "/agents/echo",
       "--label=gateway_jsonrpc", "--concurrency=1,2", "--warmup_seconds=0.1", "--seconds=0.5"});
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 0) << r->Describe();
  EXPECT_NE(r->out.find("\"label\":\"gateway_jsonrpc\",\"binding\":\"jsonrpc\",\"concurrency\":2,"),
            std::string::npos)
      << r->Describe();
  EXPECT_NE(r->out.find("\"errors\":0,"), std::string::npos) << r->Describe();
}

TEST(ParseHttpUrlTest, SplitsHostPortAndPath) {
  absl::StatusOr<HttpUrl> u = ParseHttpUrl("http://127.0.0.1:8080/agents/echo");
  ASSERT_OK(u);
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, 8080);
  EXPECT_EQ(u->path, "/agents/echo");
  u = ParseHttpUrl("http://localhost");
  ASSERT_OK(u);
  EXPECT_EQ(u->host, "localhost");
  EXPECT_EQ(u->port, 80);
  EXPECT_EQ(u->path, "/");
}

TEST(ParseHttpUrlTest, RefusesMalformedUrls) {
  for (const char* url :
       {"", "127.0.0.1:8080/agents/echo", "https://127.0.0.1/", "http://", "http:///path",
        "http://127.0.0.1:/", "http://127.0.0.1:0/", "http://127.0.0.1:65536/",
        "http://127.0.0.1:80x/", "http://[::1]:80/", "http://u@127.0.0.1/", "http://h/p?q=1"}) {
    EXPECT_FALSE(ParseHttpUrl(url).ok()) << url;
  }
}

TEST(CoordBenchFlagsTest, BadFlagsAreRefused) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--concurrency=0"},
           {"--concurrency=abc"},
           {"--concurrency="},
           {"--workload=nosuch", "--target=127.0.0.1:1"},
           {"--workload=a2a", "--binding=nosuch"},
           {"--workload=a2a", "--binding=jsonrpc"},
           {"--workload=a2a", "--binding=jsonrpc", "--url=127.0.0.1:1/agents/echo"},
           {"--workload=a2a", "--binding=jsonrpc", "--url=http://127.0.0.1:99999/"},
           {"--workload=fail", "--binding=jsonrpc", "--url=http://127.0.0.1:1/"},
           {"--workload=etcd_put", "--value_bytes=-1", "--target=127.0.0.1:1"},
           {"--workload=etcd_put", "--value_bytes=1048577", "--target=127.0.0.1:1"},
       }) {
    absl::StatusOr<testing_util::ProcessResult> r = RunProcess(BinaryPath("coord_bench"), args);
    ASSERT_OK(r);
    EXPECT_EQ(r->exit_code, 2) << r->Describe();
  }
}

// The raw-put peer against ctest's etcd cluster (runs as etcd.EtcdPutWorkloadTest.*): every
// measured call put a key of its own under the run's prefix, with the value size asked for.
TEST(EtcdPutWorkloadTest, EachCallPutsAKeyOfItsOwn) {
  if (!storage::testing::UseEtcd()) GTEST_SKIP() << "runs as etcd.EtcdPutWorkloadTest.*";
  absl::StatusOr<std::string> url = storage::testing::TestEtcdUrl();
  ASSERT_OK(url);
  absl::string_view member = *url;
  ASSERT_TRUE(absl::ConsumePrefix(&member, "etcd://")) << *url;
  member = member.substr(0, member.find(','));
  Stubs stubs(MakeChannels(std::string(member), 2));
  const std::string prefix = absl::StrCat("/bench-test/", absl::ToUnixNanos(absl::Now()), "/");
  // The members' own count of the requests they handled (coord_bench --etcd_metrics) grows by
  // about a Put per measured call: reading three members' /metrics takes a few milliseconds at
  // each end of the window, while calls go on (and the other tests sharing the cluster add
  // theirs).
  LoadOptions options = OneSecondAtTwo();
  absl::string_view all_members = *url;
  ASSERT_TRUE(absl::ConsumePrefix(&all_members, "etcd://"));
  const std::vector<std::string> members = absl::StrSplit(all_members, ',');
  options.window_counter = [&members] { return EtcdKvRequests(members); };
  LoadResult r = RunLoad(options, EtcdPutWorkload(stubs, prefix, 300));
  EXPECT_EQ(r.errors, 0) << r.first_error;
  ASSERT_GT(r.calls, 0);
  EXPECT_GE(r.counter_delta, 0.8 * static_cast<double>(r.calls));
  EXPECT_FALSE(EtcdKvRequests({"127.0.0.1:1"}).ok());
  etcdserverpb::RangeRequest range;
  range.set_key(prefix);
  range.set_range_end(absl::StrCat(prefix.substr(0, prefix.size() - 1), "0"));  // '/' + 1
  grpc::ClientContext context;
  etcdserverpb::RangeResponse listed;
  ASSERT_TRUE(stubs.etcd_kv[0]->Range(&context, range, &listed).ok());
  // The warm-up's puts are there too, not counted in r.calls.
  EXPECT_GE(listed.count(), r.calls);
  ASSERT_GT(listed.kvs_size(), 0);
  EXPECT_EQ(listed.kvs(0).value().size(), 300u);
}

TEST(CoordBenchFlagsTest, UnreachableTargetFails) {
  absl::StatusOr<testing_util::ProcessResult> r = RunProcess(
      BinaryPath("coord_bench"), {"--target=127.0.0.1:1", "--workload=attempt", "--concurrency=1",
                                  "--warmup_seconds=0", "--seconds=0.2"});
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 1) << r->Describe();
}

}  // namespace
}  // namespace bench
