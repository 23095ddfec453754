// The names of a scenario run, read back as they were made, and the score of an assessment from
// the artifacts of green agents we did not write: data parts, JSON text, a score artifact among
// per-task ones, and artifacts that hold no number or a hostile one.
#include "a2a_protocol/scenario_run.h"

#include <limits>
#include <string>

#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace a2a_protocol {
namespace {

namespace a2apb = ::lf::a2a::v1;

a2apb::Task TaskOf(const std::string& text_proto) {
  a2apb::Task task;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text_proto, &task)) << text_proto;
  return task;
}

TEST(ScenarioRunTest, NamesReadBackAsTheyWereMade) {
  EXPECT_EQ(ScenarioAgentName("sc-1f", "green_agent"), "sc-1f.green_agent");
  EXPECT_EQ(ScenarioRunOfGreenAgent(ScenarioAgentName("sc-1f", kScenarioGreenRole)), "sc-1f");
  EXPECT_EQ(ScenarioRunOfGreenAgent("a.b.green_agent"), "a.b");
  for (const char* other : {"sc-1f.purple", "green_agent", ".green_agent", "x green.green_agent",
                            "sc-1fgreen_agent", ""}) {
    EXPECT_EQ(ScenarioRunOfGreenAgent(other), std::nullopt) << other;
  }
  EXPECT_EQ(ScenarioRunOfGreenAgent(std::string(65, 'a') + ".green_agent"), std::nullopt);

  EXPECT_EQ(ScenarioContext("r"), "scenario-r");
  EXPECT_EQ(ScenarioAssessmentContext("r", 2, 0), "scenario-r-s2-r0");
  EXPECT_TRUE(InScenarioRun("scenario-r", "r"));
  EXPECT_TRUE(InScenarioRun(ScenarioAssessmentContext("r", 3, 1), "r"));
  EXPECT_FALSE(InScenarioRun("scenario-rr", "r"));
  EXPECT_FALSE(InScenarioRun("scenario-r-x", "r"));
  EXPECT_FALSE(InScenarioRun("r", "r"));
  EXPECT_FALSE(InScenarioRun("other-scenario-r", "r"));

  EXPECT_TRUE(ValidScenarioRunId("sc-3f1c2a9b0d4e"));
  EXPECT_TRUE(ValidScenarioRunId("a_b.c-d"));
  for (const std::string bad : {std::string(), std::string(65, 'x'), std::string("a/b"),
                                std::string("a b"), std::string("a\0b", 3)}) {
    EXPECT_FALSE(ValidScenarioRunId(bad)) << bad;
  }
}

TEST(AssessmentScoreTest, FromADataPartOrJsonText) {
  EXPECT_EQ(AssessmentScore(TaskOf(R"pb(
              artifacts {
                artifact_id: "result"
                parts {
                  data {
                    struct_value {
                      fields {
                        key: "score"
                        value { number_value: 0.75 }
                      }
                    }
                  }
                }
              })pb")),
            0.75);
  EXPECT_EQ(AssessmentScore(TaskOf(R"pb(
              artifacts {
                artifact_id: "result"
                parts { text: "  {\"score\": 2, \"details\": [1, 2]}\n" }
              })pb")),
            2);
}

// Our green agent sends a score per task, then the mean as "score": the mean counts.
TEST(AssessmentScoreTest, TheScoreArtifactWinsElseTheLastWithOne) {
  const std::string per_task = R"pb(
    artifacts {
      artifact_id: "score-a"
      parts { text: "{\"score\": 1}" }
    }
    artifacts {
      artifact_id: "score-b"
      parts { text: "{\"score\": 0}" }
    }
  )pb";
  EXPECT_EQ(AssessmentScore(TaskOf(per_task)), 0);
  EXPECT_EQ(AssessmentScore(TaskOf(per_task + R"pb(
              artifacts {
                artifact_id: "x"
                name: "score"
                parts { text: "{\"score\": 0.5}" }
              }
              artifacts {
                artifact_id: "log"
                parts { text: "{\"score\": 9}" }
              }
            )pb")),
            0.5);
}

TEST(AssessmentScoreTest, NoNumberNoScore) {
  EXPECT_EQ(AssessmentScore(a2apb::Task()), std::nullopt);
  for (const char* text : {"plain words", "{\"score\": \"1\"}", "{\"score\": null}",
                           "{\"scores\": 1}", "{\"result\": {\"score\": 1}}", "[{\"score\": 1}]",
                           "{\"score\": 1", "{\"score\": 1e999}", "{\"score\": NaN}", "{"}) {
    a2apb::Task task;
    task.add_artifacts()->add_parts()->set_text(text);
    EXPECT_EQ(AssessmentScore(task), std::nullopt) << text;
  }
  a2apb::Task list_data = TaskOf(R"pb(
    artifacts { parts { data { list_value { values { number_value: 1 } } } } }
  )pb");
  EXPECT_EQ(AssessmentScore(list_data), std::nullopt);
  a2apb::Task infinite;
  (*infinite.add_artifacts()
        ->add_parts()
        ->mutable_data()
        ->mutable_struct_value()
        ->mutable_fields())["score"]
      .set_number_value(std::numeric_limits<double>::infinity());
  EXPECT_EQ(AssessmentScore(infinite), std::nullopt);
}

// A text part past 1 MiB is not parsed, whatever it holds.
TEST(AssessmentScoreTest, AnOversizedTextIsNotRead) {
  a2apb::Task task;
  task.add_artifacts()->add_parts()->set_text("{\"score\": 1, \"pad\": \"" +
                                              std::string(1 << 20, 'x') + "\"}");
  EXPECT_EQ(AssessmentScore(task), std::nullopt);
  task.add_artifacts()->add_parts()->set_text("{\"score\": 0.25}");
  EXPECT_EQ(AssessmentScore(task), 0.25);
}

}  // namespace
}  // namespace a2a_protocol
