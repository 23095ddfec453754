// The web console on the real coordinator (issue 20): the page and its static files, the JSON
// read endpoints over what coordctl wrote, clear errors for malformed and hostile requests, the
// event stream (a change made after subscribing arrives; ?after= replays), and the token check.
// The browser test (tests/console/) drives the page itself.
#include <sys/stat.h>

#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "tests/auth_test_util.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing_util::CoordinatorProcess;
using ::testing_util::kAdmin;
using ::testing_util::kGreen;
using ::testing_util::kReader;
using ::testing_util::ProcessResult;
using ::testing_util::RunCoordctl;
using ::testing_util::TempDir;
using ::testing_util::WritePrivateFile;

constexpr char kGraph[] = R"json({
  "feature": "widget-maker",
  "tasks": [
    {"id": "WM-001", "title": "Schema", "description": "Define the schema", "level": 1,
     "dependencies": []},
    {"id": "WM-002", "title": "API", "description": "Serve it", "level": 2,
     "dependencies": ["WM-001"]}
  ]
})json";

// Runs coordctl and expects exit 0; its stdout.
std::string Coordctl(const std::string& target, const std::vector<std::string>& args) {
  absl::StatusOr<ProcessResult> r = RunCoordctl(target, args);
  EXPECT_OK(r.status());
  if (!r.ok()) return "";
  EXPECT_EQ(r->exit_code, 0) << r->Describe();
  return r->out;
}

class ConsoleProcessTest : public ::testing::Test {
 protected:
  void Start(const std::vector<std::string>& extra_args = {}) {
    absl::StatusOr<std::unique_ptr<CoordinatorProcess>> started =
        CoordinatorProcess::Start(dir_.Sub("data"), extra_args);
    ASSERT_OK(started);
    coordinator_ = *std::move(started);
    absl::StatusOr<int> port = coordinator_->HttpPort();
    ASSERT_OK(port);
    http_port_ = *port;
  }

  httplib::Result Get(const std::string& path, const httplib::Headers& headers = {}) {
    httplib::Client http("127.0.0.1", http_port_);
    http.set_read_timeout(60, 0);
    return http.Get(path, headers);
  }

  // A finished and scored evaluation, a running one, a run with one item held, a retry task
  // with two failures that the breaker blocked.
  void Seed() {
    const std::string t = coordinator_->target();
    Coordctl(t,
             {"context", "put", "eval-done", "--agent", "green", "--set",
              "external_task_id=django-1234", "--set", "status=completed", "--set",
              "purple_agent=purple-a", "--set", R"(score={"task_id":"django-1234","score":0.75})"});
    Coordctl(t, {"context", "command", "eval-done", "--exit-code", "0", "--duration", "1.5s", "--",
                 "ls", "-la"});
    Coordctl(t, {"context", "command", "eval-done", "--exit-code", "2", "--", "grep", "-r", "x"});
    Coordctl(t, {"convo", "append", "eval-done", "--role", "agent", "--tokens", "42",
                 "execute: ls -la"});
    Coordctl(t, {"context", "put", "eval-run", "--agent", "green", "--set",
                 "external_task_id=flask-7", "--set", "purple_agent=purple-b"});
    WritePrivateFile(dir_.Sub("graph.json"), kGraph);
    Coordctl(t, {"run", "import", dir_.Sub("graph.json"), "--run-id", "run-1"});
    Coordctl(t, {"run", "claim", "run-1", "--worker", "w1", "--ttl", "1h"});
    const std::string task =
        std::string(absl::StripAsciiWhitespace(Coordctl(t, {"task", "init", "Fix the login"})));
    task_id_ = task.substr(task.rfind(' ') + 1);
    Coordctl(t, {"task", "fail", task_id_, "ImportError: no module named x"});
    Coordctl(t, {"task", "fail", task_id_, "ImportError: no module named x"});
    Coordctl(t, {"breaker", "break", task_id_, "the same import error twice"});
  }

