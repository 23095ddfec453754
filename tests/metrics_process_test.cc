// /metrics on the real coordinator: calls made with coordctl show up in the Prometheus text
// with the right counts (an error code included), the latency histogram agrees with them, and
// the RocksDB, A2A delivery, lease and breaker families are there.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "coordinator/v1/work.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace {

using ::testing::HasSubstr;
using ::testing_util::CoordinatorProcess;
using ::testing_util::ProcessResult;
using ::testing_util::RunCoordctl;
using ::testing_util::TempDir;

// The value of the sample whose line starts with `series` ("name{labels}"), or -1.
double Sample(const std::string& text, const std::string& series) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, series) || !absl::ConsumePrefix(&line, " ")) continue;
    double value = 0;
    if (absl::SimpleAtod(line, &value)) return value;
  }
  return -1;
}

void ExpectExit(const absl::StatusOr<ProcessResult>& r, int code) {
  ASSERT_OK(r.status());
  EXPECT_EQ(r->exit_code, code) << r->Describe();
}

// A coordinator with its HTTP port (for /metrics).
class MetricsProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<CoordinatorProcess>> started =
        CoordinatorProcess::Start(dir_.Sub("data"));
    ASSERT_OK(started);
    coordinator_ = *std::move(started);
    absl::StatusOr<int> port = coordinator_->HttpPort();
    ASSERT_OK(port);
    http_port_ = *port;
  }

  TempDir dir_;
  std::unique_ptr<CoordinatorProcess> coordinator_;
  int http_port_ = 0;
};

// The open-streams gauge counts a run watch while it is open, and not once it is cancelled.
TEST_F(MetricsProcessTest, OpenStreamsGaugeFollowsAWatch) {
  namespace v1 = coordinator::v1;
  httplib::Client http("127.0.0.1", http_port_);
  const std::string series =
      "coordinator_grpc_open_streams{service=\"coordinator.v1.WorkService\",method=\"WatchRun\"}";
  auto open_watches = [&]() -> double {
    httplib::Result res = http.Get("/metrics");
    return res && res->status == 200 ? Sample(res->body, series) : -2;
  };

  auto stub = v1::WorkService::NewStub(
      grpc::CreateChannel(coordinator_->target(), grpc::InsecureChannelCredentials()));
  v1::CreateRunRequest create;
  create.mutable_run()->set_run_id("watched");
  create.mutable_run()->set_kind(v1::RUN_KIND_WORKSTREAMS);
  v1::WorkItem* item = create.add_items();
  item->set_item_id("a");
  item->set_title("a");
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    v1::Run run;
    ASSERT_TRUE(stub->CreateRun(&ctx, create, &run).ok());
  }

  grpc::ClientContext watch_ctx;
  v1::WatchRunRequest watch;
  watch.set_run_id("watched");
  std::unique_ptr<grpc::ClientReader<v1::RunEvent>> reader = stub->WatchRun(&watch_ctx, watch);
  v1::RunEvent first;
  ASSERT_TRUE(reader->Read(&first));  // the stream is open on the server now
  EXPECT_EQ(open_watches(), 1);

  watch_ctx.TryCancel();
  v1::RunEvent ignored;
  while (reader->Read(&ignored)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  // The server lets go of the call a moment after the cancel reaches it.
  double after = open_watches();
  for (int i = 0; i < 300 && after != 0; ++i) {
    absl::SleepFor(absl::Milliseconds(100));
    after = open_watches();
  }
  EXPECT_EQ(after, 0);
}

