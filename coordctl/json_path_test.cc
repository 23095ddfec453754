#include "coordctl/json_path.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace coordctl {
namespace {

using ::testing::HasSubstr;

constexpr char kState[] = R"({"task_id":"ab12cd34","attempt_count":2,"model_tier":3,
  "failures":[{"attempt":1,"error":"first"},{"attempt":2,"error":"second"}],
  "escalation_log":[],"blocked":false,"note":null,"nested":{"a":{"b":"deep"}},"ratio":0.5})";

std::optional<std::string> Read(absl::string_view path) {
  absl::StatusOr<std::vector<JsonPathStep>> steps = ParseJsonPath(path);
  EXPECT_TRUE(steps.ok()) << steps.status();
  absl::StatusOr<std::optional<std::string>> value = ReadJsonPath(kState, *steps);
  EXPECT_TRUE(value.ok()) << value.status();
  return value.ok() ? *value : std::nullopt;
}

TEST(JsonPathTest, ReadsFieldsAndPathsAsJqDoes) {
  EXPECT_EQ(Read("task_id"), "ab12cd34");
  EXPECT_EQ(Read(".task_id"), "ab12cd34");
  EXPECT_EQ(Read("attempt_count"), "2");
  EXPECT_EQ(Read("ratio"), "0.5");
  EXPECT_EQ(Read("failures[0].error"), "first");
  EXPECT_EQ(Read("failures[-1].error"), "second");
  EXPECT_EQ(Read("nested.a.b"), "deep");
  EXPECT_EQ(Read("nested.a"), R"({"b":"deep"})");
  EXPECT_EQ(Read("escalation_log"), "[]");
}

TEST(JsonPathTest, NothingWhereJqPrintsNothing) {
  EXPECT_EQ(Read("missing"), std::nullopt);
  EXPECT_EQ(Read("failures[2].error"), std::nullopt);
  EXPECT_EQ(Read("failures[-3]"), std::nullopt);
  EXPECT_EQ(Read("blocked"), std::nullopt);  // false
  EXPECT_EQ(Read("note"), std::nullopt);     // null
  EXPECT_EQ(Read("task_id.x"), std::nullopt);
  EXPECT_EQ(Read("attempt_count[0]"), std::nullopt);
}

TEST(JsonPathTest, RefusesWhatIsNotAPath) {
  for (const char* bad : {"", ".", "a.", "a..b", "1a", "a[", "a[]", "a[x]", "a[1", "a | env", "a,b",
                          "a[0]b", "$__loc__", "a[+1]", ".[0]"}) {
    absl::StatusOr<std::vector<JsonPathStep>> steps = ParseJsonPath(bad);
    EXPECT_FALSE(steps.ok()) << bad;
    if (!steps.ok()) {
      EXPECT_EQ(steps.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(steps.status().message(), HasSubstr("is not a field path"));
    }
  }
}

TEST(JsonPathTest, ReadRefusesWhatIsNotJson) {
  absl::StatusOr<std::optional<std::string>> value = ReadJsonPath("{not json", {"a"});
  EXPECT_EQ(value.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(JsonPathTest, PrettyLaysOutAsJq) {
  EXPECT_EQ(PrettyJson(R"({"a":[],"b":{},"c":[1,{"d":"x, y: [z]"}],"e":"q\"{"})"),
            "{\n  \"a\": [],\n  \"b\": {},\n  \"c\": [\n    1,\n    {\n      \"d\": \"x, y: "
            "[z]\"\n    }\n  ],\n  \"e\": \"q\\\"{\"\n}\n");
  EXPECT_EQ(PrettyJson("{\n  \"a\": [\n    {\"b\":1}\n  ]\n}\n"),
            "{\n  \"a\": [\n    {\n      \"b\": 1\n    }\n  ]\n}\n");
}

}  // namespace
}  // namespace coordctl
