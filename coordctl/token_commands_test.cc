#include <sstream>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "coordctl/cli.h"
#include "coordinator/v1/auth.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace coordctl {
namespace {

// Runs `coordctl token new <args>`: the exit code, stdout and stderr.
struct Outcome {
  int code;
  std::string out;
  std::string err;
};
Outcome TokenNew(const std::vector<std::string>& args) {
  std::vector<Command> commands;
  AddTokenCommands(&commands);
  EXPECT_EQ(commands.size(), 1u);
  std::ostringstream out, err;
  Env env{nullptr, absl::Seconds(1), &out, &err};
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(commands[0], args);
  if (!parsed.ok()) return {kExitUsage, "", std::string(parsed.status().message())};
  const int code = commands[0].run(env, *parsed);
  return {code, out.str(), err.str()};
}

coordinator::v1::TokenEntry Parse(const std::string& line) {
  coordinator::v1::TokenEntry entry;
  google::protobuf::util::JsonParseOptions strict;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(line, &entry, strict).ok()) << line;
  return entry;
}

TEST(TokenNewTest, PrintsAFreshEntryForTheTokenFile) {
  const Outcome first = TokenNew({"--principal", "purple-1", "--role", "agent"});
  ASSERT_EQ(first.code, kExitOk) << first.err;
  ASSERT_EQ(first.out.back(), '\n');
  const coordinator::v1::TokenEntry entry = Parse(first.out);
  EXPECT_EQ(entry.principal(), "purple-1");
  EXPECT_EQ(entry.role(), "agent");
  EXPECT_FALSE(entry.has_expires_at());
  ASSERT_EQ(entry.token().size(), 64u);
  EXPECT_EQ(entry.token().find_first_not_of("0123456789abcdef"), std::string::npos);
  // Every run makes a new token; the role defaults to agent.
  const Outcome second = TokenNew({"--principal", "purple-1"});
  ASSERT_EQ(second.code, kExitOk);
  EXPECT_NE(Parse(second.out).token(), entry.token());
  EXPECT_EQ(Parse(second.out).role(), "agent");
}

TEST(TokenNewTest, ValidForSetsTheExpiry) {
  const Outcome outcome = TokenNew({"--principal", "ops", "--role", "admin", "--valid_for", "2h"});
  ASSERT_EQ(outcome.code, kExitOk) << outcome.err;
  const coordinator::v1::TokenEntry entry = Parse(outcome.out);
  const int64_t expected = absl::ToUnixSeconds(absl::Now() + absl::Hours(2));
  EXPECT_NEAR(static_cast<double>(entry.expires_at().seconds()), static_cast<double>(expected),
              300.0);
}

TEST(TokenNewTest, BadArgumentsAreUsageErrorsAndPrintNothing) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {},
           {"--principal", ""},
           {"--principal",
            "ctl\x01"
            "char"},
           {"--principal", std::string(300, 'a')},
           {"--principal", "p", "--role", "root"},
           {"--principal", "p", "--valid_for", "soon"},
           {"--principal", "p", "--valid_for", "-5m"},
           {"--principal", "p", "--valid_for", "0s"},
           {"--principal", "p", "extra"},
       }) {
    const Outcome outcome = TokenNew(args);
    EXPECT_EQ(outcome.code, kExitUsage) << args.size();
    EXPECT_TRUE(outcome.out.empty()) << outcome.out;
    EXPECT_FALSE(outcome.err.empty());
  }
}

}  // namespace
}  // namespace coordctl
