// coordctl import arial|mahabharatha and run export against a real coordinator: a state file
// imported and exported again is the same JSON; work done in the coordinator shows in the
// export as the tools would have written it; bad files get a clear error and create nothing.
// `run export --follow` keeps a file (or MAHABHARATHA's logs directory) current while the run
// changes, through a restart of the coordinator, and gives up when it stays away.
// The state files are in tests/testdata/arial and tests/testdata/mahabharatha (their READMEs
// say which were written by the tools' own code).
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/json_test_util.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace {

using ::testing::HasSubstr;
using ::testing_util::BinaryPath;
using ::testing_util::CoordinatorProcess;
using ::testing_util::ExpectSameJson;
using ::testing_util::JsonObject;
using ::testing_util::Process;
using ::testing_util::ProcessResult;
using ::testing_util::ReadWholeFile;
using ::testing_util::SameJson;
using ::testing_util::TempDir;
using ::testing_util::WaitFor;

// Generous: these waits end as soon as the file shows the change; the bound only keeps a broken
// build from hanging.
constexpr absl::Duration kRunIoWait = absl::Seconds(90);

// `text` as one JSON object, or nullopt (no expectation fails: callers poll).
std::optional<google::protobuf::Struct> ParseObject(const std::string& text) {
  google::protobuf::Struct s;
  if (!google::protobuf::util::JsonStringToMessage(text, &s).ok()) return std::nullopt;
  return s;
}

// The status of workstream `id` in Arial's state.json text ("" when it cannot say).
std::string WorkstreamStatus(const std::string& text, const std::string& id) {
  std::optional<google::protobuf::Struct> state = ParseObject(text);
  if (!state.has_value() || !state->fields().contains("workstreams")) return "";
  for (const auto& w : state->fields().at("workstreams").list_value().values()) {
    const auto& f = w.struct_value().fields();
    if (f.contains("id") && f.at("id").string_value() == id && f.contains("status")) {
      return f.at("status").string_value();
    }
  }
  return "";
}

// Reads `path` over and over on a thread of its own while a follower rewrites it, counting the
// reads that do not parse as a JSON object: a reader must never see a partial file.
class FileReader {
 public:
  explicit FileReader(std::string path) : path_(std::move(path)) {
    thread_ = std::thread([this] {
      while (!stop_.load()) {
        const std::string text = ReadWholeFile(path_);
        if (text.empty()) continue;  // not written yet
        reads_.fetch_add(1);
        if (!ParseObject(text).has_value()) {
          bad_.fetch_add(1);
          absl::MutexLock lock(&mu_);
          bad_text_ = text;
        }
      }
    });
  }
  ~FileReader() { Stop(); }
  void Stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  int reads() const { return reads_.load(); }
  int bad() const { return bad_.load(); }
  std::string bad_text() {
    absl::MutexLock lock(&mu_);
    return bad_text_;
  }

 private:
  const std::string path_;
  std::atomic<bool> stop_{false};
  std::atomic<int> reads_{0};
  std::atomic<int> bad_{0};
  absl::Mutex mu_;
  std::string bad_text_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

std::string TestData(const std::string& tool, const std::string& name) {
  return (std::filesystem::path(COORD_SOURCE_DIR) / "tests" / "testdata" / tool / name).string();
}

class RunIoProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<CoordinatorProcess>> c =
        CoordinatorProcess::Start(dir_.Sub("data"));
    ASSERT_OK(c);
    coordinator_ = *std::move(c);
  }

  ProcessResult Ctl(const std::vector<std::string>& args) {
    absl::StatusOr<ProcessResult> r = testing_util::RunCoordctl(coordinator_->target(), args);
    EXPECT_OK(r);
    return r.ok() ? *r : ProcessResult();
  }

  std::string Ok(const std::vector<std::string>& args) {
    ProcessResult r = Ctl(args);
    EXPECT_EQ(r.exit_code, 0) << absl::StrJoin(args, " ") << "\n" << r.Describe();
    return r.out;
  }

  ProcessResult Expect(int code, const std::vector<std::string>& args, const std::string& text) {
    ProcessResult r = Ctl(args);
    EXPECT_EQ(r.exit_code, code) << absl::StrJoin(args, " ") << "\n" << r.Describe();
    EXPECT_THAT(r.err, HasSubstr(text)) << absl::StrJoin(args, " ");
    return r;
  }

  // A .arial directory holding `text` as its state.json.
  std::string ArialDir(const std::string& text) {
    const std::string dir = dir_.Sub(absl::StrCat("arial-", ++dirs_, "/.arial"));
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/state.json", std::ios::binary) << text;
    return dir;
  }

  std::string Id(const std::string& out) {
    return std::string(absl::StripTrailingAsciiWhitespace(out));
  }

  // `coordctl run export <args...> --follow` in the background.
  std::unique_ptr<Process> Follow(const std::vector<std::string>& args) {
    std::vector<std::string> full = {"--target", coordinator_->target(), "--timeout", "30s", "run",
                                     "export"};
    full.insert(full.end(), args.begin(), args.end());
    full.push_back("--follow");
    absl::StatusOr<std::unique_ptr<Process>> p = Process::Start(BinaryPath("coordctl"), full);
    EXPECT_OK(p);
    return p.ok() ? *std::move(p) : nullptr;
  }

  // SIGTERM to a follower; it exits 0 with nothing on stderr.
  void StopFollower(Process& follower) {
    ASSERT_OK(follower.Signal(SIGTERM));
    absl::StatusOr<ProcessResult> r = follower.Wait(absl::Seconds(60));
    ASSERT_OK(r);
    EXPECT_EQ(r->exit_code, 0) << r->Describe();
    EXPECT_EQ(r->err, "") << r->Describe();
  }

  // The lease token of a claim's JSON.
  std::string Lease(const std::string& claim) {
    const google::protobuf::Struct claimed = JsonObject(claim);
    if (!claimed.fields().contains("lease")) return "";
    return claimed.fields().at("lease").string_value();
  }

  TempDir dir_;
  int dirs_ = 0;
  std::unique_ptr<CoordinatorProcess> coordinator_;
};

