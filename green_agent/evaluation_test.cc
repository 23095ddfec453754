#include "green_agent/evaluation.h"

#include <filesystem>

#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace green_agent {
namespace {

TEST(EvaluationTest, ParsesLocations) {
  absl::StatusOr<std::vector<Location>> locs = ParseLocations(
      R"({"locations": [{"file": "src/a.c", "function": "f", "line": 12},
                        {"file": "b.c", "line_start": 3, "line_end": 5}]})");
  ASSERT_OK(locs);
  ASSERT_EQ(locs->size(), 2u);
  EXPECT_EQ((*locs)[0].line_start, 12);
  EXPECT_EQ((*locs)[0].line_end, 12);
  EXPECT_EQ((*locs)[1].line_end, 5);
}

TEST(EvaluationTest, MalformedSubmissionsAreRefusedClearly) {
  for (const char* bad :
       {"", "not json", "{}", "{\"locations\": []}", "{\"locations\": [1]}",
        "{\"locations\": [{\"function\": \"f\"}]}",
        "{\"locations\": [{\"file\": \"a.c\", \"line\": \"twelve\"}]}",
        "{\"locations\": [{\"file\": \"a.c\", \"line_start\": 9, \"line_end\": 2}]}"}) {
    absl::StatusOr<std::vector<Location>> locs = ParseLocations(bad);
    EXPECT_TRUE(absl::IsInvalidArgument(locs.status())) << bad;
  }
}

TEST(EvaluationTest, ScoresFileFunctionAndLine) {
  const std::vector<Location> truth = {{"src/record.c", "parse_record", 12, 12}};
  EXPECT_EQ(ScoreJson("t", ScoreLocations(truth, {{"src/record.c", "parse_record", 12, 12}})),
            "{\"task_id\":\"t\",\"file_accuracy\":1.0000,\"function_accuracy\":1.0000,"
            "\"line_accuracy\":1.0000,\"score\":1.0000}");
  // The crash site, not the root cause: right file and function, wrong line.
  Score s = ScoreLocations(truth, {{"./record.c", "parse_record", 18, 18}});
  EXPECT_EQ(s.file_accuracy, 1.0);
  EXPECT_EQ(s.function_accuracy, 1.0);
  EXPECT_EQ(s.line_accuracy, 0.0);
  s = ScoreLocations(truth, {{"src/main.c", "main", 12, 12}});
  EXPECT_EQ(s.file_accuracy, 0.0);
  EXPECT_EQ(s.line_accuracy, 0.0);
}

TEST(EvaluationTest, TaskIdsCannotEscapeTheTasksDir) {
  EXPECT_TRUE(IsValidTaskId("heap-overflow-record"));
  EXPECT_FALSE(IsValidTaskId(".."));
  EXPECT_FALSE(IsValidTaskId("../etc"));
  EXPECT_FALSE(IsValidTaskId("a/b"));
  EXPECT_FALSE(IsValidTaskId(""));
}

TEST(EvaluationTest, ExampleBundlesAreComplete) {
  for (const char* id : {"heap-overflow-record", "uaf-list-remove"}) {
    const std::string dir = std::string(COORD_SOURCE_DIR) + "/examples/tasks/" + id;
    absl::StatusOr<std::string> truth = ReadFile(dir + "/ground_truth.json");
    ASSERT_OK(truth);
    EXPECT_OK(ParseLocations(*truth));
    absl::StatusOr<std::string> report = ReadFile(dir + "/crash_report.txt");
    ASSERT_OK(report);
    EXPECT_NE(report->find("ERROR: AddressSanitizer"), std::string::npos) << id;
  }
}

TEST(EvaluationTest, PrepareWorkspaceCopiesSourcesButNotTheGroundTruth) {
  testing_util::TempDir dir;
  const std::string bundle = std::string(COORD_SOURCE_DIR) + "/examples/tasks/heap-overflow-record";
  const std::string ws = dir.Sub("ws");
  ASSERT_OK(PrepareWorkspace(bundle, ws, ws + "/shared"));
  EXPECT_TRUE(std::filesystem::exists(ws + "/src/record.c"));
  EXPECT_TRUE(std::filesystem::exists(ws + "/crash_report.txt"));
  EXPECT_TRUE(std::filesystem::is_directory(ws + "/shared"));
  EXPECT_FALSE(std::filesystem::exists(ws + "/ground_truth.json"));
  // Again: kept as it is (the agent's files survive a green restart).
  ASSERT_OK(WriteFileAtomically(ws + "/shared/loc.json", "{}"));
  ASSERT_OK(PrepareWorkspace(bundle, ws, ws + "/shared"));
  EXPECT_TRUE(std::filesystem::exists(ws + "/shared/loc.json"));
}

// --layout=arvo: the ARVO harness's names, the task text naming them, and answers given under
// src-vul/ scored against ground truths under src/.
TEST(EvaluationTest, TheArvoLayoutNamesTheSourcesAndTheReportAsTheHarnessDid) {
  testing_util::TempDir dir;
  const std::string bundle = std::string(COORD_SOURCE_DIR) + "/examples/tasks/heap-overflow-record";
  const std::string ws = dir.Sub("ws");
  const WorkspaceLayout arvo = WorkspaceLayout::Arvo("14368");
  ASSERT_OK(PrepareWorkspace(bundle, ws, ws + "/shared", arvo));
  EXPECT_TRUE(std::filesystem::exists(ws + "/src-vul/record.c"));
  EXPECT_TRUE(std::filesystem::exists(ws + "/14368_error.txt"));
  EXPECT_FALSE(std::filesystem::exists(ws + "/src"));
  EXPECT_FALSE(std::filesystem::exists(ws + "/crash_report.txt"));
  const std::vector<std::string> task = FormatTask("14368", "the report", TaskLimits(), arvo);
  ASSERT_EQ(task.size(), 2u);
  EXPECT_NE(task[1].find("built from src-vul/ crashed"), std::string::npos) << task[1];
  EXPECT_NE(task[1].find("(also in 14368_error.txt)"), std::string::npos) << task[1];
  EXPECT_NE(task[1].find(R"("file": "src-vul/<file>.c")"), std::string::npos) << task[1];
  // The default layout's text is unchanged.
  const std::vector<std::string> plain = FormatTask("t", "the report", TaskLimits());
  EXPECT_NE(plain[1].find("built from src/ crashed with the report below (also in "
                          "crash_report.txt). Find the root cause"),
            std::string::npos)
      << plain[1];
  const std::vector<Location> truth = {{"src/record.c", "parse_record", 12, 12}};
  const Score score = ScoreLocations(truth, {{"src-vul/record.c", "parse_record", 12, 12}});
  EXPECT_EQ(score.file_accuracy, 1.0);
  EXPECT_EQ(score.function_accuracy, 1.0);
  EXPECT_EQ(score.line_accuracy, 1.0);
}

}  // namespace
}  // namespace green_agent
