#include "coordctl/scenario_file.h"

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/json_test_util.h"
#include "tests/test_util.h"

namespace coordctl {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// As the platforms' own scenario files are written (agentbeats' debate and tau-bench examples).
constexpr char kPlatformScenario[] = R"toml(
# A debate: a judge and two debaters.
[green_agent]
endpoint = "http://127.0.0.1:9009"
cmd = "python scenarios/debate/judge.py --host 127.0.0.1 --port 9009"

[[participants]]
role = "pro_debater"
endpoint = "http://127.0.0.1:9019"
cmd = "python scenarios/debate/debater.py --host 127.0.0.1 --port 9019 --card-url 'http://127.0.0.1:9019/'"

[[ participants ]]
role = "con_debater"
endpoint = "https://[::1]:9029/a2a"

[config]
topic = "Should artificial intelligence be regulated?"
num_rounds = 3
temperature = 0.5
strict = true
task_ids = ["a", "b"]
deadline = 2026-11-29T10:00:00Z
[config.judge]
model = "small"
[[config.rubric]]
name = "clarity"
)toml";

TEST(ScenarioFileTest, ReadsThePlatformsFormat) {
  absl::StatusOr<Scenario> s = ParseScenario(kPlatformScenario);
  ASSERT_OK(s);
  EXPECT_EQ(s->green.role, "green_agent");
  EXPECT_EQ(s->green.host, "127.0.0.1");
  EXPECT_EQ(s->green.port, 9009);
  EXPECT_EQ(s->green.line, 3);
  EXPECT_THAT(s->green.cmd, ElementsAre("python", "scenarios/debate/judge.py", "--host",
                                        "127.0.0.1", "--port", "9009"));
  ASSERT_EQ(s->participants.size(), 2u);
  EXPECT_EQ(s->participants[0].role, "pro_debater");
  EXPECT_EQ(s->participants[0].line, 7);
  EXPECT_EQ(s->participants[0].cmd.back(), "http://127.0.0.1:9019/");
  EXPECT_EQ(s->participants[1].role, "con_debater");
  EXPECT_EQ(s->participants[1].host, "[::1]");
  EXPECT_EQ(s->participants[1].port, 9029);
  EXPECT_EQ(s->participants[1].endpoint, "https://[::1]:9029/a2a");
  EXPECT_TRUE(s->participants[1].cmd.empty());
  EXPECT_EQ(s->participants[1].line, 12);
  const auto& config = s->config.fields();
  EXPECT_EQ(config.at("topic").string_value(), "Should artificial intelligence be regulated?");
  EXPECT_EQ(config.at("num_rounds").number_value(), 3);
  EXPECT_EQ(config.at("temperature").number_value(), 0.5);
  EXPECT_TRUE(config.at("strict").bool_value());
  ASSERT_EQ(config.at("task_ids").list_value().values_size(), 2);
  EXPECT_EQ(config.at("task_ids").list_value().values(1).string_value(), "b");
  EXPECT_THAT(config.at("deadline").string_value(), HasSubstr("2026-11-29T10:00:00"));
  EXPECT_EQ(config.at("judge").struct_value().fields().at("model").string_value(), "small");
  EXPECT_EQ(
      config.at("rubric").list_value().values(0).struct_value().fields().at("name").string_value(),
      "clarity");
}

TEST(ScenarioFileTest, WithoutConfigTheConfigIsEmpty) {
  absl::StatusOr<Scenario> s = ParseScenario(R"toml(
[green_agent]
endpoint = "http://localhost:9009"
[[participants]]
role = "agent"
endpoint = "http://localhost:9019"
)toml");
  ASSERT_OK(s);
  EXPECT_TRUE(s->config.fields().empty());
  EXPECT_TRUE(s->green.cmd.empty());
}

