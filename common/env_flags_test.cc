#include "common/env_flags.h"

#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

ABSL_FLAG(std::string, envtest_text, "default", "a string flag for the tests");
ABSL_FLAG(int, envtest_count, 7, "an int flag for the tests");
ABSL_FLAG(bool, envtest_switch, false, "a bool flag for the tests");
ABSL_FLAG(absl::Duration, envtest_period, absl::Seconds(1), "a duration flag for the tests");

namespace common {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(UnderscoreFlagNamesTest, HyphensOfAKnownFlagsNameBecomeUnderscores) {
  EXPECT_THAT(UnderscoreFlagNames({"--envtest-text=a-b", "--envtest-count", "5", "-envtest-switch",
                                   "--envtest_period=2s"}),
              ElementsAre("--envtest_text=a-b", "--envtest_count", "5", "-envtest_switch",
                          "--envtest_period=2s"));
  // A value or an unknown flag stays as it is, and so does everything after "--".
  EXPECT_THAT(UnderscoreFlagNames({"--envtest-text", "-not-a-flag", "--no-such-flag=x", "-", "--",
                                   "--envtest-count=1"}),
              ElementsAre("--envtest_text", "-not-a-flag", "--no-such-flag=x", "-", "--",
                          "--envtest-count=1"));
}

TEST(EnvVarNameTest, PrefixAndUpperCaseName) {
  EXPECT_EQ(EnvVarName("COORDINATOR_", "data_dir"), "COORDINATOR_DATA_DIR");
  EXPECT_EQ(EnvVarName("GREEN_AGENT_", "listen"), "GREEN_AGENT_LISTEN");
}

TEST(ApplyEnvFlagsTest, SetsEachTypeOfFlag) {
  absl::FlagSaver saver;
  absl::StatusOr<EnvFlagsResult> r =
      ApplyEnvFlags("ENVTEST_", {"ENVTEST_ENVTEST_TEXT=from env", "ENVTEST_ENVTEST_COUNT=42",
                                 "ENVTEST_ENVTEST_SWITCH=true", "ENVTEST_ENVTEST_PERIOD=250ms"});
  ASSERT_OK(r.status());
  EXPECT_EQ(absl::GetFlag(FLAGS_envtest_text), "from env");
  EXPECT_EQ(absl::GetFlag(FLAGS_envtest_count), 42);
  EXPECT_TRUE(absl::GetFlag(FLAGS_envtest_switch));
  EXPECT_EQ(absl::GetFlag(FLAGS_envtest_period), absl::Milliseconds(250));
  EXPECT_THAT(r->applied, ElementsAre("ENVTEST_ENVTEST_TEXT", "ENVTEST_ENVTEST_COUNT",
                                      "ENVTEST_ENVTEST_SWITCH", "ENVTEST_ENVTEST_PERIOD"));
  EXPECT_THAT(r->unknown, IsEmpty());
}

TEST(ApplyEnvFlagsTest, AnEmptyValueCountsAsSet) {
  absl::FlagSaver saver;
  ASSERT_OK(ApplyEnvFlags("ENVTEST_", {"ENVTEST_ENVTEST_TEXT="}).status());
  EXPECT_EQ(absl::GetFlag(FLAGS_envtest_text), "");
}

TEST(ApplyEnvFlagsTest, OtherVariablesChangeNothing) {
  absl::FlagSaver saver;
  absl::StatusOr<EnvFlagsResult> r =
      ApplyEnvFlags("ENVTEST_", {"PATH=/usr/bin", "ENVTEST_TEXT=x", "envtest_envtest_text=lower",
                                 "NOEQUALSIGN", "XENVTEST_ENVTEST_TEXT=y"});
  ASSERT_OK(r.status());
  EXPECT_EQ(absl::GetFlag(FLAGS_envtest_text), "default");
  EXPECT_THAT(r->applied, IsEmpty());
  // The prefix matched, the name did not: reported so that a typo does not go unnoticed.
  EXPECT_THAT(r->unknown, ElementsAre("ENVTEST_TEXT"));
}

TEST(ApplyEnvFlagsTest, AnEmptyPrefixAppliesNothing) {
  absl::FlagSaver saver;
  absl::StatusOr<EnvFlagsResult> r = ApplyEnvFlags("", {"ENVTEST_TEXT=x", "envtest_text=y"});
  ASSERT_OK(r.status());
  EXPECT_EQ(absl::GetFlag(FLAGS_envtest_text), "default");
  EXPECT_THAT(r->applied, IsEmpty());
}

TEST(ApplyEnvFlagsTest, AbseilsOwnFlagsStayCommandLineOnly) {
  absl::FlagSaver saver;
  absl::StatusOr<EnvFlagsResult> r = ApplyEnvFlags(
      "ENVTEST_",
      {"ENVTEST_FLAGFILE=/etc/passwd", "ENVTEST_HELPFULL=true", "ENVTEST_FROMENV=envtest_text"});
  ASSERT_OK(r.status());
  EXPECT_THAT(r->applied, IsEmpty());
  EXPECT_THAT(r->unknown, ElementsAre("ENVTEST_FLAGFILE", "ENVTEST_HELPFULL", "ENVTEST_FROMENV"));
  EXPECT_EQ(absl::GetFlag(FLAGS_envtest_text), "default");
}

TEST(ApplyEnvFlagsTest, ABadValueNamesTheVariableAndTheFlag) {
  for (const std::string& entry :
       {std::string("ENVTEST_ENVTEST_COUNT=many"), std::string("ENVTEST_ENVTEST_COUNT="),
        std::string("ENVTEST_ENVTEST_COUNT=99999999999999999999"),
        std::string("ENVTEST_ENVTEST_SWITCH=maybe"),
        std::string("ENVTEST_ENVTEST_PERIOD=5 parsecs"),
        std::string("ENVTEST_ENVTEST_COUNT=1\n2")}) {
    absl::FlagSaver saver;
    absl::StatusOr<EnvFlagsResult> r = ApplyEnvFlags("ENVTEST_", {entry});
    ASSERT_FALSE(r.ok()) << entry;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    const std::string variable = entry.substr(0, entry.find('='));
    EXPECT_THAT(r.status().message(), HasSubstr("environment variable " + variable)) << entry;
    EXPECT_THAT(r.status().message(), HasSubstr("(--envtest_")) << entry;
    // Control characters of the value do not reach the message as they are.
    EXPECT_THAT(std::string(r.status().message()), ::testing::Not(HasSubstr("\n"))) << entry;
    EXPECT_EQ(absl::GetFlag(FLAGS_envtest_count), 7);
  }
}

TEST(ApplyEnvFlagsTest, AnOversizedValueIsQuotedShort) {
  absl::FlagSaver saver;
  absl::StatusOr<EnvFlagsResult> r =
      ApplyEnvFlags("ENVTEST_", {"ENVTEST_ENVTEST_COUNT=" + std::string(1 << 20, '9')});
  ASSERT_FALSE(r.ok());
  EXPECT_LT(r.status().message().size(), 1000u);
  // A long string value is accepted as it is.
  ASSERT_OK(
      ApplyEnvFlags("ENVTEST_", {"ENVTEST_ENVTEST_TEXT=" + std::string(1 << 20, 'x')}).status());
  EXPECT_EQ(absl::GetFlag(FLAGS_envtest_text).size(), 1u << 20);
}

}  // namespace
}  // namespace common
