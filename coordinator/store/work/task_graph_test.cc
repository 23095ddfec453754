#include "coordinator/store/work/task_graph.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kGraph[] = R"json({
  "feature": "widget-maker",
  "version": 2,
  "tasks": [
    {"id": "WM-001", "title": "Schema", "description": "Define the schema", "level": 1,
     "dependencies": [], "files": {"create": ["db/schema.sql"], "modify": [], "read": ["README"]},
     "verification": {"command": "make check", "timeout_seconds": 30},
     "estimate_hours": 3, "owner": {"team": "data"}},
    {"id": "WM-002", "title": "API", "description": "Serve it", "level": 2,
     "dependencies": ["WM-001"],
     "files": {"create": ["api/server.go"], "modify": ["./db/schema.sql"], "read": []},
     "verification": {"command": "go test ./...", "timeout_seconds": 60}}
  ],
  "levels": {"1": {"name": "storage"}, "2": {"name": "api"}}
})json";

std::vector<v1::WorkItem> ItemsOf(absl::string_view json) {
  absl::StatusOr<ParsedTaskGraph> parsed = ParseTaskGraphJson(json, WorkLimits());
  EXPECT_OK(parsed);
  if (!parsed.ok()) return {};
  return TaskGraphToItems(parsed->graph);
}

// A task graph with the given tasks (JSON objects) and nothing else.
std::string GraphOf(const std::vector<std::string>& tasks) {
  std::string json = R"({"feature": "f", "tasks": [)";
  for (size_t i = 0; i < tasks.size(); ++i) absl::StrAppend(&json, i ? "," : "", tasks[i]);
  return absl::StrCat(json, "]}");
}

absl::Status Validate(absl::string_view json) {
  absl::StatusOr<ParsedTaskGraph> parsed = ParseTaskGraphJson(json, WorkLimits());
  if (!parsed.ok()) return parsed.status();
  std::vector<v1::WorkItem> items = TaskGraphToItems(parsed->graph);
  return NormalizeAndValidateItems(&items, WorkLimits());
}

TEST(TaskGraphTest, ParsesKnownFieldsAndKeepsUnknownOnesAsMetadata) {
  absl::StatusOr<ParsedTaskGraph> parsed = ParseTaskGraphJson(kGraph, WorkLimits());
  ASSERT_OK(parsed);
  const v1::TaskGraph& graph = parsed->graph;
  EXPECT_EQ(graph.feature(), "widget-maker");
  ASSERT_EQ(graph.tasks_size(), 2);
  const v1::TaskGraphTask& first = graph.tasks(0);
  EXPECT_EQ(first.id(), "WM-001");
  EXPECT_EQ(first.level(), 1);
  EXPECT_EQ(first.verification().command(), "make check");
  EXPECT_EQ(first.verification().timeout_seconds(), 30);
  EXPECT_THAT(first.files().read(), ElementsAre("README"));
  ASSERT_TRUE(first.metadata().fields().contains("estimate_hours"));
  EXPECT_EQ(first.metadata().fields().at("estimate_hours").number_value(), 3);
  EXPECT_EQ(first.metadata().fields().at("owner").struct_value().fields().at("team").string_value(),
            "data");
  EXPECT_TRUE(graph.tasks(1).metadata().fields().empty());
  EXPECT_TRUE(parsed->metadata.fields().contains("version"));
  EXPECT_TRUE(graph.levels().struct_value().fields().contains("2"));
}

TEST(TaskGraphTest, CreateAndModifyFilesAreOwned) {
  std::vector<v1::WorkItem> items = ItemsOf(kGraph);
  ASSERT_OK(NormalizeAndValidateItems(&items, WorkLimits()));
  EXPECT_THAT(items[0].owned_files(), ElementsAre("db/schema.sql"));
  // "./db/schema.sql" and "db/schema.sql" are one file; different levels may share it.
  EXPECT_THAT(items[1].owned_files(), ElementsAre("api/server.go", "db/schema.sql"));
}