TEST_F(RunIoProcessTest, ArialPlanRoundTripsAndShowsTheWorkDoneHere) {
  const std::string text = ReadWholeFile(TestData("arial", "state-plan.json"));
  const std::string run = Id(Ok({"import", "arial", ArialDir(text), "--run-id", "plan"}));
  EXPECT_EQ(run, "plan");
  ExpectSameJson(Ok({"run", "export", run, "--format", "arial"}), text);
  // --output writes the file by a rename.
  const std::string out = dir_.Sub("exported.json");
  Ok({"run", "export", run, "--format", "arial", "--output", out});
  ExpectSameJson(ReadWholeFile(out), text);

  // A worker takes "api" (ui depends on it) and completes it.
  const std::string claim = Ok({"run", "claim", run, "--worker", "w1", "--capability", "network"});
  const google::protobuf::Struct claimed = JsonObject(claim);
  const std::string lease = claimed.fields().at("lease").string_value();
  ASSERT_FALSE(lease.empty()) << claim;
  google::protobuf::Struct state = JsonObject(Ok({"run", "export", run, "--format", "arial"}));
  EXPECT_EQ(state.fields().at("status").string_value(), "running");
  const auto& api = state.fields().at("workstreams").list_value().values(0).struct_value();
  EXPECT_EQ(api.fields().at("status").string_value(), "running");
  EXPECT_TRUE(api.fields().contains("startedAt"));
  Ok({"run", "complete", lease, "--summary", "endpoints done"});
  state = JsonObject(Ok({"run", "export", run, "--format", "arial"}));
  const auto& done = state.fields().at("workstreams").list_value().values(0).struct_value();
  EXPECT_EQ(done.fields().at("status").string_value(), "done");
  EXPECT_EQ(done.fields().at("summary").string_value(), "endpoints done");
  EXPECT_TRUE(done.fields().contains("completedAt"));
  EXPECT_EQ(state.fields().at("status").string_value(), "running");  // Arial keeps it
}

TEST_F(RunIoProcessTest, MahabharathaPlanRoundTrips) {
  // Written by MAHABHARATHA's own StateManager.
  const std::string path = TestData("mahabharatha", "plan-only.json");
  const std::string run = Id(Ok({"import", "mahabharatha", path}));
  ExpectSameJson(Ok({"run", "export", run, "--format", "mahabharatha"}), ReadWholeFile(path));
}