  TempDir dir_;
  std::unique_ptr<CoordinatorProcess> coordinator_;
  int http_port_ = 0;
  std::string task_id_;
};

TEST_F(ConsoleProcessTest, ServesThePageAndItsFilesFromTheBinary) {
  Start();
  httplib::Result page = Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_THAT(page->get_header_value("Content-Type"), HasSubstr("text/html"));
  EXPECT_THAT(page->body, HasSubstr("/console/static/console.js"));
  for (const char* file : {"console.js", "console.css"}) {
    httplib::Result res = Get(absl::StrCat("/console/static/", file));
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200) << file;
    EXPECT_GT(res->body.size(), 100u) << file;
  }
  // Only the compiled-in names exist: no file system behind them.
  for (const char* path :
       {"/console/static/nope.js", "/console/static/../../../../etc/passwd",
        "/console/static/%2e%2e%2f%2e%2e%2fetc%2fpasswd", "/console/static/..%2fconsole.h"}) {
    httplib::Result res = Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_NE(res->status, 200) << path;
    EXPECT_THAT(res->body, Not(HasSubstr("root:"))) << path;
  }
}

TEST_F(ConsoleProcessTest, JsonEndpointsShowWhatWasStored) {
  Start();
  Seed();
  httplib::Result list = Get("/console/api/evaluations");
  ASSERT_TRUE(list);
  ASSERT_EQ(list->status, 200) << list->body;
  EXPECT_THAT(list->get_header_value("Content-Type"), HasSubstr("application/json"));
  EXPECT_THAT(list->body, HasSubstr(R"("contextId":"eval-done")"));
  EXPECT_THAT(list->body, HasSubstr(R"("contextId":"eval-run")"));
  EXPECT_THAT(list->body, HasSubstr(R"("score":0.7500)"));
  EXPECT_THAT(list->body, HasSubstr(R"("totalTokens":"42")"));
  // Newest first: eval-run was created after eval-done.
  EXPECT_LT(list->body.find(R"("contextId":"eval-run")"),
            list->body.find(R"("contextId":"eval-done")"));
  EXPECT_THAT(list->body, HasSubstr(R"("next":"")"));
  // A page at a time: the newest, then from the token on.
  httplib::Result newest = Get("/console/api/evaluations?limit=1");
  ASSERT_TRUE(newest);
  ASSERT_EQ(newest->status, 200) << newest->body;
  EXPECT_THAT(newest->body, HasSubstr("eval-run"));
  EXPECT_THAT(newest->body, Not(HasSubstr("eval-done")));
  const size_t at = newest->body.find(R"("next":")");
  ASSERT_NE(at, std::string::npos);
  std::string token = newest->body.substr(at + 8, newest->body.find('"', at + 8) - at - 8);
  ASSERT_FALSE(token.empty());
  absl::StrReplaceAll({{"=", "%3D"}}, &token);
  httplib::Result older = Get("/console/api/evaluations?limit=1&page=" + token);
  ASSERT_TRUE(older);
  ASSERT_EQ(older->status, 200) << older->body;
  EXPECT_THAT(older->body, HasSubstr("eval-done"));
  EXPECT_THAT(older->body, Not(HasSubstr("eval-run")));

  httplib::Result filtered = Get("/console/api/evaluations?status=active&agent=green");
  ASSERT_TRUE(filtered);
  ASSERT_EQ(filtered->status, 200) << filtered->body;
  EXPECT_THAT(filtered->body, HasSubstr("eval-run"));
  EXPECT_THAT(filtered->body, Not(HasSubstr("eval-done")));

  httplib::Result purple = Get("/console/api/evaluations?purple=purple-a");
  ASSERT_TRUE(purple);
  ASSERT_EQ(purple->status, 200) << purple->body;
  EXPECT_THAT(purple->body, HasSubstr("eval-done"));
  EXPECT_THAT(purple->body, Not(HasSubstr("eval-run")));

  httplib::Result one = Get("/console/api/evaluations/eval-done");
  ASSERT_TRUE(one);
  ASSERT_EQ(one->status, 200) << one->body;
  EXPECT_THAT(one->body, HasSubstr(R"("command":"ls -la")"));
  EXPECT_THAT(one->body, HasSubstr(R"("exitCode":2)"));
  EXPECT_THAT(one->body, HasSubstr(R"("text":"execute: ls -la")"));

  httplib::Result board = Get("/console/api/leaderboard");
  ASSERT_TRUE(board);
  ASSERT_EQ(board->status, 200) << board->body;
  EXPECT_THAT(board->body, HasSubstr(R"({"key":"purple-a","mean":0.7500,"count":1})"));
  EXPECT_THAT(board->body, HasSubstr(R"({"key":"django-1234","mean":0.7500,"count":1})"));

  httplib::Result runs = Get("/console/api/runs");
  ASSERT_TRUE(runs);
  EXPECT_THAT(runs->body, HasSubstr(R"("runId":"run-1")"));
  httplib::Result run = Get("/console/api/runs/run-1");
  ASSERT_TRUE(run);
  ASSERT_EQ(run->status, 200) << run->body;
  EXPECT_THAT(run->body, HasSubstr(R"("workerId":"w1")"));
  EXPECT_THAT(run->body, HasSubstr(R"("itemId":"WM-002")"));

  httplib::Result retry = Get("/console/api/retry");
  ASSERT_TRUE(retry);
  ASSERT_EQ(retry->status, 200) << retry->body;
  EXPECT_THAT(retry->body, HasSubstr(absl::StrCat(R"("taskId":")", task_id_, "\"")));
  EXPECT_THAT(retry->body, HasSubstr("ImportError: no module named x"));
  EXPECT_THAT(retry->body, HasSubstr(R"("ladder":["codex-mini")"));
  EXPECT_THAT(retry->body, HasSubstr("the same import error twice"));
  // The breaker's analysis of each task, read without writing its log.
  EXPECT_THAT(retry->body, HasSubstr(R"("patternType":"repeated_error")"));

  httplib::Result overview = Get("/console/api/overview");
  ASSERT_TRUE(overview);
  ASSERT_EQ(overview->status, 200) << overview->body;
  EXPECT_THAT(overview->body, HasSubstr(R"("evaluations":{"active":1,"ended":1)"));
  EXPECT_THAT(overview->body, HasSubstr(R"("runs":{"active":1,"ended":0)"));
}

