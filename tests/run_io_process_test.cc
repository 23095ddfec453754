// coordctl import arial|mahabharatha and run export against a real coordinator: a state file
// imported and exported again is the same JSON; work done in the coordinator shows in the
// export as the tools would have written it; bad files get a clear error and create nothing.
// The state files are in tests/testdata/arial and tests/testdata/mahabharatha (their READMEs
// say which were written by the tools' own code).
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/json_test_util.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace {

using ::testing::HasSubstr;
using ::testing_util::CoordinatorProcess;
using ::testing_util::ExpectSameJson;
using ::testing_util::JsonObject;
using ::testing_util::ProcessResult;
using ::testing_util::ReadWholeFile;
using ::testing_util::TempDir;

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
         "--format takes arial, mahabharatha or mahabharatha-assignments");
  Expect(1, {"run", "export", "nope", "--format", "arial"}, "not found");
  EXPECT_EQ(Ok({"run", "list"}), before);
}

}  // namespace