// A run under way keeps its states; the running item's worker goes on with the printed lease.
TEST_F(RunIoProcessTest, ArialRunUnderWayIsImportedAndItsWorkerGoesOn) {
  const std::string text = ReadWholeFile(TestData("arial", "state-full.json"));
  const std::string out =
      Ok({"import", "arial", ArialDir(text), "--run-id", "under", "--ttl", "5m"});
  const std::vector<std::string> lines = absl::StrSplit(out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 2u) << out;
  EXPECT_EQ(lines[0], "under");
  const std::vector<std::string> held = absl::StrSplit(lines[1], '\t');
  ASSERT_EQ(held.size(), 3u) << lines[1];
  EXPECT_EQ(held[0], "search-index");
  EXPECT_EQ(held[1], "arial-48213");
  ExpectSameJson(Ok({"run", "export", "under", "--format", "arial"}), text);
  const google::protobuf::Struct item = JsonObject(Ok({"run", "status", "under", "--json"}));
  EXPECT_EQ(item.fields().at("run").struct_value().fields().at("status").string_value(),
            "RUN_STATUS_FAILED")
      << Ok({"run", "status", "under", "--json"});

  Ok({"run", "heartbeat", held[2], "--progress", "indexing"});
  Ok({"run", "complete", held[2], "--summary", "search done"});
  const google::protobuf::Struct state =
      JsonObject(Ok({"run", "export", "under", "--format", "arial"}));
  const auto& search = state.fields().at("workstreams").list_value().values(2).struct_value();
  EXPECT_EQ(search.fields().at("status").string_value(), "done");
  EXPECT_EQ(search.fields().at("summary").string_value(), "search done");
  EXPECT_EQ(search.fields().at("retryCount").number_value(), 0);
  // --as-pending still runs every workstream again.
  const std::string again = Id(Ok({"import", "arial", ArialDir(text), "--as-pending"}));
  const google::protobuf::Struct pending =
      JsonObject(Ok({"run", "export", again, "--format", "arial"}));
  for (const auto& w : pending.fields().at("workstreams").list_value().values()) {
    EXPECT_EQ(w.struct_value().fields().at("status").string_value(), "pending");
  }
}

// user-auth.json, written by MAHABHARATHA's StateManager: a task in progress on worker 0,
// worker 1 crashed.
TEST_F(RunIoProcessTest, MahabharathaFeatureUnderWayIsImportedAndItsWorkerGoesOn) {
  const std::string path = TestData("mahabharatha", "user-auth.json");
  const std::string out = Ok({"import", "mahabharatha", path, "--run-id", "auth"});
  const std::vector<std::string> lines = absl::StrSplit(out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 2u) << out;
  EXPECT_EQ(lines[0], "auth");
  const std::vector<std::string> held = absl::StrSplit(lines[1], '\t');
  ASSERT_EQ(held.size(), 3u) << lines[1];
  EXPECT_EQ(held[0], "AUTH-L2-001");
  EXPECT_EQ(held[1], "0");
  ExpectSameJson(Ok({"run", "export", "auth", "--format", "mahabharatha"}), ReadWholeFile(path));
  const std::string workers = Ok({"run", "workers", "auth"});
  EXPECT_THAT(workers, HasSubstr("busy"));
  EXPECT_THAT(workers, HasSubstr("lost"));
  Ok({"run", "complete", held[2]});
  const google::protobuf::Struct state =
      JsonObject(Ok({"run", "export", "auth", "--format", "mahabharatha"}));
  const auto& task =
      state.fields().at("tasks").struct_value().fields().at("AUTH-L2-001").struct_value();
  EXPECT_EQ(task.fields().at("status").string_value(), "complete");
  const auto& worker = state.fields().at("workers").struct_value().fields().at("0").struct_value();
  EXPECT_EQ(worker.fields().at("current_task").kind_case(), google::protobuf::Value::kNullValue);
}

// Where MAHABHARATHA keeps them: .mahabharatha/state/<feature>.json and
// .gsd/specs/<feature>/task-graph.json. The import joins the two; the assignments export is
// what MAHABHARATHA's save_to_file wrote for the same tasks and workers.
TEST_F(RunIoProcessTest, MahabharathaStateIsJoinedWithTheTaskGraphBesideIt) {
  const std::string root = dir_.Sub("project");
  std::filesystem::create_directories(root + "/.mahabharatha/state");
  std::filesystem::create_directories(root + "/.gsd/specs/user-auth");
  const std::string state = root + "/.mahabharatha/state/user-auth.json";
  std::filesystem::copy_file(TestData("mahabharatha", "user-auth.json"), state);
  std::filesystem::copy_file(TestData("mahabharatha", "user-auth-task-graph.json"),
                             root + "/.gsd/specs/user-auth/task-graph.json");
  const std::string out = Ok({"import", "mahabharatha", state, "--run-id", "joined"});
  EXPECT_THAT(out, HasSubstr("AUTH-L2-001\t0\t"));
  const std::string status = Ok({"run", "status", "joined", "--json"});
  EXPECT_THAT(status, HasSubstr("4f2a9c1"));
  EXPECT_THAT(status, HasSubstr("LEVEL_STATUS_MERGED"));
  EXPECT_THAT(status, HasSubstr("AUTH-L3-001"));
  EXPECT_THAT(status, HasSubstr("pytest tests/test_login.py"));

  google::protobuf::Struct assignments =
      JsonObject(Ok({"run", "export", "joined", "--format", "mahabharatha-assignments"}));
  google::protobuf::Struct theirs =
      JsonObject(ReadWholeFile(TestData("mahabharatha", "user-auth-assignments.json")));
  EXPECT_FALSE(assignments.fields().at("generated_at").string_value().empty());
  assignments.mutable_fields()->erase("generated_at");
  theirs.mutable_fields()->erase("generated_at");
  EXPECT_EQ(assignments.DebugString(), theirs.DebugString());

  // A graph that does not fit the state (given with --task-graph) imports nothing.
  const std::string before = Ok({"run", "list"});
  const std::string other = dir_.Sub("other-graph.json");
  std::ofstream(other, std::ios::binary)
      << R"({"feature": "user-auth", "tasks": [{"id": "AUTH-L1-001", "level": 1}]})";
  Expect(3, {"import", "mahabharatha", state, "--task-graph", other},
         "tasks.AUTH-L1-002 is in the state file but not in task-graph.json; nothing imported");
  Expect(3, {"import", "mahabharatha", state, "--task-graph", dir_.Sub("none.json")},
         "cannot open");
  EXPECT_EQ(Ok({"run", "list"}), before);
}

