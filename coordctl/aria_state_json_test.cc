#include "coordctl/aria_state_json.h"

#include <sys/stat.h>

#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace coordctl {
namespace {

using ::testing::HasSubstr;
using ::testing_util::TempDir;

constexpr char kSample[] = R"({
  "task_id": "257cb146",
  "task_desc": "Fix the login bug",
  "attempt_count": 2,
  "model_tier": 2,
  "created_at": "1700000000",
  "failures": [
    {"attempt": 1, "error": "Timeout after 30s", "model": "codex-mini", "timestamp": "1700000100"},
    {"attempt": 2, "error": "Rate limit exceeded", "model": "gpt-5.1", "timestamp": 1700000300}
  ],
  "escalation_log": [
    {"timestamp": "1700000200", "reason": "timeouts", "from_tier": 1, "to_tier": 2},
    {"timestamp": "1700000250", "reason": "loop", "forced": true, "from_tier": 2, "to_tier": 2}
  ],
  "quality_gate_results": [
    {"check": "lint", "passed": false, "detail": "3 errors", "timestamp": "1700000400"}
  ],
  "priority": "high",
  "budget": 5,
  "ratio": 0.5,
  "flaky": true,
  "owner": null,
  "meta": {"team": "web", "tags": ["a", "b"]}
})";

TEST(AriaStateJsonTest, ParsesEveryKnownField) {
  auto state = ParseAriaStateJson(kSample);
  ASSERT_OK(state);
  EXPECT_EQ(state->task_id(), "257cb146");
  EXPECT_EQ(state->description(), "Fix the login bug");
  EXPECT_EQ(state->attempt_count(), 2);
  EXPECT_EQ(state->model_tier(), 2);
  EXPECT_EQ(state->create_time().seconds(), 1700000000);
  ASSERT_EQ(state->failures_size(), 2);
  EXPECT_EQ(state->failures(0).attempt(), 1);
  EXPECT_EQ(state->failures(0).error(), "Timeout after 30s");
  EXPECT_EQ(state->failures(0).model(), "codex-mini");
  EXPECT_EQ(state->failures(0).time().seconds(), 1700000100);
  EXPECT_EQ(state->failures(1).time().seconds(), 1700000300);  // a number works too
  ASSERT_EQ(state->escalation_log_size(), 2);
  EXPECT_EQ(state->escalation_log(0).reason(), "timeouts");
  EXPECT_EQ(state->escalation_log(0).from_tier(), 1);
  EXPECT_EQ(state->escalation_log(0).to_tier(), 2);
  EXPECT_FALSE(state->escalation_log(0).forced());
  EXPECT_TRUE(state->escalation_log(1).forced());
  ASSERT_EQ(state->quality_gate_results_size(), 1);
  EXPECT_EQ(state->quality_gate_results(0).check(), "lint");
  EXPECT_FALSE(state->quality_gate_results(0).passed());
  EXPECT_EQ(state->quality_gate_results(0).detail(), "3 errors");
  EXPECT_FALSE(state->blocked());
}

TEST(AriaStateJsonTest, OtherKeysBecomeCustomFields) {
  auto state = ParseAriaStateJson(kSample);
  ASSERT_OK(state);
  const auto& custom = state->custom_fields();
  EXPECT_EQ(custom.size(), 5u);
  EXPECT_EQ(custom.at("priority"), "high");
  EXPECT_EQ(custom.at("budget"), "5");
  EXPECT_EQ(custom.at("ratio"), "0.5");
  EXPECT_EQ(custom.at("flaky"), "true");
  EXPECT_FALSE(custom.contains("owner"));  // null is dropped
  EXPECT_THAT(custom.at("meta"), HasSubstr("\"team\":\"web\""));
  EXPECT_THAT(custom.at("meta"), HasSubstr("[\"a\",\"b\"]"));
}

TEST(AriaStateJsonTest, BlockedFieldsAndDefaults) {
  auto state = ParseAriaStateJson(R"({"task_id": "abc12345", "task_desc": "d",
      "attempt_count": "3", "created_at": 1700000000, "failures": [],
      "blocked": true, "blocked_at": "1700000900", "block_reason": "looping"})");
  ASSERT_OK(state);
  EXPECT_EQ(state->attempt_count(), 3);  // a number written as a string
  EXPECT_EQ(state->model_tier(), 1);     // absent: tier 1, as the scripts read it
  EXPECT_TRUE(state->blocked());
  EXPECT_EQ(state->blocked_time().seconds(), 1700000900);
  EXPECT_EQ(state->block_reason(), "looping");
}

