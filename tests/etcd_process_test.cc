// The coordinator binary on the etcd backend (--store=etcd://...): several replicas serving one
// data set, a replica killed while the others go on, one replica elected to deliver A2A
// messages, the start-up refusals of bad store flags, and TLS to a cluster of the test's own.
// Runs as etcd.EtcdProcessTest.* on ctest's etcd fixture (tests/etcd_cluster.sh).
#include <algorithm>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "a2a/v1/a2a.grpc.pb.h"
#include "a2a_protocol/version.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "storage/testing/test_store.h"
#include "tests/fake_http_agent.h"
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

  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> StartReplica(
      const std::string& name, const std::vector<std::string>& more = {}) {
    std::vector<std::string> flags = StoreFlags();
    flags.insert(flags.end(), more.begin(), more.end());
    return CoordinatorProcess::Start(dir_.Sub(name), flags);
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

namespace a2apb = ::lf::a2a::v1;

constexpr char kLeads[] = "this replica now runs the background jobs";

using ::testing_util::kProcessWait;
using testing_util::WaitFor;

std::unique_ptr<grpc::ClientContext> A2AContext() {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(kProcessWait));
  a2a_protocol::AddVersion(context.get());
  return context;
}

// Sends `text` to agent "rpc" through `stub` without waiting for the answer: the task's id.
std::string SendTo(a2apb::A2AService::Stub& stub, const std::string& text) {
  a2apb::SendMessageRequest request;
  request.set_tenant("rpc");
  static int sent = 0;  // each send its own message (the same id again would be a repeat)
  request.mutable_message()->set_message_id(absl::StrCat("e-", text, "-", ++sent));
  request.mutable_message()->set_role(a2apb::ROLE_USER);
  request.mutable_message()->add_parts()->set_text(text);
  request.mutable_configuration()->set_return_immediately(true);
  a2apb::SendMessageResponse response;
  grpc::Status s = stub.SendMessage(A2AContext().get(), request, &response);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return response.task().id();
}

a2apb::TaskState StateOf(a2apb::A2AService::Stub& stub, const std::string& id) {
  a2apb::GetTaskRequest get;
  get.set_id(id);
  a2apb::Task task;
  return stub.GetTask(A2AContext().get(), get, &task).ok() ? task.status().state()
                                                           : a2apb::TASK_STATE_UNSPECIFIED;
}