TEST_F(RunIoProcessTest, BadRunsUnderWayCreateNothing) {
  const std::string before = Ok({"run", "list"});
  const std::string full = ReadWholeFile(TestData("arial", "state-full.json"));
  // Running before its dependency is done.
  Expect(3,
         {"import", "arial",
          ArialDir(absl::StrReplaceAll(
              full, {{R"("pid":48213,)", R"("pid":48213,"dependencies":["docs"],)"}}))},
         "task search-index is running but its dependency docs is pending");
  // A status Arial does not have.
  Expect(3,
         {"import", "arial",
          ArialDir(absl::StrReplaceAll(full, {{R"("status":"running")", R"("status":"zombie")"}}))},
         "zombie");
  // A task in progress that no worker holds.
  const std::string auth = ReadWholeFile(TestData("mahabharatha", "user-auth.json"));
  const std::string orphan = dir_.Sub("orphan.json");
  std::ofstream(orphan, std::ios::binary) << absl::StrReplaceAll(
      auth, {{R"("worker_id": 0,
      "claimed_at": "2026-11-24T11:18:45.138071",)",
              R"("claimed_at": "2026-11-24T11:18:45.138071",)"},
             {R"("current_task": "AUTH-L2-001")", R"("current_task": null)"}});
  Expect(3, {"import", "mahabharatha", orphan}, "no worker's current_task is it");
  Expect(2, {"import", "arial", ArialDir(full), "--ttl", "soon"}, "ttl");
  Expect(3, {"import", "arial", ArialDir(full), "--ttl", "48h"}, "lease_ttl must be between");
  EXPECT_EQ(Ok({"run", "list"}), before);
}

TEST_F(RunIoProcessTest, BadFilesCreateNothing) {
  const std::string good = ReadWholeFile(TestData("arial", "state-plan.json"));
  const std::string before = Ok({"run", "list"});
  Expect(3, {"import", "arial", ArialDir("{\"version\": 2,")}, "not a JSON object");
  Expect(3,
         {"import", "arial",
          ArialDir(absl::StrReplaceAll(good, {{"\"version\":2", "\"version\":7"}}))},
         "version 7 is not one this coordinator reads");
  Expect(3,
         {"import", "arial",
          ArialDir(absl::StrReplaceAll(good, {{"\"id\":\"ui\"", "\"id\":\"../ui\""}}))},
         "would name a path");
  Expect(3,
         {"import", "arial", ArialDir(absl::StrReplaceAll(good, {{"[\"api\"]", "[\"nowhere\"]"}}))},
         "depends on unknown task nowhere");
  Expect(3,
         {"import", "arial",
          ArialDir(absl::StrReplaceAll(good, {{"\"retryCount\":0,\"adapter\"",
                                               "\"retryCount\":0,\"dependencies\":[\"ui\"],"
                                               "\"adapter\""}}))},
         "dependency cycle");
  const std::string big = ArialDir(std::string(5 << 20, ' '));
  Expect(3, {"import", "arial", big}, "bytes");
  Expect(3, {"import", "arial", dir_.Sub("missing")}, "cannot open");
  Expect(3, {"import", "mahabharatha", ArialDir("{\"feature\": \"x\"}") + "/state.json"},
         "tasks is missing");
  Expect(2, {"run", "export", "nope", "--format", "yaml"},
         "--format takes arial, mahabharatha, mahabharatha-assignments or mahabharatha-logs");
  Expect(1, {"run", "export", "nope", "--format", "arial"}, "not found");
  EXPECT_EQ(Ok({"run", "list"}), before);
}