TEST_F(ConsoleProcessTest, MalformedAndHostileRequestsGetClearErrors) {
  Start();
  struct Case {
    std::string path;
    int status;
    std::string message;
  };
  const std::string long_id(300, 'x');
  const std::vector<Case> cases = {
      {"/console/api/evaluations?bogus=1", 400, "unknown query parameter"},
      {"/console/api/evaluations?status=sideways", 400, "status must be one of"},
      {"/console/api/evaluations?limit=0", 400, "limit must be a whole number from 1 to 1000"},
      {"/console/api/evaluations?limit=abc", 400, "limit must be a whole number"},
      {"/console/api/evaluations?limit=99999999999999999999", 400, "limit must be"},
      {"/console/api/evaluations?limit=1&limit=2", 400, "given twice"},
      {"/console/api/evaluations?agent=a%00b", 400, "agent"},
      {"/console/api/evaluations?page=not-a-token", 400, "page"},
      {"/console/api/runs?page=not-a-token", 400, "page"},
      {"/console/api/retry?page=not-a-token", 400, "page"},
      {"/console/api/runs?limit=-5", 400, "limit must be"},
      {"/console/api/overview?x=1", 400, "takes none"},
      {"/console/api/evaluations/" + long_id, 400, "evaluation id"},
      {"/console/api/evaluations/nope", 404, "not found"},
      {"/console/api/evaluations/..%2f..%2fetc%2fpasswd", 404, "not found"},
      {"/console/api/runs/nope", 404, "not found"},
      {"/console/api/scenarios?page=a%2fb", 400, "page must be a scenario run id"},
      {"/console/api/scenarios?limit=0", 400, "limit must be"},
      {"/console/api/scenarios?run=x", 400, "unknown query parameter"},
      {"/console/api/scenarios/" + long_id, 400, "scenario run id is 1 to 64"},
      {"/console/api/scenarios/a%20b", 400, "scenario run id"},
      {"/console/api/scenarios/nope", 404, "no scenario run nope"},
      {"/console/api/scenarios/nope?x=1", 400, "takes none"},
      {"/console/api/nothing-here", 404, "no such console endpoint"},
      {"/console/api/events?after=-1", 400, "after must be"},
      {"/console/api/events?after=x", 400, "after must be"},
  };
  for (const Case& c : cases) {
    httplib::Result res = Get(c.path);
    ASSERT_TRUE(res) << c.path;
    EXPECT_EQ(res->status, c.status) << c.path << ": " << res->body;
    EXPECT_THAT(res->body, HasSubstr(R"({"error":{"code":)")) << c.path;
    EXPECT_THAT(res->body, HasSubstr(c.message)) << c.path;
  }
  // Writes are refused: the console only reads.
  httplib::Client http("127.0.0.1", http_port_);
  httplib::Result post = http.Post("/console/api/evaluations", "{}", "application/json");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405) << post->body;
  EXPECT_THAT(post->body, HasSubstr("read-only"));
  httplib::Result del = http.Delete("/console/api/runs/run-1");
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 405) << del->body;
  // An oversized request line is refused before any handler runs, and the server stays up.
  httplib::Result huge = Get("/console/api/evaluations?agent=" + std::string(20000, 'a'));
  ASSERT_TRUE(huge);
  EXPECT_GE(huge->status, 400);
  httplib::Result after = Get("/console/api/overview");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
}