TEST(TaskGraphTest, RejectsACycleNamingItsTasks) {
  absl::Status s = Validate(GraphOf({
      R"({"id": "A", "level": 1, "dependencies": ["C"]})",
      R"({"id": "B", "level": 1, "dependencies": ["A"]})",
      R"({"id": "C", "level": 1, "dependencies": ["B"]})",
  }));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("cycle"));
  EXPECT_THAT(s.message(), HasSubstr("A -> C -> B -> A"));
}

TEST(TaskGraphTest, RejectsAnUnknownDependency) {
  absl::Status s = Validate(GraphOf({R"({"id": "A", "level": 1, "dependencies": ["WM-999"]})"}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("task A depends on unknown task WM-999"));
}

TEST(TaskGraphTest, RejectsADependencyOnAHigherLevel) {
  absl::Status s = Validate(GraphOf({
      R"({"id": "A", "level": 1, "dependencies": ["B"]})",
      R"({"id": "B", "level": 2})",
  }));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("task A (level 1) depends on task B at higher level 2"));
}

TEST(TaskGraphTest, RejectsAFileOwnedTwiceAtOneLevel) {
  absl::Status s = Validate(GraphOf({
      R"({"id": "A", "level": 1, "files": {"create": ["src/x.cc"]}})",
      R"({"id": "B", "level": 1, "files": {"modify": ["src/x.cc"], "read": ["src/y.cc"]}})",
      R"({"id": "C", "level": 1, "files": {"read": ["src/x.cc"]}})",
  }));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("file src/x.cc is owned by both task A and task B at level 1"));
}

TEST(TaskGraphTest, RejectsMalformedInput) {
  EXPECT_EQ(Validate("{not json").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Validate("[1, 2]").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Validate(R"({"tasks": {"id": "A"}})").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Validate(R"({"tasks": ["A"]})").code(), absl::StatusCode::kInvalidArgument);
  absl::Status wrong_type = Validate(GraphOf({R"({"id": "A", "level": "one"})"}));
  EXPECT_EQ(wrong_type.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(wrong_type.message(), HasSubstr("level"));
  EXPECT_EQ(Validate(R"({"feature": "f", "tasks": []})").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Validate(GraphOf({R"({"title": "no id"})"})).code(),
            absl::StatusCode::kInvalidArgument);
  absl::Status duplicate = Validate(GraphOf({R"({"id": "A"})", R"({"id": "A"})"}));
  EXPECT_THAT(duplicate.message(), HasSubstr("task A appears more than once"));
  EXPECT_THAT(Validate(GraphOf({R"({"id": "A", "dependencies": ["A"]})"})).message(),
              HasSubstr("depends on itself"));
  EXPECT_EQ(Validate(GraphOf({R"({"id": "A", "level": -1})"})).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TaskGraphTest, EnforcesLimits) {
  WorkLimits limits;
  limits.max_graph_json_bytes = 64;
  EXPECT_EQ(ParseTaskGraphJson(kGraph, limits).status().code(),
            absl::StatusCode::kResourceExhausted);

  limits = WorkLimits();
  limits.max_items = 1;
  std::vector<v1::WorkItem> items = ItemsOf(kGraph);
  EXPECT_EQ(NormalizeAndValidateItems(&items, limits).code(), absl::StatusCode::kResourceExhausted);

  limits = WorkLimits();
  limits.max_text_bytes = 4;
  items = ItemsOf(kGraph);
  absl::Status s = NormalizeAndValidateItems(&items, limits);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("task WM-001: description"));
}

TEST(TaskGraphTest, ALongChainIsNotACycle) {
  std::vector<v1::WorkItem> items(5000);
  for (size_t i = 0; i < items.size(); ++i) {
    items[i].set_item_id(absl::StrCat("t", i));
    if (i > 0) items[i].add_dependencies(absl::StrCat("t", i - 1));
  }
  EXPECT_OK(NormalizeAndValidateItems(&items, WorkLimits()));
}

}  // namespace
}  // namespace coordinator