TEST(AriaStateJsonTest, MalformedFilesAreRejectedWithAReason) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "not a JSON object"},
      {"{\"task_id\": \"abc", "not a JSON object"},
      {"[1, 2, 3]", "not a JSON object"},
      {"\"just a string\"", "not a JSON object"},
      {R"({"task_desc": "d", "created_at": "1"})", "task_id is missing"},
      {R"({"task_id": "x", "created_at": "1"})", "task_desc is missing"},
      {R"({"task_id": "x", "task_desc": "d"})", "created_at"},
      {R"({"task_id": "x", "task_desc": "d", "created_at": "yesterday"})", "created_at"},
      {R"({"task_id": "x", "task_desc": "d", "created_at": "1", "attempt_count": "many"})",
       "wrong type"},
      {R"({"task_id": "x", "task_desc": "d", "created_at": "1", "attempt_count": 2.5})",
       "wrong type"},
      {R"({"task_id": "x", "task_desc": "d", "created_at": "1", "failures": "none"})",
       "wrong type"},
      {R"({"task_id": "x", "task_desc": "d", "created_at": "1", "failures": [{"error": "e"}]})",
       "failures[0].timestamp"},
      {R"({"task_id": 12345678, "task_desc": "d", "created_at": "1"})", "wrong type"},
      {R"({"task_id": "x", "task_desc": "d", "created_at": "1", "model_tier": 1e99})",
       "wrong type"},
  };
  for (const auto& [json, why] : cases) {
    auto state = ParseAriaStateJson(json);
    EXPECT_EQ(state.status().code(), absl::StatusCode::kInvalidArgument) << json;
    EXPECT_THAT(std::string(state.status().message()), HasSubstr(why)) << json;
  }
}

TEST(AriaStateJsonTest, HostileNestingIsRejectedNotFollowed) {
  std::string deep = R"({"task_id": "x", "task_desc": "d", "created_at": "1", "deep": )";
  // Half a megabyte of brackets: refused up front (Protobuf's parser would take minutes).
  deep += std::string(250000, '[') + std::string(250000, ']') + "}";
  auto state = ParseAriaStateJson(deep);
  EXPECT_EQ(state.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(state.status().message()), HasSubstr("nests deeper"));
  // Brackets inside strings do not count; modest nesting is fine.
  auto fine =
      ParseAriaStateJson(R"({"task_id": "x", "task_desc": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
      "created_at": "1", "extra": {"a": [[{"b": "a\"]]]]"}]]}})");
  ASSERT_OK(fine);
  EXPECT_THAT(fine->custom_fields().at("extra"), HasSubstr("a\\\"]]]]"));
}

TEST(AriaStateJsonTest, FormatIsTheFileShapeAndRoundTrips) {
  auto state = ParseAriaStateJson(kSample);
  ASSERT_OK(state);
  const std::string json = FormatAriaStateJson(*state);
  EXPECT_THAT(json, HasSubstr("\"task_id\": \"257cb146\""));
  EXPECT_THAT(json, HasSubstr("\"attempt_count\": 2"));
  EXPECT_THAT(json, HasSubstr("\"created_at\": \"1700000000\""));
  EXPECT_THAT(json, HasSubstr("\"budget\": 5"));  // digits print as a number, as `set` wrote
  EXPECT_THAT(json, HasSubstr("\"forced\":true"));
  EXPECT_THAT(json, ::testing::Not(HasSubstr("\"forced\":false")));
  EXPECT_THAT(json, ::testing::Not(HasSubstr("\"blocked\"")));
  auto again = ParseAriaStateJson(json);
  ASSERT_OK(again);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*again, *state))
      << again->DebugString() << "\nvs\n"
      << state->DebugString();
}