// Reads the event stream `path` until `done` says the text so far is enough (then the reader
// hangs up). `subscribed` is notified once the first event (hello) has arrived.
std::string ReadEvents(int port, const std::string& path, absl::Notification* subscribed,
                       const std::function<bool(const std::string&)>& done) {
  httplib::Client http("127.0.0.1", port);
  http.set_read_timeout(120, 0);
  std::string text;
  http.Get(path, [&](const char* data, size_t length) {
    text.append(data, length);
    if (subscribed != nullptr && !subscribed->HasBeenNotified() &&
        absl::StrContains(text, "event: hello")) {
      subscribed->Notify();
    }
    return !done(text);
  });
  if (subscribed != nullptr && !subscribed->HasBeenNotified()) subscribed->Notify();
  return text;
}

TEST_F(ConsoleProcessTest, EventStreamAnnouncesChangesMadeAfterSubscribing) {
  Start();
  Coordctl(coordinator_->target(), {"context", "put", "watched", "--agent", "green"});
  WritePrivateFile(dir_.Sub("graph.json"), kGraph);
  Coordctl(coordinator_->target(), {"run", "import", dir_.Sub("graph.json"), "--run-id", "run-2"});
  absl::Notification subscribed;
  std::string text;
  std::thread reader([&] {
    text = ReadEvents(http_port_, "/console/api/events", &subscribed, [](const std::string& t) {
      return absl::StrContains(t, R"("kind":"conversation","id":"watched")") &&
             absl::StrContains(t, R"("kind":"run","id":"run-2")");
    });
  });
  subscribed.WaitForNotification();
  Coordctl(coordinator_->target(), {"convo", "append", "watched", "--role", "user", "hello there"});
  Coordctl(coordinator_->target(), {"run", "claim", "run-2", "--worker", "w1", "--ttl", "1h"});
  reader.join();
  EXPECT_THAT(text, HasSubstr("event: hello"));
  EXPECT_THAT(text, HasSubstr(R"(event: change)"));
  EXPECT_THAT(text, HasSubstr(R"("kind":"conversation","id":"watched")"));
  EXPECT_THAT(text, HasSubstr(R"("kind":"run","id":"run-2")"));
  // The context's creation came before the subscription: not announced again.
  EXPECT_THAT(text, Not(HasSubstr(R"("kind":"context","id":"watched")")));
}