// --follow rewrites the file on every change, by a rename: a reader polling it sees each
// change and never a partial file; SIGTERM ends it with exit 0.
TEST_F(RunIoProcessTest, FollowKeepsArialsStateFileCurrent) {
  const std::string text = ReadWholeFile(TestData("arial", "state-plan.json"));
  const std::string run = Id(Ok({"import", "arial", ArialDir(text), "--run-id", "plan"}));
  const std::string out = dir_.Sub("state.json");
  std::unique_ptr<Process> follower = Follow({run, "--format", "arial", "--output", out});
  ASSERT_NE(follower, nullptr);
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(out); }, kRunIoWait))
      << follower->stderr_text();
  ExpectSameJson(ReadWholeFile(out), text);
  FileReader reader(out);

  const std::string lease =
      Lease(Ok({"run", "claim", run, "--worker", "w1", "--capability", "network"}));
  ASSERT_FALSE(lease.empty());
  EXPECT_TRUE(
      WaitFor([&] { return WorkstreamStatus(ReadWholeFile(out), "api") == "running"; }, kRunIoWait))
      << ReadWholeFile(out);
  // A burst of heartbeats, then the completion.
  for (int i = 0; i < 20; ++i) {
    Ok({"run", "heartbeat", lease, "--progress", absl::StrCat("step ", i)});
  }
  Ok({"run", "complete", lease, "--summary", "endpoints done"});
  EXPECT_TRUE(
      WaitFor([&] { return WorkstreamStatus(ReadWholeFile(out), "api") == "done"; }, kRunIoWait))
      << ReadWholeFile(out);
  reader.Stop();
  EXPECT_GT(reader.reads(), 0);
  EXPECT_EQ(reader.bad(), 0) << reader.bad_text();
  // The follower comes to write what a one-off export writes now (it may still be one change
  // behind when the status it waited for shows).
  const std::string exported = Ok({"run", "export", run, "--format", "arial"});
  EXPECT_TRUE(WaitFor([&] { return SameJson(ReadWholeFile(out), exported); }, kRunIoWait));
  ExpectSameJson(ReadWholeFile(out), exported);
  StopFollower(*follower);
  // No temporary file is left beside it.
  for (const auto& entry : std::filesystem::directory_iterator(dir_.path())) {
    EXPECT_EQ(entry.path().string().find(".tmp."), std::string::npos) << entry.path();
  }
}

// A worker stopped sends no watch event; the follower still sees it in the run's event log.
TEST_F(RunIoProcessTest, FollowKeepsMahabharathasStateFileCurrent) {
  const std::string run = Id(Ok(
      {"run", "import", TestData("mahabharatha", "user-auth-task-graph.json"), "--run-id", "ua"}));
  const std::string out = dir_.Sub("user-auth.json");
  std::unique_ptr<Process> follower = Follow({run, "--format", "mahabharatha", "--output", out});
  ASSERT_NE(follower, nullptr);
  auto task_status = [&](const std::string& id) -> std::string {
    std::optional<google::protobuf::Struct> state = ParseObject(ReadWholeFile(out));
    if (!state.has_value() || !state->fields().contains("tasks")) return "";
    const auto& tasks = state->fields().at("tasks").struct_value().fields();
    if (!tasks.contains(id)) return "";
    return tasks.at(id).struct_value().fields().at("status").string_value();
  };
  auto worker_status = [&](const std::string& id) -> std::string {
    std::optional<google::protobuf::Struct> state = ParseObject(ReadWholeFile(out));
    if (!state.has_value() || !state->fields().contains("workers")) return "";
    const auto& workers = state->fields().at("workers").struct_value().fields();
    if (!workers.contains(id)) return "";
    return workers.at(id).struct_value().fields().at("status").string_value();
  };
  ASSERT_TRUE(WaitFor([&] { return task_status("AUTH-L1-001") == "pending"; }, kRunIoWait))
      << follower->stderr_text();
  FileReader reader(out);
  const std::string lease = Lease(Ok({"run", "claim", run, "--worker", "0"}));
  ASSERT_FALSE(lease.empty());
  EXPECT_TRUE(WaitFor([&] { return task_status("AUTH-L1-001") == "in_progress"; }, kRunIoWait))
      << ReadWholeFile(out);
  Ok({"run", "complete", lease});
  EXPECT_TRUE(WaitFor([&] { return task_status("AUTH-L1-001") == "complete"; }, kRunIoWait))
      << ReadWholeFile(out);
  Ok({"run", "stop-worker", run, "0", "--reason", "done for today"});
  EXPECT_TRUE(WaitFor([&] { return worker_status("0") == "stopped"; }, kRunIoWait))
      << ReadWholeFile(out);
  reader.Stop();
  EXPECT_EQ(reader.bad(), 0) << reader.bad_text();
  StopFollower(*follower);
}