// A custom field of digits prints as a number of any length, its digits as stored (a reader
// such as jq takes it as the double the original's jq stored); a leading zero keeps a string.
TEST(AriaStateJsonTest, DigitsOfAnyLengthPrintAsTheNumberTheyWrite) {
  coordinator::v1::TaskState state;
  state.set_task_id("cc6b6bad");
  state.set_description("digits");
  state.set_model_tier(1);
  (*state.mutable_custom_fields())["big"] = "99999999999999999999";
  (*state.mutable_custom_fields())["zero"] = "0";
  (*state.mutable_custom_fields())["padded"] = "007";
  (*state.mutable_custom_fields())["text"] = "12a";
  const std::string json = FormatAriaStateJson(state);
  EXPECT_THAT(json, HasSubstr("\"big\": 99999999999999999999"));
  EXPECT_THAT(json, HasSubstr("\"zero\": 0"));
  EXPECT_THAT(json, HasSubstr("\"padded\": \"007\""));
  EXPECT_THAT(json, HasSubstr("\"text\": \"12a\""));
}

TEST(AriaStateJsonTest, ReadBoundedFile) {
  TempDir dir;
  const std::string small = dir.Sub("small.json");
  std::ofstream(small) << "{}";
  auto text = ReadBoundedFile(small, 10);
  ASSERT_OK(text);
  EXPECT_EQ(*text, "{}");
  const std::string big = dir.Sub("big.json");
  std::ofstream(big) << std::string(11, 'x');
  EXPECT_EQ(ReadBoundedFile(big, 10).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_OK(ReadBoundedFile(big, 11));
  EXPECT_EQ(ReadBoundedFile(dir.Sub("missing.json"), 10).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(ReadBoundedFile(dir.path(), 10).status().code(), absl::StatusCode::kInvalidArgument);
  const std::string fifo = dir.Sub("fifo.json");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(ReadBoundedFile(fifo, 10).status().code(), absl::StatusCode::kInvalidArgument);
}

// blocked.json as the breaker script writes it (two breaks of one task, an analysis that
// failed and left {}), plus what jq would also have accepted: numbers for the times.
constexpr char kBlocked[] = R"json({"blocked_tasks": [
  {"task_id": "30f85d1a", "task_desc": "Implement React component", "reason": "Same error",
   "blocked_at": "1795518416", "attempts": 4, "final_tier": 2,
   "analysis": {"task_id": "30f85d1a", "task_desc": "Implement React component",
                "pattern_type": "repeated_error", "attempt_count": 4, "current_tier": 2,
                "current_model": "2", "escalations_done": 1, "repeated_error_count": 4,
                "latest_error": "TypeError: x", "analysis_timestamp": "1795518415",
                "suggested_action": "Force escalate 2 tiers (skip ineffective middle tier)"}},
  {"task_id": "5b60c329", "task_desc": "Migrate", "reason": "first break",
   "blocked_at": 1795518417, "attempts": 1, "final_tier": 1, "analysis": {}},
  {"task_id": "75ba6a6b", "task_desc": "Tidy", "reason": "no failures",
   "blocked_at": "1795518418", "attempts": 0, "final_tier": 1,
   "analysis": {"pattern_type": "unknown", "analysis_timestamp": 1795518418, "extra": [1]}},
  {"task_id": "5b60c329", "task_desc": "Migrate", "reason": "broken twice",
   "blocked_at": "1795518419", "attempts": 2, "final_tier": 1, "analysis": {}}
]})json";