// A run created, a retry task's failure and a breaker block, each after subscribing, come over
// the same stream: the run from the work notifier's events of its new items, the retry task
// from the retry and breaker stores' change hooks.
TEST_F(ConsoleProcessTest, EventStreamAnnouncesNewRunsAndRetryChanges) {
  Start();
  const std::string task = std::string(absl::StripAsciiWhitespace(
      Coordctl(coordinator_->target(), {"task", "init", "Fix the login"})));
  WritePrivateFile(dir_.Sub("graph.json"), kGraph);
  absl::Notification subscribed;
  std::string text;
  const std::string retry = absl::StrCat(R"("kind":"retry","id":")", task, "\"");
  std::thread reader([&] {
    text = ReadEvents(http_port_, "/console/api/events", &subscribed, [&](const std::string& t) {
      // Made last, so the others came before it.
      return absl::StrContains(t, R"("kind":"run","id":"run-new")");
    });
  });
  subscribed.WaitForNotification();
  Coordctl(coordinator_->target(), {"task", "fail", task, "ImportError: no module named x"});
  Coordctl(coordinator_->target(), {"breaker", "break", task, "stuck"});
  Coordctl(coordinator_->target(),
           {"run", "import", dir_.Sub("graph.json"), "--run-id", "run-new"});
  reader.join();
  EXPECT_THAT(text, HasSubstr(R"("kind":"run","id":"run-new")"));
  EXPECT_THAT(text, HasSubstr(retry));
}

// The JSON of agent `name` in an overview body ("" when absent).
std::string AgentRow(const std::string& body, const std::string& name) {
  const size_t start = body.find(absl::StrCat(R"({"agent":{"name":")", name, "\""));
  if (start == std::string::npos) return "";
  const size_t end = body.find(R"("probing")", start);
  return body.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// Reachability is observed, not guessed: the overview asks the gateway to probe the agents it
// has no recent word of; the echo agent answers, nothing answers at the ghost's address, and
// the next overview says so, with the error and when each was last seen.
TEST_F(ConsoleProcessTest, OverviewShowsWhichAgentsTheGatewayReached) {
  Start();
  absl::StatusOr<std::unique_ptr<testing_util::Process>> echo =
      testing_util::Process::Start(testing_util::BinaryPath("echo_agent"),
                                   {"--coordinator=" + coordinator_->target(), "--name=echo"});
  ASSERT_OK(echo);
  ASSERT_OK((*echo)->WaitForStderrLine("registered", absl::Seconds(60)));
  Coordctl(coordinator_->target(), {"agent", "register", "ghost", "127.0.0.1:1"});

  absl::Notification subscribed;
  std::thread reader([&] {
    ReadEvents(http_port_, "/console/api/events", &subscribed, [](const std::string& t) {
      return absl::StrContains(t, R"("kind":"agent","id":"echo")") &&
             absl::StrContains(t, R"("kind":"agent","id":"ghost")");
    });
  });
  subscribed.WaitForNotification();
  httplib::Result first = Get("/console/api/overview");
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 200) << first->body;
  // Nothing was sent to either agent yet: unknown, and a probe is under way.
  EXPECT_THAT(AgentRow(first->body, "ghost"), HasSubstr(R"("reachable":null)"));
  reader.join();  // both probes ended

  httplib::Result overview = Get("/console/api/overview");
  ASSERT_TRUE(overview);
  ASSERT_EQ(overview->status, 200) << overview->body;
  const std::string echo_row = AgentRow(overview->body, "echo");
  EXPECT_THAT(echo_row, HasSubstr(R"("reachable":true)"));
  EXPECT_THAT(echo_row, HasSubstr(R"("lastCallVia":"probe")"));
  EXPECT_THAT(echo_row, Not(HasSubstr(R"("lastSeen":null)")));
  const std::string ghost_row = AgentRow(overview->body, "ghost");
  EXPECT_THAT(ghost_row, HasSubstr(R"("reachable":false)"));
  EXPECT_THAT(ghost_row, HasSubstr(R"("lastSeen":null)"));
  EXPECT_THAT(ghost_row, Not(HasSubstr(R"("lastError":"")")));

  // A delivery is evidence too: a message through the gateway reaches echo.
  Coordctl(coordinator_->target(), {"send", "echo", "hello", "--wait", "--for", "30s"});
  overview = Get("/console/api/overview");
  ASSERT_TRUE(overview);
  EXPECT_THAT(AgentRow(overview->body, "echo"), HasSubstr(R"("lastCallVia":"delivery")"));
  EXPECT_THAT(AgentRow(overview->body, "echo"), HasSubstr(R"("queuedDeliveries":0)"));
  // A message for the ghost stays queued (its deliveries fail and are retried): counted.
  Coordctl(coordinator_->target(), {"send", "ghost", "anyone there?"});
  overview = Get("/console/api/overview");
  ASSERT_TRUE(overview);
  EXPECT_THAT(AgentRow(overview->body, "ghost"), HasSubstr(R"("queuedDeliveries":1)"));
}

