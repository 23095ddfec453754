#include "green_agent/assessment.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace green_agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kCard[] = "http://127.0.0.1:9009/.well-known/agent-card.json";

lf::a2a::v1::Message DataMessage(const std::string& json) {
  lf::a2a::v1::Message message;
  message.set_message_id("m1");
  message.set_role(lf::a2a::v1::ROLE_USER);
  EXPECT_TRUE(
      google::protobuf::util::JsonStringToMessage(json, message.add_parts()->mutable_data()).ok())
      << json;
  return message;
}

lf::a2a::v1::Message TextMessage(const std::string& text) {
  lf::a2a::v1::Message message;
  message.set_message_id("m1");
  message.set_role(lf::a2a::v1::ROLE_USER);
  message.add_parts()->set_text(text);
  return message;
}

// The error message of parsing `json` as a data part for role "purple" ("" when it parsed).
std::string ErrorOf(const std::string& json) {
  absl::StatusOr<std::optional<AssessmentRequest>> parsed =
      ParseAssessmentRequest(DataMessage(json), "purple");
  if (parsed.ok()) {
    EXPECT_TRUE(parsed->has_value()) << json << " was not taken as an assessment request";
    return "";
  }
  EXPECT_TRUE(absl::IsInvalidArgument(parsed.status())) << parsed.status();
  return std::string(parsed.status().message());
}

TEST(AssessmentTest, ReadsADataPart) {
  absl::StatusOr<std::optional<AssessmentRequest>> parsed = ParseAssessmentRequest(
      DataMessage(
          absl::StrCat(R"({"participants": {"purple": ")", kCard,
                       R"(", "other": "http://x/"}, "config": {"task_ids": ["uaf-list-remove",
                               "heap-overflow-record"]}})")),
      "purple");
  ASSERT_OK(parsed);
  ASSERT_TRUE(parsed->has_value());
  EXPECT_EQ((*parsed)->role, "purple");
  EXPECT_EQ((*parsed)->card_url, kCard);
  EXPECT_THAT((*parsed)->task_ids, ElementsAre("uaf-list-remove", "heap-overflow-record"));
}

TEST(AssessmentTest, ReadsATextPartThatIsTheJsonObject) {
  // What the AgentBeats client sends: the request as JSON text, the participant's base URL.
  lf::a2a::v1::Message message = TextMessage(
      R"(  {"participants": {"judge-me": "https://agents.example/rca/"}, "config": {"task_id": "uaf-list-remove"}} )");
  absl::StatusOr<std::optional<AssessmentRequest>> parsed =
      ParseAssessmentRequest(message, "judge-me");
  ASSERT_OK(parsed);
  ASSERT_TRUE(parsed->has_value());
  EXPECT_EQ((*parsed)->card_url, "https://agents.example/rca/.well-known/agent-card.json");
  EXPECT_THAT((*parsed)->task_ids, ElementsAre("uaf-list-remove"));
}

TEST(AssessmentTest, OtherRequestsAreNotAssessments) {
  for (const lf::a2a::v1::Message& message :
       {TextMessage("Task ID: uaf-list-remove"), TextMessage("execute: ls"),
        TextMessage("{not json at all"), DataMessage(R"({"task_id": "uaf-list-remove"})"),
        DataMessage(R"(["participants"])")}) {
    absl::StatusOr<std::optional<AssessmentRequest>> parsed =
        ParseAssessmentRequest(message, "purple");
    ASSERT_OK(parsed);
    EXPECT_FALSE(parsed->has_value()) << message.DebugString();
  }
}

TEST(AssessmentTest, MissingOrMalformedParticipantsAreRefusedClearly) {
  EXPECT_THAT(ErrorOf(R"({"config": {"task_id": "t"}})"), HasSubstr("\"participants\" is missing"));
  EXPECT_THAT(ErrorOf(R"({"participants": ["http://x/"], "config": {"task_id": "t"}})"),
              HasSubstr("\"participants\" must be an object mapping roles to agent card URLs, "
                        "not a list"));
  EXPECT_THAT(ErrorOf(R"({"participants": {"green": "http://x/", "blue": "http://y/"},
                          "config": {"task_id": "t"}})"),
              HasSubstr("no participant plays the role \"purple\" (roles given: \"blue\", "
                        "\"green\")"));
  EXPECT_THAT(ErrorOf(R"({"participants": {}, "config": {"task_id": "t"}})"),
              HasSubstr("(roles given: none)"));
  EXPECT_THAT(ErrorOf(R"({"participants": {"purple": 7}, "config": {"task_id": "t"}})"),
              HasSubstr("participants.\"purple\" must be an agent card URL string, not a number"));
}

TEST(AssessmentTest, OnlyHttpUrlsAreAccepted) {
  for (const char* url : {"ftp://x/card.json", "file:///etc/passwd", "127.0.0.1:9009",
                          "javascript:alert(1)", "http://", "http:///card.json",
                          "http://user:pw@host/card.json", "http://host/a b", "http://h/#x", ""}) {
    const std::string error = ErrorOf(absl::StrCat(R"({"participants": {"purple": ")", url,
                                                   R"("}, "config": {"task_id": "t"}})"));
    EXPECT_THAT(error, HasSubstr("participants.\"purple\": ")) << url;
  }
  EXPECT_THAT(ErrorOf(R"({"participants": {"purple": "ftp://x/card.json"},
                          "config": {"task_id": "t"}})"),
              HasSubstr("\"ftp://x/card.json\" is not an http:// or https:// URL"));
}

