// The root-cause-analysis evaluation as a platform scenario run by `coordctl scenario run`, with
// our own agents started as platforms start agents (--host, --port, --card-url): 4 shards x 2
// repeats, the runner killed -9 mid-run and the coordinator killed -9 mid-run, then the same
// command again. Each assessment completes exactly once with its score, and the merged result
// file has every part. Every wait is bounded; nothing asserts on timing.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "a2a/v1/a2a.grpc.pb.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "tests/a2a_test_util.h"
#include "tests/evaluation_test_util.h"
#include "tests/json_test_util.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace {

namespace a2apb = ::lf::a2a::v1;
namespace pb = google::protobuf;
using testing_util::BinaryPath;
using testing_util::CoordinatorProcess;
using ::testing_util::kProcessWait;
using testing_util::Process;
using ::testing_util::TasksDir;
using testing_util::TempDir;

// A loopback port nothing listens on now (the scenario's endpoints name their ports).
int UnusedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof(address);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) == 0) {
    port = ntohs(address.sin_port);
  }
  close(fd);
  return port;
}

class ScenarioTest : public ::testing::Test {
 protected:
  void StartCoordinator(const std::vector<std::string>& extra = {}) {
    absl::StatusOr<std::unique_ptr<CoordinatorProcess>> c =
        CoordinatorProcess::Start(dir_.Sub("data"), extra);
    ASSERT_OK(c);
    coordinator_ = *std::move(c);
    absl::StatusOr<int> http = coordinator_->HttpPort();
    ASSERT_OK(http);
    http_port_ = *http;
  }

  // The scenario file: our green agent and our purple agent, each on a port of its own, and the
  // four task ids to shard.
  std::string WriteScenario(const std::string& run_id) {
    const int green = UnusedPort();
    const int purple = UnusedPort();
    const std::string coordinator = coordinator_->target();
    const std::string file = dir_.Sub("rca.toml");
    std::ofstream out(file);
    out << "[green_agent]\n"
        << "endpoint = \"http://127.0.0.1:" << green << "\"\n"
        << "cmd = \"" << BinaryPath("green_agent") << " --host 127.0.0.1 --port " << green
        << " --card-url http://127.0.0.1:" << green << "/ --name " << run_id
        << "-green --coordinator " << coordinator << " --tasks_dir " << TasksDir()
        << " --workspaces_dir " << dir_.Sub("workspaces") << "\"\n\n"
        << "[[participants]]\nrole = \"purple\"\n"
        << "endpoint = \"http://127.0.0.1:" << purple << "\"\n"
        << "cmd = \"" << BinaryPath("purple_agent") << " --host 127.0.0.1 --port " << purple
        << " --card-url http://127.0.0.1:" << purple << "/ --name " << run_id
        << "-purple --green_agent " << run_id << "-green --coordinator " << coordinator
        << " --policy script:" << TasksDir() << "\"\n\n"
        << "[config]\ntask_ids = [\"heap-overflow-record\", \"uaf-list-remove\", "
           "\"heap-overflow-record\", \"uaf-list-remove\"]\n";
    return file;
  }

  absl::StatusOr<std::unique_ptr<Process>> StartRunner(const std::string& file,
                                                       const std::string& run_id) {
    return Process::Start(
        BinaryPath("coordctl"),
        {absl::StrCat("--target=", coordinator_->target()), "scenario", "run", file,
         absl::StrCat("--run-id=", run_id), absl::StrCat("--gateway=http://127.0.0.1:", http_port_),
         absl::StrCat("--logs=", dir_.Sub("logs")), absl::StrCat("--output=", Output()),
         "--shards=4", "--shard-key=task_ids", "--repeat=2", "--start-timeout=60s", "--for=300s"});
  }

  std::string Output() const { return dir_.Sub("result.json"); }

  // The last lines of each agent's log (the runner's --logs), for a failure's message.
  std::string AgentLogs() const {
    std::string out;
    for (const char* role : {"green_agent", "purple"}) {
      const std::string log =
          testing_util::ReadWholeFile(dir_.Sub(absl::StrCat("logs/", role, ".log")));
      absl::StrAppend(&out, "\n--- ", role, " (last 3000 bytes)\n",
                      log.substr(log.size() > 3000 ? log.size() - 3000 : 0));
    }
    return out;
  }

  // The tasks of agent `tenant` in context `context_id`.
  std::vector<a2apb::Task> TasksIn(const std::string& tenant, const std::string& context_id) {
    auto stub = a2apb::A2AService::NewStub(
        grpc::CreateChannel(coordinator_->target(), grpc::InsecureChannelCredentials()));
    a2apb::ListTasksRequest request;
    request.set_tenant(tenant);
    request.set_context_id(context_id);
    request.set_page_size(100);
    a2apb::ListTasksResponse response;
    auto context = testing_util::A2ACallContext();
    grpc::Status s = stub->ListTasks(context.get(), request, &response);
    EXPECT_TRUE(s.ok()) << tenant << " " << context_id << ": " << s.error_message();
    return {response.tasks().begin(), response.tasks().end()};
  }

