#include "coordctl/run_commands.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "coordctl/cli.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace coordctl {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

const Command& Find(const std::vector<Command>& commands, const std::string& verb) {
  for (const Command& c : commands) {
    if (c.words == std::vector<std::string>{"run", verb}) return c;
  }
  ADD_FAILURE() << "no command run " << verb;
  return commands.front();
}

TEST(RunCommandsTest, SlugIsBranchSafe) {
  EXPECT_EQ(Slug("01 Auth Service"), "01-auth-service");
  EXPECT_EQ(Slug("--Weird__name!!"), "weird-name");
  EXPECT_EQ(Slug("???"), "spec");
  EXPECT_EQ(Slug(std::string(200, 'a')).size(), 64u);
}

TEST(RunCommandsTest, OneWorkstreamPerSpecFile) {
  testing_util::TempDir dir;
  const std::string specs = dir.Sub("specs");
  std::filesystem::create_directory(specs);
  WriteFile(specs + "/02-billing.md", "intro\n# Billing service\nbody\n");
  WriteFile(specs + "/01-auth.md", "no heading here\n");
  WriteFile(specs + "/01 auth.MD", "# Auth, again\n");
  WriteFile(specs + "/notes.txt", "# not a spec\n");
  std::filesystem::create_directory(specs + "/sub.md");

  absl::StatusOr<std::vector<coordinator::v1::WorkItem>> items = ReadWorkstreams(specs, "");
  ASSERT_OK(items);
  ASSERT_EQ(items->size(), 3u);
  std::vector<std::string> ids;
  for (const auto& item : *items) ids.push_back(item.item_id());
  EXPECT_THAT(ids, ElementsAre("01-auth", "01-auth-2", "02-billing"));
  EXPECT_EQ((*items)[0].title(), "Auth, again");  // "01 auth.MD" sorts first
  EXPECT_EQ((*items)[1].title(), "01-auth.md");
  EXPECT_EQ((*items)[2].title(), "Billing service");
  EXPECT_EQ((*items)[2].branch(), "02-billing");
  EXPECT_EQ((*items)[2].worktree(), dir.Sub(".worktrees/02-billing"));
  EXPECT_EQ((*items)[2].description(), specs + "/02-billing.md");

  items = ReadWorkstreams(specs, "/srv/trees");
  ASSERT_OK(items);
  EXPECT_EQ((*items)[0].worktree(), "/srv/trees/01-auth");

  EXPECT_EQ(ReadWorkstreams(dir.Sub("missing"), "").status().code(),
            absl::StatusCode::kInvalidArgument);
  std::filesystem::create_directory(dir.Sub("empty"));
  EXPECT_THAT(ReadWorkstreams(dir.Sub("empty"), "").status().message(), HasSubstr("no spec"));
}

TEST(RunCommandsTest, CommandLinesParse) {
  std::vector<Command> commands;
  AddRunCommands(&commands);
  absl::StatusOr<ParsedArgs> fail =
      ParseArgs(Find(commands, "fail"), {"LEASE", "--error", "boom", "--no-retry"});
  ASSERT_OK(fail);
  EXPECT_EQ(fail->get("error"), "boom");
  EXPECT_TRUE(fail->flag("no-retry"));
  EXPECT_FALSE(ParseArgs(Find(commands, "retry"), {"run-1"}).ok());
  absl::StatusOr<ParsedArgs> work = ParseArgs(
      Find(commands, "work"), {"run-1", "--worker", "w1", "--ttl=5s", "--", "make", "-j2"});
  ASSERT_OK(work);
  EXPECT_THAT(work->rest, ElementsAre("make", "-j2"));
  absl::StatusOr<ParsedArgs> create =
      ParseArgs(Find(commands, "create"),
                {"--workstreams", "specs", "--non-retryable", "a", "--non-retryable", "b"});
  ASSERT_OK(create);
  EXPECT_THAT(create->options.at("non-retryable"), ElementsAre("a", "b"));
  absl::StatusOr<ParsedArgs> claimants =
      ParseArgs(Find(commands, "create"),
                {"--workstreams", "specs", "--claimant", "green", "--claimant=purple"});
  ASSERT_OK(claimants);
  EXPECT_THAT(claimants->options.at("claimant"), ElementsAre("green", "purple"));
  absl::StatusOr<ParsedArgs> import =
      ParseArgs(Find(commands, "import"), {"graph.json", "--claimant", "green"});
  ASSERT_OK(import);
  EXPECT_THAT(import->options.at("claimant"), ElementsAre("green"));
}

}  // namespace
}  // namespace coordctl
