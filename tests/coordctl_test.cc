// coordctl as scripts see it: the real binary against a real coordinator. Exit codes (0 ok,
// 1 not found, 2 usage, 3 other errors), one-line errors on stderr, and --json output.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "coordinator/v1/context.pb.h"
#include "coordinator/v1/conversation.pb.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::testing_util::BinaryPath;
using ::testing_util::CoordinatorProcess;
using ::testing_util::ProcessResult;
using ::testing_util::RunProcess;
using ::testing_util::TempDir;

// Lines of `text` without the final empty one.
std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

// Parses coordctl --json output (one line) as `message`; fails the test when it is not JSON of
// that message.
template <typename Message>
Message ParseJson(const std::string& out) {
  Message message;
  const auto status = google::protobuf::util::JsonStringToMessage(out, &message);
  EXPECT_TRUE(status.ok()) << status.ToString() << "\n" << out;
  return message;
}

class CoordctlTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    absl::StatusOr<std::unique_ptr<CoordinatorProcess>> coordinator =
        CoordinatorProcess::Start(dir_->Sub("data"));
    ASSERT_OK(coordinator);
    coordinator_ = coordinator->release();
  }
  static void TearDownTestSuite() {
    delete coordinator_;
    coordinator_ = nullptr;
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(coordinator_, nullptr); }

  // Runs coordctl against the suite's coordinator.
  ProcessResult Run(const std::vector<std::string>& args, const std::string& stdin_data = "") {
    absl::StatusOr<ProcessResult> r =
        testing_util::RunCoordctl(coordinator_->target(), args, stdin_data);
    EXPECT_OK(r);
    return r.ok() ? *r : ProcessResult();
  }

  // Test-unique context id (every test of the suite shares one coordinator).
  std::string Id(const std::string& suffix = "") const {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    return absl::StrCat(info->name(), suffix);
  }

  static TempDir* dir_;
  static CoordinatorProcess* coordinator_;
};

TempDir* CoordctlTest::dir_ = nullptr;
CoordinatorProcess* CoordctlTest::coordinator_ = nullptr;

TEST_F(CoordctlTest, NotFoundExitsOneWithAMessageOnStderr) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"context", "get", Id()},
        std::vector<std::string>{"context", "rm", Id()},
        std::vector<std::string>{"convo", "show", Id()},
        std::vector<std::string>{"context", "command", Id(), "--exit-code", "0", "--", "ls"}}) {
    ProcessResult r = Run(args);
    EXPECT_EQ(r.exit_code, 1) << r.Describe();
    EXPECT_THAT(r.err, StartsWith("coordctl: not found"));
    EXPECT_EQ(Lines(r.err).size(), 1u) << r.err;
    EXPECT_EQ(r.out, "");
  }
}