  TempDir dir_;
  std::unique_ptr<CoordinatorProcess> coordinator_;
  int http_port_ = 0;
};

TEST_F(ScenarioTest, OurAgentsFourShardsTwiceThroughKillsOfTheRunnerAndTheCoordinator) {
  StartCoordinator();
  const std::string run_id = "rca";
  const std::string file = WriteScenario(run_id);

  // The runner, killed -9 once the first assessment works.
  absl::StatusOr<std::unique_ptr<Process>> first = StartRunner(file, run_id);
  ASSERT_OK(first);
  ASSERT_OK((*first)->WaitForStdoutLine("] WORKING", kProcessWait));
  ASSERT_OK((*first)->Kill());

  // The coordinator, killed -9 while the agents it started go on, and started again on the same
  // ports and data.
  const int grpc_port = coordinator_->port();
  ASSERT_OK(coordinator_->Kill());
  StartCoordinator({absl::StrCat("--listen=127.0.0.1:", grpc_port),
                    absl::StrCat("--http_listen=127.0.0.1:", http_port_)});

  // The same command follows the same assessments to their ends.
  absl::StatusOr<std::unique_ptr<Process>> second = StartRunner(file, run_id);
  ASSERT_OK(second);
  absl::StatusOr<testing_util::ProcessResult> ended = (*second)->Wait(absl::Seconds(120));
  ASSERT_TRUE(ended.ok()) << ended.status() << AgentLogs();
  ASSERT_EQ(ended->exit_code, 0) << ended->out << ended->err << AgentLogs();
  EXPECT_THAT(ended->out, ::testing::HasSubstr("following assessment"));

  pb::Struct result;
  const std::string json = testing_util::ReadWholeFile(Output());
  ASSERT_TRUE(pb::util::JsonStringToMessage(json, &result).ok()) << json;
  EXPECT_EQ(result.fields().at("state").string_value(), "completed");
  const pb::ListValue& assessments = result.fields().at("assessments").list_value();
  ASSERT_EQ(assessments.values_size(), 8) << json;
  std::vector<std::string> parts;
  for (const pb::Value& value : assessments.values()) {
    const auto& a = value.struct_value().fields();
    const std::string context = a.at("context_id").string_value();
    parts.push_back(absl::StrCat(a.at("shard").number_value(), "/", a.at("repeat").number_value()));
    EXPECT_EQ(a.at("state").string_value(), "completed") << context;
    std::string artifacts;
    (void)pb::util::MessageToJsonString(a.at("artifacts"), &artifacts);
    EXPECT_THAT(artifacts, ::testing::HasSubstr("\"score\":1")) << context;
    EXPECT_EQ(a.at("score").number_value(), 1) << context;
    // Exactly once: one assessment task at the green agent in the assessment's context, and one
    // task at the purple agent. (The green agent reaches the participant at the coordinator's
    // URL of it, registered as an agent of its own, so each message to purple passes the
    // gateway twice; a delivery of the outer hop sent again after the coordinator's kill is the
    // same message, which the inner hop answers with the task it made: A2ATasks::AcceptMessage.)
    EXPECT_EQ(TasksIn(run_id + ".green_agent", context).size(), 1u) << context;
    EXPECT_EQ(TasksIn(run_id + ".purple", context).size(), 1u) << context;
  }
  EXPECT_EQ(absl::StrJoin(parts, " "), "0/0 0/1 1/0 1/1 2/0 2/1 3/0 3/1");

  // The console's leaderboard by scenario run: the run, its participant, its 8 assessments
  // completed and scored, and each assessment's exchange.
  httplib::Client console("127.0.0.1", http_port_);
  httplib::Result board = console.Get("/console/api/scenarios");
  ASSERT_TRUE(board);
  ASSERT_EQ(board->status, 200) << board->body;
  EXPECT_THAT(board->body,
              ::testing::HasSubstr(
                  R"({"runId":"rca","greenAgent":"rca.green_agent","participants":["rca.purple"],)"
                  R"("assessments":8,"states":{"completed":8},"scored":8,"mean":1.0000,)"));
  httplib::Result run = console.Get("/console/api/scenarios/rca");
  ASSERT_TRUE(run);
  ASSERT_EQ(run->status, 200) << run->body;
  for (int shard = 0; shard < 4; ++shard) {
    for (int repeat = 0; repeat < 2; ++repeat) {
      const std::string context = absl::StrCat("scenario-rca-s", shard, "-r", repeat);
      EXPECT_THAT(run->body, ::testing::HasSubstr(absl::StrCat(R"("contextId":")", context, "\"")));
      httplib::Result exchange = console.Get(absl::StrCat("/console/api/evaluations/", context));
      ASSERT_TRUE(exchange);
      ASSERT_EQ(exchange->status, 200) << context << ": " << exchange->body;
      EXPECT_THAT(exchange->body, ::testing::HasSubstr("\"artifactUpdate\"")) << context;
    }
  }
}

}  // namespace
