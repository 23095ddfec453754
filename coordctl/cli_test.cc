#include "coordctl/cli.h"

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_join.h"
#include "coordinator/v1/context.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace coordctl {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

Command MakeCommand() {
  Command c;
  c.words = {"thing", "do"};
  c.value_options = {"agent", "set", "exit-code"};
  c.switch_options = {"json"};
  c.min_positional = 1;
  c.max_positional = 1;
  return c;
}

TEST(ParseArgsTest, PositionalsOptionsAndSwitches) {
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(
      MakeCommand(), {"ctx-1", "--agent", "green", "--set=k=v=w", "--set", "x=y", "--json"});
  ASSERT_OK(parsed);
  EXPECT_THAT(parsed->positional, ElementsAre("ctx-1"));
  EXPECT_TRUE(parsed->has("agent"));
  EXPECT_EQ(parsed->get("agent"), "green");
  // Repeated options keep every value in order; the value may itself hold '='.
  EXPECT_THAT(parsed->options.at("set"), ElementsAre("k=v=w", "x=y"));
  EXPECT_EQ(parsed->get("set"), "x=y");
  EXPECT_TRUE(parsed->flag("json"));
  EXPECT_FALSE(parsed->has("exit-code"));
  EXPECT_EQ(parsed->get("exit-code", "fallback"), "fallback");
  EXPECT_THAT(parsed->rest, IsEmpty());
}

TEST(ParseArgsTest, OptionsMayComeBeforePositionals) {
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(MakeCommand(), {"--agent=a", "ctx"});
  ASSERT_OK(parsed);
  EXPECT_THAT(parsed->positional, ElementsAre("ctx"));
  EXPECT_EQ(parsed->get("agent"), "a");
}

TEST(ParseArgsTest, EmptyValueWithEqualsIsAValue) {
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(MakeCommand(), {"ctx", "--agent="});
  ASSERT_OK(parsed);
  EXPECT_TRUE(parsed->has("agent"));
  EXPECT_EQ(parsed->get("agent", "fallback"), "");
}

TEST(ParseArgsTest, UnknownOptionIsAnError) {
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(MakeCommand(), {"ctx", "--bogus", "1"});
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(parsed.status().message()), HasSubstr("--bogus"));
}

TEST(ParseArgsTest, ValueOptionWithoutValueIsAnError) {
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(MakeCommand(), {"ctx", "--agent"});
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(parsed.status().message()), HasSubstr("needs a value"));
}

TEST(ParseArgsTest, SwitchWithValueIsAnError) {
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(MakeCommand(), {"ctx", "--json=yes"});
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(parsed.status().message()), HasSubstr("takes no value"));
}

TEST(ParseArgsTest, PositionalCountsAreChecked) {
  EXPECT_THAT(std::string(ParseArgs(MakeCommand(), {}).status().message()), HasSubstr("missing"));
  absl::StatusOr<ParsedArgs> extra = ParseArgs(MakeCommand(), {"a", "b"});
  EXPECT_EQ(extra.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(extra.status().message()), HasSubstr("\"b\""));

  Command unlimited = MakeCommand();
  unlimited.min_positional = 0;
  unlimited.max_positional = -1;
  absl::StatusOr<ParsedArgs> many = ParseArgs(unlimited, {"a", "b", "c", "-"});
  ASSERT_OK(many);
  EXPECT_THAT(many->positional, ElementsAre("a", "b", "c", "-"));
  ASSERT_OK(ParseArgs(unlimited, {}));
}