TEST_F(CoordctlTest, UsageErrorsExitTwo) {
  const std::string id = Id();
  // No command at all: the usage text, on stderr.
  ProcessResult bare = Run({});
  EXPECT_EQ(bare.exit_code, 2) << bare.Describe();
  EXPECT_THAT(bare.err, StartsWith("usage: coordctl"));
  const std::vector<std::vector<std::string>> cases = {
      {"no-such-command"},
      {"context"},
      {"context", "get"},
      {"context", "get", id, "extra"},
      {"context", "get", id, "--bogus"},
      {"context", "command", id, "--exit-code", "abc", "--", "ls"},
      {"context", "command", id, "--exit-code", "99999999999", "--", "ls"},
      {"context", "command", id, "--", "ls"},
      {"context", "command", id, "--exit-code", "0"},
      {"context", "command", id, "--exit-code", "0", "--duration", "soon", "--", "ls"},
      {"context", "put", id, "--set", "no-equals-sign"},
      {"context", "put", id, "--set", "status=bogus"},
      {"context", "list", "--status", "sideways"},
      {"convo", "append", id, "--role", "robot", "hello"},
      {"convo", "append", id, "--role", "user", "--tokens", "many", "hello"},
      {"convo", "show", id, "--tail", "0"},
      {"convo", "show", id, "--tail", "x"},
  };
  for (const auto& args : cases) {
    ProcessResult r = Run(args);
    EXPECT_EQ(r.exit_code, 2) << absl::StrJoin(args, " ") << "\n" << r.Describe();
    EXPECT_THAT(r.err, StartsWith("coordctl: ")) << absl::StrJoin(args, " ");
  }
  // Bad global options too (given before the command words).
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--timeout", "abc", "health"},
        std::vector<std::string>{"--timeout", "0s", "health"},
        std::vector<std::string>{"--frobnicate", "x", "health"}}) {
    absl::StatusOr<ProcessResult> r = RunProcess(BinaryPath("coordctl"), args);
    ASSERT_OK(r);
    EXPECT_EQ(r->exit_code, 2) << r->Describe();
  }
  // Nothing was created by any of them.
  ProcessResult get = Run({"context", "get", id});
  EXPECT_EQ(get.exit_code, 1) << get.Describe();
}

TEST_F(CoordctlTest, HelpExitsZero) {
  absl::StatusOr<ProcessResult> r = RunProcess(BinaryPath("coordctl"), {"--help"});
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_THAT(r->out, HasSubstr("context put"));
  ProcessResult sub = Run({"context", "put", "--help"});
  EXPECT_EQ(sub.exit_code, 0);
  EXPECT_THAT(sub.out, HasSubstr("usage: coordctl context put"));
}

TEST_F(CoordctlTest, UnreachableServerExitsThreeWithOneLine) {
  // A port that is bound (so nobody else takes it) but not listening: connections are refused.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string target = absl::StrCat("127.0.0.1:", ntohs(addr.sin_port));

  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"context", "get", "x"}, std::vector<std::string>{"health"}}) {
    absl::StatusOr<ProcessResult> r = testing_util::RunCoordctl(target, args);
    ASSERT_OK(r);
    EXPECT_EQ(r->exit_code, 3) << r->Describe();
    EXPECT_EQ(Lines(r->err).size(), 1u) << r->err;
    EXPECT_THAT(r->err, StartsWith("coordctl: UNAVAILABLE"));
    EXPECT_EQ(r->out, "");
  }
  close(fd);
}