TEST(AssessmentTest, ConfigOfTheWrongShapeIsRefusedClearly) {
  const std::string p = R"("participants": {"purple": "http://h:1/"})";
  EXPECT_THAT(ErrorOf("{" + p + "}"), HasSubstr("\"config\" is missing"));
  EXPECT_THAT(ErrorOf("{" + p + R"(, "config": "uaf-list-remove"})"),
              HasSubstr("\"config\" must be an object such as {\"task_ids\": [\"<id>\"]}, not a "
                        "string"));
  EXPECT_THAT(ErrorOf("{" + p + R"(, "config": {}})"), HasSubstr("config names no task"));
  EXPECT_THAT(ErrorOf("{" + p + R"(, "config": {"task_ids": "t"}})"),
              HasSubstr("config.task_ids must be a list of task id strings, not a string"));
  EXPECT_THAT(ErrorOf("{" + p + R"(, "config": {"task_ids": ["a", 3]}})"),
              HasSubstr("config.task_ids[1] must be a task id string, not a number"));
  EXPECT_THAT(ErrorOf("{" + p + R"(, "config": {"task_ids": ["../etc"]}})"),
              HasSubstr("config.task_ids[0] \"../etc\" is not a task id"));
  EXPECT_THAT(ErrorOf("{" + p + R"(, "config": {"task_ids": ["a", "a"]}})"),
              HasSubstr("config.task_ids[1] names task \"a\" a second time"));
  EXPECT_THAT(ErrorOf("{" + p + R"(, "config": {"task_ids": ["a"], "task_id": "b"}})"),
              HasSubstr("both \"task_ids\" and \"task_id\""));
  EXPECT_THAT(ErrorOf("{" + p + R"(, "config": {"task_idz": ["a"]}})"),
              HasSubstr("unknown field config.\"task_idz\""));
  EXPECT_THAT(ErrorOf("{" + p + R"(, "config": {"task_id": "a"}, "participant": {}})"),
              HasSubstr("unknown field \"participant\""));
  std::string many = "{" + p + R"(, "config": {"task_ids": [)";
  for (size_t i = 0; i <= kMaxAssessmentTasks; ++i)
    many += absl::StrCat(i ? "," : "", "\"t", i, "\"");
  EXPECT_THAT(ErrorOf(many + "]}}"), HasSubstr("at most 64"));
}

TEST(AssessmentTest, BrokenJsonTextThatNamesTheFieldsIsRefused) {
  absl::StatusOr<std::optional<AssessmentRequest>> parsed =
      ParseAssessmentRequest(TextMessage(R"({"participants": {"purple": "http://h/"},)"), "purple");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(std::string(parsed.status().message()),
              HasSubstr("assessment request: the text is not a JSON object"));
}

TEST(AssessmentTest, CardUrls) {
  EXPECT_EQ(*ParticipantCardUrl(kCard), kCard);
  EXPECT_EQ(*ParticipantCardUrl("http://h:1"), "http://h:1/.well-known/agent-card.json");
  EXPECT_EQ(*ParticipantCardUrl("http://h:1/"), "http://h:1/.well-known/agent-card.json");
  EXPECT_EQ(*ParticipantCardUrl("HTTPS://h/agents/x"),
            "HTTPS://h/agents/x/.well-known/agent-card.json");
  EXPECT_EQ(*ParticipantCardUrl("http://h/card.json"), "http://h/card.json");
  EXPECT_EQ(*ParticipantCardUrl("http://h/card?v=1"), "http://h/card?v=1");
  EXPECT_EQ(*ParticipantCardUrl("http://[::1]:8080/"),
            "http://[::1]:8080/.well-known/agent-card.json");
}

TEST(AssessmentTest, AgentNamesAreStableAndValid) {
  const std::string a = ParticipantAgentName("purple", kCard);
  EXPECT_EQ(a, ParticipantAgentName("purple", kCard));
  EXPECT_TRUE(absl::StartsWith(a, "purple-")) << a;
  EXPECT_EQ(a.size(), std::string("purple-").size() + 12);
  EXPECT_NE(a, ParticipantAgentName("purple", "http://127.0.0.1:9010/.well-known/agent-card.json"));
  EXPECT_TRUE(
      absl::StartsWith(ParticipantAgentName("Agent Under Test!", kCard), "agent-under-test-"));
  EXPECT_TRUE(absl::StartsWith(ParticipantAgentName("", kCard), "participant-"));
  EXPECT_TRUE(absl::StartsWith(ParticipantAgentName("\n\t", kCard), "participant-"));
  EXPECT_LE(ParticipantAgentName(std::string(300, 'x'), kCard).size(), 40u + 13u);
}

}  // namespace
}  // namespace green_agent