// The coordinator stops and starts again on the same port and data: the follower watches again
// and goes on; SIGINT ends it with exit 0.
TEST_F(RunIoProcessTest, FollowOutlivesARestartOfTheCoordinator) {
  const std::string text = ReadWholeFile(TestData("arial", "state-plan.json"));
  const std::string run = Id(Ok({"import", "arial", ArialDir(text), "--run-id", "plan"}));
  const std::string out = dir_.Sub("state.json");
  std::unique_ptr<Process> follower =
      Follow({run, "--format", "arial", "--output", out, "--patience", "10m"});
  ASSERT_NE(follower, nullptr);
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(out); }, kRunIoWait));
  const int port = coordinator_->port();
  ASSERT_OK(coordinator_->Stop());
  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> again =
      CoordinatorProcess::Start(dir_.Sub("data"), {absl::StrCat("--listen=127.0.0.1:", port)});
  ASSERT_OK(again);
  coordinator_ = *std::move(again);
  EXPECT_FALSE(follower->ended()) << follower->stderr_text();
  Ok({"run", "claim", run, "--worker", "w1", "--capability", "network"});
  EXPECT_TRUE(
      WaitFor([&] { return WorkstreamStatus(ReadWholeFile(out), "api") == "running"; }, kRunIoWait))
      << ReadWholeFile(out) << follower->stderr_text();
  ASSERT_OK(follower->Signal(SIGINT));
  absl::StatusOr<ProcessResult> r = follower->Wait(absl::Seconds(60));
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 0) << r->Describe();
}

// Killed for good: once --patience has passed the follower says so and exits 3, leaving the
// last complete file.
TEST_F(RunIoProcessTest, FollowGivesUpWhenTheCoordinatorStaysAway) {
  const std::string text = ReadWholeFile(TestData("arial", "state-plan.json"));
  const std::string run = Id(Ok({"import", "arial", ArialDir(text), "--run-id", "plan"}));
  const std::string out = dir_.Sub("state.json");
  std::unique_ptr<Process> follower =
      Follow({run, "--format", "arial", "--output", out, "--patience", "1s"});
  ASSERT_NE(follower, nullptr);
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(out); }, kRunIoWait));
  ASSERT_OK(coordinator_->Kill());
  absl::StatusOr<ProcessResult> r = follower->Wait(kRunIoWait);
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 3) << r->Describe();
  EXPECT_THAT(r->err, HasSubstr("the coordinator has been unreachable for")) << r->Describe();
  EXPECT_THAT(r->err, HasSubstr("(--patience 1s)")) << r->Describe();
  ExpectSameJson(ReadWholeFile(out), text);
}

// A run deleted by retention ends the follower with exit 1, as `not found` ends any command.
TEST_F(RunIoProcessTest, FollowEndsWhenTheRunIsDeleted) {
  const std::string graph = dir_.Sub("graph.json");
  std::ofstream(graph) << R"({"feature": "f", "tasks": [{"id": "a", "title": "A", "level": 1}]})";
  const std::string run = Id(Ok({"run", "import", graph, "--run-id", "gone"}));
  Ok({"run", "complete", Lease(Ok({"run", "claim", run, "--worker", "0"}))});
  const std::string out = dir_.Sub("f.json");
  std::unique_ptr<Process> follower = Follow({run, "--format", "mahabharatha", "--output", out});
  ASSERT_NE(follower, nullptr);
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(out); }, kRunIoWait));
  EXPECT_THAT(Ok({"gc", "--older-than", "1ms"}), HasSubstr("gone"));
  absl::StatusOr<ProcessResult> r = follower->Wait(kRunIoWait);
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 1) << r->Describe();
  EXPECT_THAT(r->err, HasSubstr("not found: run gone not found")) << r->Describe();
}

// The lines of every file parse and carry what MAHABHARATHA's LogAggregator and `logs` command
// read: ts, level, worker_id, feature, message, and for task events task_id, event and
// data.level.
void ExpectLogLinesReadable(const std::string& dir, int* lines_seen) {
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    const std::string path = entry.path().string();
    EXPECT_TRUE(absl::EndsWith(path, ".jsonl")) << path;
    const bool task_file = absl::EndsWith(path, "/execution.jsonl");
    for (absl::string_view line : absl::StrSplit(ReadWholeFile(path), '\n', absl::SkipEmpty())) {
      ++*lines_seen;
      std::optional<google::protobuf::Struct> parsed = ParseObject(std::string(line));
      ASSERT_TRUE(parsed.has_value()) << path << ": " << line;
      const auto& f = parsed->fields();
      EXPECT_TRUE(f.contains("ts") && f.contains("event")) << path << ": " << line;
      if (task_file) continue;
      for (const char* key : {"level", "worker_id", "feature", "message", "data"}) {
        EXPECT_TRUE(f.contains(key)) << key << " missing in " << path << ": " << line;
      }
      EXPECT_EQ(f.at("feature").string_value(), "user-auth") << line;
      if (f.contains("task_id")) {
        EXPECT_TRUE(f.at("data").struct_value().fields().contains("level")) << line;
      }
    }
  }
}