TEST_F(CoordctlTest, ServerSideRefusalsExitThree) {
  ProcessResult long_id = Run({"context", "put", std::string(257, 'x')});
  EXPECT_EQ(long_id.exit_code, 3) << long_id.Describe();
  EXPECT_THAT(long_id.err, StartsWith("coordctl: INVALID_ARGUMENT"));
  EXPECT_EQ(Lines(long_id.err).size(), 1u);

  ProcessResult control = Run({"context", "put", "bad\tid"});
  EXPECT_EQ(control.exit_code, 3) << control.Describe();
  EXPECT_THAT(control.err, HasSubstr("control character"));

  ProcessResult utf8 = Run({"context", "put", std::string("bad-\xff-id")});
  EXPECT_EQ(utf8.exit_code, 3) << utf8.Describe();
  EXPECT_THAT(utf8.err, HasSubstr("INVALID_ARGUMENT"));
  EXPECT_THAT(utf8.err, HasSubstr("UTF-8"));

  // None of them created anything.
  ProcessResult listed = Run({"context", "list", "--json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.Describe();
  const auto all = ParseJson<coordinator::v1::ListContextsResponse>(listed.out);
  for (const auto& c : all.contexts()) {
    EXPECT_NE(c.context_id().rfind("bad", 0), 0u) << c.context_id();
    EXPECT_NE(c.context_id(), std::string(257, 'x'));
  }
}

TEST_F(CoordctlTest, PutCreatesThenUpdatesFieldsAndLabels) {
  const std::string id = Id();
  ProcessResult created = Run({"context", "put", id, "--agent", "green", "--set",
                               "workspace_dir=/work/a", "--set", "benchmark=swe", "--json"});
  ASSERT_EQ(created.exit_code, 0) << created.Describe();
  auto context = ParseJson<coordinator::v1::TaskContext>(created.out);
  EXPECT_EQ(context.context_id(), id);
  EXPECT_EQ(context.version(), 1);
  EXPECT_EQ(context.agent(), "green");
  EXPECT_EQ(context.workspace_dir(), "/work/a");       // a known field is set as the field...
  EXPECT_EQ(context.labels().at("benchmark"), "swe");  // ...any other key is a label
  EXPECT_EQ(context.labels().count("workspace_dir"), 0u);
  EXPECT_EQ(context.status(), coordinator::v1::CONTEXT_STATUS_ACTIVE);

  // A second put updates what it names and keeps the rest.
  ProcessResult updated = Run({"context", "put", id, "--set", "status=completed", "--set",
                               "shared_dir=/shared", "--set", "score=1", "--json"});
  ASSERT_EQ(updated.exit_code, 0) << updated.Describe();
  context = ParseJson<coordinator::v1::TaskContext>(updated.out);
  EXPECT_EQ(context.version(), 2);
  EXPECT_EQ(context.status(), coordinator::v1::CONTEXT_STATUS_COMPLETED);
  EXPECT_EQ(context.shared_dir(), "/shared");
  EXPECT_EQ(context.workspace_dir(), "/work/a");
  EXPECT_EQ(context.agent(), "green");
  EXPECT_EQ(context.labels().at("benchmark"), "swe");
  EXPECT_EQ(context.labels().at("score"), "1");

  // --unset removes a label; a put that changes nothing writes nothing.
  ProcessResult unset = Run({"context", "put", id, "--unset", "benchmark", "--json"});
  ASSERT_EQ(unset.exit_code, 0) << unset.Describe();
  context = ParseJson<coordinator::v1::TaskContext>(unset.out);
  EXPECT_EQ(context.labels().count("benchmark"), 0u);
  EXPECT_EQ(context.version(), 3);
  ProcessResult noop = Run({"context", "put", id});
  ASSERT_EQ(noop.exit_code, 0) << noop.Describe();
  EXPECT_EQ(noop.out, absl::StrCat(id, " version 3\n"));

  ProcessResult shown = Run({"context", "get", id});
  ASSERT_EQ(shown.exit_code, 0) << shown.Describe();
  EXPECT_THAT(shown.out, HasSubstr("status:             completed"));
  EXPECT_THAT(shown.out, HasSubstr("label score: 1"));
}

TEST_F(CoordctlTest, CommandsAreCountedAndShown) {
  const std::string id = Id();
  ASSERT_EQ(Run({"context", "put", id}).exit_code, 0);
  ProcessResult ok = Run({"context", "command", id, "--exit-code", "0", "--duration", "1.5s",
                          "--digest", "sha256:abc", "--", "ls", "-la"});
  ASSERT_EQ(ok.exit_code, 0) << ok.Describe();
  EXPECT_EQ(ok.out, "command 1 recorded (0 failed)\n");
  ProcessResult failed = Run({"context", "command", id, "--exit-code=2", "--", "make", "test"});
  ASSERT_EQ(failed.exit_code, 0) << failed.Describe();
  EXPECT_EQ(failed.out, "command 2 recorded (1 failed)\n");

  ProcessResult got = Run({"context", "get", id, "--json"});
  ASSERT_EQ(got.exit_code, 0) << got.Describe();
  EXPECT_THAT(got.out, HasSubstr("\"commandCount\":\"2\""));
  EXPECT_THAT(got.out, HasSubstr("\"failedCommands\":\"1\""));
  ParseJson<coordinator::v1::TaskContext>(got.out);
}

TEST_F(CoordctlTest, ListJsonParses) {
  const std::string id = Id();
  ASSERT_EQ(Run({"context", "put", id, "--agent", "lister"}).exit_code, 0);
  ProcessResult listed = Run({"context", "list", "--agent", "lister", "--json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.Describe();
  auto response = ParseJson<coordinator::v1::ListContextsResponse>(listed.out);
  ASSERT_EQ(response.contexts_size(), 1);
  EXPECT_EQ(response.contexts(0).context_id(), id);
  EXPECT_THAT(listed.out, HasSubstr("\"contexts\""));

  ProcessResult table = Run({"context", "list", "--agent", "lister", "--status", "active"});
  ASSERT_EQ(table.exit_code, 0) << table.Describe();
  ASSERT_EQ(Lines(table.out).size(), 1u) << table.out;
  EXPECT_THAT(table.out, StartsWith(absl::StrCat(id, "\tlister\tactive\tcommands=0")));
}

TEST_F(CoordctlTest, ConvoAppendAndShowTail) {
  const std::string id = Id();
  for (int i = 1; i <= 5; ++i) {
    ProcessResult r = Run({"convo", "append", id, "--role", i % 2 ? "user" : "agent", "--tokens",
                           absl::StrCat(i * 10), "message", absl::StrCat(i)});
    ASSERT_EQ(r.exit_code, 0) << r.Describe();
  }
  ProcessResult from_stdin =
      Run({"convo", "append", id, "--role", "system", "-"}, "text\nfrom stdin");
  ASSERT_EQ(from_stdin.exit_code, 0) << from_stdin.Describe();
  EXPECT_EQ(from_stdin.out, "message 6, 2 agent steps, 150 tokens in all\n");

  ProcessResult tail = Run({"convo", "show", id, "--tail", "2"});
  ASSERT_EQ(tail.exit_code, 0) << tail.Describe();
  EXPECT_EQ(tail.out,
            "#5 user (50 tokens): message 5\n"
            "#6 system (0 tokens): text\nfrom stdin\n"
            "-- 6 messages, 2 agent steps, 150 tokens\n");

  ProcessResult all = Run({"convo", "show", id, "--json"});
  ASSERT_EQ(all.exit_code, 0) << all.Describe();
  auto conversation = ParseJson<coordinator::v1::GetConversationResponse>(all.out);
  ASSERT_EQ(conversation.messages_size(), 6);
  EXPECT_EQ(conversation.message_count(), 6);
  EXPECT_EQ(conversation.step_count(), 2);
  EXPECT_EQ(conversation.total_tokens(), 150);
  EXPECT_EQ(conversation.messages(0).role(), coordinator::v1::ROLE_USER);
  EXPECT_THAT(all.out, HasSubstr("\"stepCount\""));
  EXPECT_THAT(all.out, HasSubstr("\"messages\""));
}

TEST_F(CoordctlTest, RmDeletesTheContextWithItsCommandsAndConversation) {
  const std::string id = Id();
  ASSERT_EQ(Run({"context", "put", id}).exit_code, 0);
  ASSERT_EQ(Run({"context", "command", id, "--exit-code", "0", "--", "ls"}).exit_code, 0);
  ASSERT_EQ(Run({"convo", "append", id, "--role", "user", "hi"}).exit_code, 0);
  ProcessResult rm = Run({"context", "rm", id});
  ASSERT_EQ(rm.exit_code, 0) << rm.Describe();
  EXPECT_EQ(rm.out, absl::StrCat("deleted ", id, "\n"));
  EXPECT_EQ(Run({"context", "get", id}).exit_code, 1);
  EXPECT_EQ(Run({"convo", "show", id}).exit_code, 1);
}

TEST_F(CoordctlTest, HealthSaysServing) {
  ProcessResult r = Run({"health"});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, "SERVING\n");
  ProcessResult service = Run({"health", "--service", "coordinator.v1.ContextService"});
  EXPECT_EQ(service.exit_code, 0) << service.Describe();
  ProcessResult unknown = Run({"health", "--service", "no.such.Service"});
  EXPECT_EQ(unknown.exit_code, 1) << unknown.Describe();
}

// A scenario file that cannot run is refused before anything starts: no agent's cmd runs, no
// agent is registered, no assessment is sent.
TEST_F(CoordctlTest, ScenarioFilesThatCannotRunStartNothing) {
  const std::string marker = dir_->Sub("scenario-started");
  auto write = [&](const std::string& name, const std::string& text) {
    const std::string path = dir_->Sub(name);
    std::ofstream(path) << text;
    return path;
  };
  // The participant's cmd would leave a marker; its endpoint has no port.
  const std::string good_green = "[green_agent]\nendpoint = \"http://127.0.0.1:1\"\n";
  const std::string touch = absl::StrCat("cmd = \"touch ", marker, "\"\n");
  const std::string bad = write(
      "bad.toml",
      absl::StrCat(good_green, "[[participants]]\nrole = \"p\"\nendpoint = \"http://h\"\n", touch));
  const std::string good =
      write("good.toml", absl::StrCat(good_green, "[[participants]]\nrole = \"p\"\n",
                                      "endpoint = \"http://127.0.0.1:2\"\n"));
  const std::string huge = write("huge.toml", std::string(1100000, '#'));
  const std::string gateway = "--gateway=http://127.0.0.1:1";
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"scenario", "run", dir_->Sub("missing.toml"), gateway}, 3, "cannot read"},
      {{"scenario", "run", bad, gateway}, 3, "bad.toml: line 3: participant \"p\": endpoint"},
      {{"scenario", "run", huge, gateway}, 3, "at most 1048576"},
      {{"scenario", "run", good, gateway, "--run-id=a/b"}, 2, "--run-id"},
      {{"scenario", "run", good, "--gateway=ftp://h:1"}, 2, "--gateway"},
      {{"scenario", "run", good, gateway, "--start-timeout=soon"}, 2, "start-timeout"},
      {{"scenario", "run", good, gateway, "--for=-1s"}, 2, "for"},
      {{"scenario", "run", good, gateway, "--shards=2"}, 2, "--shards needs --shard-key"},
      {{"scenario", "run", good, gateway, "--shards=0", "--shard-key=k"}, 2, "1 to 1000"},
      {{"scenario", "run", good, gateway, "--repeat=x"}, 2, "repeat"},
      {{"scenario", "run", good, gateway, "--shards=2", "--shard-key=k"},
       2,
       "no list by that name"},
      {{"scenario", "show", "no-such-run"}, 1, "no assessment of run no-such-run"},
      {{"scenario", "cancel", "a/b"}, 3, "not a run id"},
  };
  for (const Case& c : cases) {
    ProcessResult r = Run(c.args);
    EXPECT_EQ(r.exit_code, c.exit_code) << absl::StrJoin(c.args, " ") << "\n" << r.Describe();
    EXPECT_THAT(r.err, HasSubstr(c.message)) << absl::StrJoin(c.args, " ");
  }
  EXPECT_FALSE(std::filesystem::exists(marker));

  // A valid file whose agents never come up: the one that did not is named, nothing is sent.
  const std::string logs = dir_->Sub("scenario-logs");
  ProcessResult down = Run({"scenario", "run", good, gateway, "--run-id=down", "--logs=" + logs,
                            "--start-timeout=300ms"});
  EXPECT_EQ(down.exit_code, 3) << down.Describe();
  EXPECT_THAT(down.err, HasSubstr("agent green_agent did not serve its card at "
                                  "http://127.0.0.1:1/.well-known/agent-card.json"));
  EXPECT_EQ(Run({"scenario", "show", "down"}).exit_code, 1);
}

}  // namespace