TEST(AriaBlockedJsonTest, ParsesEntriesAndKeepsTheLastOfATask) {
  auto blocks = ParseAriaBlockedJson(kBlocked);
  ASSERT_OK(blocks);
  ASSERT_EQ(blocks->size(), 3u);
  const auto& first = (*blocks)[0];
  EXPECT_EQ(first.entry().task_id(), "30f85d1a");
  EXPECT_EQ(first.entry().task_desc(), "Implement React component");
  EXPECT_EQ(first.entry().reason(), "Same error");
  EXPECT_EQ(first.entry().blocked_time().seconds(), 1795518416);
  EXPECT_EQ(first.entry().attempt_count(), 4);
  EXPECT_EQ(first.entry().final_tier(), 2);
  EXPECT_EQ(first.entry().pattern_type(), "repeated_error");
  EXPECT_TRUE(first.summary().empty());
  ASSERT_TRUE(first.has_analysis());
  const auto& a = first.analysis().analysis();
  EXPECT_EQ(a.pattern(), coordinator::v1::LOOP_PATTERN_REPEATED_ERROR);
  EXPECT_EQ(a.current_model(), "2");
  EXPECT_EQ(a.escalations_done(), 1);
  EXPECT_EQ(a.repeated_error_count(), 4);
  EXPECT_EQ(a.latest_error(), "TypeError: x");
  EXPECT_EQ(a.suggested_action(), "Force escalate 2 tiers (skip ineffective middle tier)");
  EXPECT_EQ(first.analysis().time().seconds(), 1795518415);
  EXPECT_EQ(first.analysis().source(), "aria-scripts");

  // The third entry (unknown keys dropped, a number for the time).
  const auto& tidy = (*blocks)[1];
  EXPECT_EQ(tidy.entry().task_id(), "75ba6a6b");
  EXPECT_EQ(tidy.entry().pattern_type(), "unknown");
  ASSERT_TRUE(tidy.has_analysis());
  EXPECT_EQ(tidy.analysis().analysis().pattern(), coordinator::v1::LOOP_PATTERN_NONE);
  EXPECT_EQ(tidy.analysis().time().seconds(), 1795518418);

  // 5b60c329 was broken twice: its last entry, at the place of that entry; {} keeps no
  // analysis and reads as pattern "unknown".
  const auto& twice = (*blocks)[2];
  EXPECT_EQ(twice.entry().task_id(), "5b60c329");
  EXPECT_EQ(twice.entry().reason(), "broken twice");
  EXPECT_EQ(twice.entry().attempt_count(), 2);
  EXPECT_EQ(twice.entry().pattern_type(), "unknown");
  EXPECT_FALSE(twice.has_analysis());
}

TEST(AriaBlockedJsonTest, AnEmptyFileHasNoEntries) {
  // The script's jq failure left blocked.json empty; its status then said "No blocked tasks".
  for (const char* text : {"", "  \n", R"({"blocked_tasks": []})"}) {
    auto blocks = ParseAriaBlockedJson(text);
    ASSERT_OK(blocks);
    EXPECT_TRUE(blocks->empty()) << text;
  }
}

TEST(AriaBlockedJsonTest, RefusesBadFilesWithTheEntryNamed) {
  const std::string huge_id(300, 'a');
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{", "not a JSON object"},
      {"[]", "not a JSON object"},
      {R"({"tasks": []})", "no \"blocked_tasks\" array"},
      {R"({"blocked_tasks": {}})", "no \"blocked_tasks\" array"},
      {R"({"blocked_tasks": [{"task_id": "a", "blocked_at": "1", "attempts": "many"}]})",
       "wrong type"},
      {R"({"blocked_tasks": [{"task_desc": "x", "blocked_at": "1"}]})",
       "blocked_tasks[0]: task_id is missing"},
      {R"({"blocked_tasks": [{"task_id": "../../etc/passwd", "blocked_at": "1"}]})",
       "blocked_tasks[0]: task_id \"../../etc/passwd\" cannot name a summary file"},
      {R"({"blocked_tasks": [{"task_id": "..", "blocked_at": "1"}]})", "cannot name"},
      {R"({"blocked_tasks": [{"task_id": "a\u0001b", "blocked_at": "1"}]})", "control character"},
      {absl::StrCat(R"({"blocked_tasks": [{"task_id": ")", huge_id, R"(", "blocked_at": "1"}]})"),
       "300 bytes long"},
      {R"({"blocked_tasks": [{"task_id": "ok", "blocked_at": "1"}, {"task_id": "b"}]})",
       "blocked_tasks[1]: blocked_at must be Unix seconds"},
      {R"({"blocked_tasks": [{"task_id": "a", "blocked_at": "soon"}]})",
       "blocked_at must be Unix seconds"},
      {R"({"blocked_tasks": [{"task_id": "a", "blocked_at": "1", "attempts": -1}]})",
       "must not be negative"},
      {R"({"blocked_tasks": [{"task_id": "a", "blocked_at": "1",
           "analysis": {"analysis_timestamp": "yesterday"}}]})",
       "analysis.analysis_timestamp must be Unix seconds"},
      {std::string(100, '[') + std::string(100, ']'), "nests deeper"},
  };
  for (const auto& [text, message] : cases) {
    auto blocks = ParseAriaBlockedJson(text);
    EXPECT_EQ(blocks.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(blocks.status().message(), HasSubstr(message)) << text;
  }
}

}  // namespace
}  // namespace coordctl