TEST_F(RunIoProcessTest, MahabharathaLogsAreWrittenFromTheEventLog) {
  const std::string run = Id(Ok(
      {"run", "import", TestData("mahabharatha", "user-auth-task-graph.json"), "--run-id", "ua"}));
  const std::string first = Lease(Ok({"run", "claim", run, "--worker", "0"}));
  const std::string second = Lease(Ok({"run", "claim", run, "--worker", "1"}));
  ASSERT_FALSE(first.empty());
  ASSERT_FALSE(second.empty());
  Ok({"run", "complete", first, "--summary", "model done"});
  Ok({"run", "fail", second, "--error", "tests failed"});

  const std::string logs = dir_.Sub("project/.mahabharatha/logs");
  Ok({"run", "export", run, "--format", "mahabharatha-logs", "--output", logs});
  for (const char* file :
       {"workers/worker-0.jsonl", "workers/worker-1.jsonl", "workers/worker-orchestrator.jsonl",
        "tasks/AUTH-L1-001/execution.jsonl"}) {
    EXPECT_TRUE(std::filesystem::exists(logs + "/" + file)) << file;
  }
  int lines = 0;
  ExpectLogLinesReadable(logs, &lines);
  EXPECT_GT(lines, 0);
  const std::string w0 = ReadWholeFile(logs + "/workers/worker-0.jsonl");
  EXPECT_THAT(w0, HasSubstr(R"("event": "task_started")"));
  EXPECT_THAT(w0, HasSubstr(R"("event": "task_completed")"));
  EXPECT_THAT(w0, HasSubstr(R"("summary": "model done")"));
  EXPECT_THAT(ReadWholeFile(logs + "/workers/worker-1.jsonl"),
              HasSubstr(R"("message": "Task AUTH-L1-002 failed: tests failed")"));
  // Every entry of the run's log is in one worker's or the orchestrator's file, once.
  const std::string events = Ok({"run", "events", run});
  int worker_lines = 0;
  for (const auto& entry : std::filesystem::directory_iterator(logs + "/workers")) {
    const std::string text = ReadWholeFile(entry.path().string());
    worker_lines += static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  }
  EXPECT_EQ(worker_lines, static_cast<int>(std::count(events.begin(), events.end(), '\n')));

  // Followed: a worker stopped (logged, no watch event), a task added and claimed by a new
  // worker (its own file, the task's own directory).
  std::unique_ptr<Process> follower =
      Follow({run, "--format", "mahabharatha-logs", "--output", logs});
  ASSERT_NE(follower, nullptr);
  Ok({"run", "stop-worker", run, "0", "--reason", "done for today"});
  EXPECT_TRUE(WaitFor(
      [&] {
        return ReadWholeFile(logs + "/workers/worker-0.jsonl").find("Worker 0 stopped") !=
               std::string::npos;
      },
      kRunIoWait))
      << follower->stderr_text();
  const std::string items = dir_.Sub("items.json");
  std::ofstream(items) << R"([{"id": "AUTH-L1-003", "title": "Sessions", "level": 1}])";
  Ok({"run", "add", run, "--items", items});
  ASSERT_FALSE(Lease(Ok({"run", "claim", run, "--worker", "7"})).empty());
  EXPECT_TRUE(WaitFor(
      [&] {
        return ReadWholeFile(logs + "/workers/worker-7.jsonl").find(R"("event": "task_started")") !=
                   std::string::npos &&
               std::filesystem::exists(logs + "/tasks/AUTH-L1-003/execution.jsonl");
      },
      kRunIoWait))
      << follower->stderr_text();
  // Stopped first: a running follower may be between writing a file's replacement and renaming
  // it over the file. Once it has exited, only whole files remain.
  StopFollower(*follower);
  lines = 0;
  ExpectLogLinesReadable(logs, &lines);
}