// Each bad file is refused with the line and what is wrong.
TEST(ScenarioFileTest, BadFilesAreRefusedWithTheLineAndWhatIsWrong) {
  const std::string green = "[green_agent]\nendpoint = \"http://127.0.0.1:9009\"\n";
  const std::string purple = "[[participants]]\nrole = \"purple\"\nendpoint = \"http://h:9019\"\n";
  struct Case {
    std::string text;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"", "no [green_agent] table"},
      {"[green_agent\nendpoint = 1", "not a TOML file"},
      {green + "x = = 1\n", "at line 3"},
      {"green_agent = \"http://h:1\"\n" + purple, "green_agent must be a table"},
      {"[green_agent]\ncmd = \"run\"\n" + purple, "line 1: [green_agent] has no `endpoint`"},
      {"[green_agent]\nendpoint = 9009\n" + purple, "`endpoint` must be a string"},
      {"[green_agent]\nendpoint = \"http://127.0.0.1\"\n" + purple, "has no port"},
      {"[green_agent]\nendpoint = \"http://127.0.0.1:0\"\n" + purple, "port from 1 to 65535"},
      {"[green_agent]\nendpoint = \"http://127.0.0.1:70000\"\n" + purple, "1 to 65535"},
      {"[green_agent]\nendpoint = \"ftp://h:21\"\n" + purple, "must start with http://"},
      {"[green_agent]\nendpoint = \"http://u:p@h:1\"\n" + purple, "has credentials"},
      {"[green_agent]\nendpoint = \"http://:1\"\n" + purple, "has no host"},
      {"[green_agent]\nendpoint = \"http://h:1/a b\"\n" + purple, "blank or control"},
      {"[green_agent]\nendpoint = \"http://h:1\"\ncmd = \"run 'x\"\n" + purple,
       "unterminated single quote"},
      {"[green_agent]\nendpoint = \"http://h:1\"\ncmd = \"  \"\n" + purple, "cmd is empty"},
      {"[green_agent]\nendpoint = \"http://h:1\"\ncmd = 3\n" + purple, "`cmd` must be a string"},
      {green, "no [[participants]] table"},
      {green + "[participants]\nrole = \"x\"\n", "line 3: participants must be [[participants]]"},
      {green + "[[participants]]\nendpoint = \"http://h:9019\"\n", "line 3: participant 1 has no"},
      {green + "[[participants]]\nrole = \"a b\"\nendpoint = \"http://h:2\"\n", "role \"a b\""},
      {green + "[[participants]]\nrole = \"\"\nendpoint = \"http://h:2\"\n", "must be 1 to 64"},
      {green + purple + purple, "line 6: role \"purple\" is given twice"},
      {green + "[[participants]]\nrole = \"green_agent\"\nendpoint = \"http://h:2\"\n",
       "names the green agent"},
      {green + "[[participants]]\nrole = \"p\"\nendpoint = \"http://127.0.0.1:9009\"\n",
       "line 3: participant \"p\": 127.0.0.1:9009 is another agent's endpoint too"},
      {"config = 3\n" + green + purple, "config must be a table"},
      {green + purple + "[config]\nx = " + std::string(100, '[') + std::string(100, ']'),
       "nests arrays or tables deeper than 32"},
      {green + purple + std::string("[config]\nx = \"a\0b\"\n", 19), "NUL byte"},
      {green + purple + std::string(kMaxScenarioBytes, '#'), "at most 1048576"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Scenario> s = ParseScenario(c.text);
    ASSERT_FALSE(s.ok()) << c.message << "\n" << c.text;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(s.status().message(), HasSubstr(c.message)) << c.text;
  }
}

TEST(ScenarioFileTest, TheExamplesAreValidScenarios) {
  int examples = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(absl::StrCat(COORD_SOURCE_DIR, "/examples/scenarios"))) {
    if (entry.path().extension() != ".toml") continue;
    ++examples;
    absl::StatusOr<Scenario> s = ParseScenario(testing_util::ReadWholeFile(entry.path().string()));
    EXPECT_TRUE(s.ok()) << entry.path() << ": " << s.status();
  }
  EXPECT_GT(examples, 0);
}

// Deep nesting of any kind stops before the parser's recursion can exhaust the stack; brackets in
// strings and comments are not nesting.
TEST(ScenarioFileTest, HostileNestingIsRefusedBeforeParsing) {
  const std::string head =
      "[green_agent]\nendpoint = \"http://h:1\"\n[[participants]]\nrole = \"p\"\n"
      "endpoint = \"http://h:2\"\n[config]\n";
  for (const char* open : {"[", "{a="}) {
    std::string text = head + "x = ";
    for (int i = 0; i < 100000; ++i) text += open;
    absl::StatusOr<Scenario> s = ParseScenario(text);
    EXPECT_THAT(s.status().message(), HasSubstr("deeper than")) << open;
  }
  absl::StatusOr<Scenario> fine =
      ParseScenario(head + "x = \"" + std::string(100, '[') + "\" # " + std::string(100, '{') +
                    "\ny = '''\n" + std::string(100, '[') + "\n'''\n");
  ASSERT_OK(fine);
  EXPECT_EQ(fine->config.fields().at("x").string_value(), std::string(100, '['));
}

}  // namespace
}  // namespace coordctl