// Two replicas, one agent: whichever replica a message is sent through, the elected one carries
// it to the agent, once. Then the leader is killed (kill -9) while the agent holds two messages
// and more are queued: the survivor takes the jobs once the dead one's lease expires
// (--election_ttl), reads the held tasks back from the agent and subscribes to them instead of
// sending them again, and delivers the queued ones; the agent gets every message exactly once.
// (A message the agent had received but not yet answered at the kill would go again, once: see
// docs/storage.md, "Several replicas". Here the agent answers WORKING at once.)
TEST_F(EtcdProcessTest, OneReplicaDeliversEachA2AMessageOnceAndTheOtherTakesOverWhenKilled) {
  testing_util::FakeHttpAgent agent(testing_util::FakeHttpAgent::Binding::kJsonRpc);
  ASSERT_GT(agent.port(), 0);
  const std::vector<std::string> flags = {"--election_ttl=2s", "--a2a_retry_initial_backoff=20ms",
                                          "--a2a_retry_max_backoff=200ms"};
  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> a = StartReplica("a", flags);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE((*a)->process().WaitForStderrLine(kLeads, kProcessWait).ok())
      << (*a)->process().stderr_text();
  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> b = StartReplica("b", flags);
  ASSERT_TRUE(b.ok()) << b.status();
  // Card fetches work on the passive replica too.
  Ok(RunCoordctl((*b)->target(), {"agent", "register", "rpc", "--card", agent.card_url()}));
  auto stub_a = a2apb::A2AService::NewStub(
      grpc::CreateChannel((*a)->target(), grpc::InsecureChannelCredentials()));
  auto stub_b = a2apb::A2AService::NewStub(
      grpc::CreateChannel((*b)->target(), grpc::InsecureChannelCredentials()));
  auto count = [&agent](const std::string& text) {
    const std::vector<std::string> texts = agent.texts();
    return std::count(texts.begin(), texts.end(), text);
  };

  // Through both replicas: each message reaches the agent once.
  std::vector<std::string> sent;
  std::vector<std::string> ids;
  for (int i = 0; i < 6; ++i) {
    sent.push_back(absl::StrCat("m", i));
    ids.push_back(SendTo(i % 2 == 0 ? *stub_a : *stub_b, sent.back()));
  }
  for (const std::string& id : ids) {
    ASSERT_TRUE(
        WaitFor([&] { return StateOf(*stub_b, id) == a2apb::TASK_STATE_COMPLETED; }, kProcessWait))
        << id;
  }
  for (const std::string& text : sent) EXPECT_EQ(count(text), 1) << text;
  EXPECT_THAT((*b)->process().stderr_text(), ::testing::Not(HasSubstr(kLeads)));

  // A blocking send through the replica that does not deliver gets the agent's answer, which
  // the leader stored (the replica feed wakes the waiting call).
  a2apb::SendMessageRequest blocking;
  blocking.set_tenant("rpc");
  blocking.mutable_message()->set_message_id("e-blocking");
  blocking.mutable_message()->set_role(a2apb::ROLE_USER);
  blocking.mutable_message()->add_parts()->set_text("blocking");
  a2apb::SendMessageResponse answer;
  grpc::Status answered = stub_b->SendMessage(A2AContext().get(), blocking, &answer);
  ASSERT_TRUE(answered.ok()) << answered.error_message();
  EXPECT_EQ(answer.task().status().state(), a2apb::TASK_STATE_COMPLETED);
  sent.push_back("blocking");

  // Two messages the agent holds (WORKING), one sent through each replica.
  const std::string held_a = SendTo(*stub_a, "hold");
  ASSERT_TRUE(
      WaitFor([&] { return StateOf(*stub_b, held_a) == a2apb::TASK_STATE_WORKING; }, kProcessWait));
  const std::string held_b = SendTo(*stub_b, "hold");
  ASSERT_TRUE(
      WaitFor([&] { return StateOf(*stub_b, held_b) == a2apb::TASK_STATE_WORKING; }, kProcessWait));
  EXPECT_EQ(count("hold"), 2);

  // The leader dies; messages sent meanwhile wait in the queue for the next leader.
  ASSERT_TRUE((*a)->Kill().ok());
  std::vector<std::string> queued;
  for (int i = 0; i < 3; ++i) {
    sent.push_back(absl::StrCat("q", i));
    queued.push_back(SendTo(*stub_b, sent.back()));
  }
  ASSERT_TRUE((*b)->process().WaitForStderrLine(kLeads, kProcessWait).ok())
      << (*b)->process().stderr_text();
  for (const std::string& id : queued) {
    ASSERT_TRUE(
        WaitFor([&] { return StateOf(*stub_b, id) == a2apb::TASK_STATE_COMPLETED; }, kProcessWait))
        << id;
  }
  // The held tasks are read back and subscribed to, not sent again; the agent finishes them.
  std::vector<std::string> subscribed;
  ASSERT_TRUE(WaitFor(
      [&] {
        subscribed.clear();
        for (const std::string& call : agent.calls()) {
          if (absl::StartsWith(call, "SubscribeToTask ")) subscribed.push_back(call.substr(16));
        }
        std::sort(subscribed.begin(), subscribed.end());
        subscribed.erase(std::unique(subscribed.begin(), subscribed.end()), subscribed.end());
        return subscribed.size() == 2;
      },
      kProcessWait))
      << absl::StrJoin(agent.calls(), "; ");
  // One subscription per held task: one replica resumed them, once.
  const std::vector<std::string> calls = agent.calls();
  EXPECT_EQ(
      std::count_if(calls.begin(), calls.end(),
                    [](const std::string& c) { return absl::StartsWith(c, "SubscribeToTask"); }),
      2)
      << absl::StrJoin(calls, "; ");
  for (const std::string& id : subscribed) agent.Complete(id);
  for (const std::string& id : {held_a, held_b}) {
    ASSERT_TRUE(
        WaitFor([&] { return StateOf(*stub_b, id) == a2apb::TASK_STATE_COMPLETED; }, kProcessWait))
        << id;
  }
  EXPECT_EQ(count("hold"), 2);
  for (const std::string& text : sent) EXPECT_EQ(count(text), 1) << text;
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
      {{"--store=" + url_, "--election_ttl=1s"}, "--election_ttl must be whole seconds"},
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

// The coordinator on a TLS cluster that requires client certificates (tests/etcd_cluster.sh's
// tls option, a member of this test's own): --store=etcds:// with --etcd_ca_file,
// --etcd_cert_file and --etcd_key_file serves; a CA that did not sign the member stops the start
// naming the certificate.
TEST_F(EtcdProcessTest, AnEtcdsStoreWithTheCaAndAClientCertificateServes) {
  const std::string script = std::string(COORD_SOURCE_DIR) + "/tests/etcd_cluster.sh";
  const std::string cluster = dir_.Sub("tls-etcd");
  absl::StatusOr<ProcessResult> started =
      RunProcess("/bin/bash", {script, "start", cluster, "1", "tls"}, absl::Seconds(120));
  ASSERT_TRUE(started.ok()) << started.status();
  if (started->exit_code == 77) GTEST_SKIP() << started->out;
  struct StopCluster {
    std::vector<std::string> args;
    ~StopCluster() { (void)RunProcess("/bin/bash", args, absl::Seconds(60)); }
  } stop{{script, "stop", cluster}};
  ASSERT_EQ(started->exit_code, 0) << started->Describe();
  std::ifstream in(cluster + "/url");
  std::string url;
  ASSERT_TRUE(std::getline(in, url) && absl::StartsWith(url, "etcds://")) << url;
  std::vector<std::string> flags = {"--store=" + url, "--etcd_prefix=" + prefix_,
                                    "--etcd_ca_file=" + cluster + "/tls/ca.pem",
                                    "--etcd_cert_file=" + cluster + "/tls/client.pem",
                                    "--etcd_key_file=" + cluster + "/tls/client.key"};
  {
    absl::StatusOr<std::unique_ptr<CoordinatorProcess>> c =
        CoordinatorProcess::Start(dir_.Sub("tls-replica"), flags);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_THAT((*c)->process().stderr_text(), HasSubstr("opened etcd store"));
    Ok(RunCoordctl((*c)->target(), {"context", "put", "eval-tls", "--agent", "green"}));
    absl::StatusOr<ProcessResult> got = RunCoordctl((*c)->target(), {"context", "get", "eval-tls"});
    Ok(got);
    EXPECT_THAT(got->out, HasSubstr("green"));
    absl::StatusOr<ProcessResult> stopped = (*c)->Stop();
    ASSERT_TRUE(stopped.ok()) << stopped.status();
    EXPECT_EQ(stopped->exit_code, 0) << stopped->Describe();
  }
  flags[2] = "--etcd_ca_file=" + cluster + "/tls/other-ca.pem";
  flags.push_back("--etcd_timeout=1s");
  std::vector<std::string> args = {"--listen=127.0.0.1:0", "--http_listen=127.0.0.1:0",
                                   "--data_dir=" + dir_.Sub("unused")};
  args.insert(args.end(), flags.begin(), flags.end());
  absl::StatusOr<ProcessResult> r = RunProcess(BinaryPath("coordinator"), args, absl::Seconds(60));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NE(r->exit_code, 0) << r->Describe();
  EXPECT_THAT(r->err, HasSubstr("TLS: the member's certificate is not signed by the CA in " +
                                cluster + "/tls/other-ca.pem"))
      << r->Describe();
}

}  // namespace