// Each flag's misuse: a usage error (2) or a clear failure (3), one line on stderr, nothing
// written.
// Arial's schema has specsDir and specFile relative to the project: a run made from
// <project>/specs exports them so, and relative to --project-dir when given (absolute for a
// spec outside it).
TEST_F(RunIoProcessTest, ArialPathsAreRelativeToTheProject) {
  const std::string project = dir_.Sub("project");
  std::filesystem::create_directories(project + "/specs");
  std::ofstream(project + "/specs/auth.md") << "# Auth\n";
  const std::string run = Id(Ok({"run", "create", "--workstreams", project + "/specs", "--naming",
                                 "arial", "--run-id", "made-here"}));
  auto paths = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"run", "export", run, "--format", "arial"};
    args.insert(args.end(), extra.begin(), extra.end());
    const google::protobuf::Struct state = JsonObject(Ok(args));
    return std::make_pair(state.fields().at("specsDir").string_value(), state.fields()
                                                                            .at("workstreams")
                                                                            .list_value()
                                                                            .values(0)
                                                                            .struct_value()
                                                                            .fields()
                                                                            .at("specFile")
                                                                            .string_value());
  };
  EXPECT_EQ(paths({}), std::make_pair(std::string("./specs"), std::string("specs/auth.md")));
  EXPECT_EQ(paths({"--project-dir", dir_.path()}),
            std::make_pair(std::string("./project/specs"), std::string("project/specs/auth.md")));
  const std::string other = dir_.Sub("other");
  std::filesystem::create_directories(other);
  const auto outside = paths({"--project-dir", other});
  EXPECT_TRUE(absl::StartsWith(outside.first, "/")) << outside.first;
  EXPECT_TRUE(absl::EndsWith(outside.second, "/project/specs/auth.md")) << outside.second;
}

TEST_F(RunIoProcessTest, BadExportFlagsWriteNothing) {
  const std::string text = ReadWholeFile(TestData("arial", "state-plan.json"));
  const std::string run = Id(Ok({"import", "arial", ArialDir(text), "--run-id", "plan"}));
  const std::string out = dir_.Sub("out");
  std::filesystem::create_directories(out);
  const std::string file = out + "/a-file";
  std::ofstream(file) << "x";

  Expect(2, {"run", "export", run, "--format", "arial", "--follow"},
         "--follow keeps a file current: give it with --output");
  Expect(2, {"run", "export", run, "--format", "mahabharatha-logs"},
         "--format mahabharatha-logs writes a directory: give it with --output");
  Expect(2, {"run", "export", run, "--format", "arial", "--poll", "1s"},
         "--poll and --patience go with --follow");
  Expect(2,
         {"run", "export", run, "--format", "arial", "--output", out + "/s.json", "--follow",
          "--poll", "soon"},
         "--poll takes a duration");
  Expect(2,
         {"run", "export", run, "--format", "arial", "--output", out + "/s.json", "--follow",
          "--patience", "0s"},
         "--patience takes a positive duration");
  Expect(2, {"run", "export", run, "--format", "logs", "--output", out}, "--format takes");
  Expect(2, {"run", "export", run, "--output", out + "/s.json"}, "--format takes");
  Expect(2, {"run", "export", run, "extra", "--format", "arial"}, "usage: coordctl run export");
  Expect(2, {"run", "export", "--format", "arial"}, "usage: coordctl run export");
  Expect(2, {"run", "export", run, "--format", "arial", "--output", out},
         "is a directory; give the path of the file to write");
  // Unwritable: a path under a regular file (refused to root too).
  Expect(3, {"run", "export", run, "--format", "arial", "--output", file + "/state.json"},
         "cannot write " + file + "/state.json: Not a directory");
  Expect(3,
         {"run", "export", run, "--format", "arial", "--output", file + "/state.json", "--follow"},
         "cannot write " + file + "/state.json: Not a directory");
  Expect(3, {"run", "export", run, "--format", "mahabharatha-logs", "--output", file},
         "cannot make the logs directory " + file);
  Expect(3,
         {"run", "export", run, "--format", "mahabharatha-logs", "--output", file + "/logs",
          "--follow"},
         "cannot make the logs directory " + file + "/logs");
  Expect(1, {"run", "export", "nope", "--format", "arial", "--output", out + "/s.json", "--follow"},
         "not found");
  Expect(2, {"run", "export", run, "--format", "arial", "--project-dir", file},
         "--project-dir " + file + " is not a directory");
  Expect(2, {"run", "export", run, "--format", "arial", "--project-dir", ""}, "is not a directory");
  Expect(2, {"run", "export", run, "--format", "mahabharatha", "--project-dir", out},
         "--project-dir goes with --format arial");
  std::vector<std::string> left;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(out)) {
    left.push_back(entry.path().filename().string());
  }
  EXPECT_THAT(left, ::testing::ElementsAre("a-file"));
  EXPECT_EQ(ReadWholeFile(file), "x");
}

}  // namespace