TEST(ParseArgsTest, RestAfterDoubleDashIsNotParsed) {
  Command c = MakeCommand();
  c.takes_rest = true;
  absl::StatusOr<ParsedArgs> parsed =
      ParseArgs(c, {"ctx", "--exit-code", "0", "--", "ls", "--json", "--", "-la"});
  ASSERT_OK(parsed);
  EXPECT_THAT(parsed->rest, ElementsAre("ls", "--json", "--", "-la"));
  EXPECT_FALSE(parsed->flag("json"));
  EXPECT_EQ(parsed->get("exit-code"), "0");

  absl::StatusOr<ParsedArgs> not_allowed = ParseArgs(MakeCommand(), {"ctx", "--", "ls"});
  EXPECT_EQ(not_allowed.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ParseArgsTest, RealCommandDeclarationsParse) {
  std::vector<Command> commands;
  AddContextCommands(&commands);
  AddConversationCommands(&commands);
  AddHealthCommands(&commands);
  auto find = [&](std::vector<std::string> words) -> const Command* {
    for (const Command& c : commands) {
      if (c.words == words) return &c;
    }
    return nullptr;
  };
  const Command* record = find({"context", "command"});
  ASSERT_NE(record, nullptr);
  absl::StatusOr<ParsedArgs> parsed =
      ParseArgs(*record, {"ctx", "--exit-code", "2", "--duration", "1.5s", "--", "make", "test"});
  ASSERT_OK(parsed);
  EXPECT_THAT(parsed->rest, ElementsAre("make", "test"));

  const Command* put = find({"context", "put"});
  ASSERT_NE(put, nullptr);
  ASSERT_OK(ParseArgs(*put, {"ctx", "--set", "status=completed", "--unset", "l", "--json"}));
  EXPECT_FALSE(ParseArgs(*put, {"ctx", "--", "x"}).ok());

  const Command* append = find({"convo", "append"});
  ASSERT_NE(append, nullptr);
  EXPECT_FALSE(ParseArgs(*append, {"ctx"}).ok());  // text is required
  ASSERT_OK(ParseArgs(*append, {"ctx", "--role", "user", "hello", "world"}));
}

TEST(CommandTableTest, WordsAreUniqueAndEveryCommandRuns) {
  std::vector<Command> commands;
  AddContextCommands(&commands);
  AddConversationCommands(&commands);
  AddHealthCommands(&commands);
  std::set<std::string> seen;
  for (const Command& c : commands) {
    const std::string words = absl::StrJoin(c.words, " ");
    EXPECT_TRUE(seen.insert(words).second) << words;
    EXPECT_TRUE(static_cast<bool>(c.run)) << words;
    EXPECT_FALSE(c.help.empty()) << words;
  }
}

TEST(ParseIntArgTest, AcceptsWholeNumbersOnly) {
  EXPECT_EQ(*ParseIntArg("--n", "42"), 42);
  EXPECT_EQ(*ParseIntArg("--n", "-7"), -7);
  for (const char* bad : {"", "abc", "1.5", "1e3", "12abc", "99999999999999999999"}) {
    absl::StatusOr<int64_t> v = ParseIntArg("--n", bad);
    EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_THAT(std::string(ParseIntArg("--exit-code", "abc").status().message()),
              HasSubstr("--exit-code"));
}

TEST(ParseDurationArgTest, AcceptsDurationsWithUnits) {
  EXPECT_EQ(*ParseDurationArg("timeout", "30s"), absl::Seconds(30));
  EXPECT_EQ(*ParseDurationArg("timeout", "1.5m"), absl::Seconds(90));
  EXPECT_EQ(*ParseDurationArg("timeout", "250ms"), absl::Milliseconds(250));
  for (const char* bad : {"", "abc", "10", "-1s", "1 s"}) {
    EXPECT_EQ(ParseDurationArg("timeout", bad).status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(ReportRpcErrorTest, NotFoundIsExitOneOthersExitThree) {
  std::ostringstream out;
  std::ostringstream err;
  Env env;
  env.out = &out;
  env.err = &err;
  EXPECT_EQ(ReportRpcError(env, grpc::Status(grpc::StatusCode::NOT_FOUND, "context x not found")),
            kExitNo);
  EXPECT_EQ(err.str(), "coordctl: not found: context x not found\n");
  err.str("");
  EXPECT_EQ(ReportRpcError(env, grpc::Status(grpc::StatusCode::UNAVAILABLE, "connection refused")),
            kExitError);
  EXPECT_EQ(err.str(), "coordctl: UNAVAILABLE: connection refused\n");
  err.str("");
  EXPECT_EQ(ReportRpcError(env, grpc::Status(grpc::StatusCode::ABORTED, "stale")), kExitError);
  EXPECT_EQ(err.str(), "coordctl: ABORTED: stale\n");
  EXPECT_TRUE(out.str().empty());
}

TEST(ParsedArgsTest, FreeTextIsThePositionalOrElseTheWordsAfterTheDashes) {
  ParsedArgs args;
  args.positional = {"t-1", "the error"};
  args.rest = {"not", "used"};
  EXPECT_EQ(args.free_text(1), "the error");
  args.positional = {"t-1"};
  EXPECT_EQ(args.free_text(1), "not used");
  args.rest.clear();
  EXPECT_EQ(args.free_text(1), "");
}

TEST(OneLineTest, ControlCharactersBecomeSpacesAndTheEndsAreTrimmed) {
  EXPECT_EQ(OneLine("  expected ',' at\nline 2\tcolumn 3\r\n"), "expected ',' at line 2 column 3");
  EXPECT_EQ(OneLine(std::string("a\0b\x7f", 4)), "a b");
  EXPECT_EQ(OneLine("caf\xc3\xa9"), "caf\xc3\xa9");
}

TEST(FailTest, PrintsOneLineAndReturnsTheCode) {
  std::ostringstream err;
  Env env;
  env.err = &err;
  EXPECT_EQ(Fail(env, "bad thing"), kExitError);
  EXPECT_EQ(Fail(env, "usage", kExitUsage), kExitUsage);
  EXPECT_EQ(err.str(), "coordctl: bad thing\ncoordctl: usage\n");
}

TEST(ToJsonTest, UsesProtobufJsonMappingWithDefaults) {
  coordinator::v1::TaskContext context;
  context.set_context_id("ctx \"quoted\"");
  const std::string json = ToJson(context);
  EXPECT_THAT(json, HasSubstr("\"contextId\":\"ctx \\\"quoted\\\"\""));
  EXPECT_THAT(json, HasSubstr("\"commandCount\":\"0\""));  // int64 as a string, still printed
  EXPECT_EQ(json.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace coordctl