TEST_F(MetricsProcessTest, CallsShowUpWithTheirCodes) {
  const std::string target = coordinator_->target();

  ExpectExit(RunCoordctl(target, {"context", "get", "missing-1"}), 1);
  ExpectExit(RunCoordctl(target, {"context", "get", "missing-2"}), 1);
  ExpectExit(RunCoordctl(target, {"health"}), 0);
  absl::StatusOr<ProcessResult> init = RunCoordctl(target, {"task", "init", "metrics test task"});
  ExpectExit(init, 0);
  const std::string task_id(absl::StripAsciiWhitespace(init->out));
  ExpectExit(RunCoordctl(target, {"breaker", "break", task_id, "stop it"}), 0);
  // A call the server refuses as malformed: INVALID_ARGUMENT.
  ExpectExit(RunCoordctl(target, {"context", "get", std::string(300, 'x')}), 3);

  httplib::Client client("127.0.0.1", http_port_);
  httplib::Result res = client.Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  ASSERT_EQ(res->status, 200);
  EXPECT_THAT(res->get_header_value("Content-Type"), HasSubstr("text/plain; version=0.0.4"));
  const std::string& text = res->body;

  const std::string get = "service=\"coordinator.v1.ContextService\",method=\"GetContext\"";
  EXPECT_EQ(Sample(text, "coordinator_grpc_requests_total{" + get + ",code=\"NOT_FOUND\"}"), 2)
      << text;
  EXPECT_EQ(Sample(text, "coordinator_grpc_requests_total{" + get + ",code=\"INVALID_ARGUMENT\"}"),
            1)
      << text;
  EXPECT_EQ(Sample(text,
                   "coordinator_grpc_requests_total{service=\"grpc.health.v1.Health\","
                   "method=\"Check\",code=\"OK\"}"),
            1)
      << text;
  EXPECT_EQ(Sample(text,
                   "coordinator_grpc_requests_total{service=\"coordinator.v1.BreakerService\","
                   "method=\"Break\",code=\"OK\"}"),
            1)
      << text;
  // The histogram counts the same calls; its buckets are cumulative up to +Inf.
  EXPECT_EQ(Sample(text, "coordinator_grpc_request_duration_seconds_count{" + get + "}"), 3);
  EXPECT_EQ(
      Sample(text, "coordinator_grpc_request_duration_seconds_bucket{" + get + ",le=\"+Inf\"}"), 3);
  EXPECT_LE(
      Sample(text, "coordinator_grpc_request_duration_seconds_bucket{" + get + ",le=\"0.001\"}"),
      Sample(text, "coordinator_grpc_request_duration_seconds_bucket{" + get + ",le=\"10\"}"));
  EXPECT_GT(Sample(text, "coordinator_grpc_request_duration_seconds_sum{" + get + "}"), 0);

  EXPECT_EQ(Sample(text, "coordinator_breaker_trips_total{action=\"break\"}"), 1) << text;
  EXPECT_EQ(Sample(text, "coordinator_breaker_trips_total{action=\"force_escalate\"}"), 0);
  EXPECT_EQ(Sample(text, "coordinator_work_leases_held"), 0) << text;
  EXPECT_EQ(Sample(text, "coordinator_work_leases_expired_total"), 0) << text;
  EXPECT_EQ(Sample(text, "coordinator_a2a_deliveries_queued"), 0) << text;
  EXPECT_EQ(Sample(text, "coordinator_a2a_delivery_retries_total"), 0) << text;
  EXPECT_EQ(Sample(text, "coordinator_rocksdb_write_stopped"), 0) << text;
  EXPECT_GE(Sample(text, "coordinator_rocksdb_live_data_bytes"), 0) << text;
  EXPECT_EQ(Sample(text, "coordinator_rocksdb_write_stalls_total{kind=\"stop\"}"), 0) << text;
  EXPECT_GE(Sample(text, "coordinator_rocksdb_compactions_pending"), 0) << text;
  EXPECT_EQ(Sample(text, "coordinator_etcd_commit_requests_total"), 0) << text;  // RocksDB
  EXPECT_EQ(Sample(text, "coordinator_etcd_read_requests_total"), 0) << text;    // RocksDB
  EXPECT_THAT(text, HasSubstr("# TYPE coordinator_grpc_request_duration_seconds histogram\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE coordinator_grpc_open_streams gauge\n"));

  // Every line is a comment or "name{labels} value".
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (absl::StartsWith(line, "# HELP ") || absl::StartsWith(line, "# TYPE ")) continue;
    const size_t space = line.rfind(' ');
    ASSERT_NE(space, absl::string_view::npos) << line;
    double value = 0;
    EXPECT_TRUE(absl::SimpleAtod(line.substr(space + 1), &value) ||
                line.substr(space + 1) == "+Inf" || line.substr(space + 1) == "NaN")
        << line;
    EXPECT_TRUE(absl::StartsWith(line, "coordinator_")) << line;
  }

  // The scrape itself takes no input: a query string changes nothing, another method is not
  // served, and the server keeps serving.
  httplib::Result with_query = client.Get("/metrics?name[]=%00%ff&x=" + std::string(4000, 'a'));
  ASSERT_TRUE(with_query);
  EXPECT_EQ(with_query->status, 200);
  httplib::Result post = client.Post("/metrics", "x", "text/plain");
  ASSERT_TRUE(post);
  EXPECT_NE(post->status, 200);
  ExpectExit(RunCoordctl(target, {"health"}), 0);
  ASSERT_OK(coordinator_->Stop().status());
}

}  // namespace
