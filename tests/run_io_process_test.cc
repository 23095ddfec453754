// coordctl import arial|mahabharatha and run export against a real coordinator: a state file
// imported and exported again is the same JSON; work done in the coordinator shows in the
// export as the tools would have written it; bad files get a clear error and create nothing.
// The state files are in tests/testdata/arial and tests/testdata/mahabharatha (their READMEs
// say which were written by the tools' own code).
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
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

TEST_F(RunIoProcessTest, StateThatIsNotPendingIsRefusedUnlessAsked) {
  const std::string before = Ok({"run", "list"});
  const std::string full = ArialDir(ReadWholeFile(TestData("arial", "state-full.json")));
  Expect(3, {"import", "arial", full}, "workstream auth-system is done");
  Expect(3, {"import", "mahabharatha", TestData("mahabharatha", "user-auth.json")},
         "task AUTH-L1-001 is done");
  EXPECT_EQ(Ok({"run", "list"}), before);
  const std::string run = Id(Ok({"import", "arial", full, "--as-pending"}));
  const google::protobuf::Struct state =
      JsonObject(Ok({"run", "export", run, "--format", "arial"}));
  for (const auto& w : state.fields().at("workstreams").list_value().values()) {
    EXPECT_EQ(w.struct_value().fields().at("status").string_value(), "pending");
  }
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
  Expect(2, {"run", "export", "nope", "--format", "yaml"}, "--format takes arial or mahabharatha");
  Expect(1, {"run", "export", "nope", "--format", "arial"}, "not found");
  EXPECT_EQ(Ok({"run", "list"}), before);
}

}  // namespace