// SIGTERM with an event stream open: the stream ends and the coordinator exits cleanly (the
// stream does not hold the HTTP port's threads).
TEST_F(ConsoleProcessTest, AnOpenEventStreamEndsWhenTheCoordinatorStops) {
  Start();
  absl::Notification subscribed;
  std::string text;
  std::thread reader([&] {
    text = ReadEvents(http_port_, "/console/api/events", &subscribed,
                      [](const std::string&) { return false; });
  });
  subscribed.WaitForNotification();
  absl::StatusOr<ProcessResult> stopped = coordinator_->Stop();
  reader.join();
  ASSERT_OK(stopped.status());
  EXPECT_EQ(stopped->exit_code, 0) << stopped->Describe();
  EXPECT_THAT(text, HasSubstr("event: hello"));
}

// ?after= replays what came after a change. Consecutive changes of one record are kept as one,
// the newest (a reader reads the record again anyway).
TEST_F(ConsoleProcessTest, EventStreamReplaysFromACursor) {
  Start();
  Coordctl(coordinator_->target(), {"context", "put", "first", "--agent", "green"});
  Coordctl(coordinator_->target(), {"context", "put", "second", "--agent", "green"});
  Coordctl(coordinator_->target(),
           {"context", "command", "second", "--exit-code", "0", "--", "true"});
  const std::string text =
      ReadEvents(http_port_, "/console/api/events?after=0", nullptr, [](const std::string& t) {
        return absl::StrContains(t, R"("seq":3,"kind":"context","id":"second")");
      });
  EXPECT_THAT(text, HasSubstr(R"("seq":1,"kind":"context","id":"first")"));
  EXPECT_THAT(text, Not(HasSubstr(R"("seq":2,)")));  // kept as seq 3
  EXPECT_THAT(text, HasSubstr(R"("seq":3,"kind":"context","id":"second")"));
  EXPECT_THAT(text, Not(HasSubstr("event: resync")));
}

TEST_F(ConsoleProcessTest, WithATokenFileTheApiNeedsAReaderToken) {
  WritePrivateFile(dir_.Sub("tokens.json"),
                   absl::StrCat(R"({"tokens": [{"token": ")", kAdmin,
                                R"(", "principal": "ops", "role": "admin"}, {"token": ")", kGreen,
                                R"(", "principal": "green", "role": "agent"}, {"token": ")",
                                kReader, R"(", "principal": "dash", "role": "reader"}]})"));
  Start({"--token_file=" + dir_.Sub("tokens.json")});
  // The page itself is open: it is what asks for the token.
  httplib::Result page = Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  // Every route of the API: an agent's token opens none of them (the console shows every
  // agent's records), whatever the route would have answered.
  for (const char* path :
       {"/console/api/overview", "/console/api/events", "/console/api/evaluations",
        "/console/api/evaluations/ctx-1", "/console/api/leaderboard", "/console/api/runs",
        "/console/api/runs/run-1", "/console/api/retry", "/console/api/scenarios",
        "/console/api/scenarios/sc-1"}) {
    httplib::Result none = Get(path);
    ASSERT_TRUE(none) << path;
    EXPECT_EQ(none->status, 401) << path << ": " << none->body;
    EXPECT_EQ(none->get_header_value("WWW-Authenticate"), "Bearer") << path;
    httplib::Result wrong = Get(path, {{"Authorization", "Bearer not-a-token-of-ours-at-all"}});
    ASSERT_TRUE(wrong) << path;
    EXPECT_EQ(wrong->status, 401) << path;
    EXPECT_THAT(wrong->body, Not(HasSubstr("not-a-token-of-ours")));
    httplib::Result agent = Get(path, {{"Authorization", absl::StrCat("Bearer ", kGreen)}});
    ASSERT_TRUE(agent) << path;
    EXPECT_EQ(agent->status, 403) << path;
    EXPECT_THAT(agent->body, HasSubstr("reader or admin token"));
  }
  for (const char* token : {kReader, kAdmin}) {
    httplib::Result ok =
        Get("/console/api/overview", {{"Authorization", absl::StrCat("Bearer ", token)}});
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 200) << ok->body;
  }
}

// A token taken out of the token file (read again while the coordinator runs) ends the event
// streams opened with it, at their next wake-up, with an error event.
TEST_F(ConsoleProcessTest, ARevokedTokenEndsItsEventStream) {
  const std::string file = dir_.Sub("tokens.json");
  auto tokens = [](bool with_reader) {
    return absl::StrCat(R"({"tokens": [{"token": ")", kAdmin,
                        R"(", "principal": "ops", "role": "admin"})",
                        with_reader ? absl::StrCat(R"(, {"token": ")", kReader,
                                                   R"(", "principal": "dash", "role": "reader"})")
                                    : "",
                        "]}");
  };
  WritePrivateFile(file, tokens(true));
  WritePrivateFile(dir_.Sub("admin.token"), kAdmin);
  Start({"--token_file=" + file});
  absl::Notification subscribed;
  std::string text;
  std::thread reader([&] {
    httplib::Client http("127.0.0.1", http_port_);
    http.set_read_timeout(120, 0);
    http.Get("/console/api/events", {{"Authorization", absl::StrCat("Bearer ", kReader)}},
             [&](const char* data, size_t length) {
               text.append(data, length);
               if (!subscribed.HasBeenNotified() && absl::StrContains(text, "event: hello")) {
                 subscribed.Notify();
               }
               return true;
             });
    if (!subscribed.HasBeenNotified()) subscribed.Notify();
  });
  subscribed.WaitForNotification();
  WritePrivateFile(file, tokens(false));
  // A change wakes the stream (else its keepalive does); the admin token still works.
  absl::StatusOr<ProcessResult> put =
      RunCoordctl(coordinator_->target(), {"--auth-token-file", dir_.Sub("admin.token"), "context",
                                           "put", "after-revoke", "--agent", "green"});
  ASSERT_OK(put.status());
  EXPECT_EQ(put->exit_code, 0) << put->Describe();
  reader.join();
  EXPECT_THAT(text, HasSubstr("event: error"));
  EXPECT_THAT(text, HasSubstr("UNAUTHENTICATED"));
}

}  // namespace
