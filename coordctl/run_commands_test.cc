#include "coordctl/run_commands.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordctl/cli.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
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

// --naming arial: the names of Arial's state.json (branch arial/<id>, worktree
// .arial/worktrees/<id>), so that an export reads like a run Arial planned.
TEST(RunCommandsTest, ArialNamingNamesBranchesAndWorktreesAsArialDoes) {
  testing_util::TempDir dir;
  const std::string specs = dir.Sub("specs");
  std::filesystem::create_directory(specs);
  WriteFile(specs + "/auth-system.md", "# Implement Authentication\n");
  absl::StatusOr<std::vector<coordinator::v1::WorkItem>> items =
      ReadWorkstreams(specs, "/srv/ignored", Naming::kArial);
  ASSERT_OK(items);
  ASSERT_EQ(items->size(), 1u);
  EXPECT_EQ((*items)[0].item_id(), "auth-system");
  EXPECT_EQ((*items)[0].branch(), "arial/auth-system");
  EXPECT_EQ((*items)[0].worktree(), ".arial/worktrees/auth-system");
  absl::StatusOr<coordinator::v1::WorkItem> one =
      ReadSpecItem(specs + "/auth-system.md", "auth", "", Naming::kArial);
  ASSERT_OK(one);
  EXPECT_EQ(one->branch(), "arial/auth");
  EXPECT_EQ(ParseNaming("coordinator").value_or(Naming::kArial), Naming::kCoordinator);
  EXPECT_EQ(ParseNaming("arial").value_or(Naming::kCoordinator), Naming::kArial);
  EXPECT_THAT(ParseNaming("gitflow").status().message(),
              HasSubstr("--naming takes coordinator or arial, not \"gitflow\""));
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

TEST(RunCommandsTest, ItemsFilesTakeItemsOrATaskGraph) {
  absl::StatusOr<std::vector<coordinator::v1::WorkItem>> items = ParseItemsJson(
      R"([{"id": "a", "level": 2, "dependencies": ["b"], "adapter": "codex",
           "requiredCapabilities": ["gpu"], "estimate_minutes": 5, "status": "ITEM_STATUS_DONE"},
          {"item_id": "b", "required_capabilities": ["x", "y"], "files": {"create": ["f.cc"]}}])",
      10);
  ASSERT_OK(items);
  ASSERT_EQ(items->size(), 2u);
  const coordinator::v1::WorkItem& a = (*items)[0];
  EXPECT_EQ(a.item_id(), "a");
  EXPECT_EQ(a.level(), 2);
  EXPECT_THAT(a.dependencies(), ElementsAre("b"));
  EXPECT_EQ(a.adapter(), "codex");
  EXPECT_THAT(a.required_capabilities(), ElementsAre("gpu"));
  // Unknown keys are kept as metadata; output-only fields are dropped.
  EXPECT_EQ(a.metadata().fields().at("estimate_minutes").number_value(), 5);
  EXPECT_EQ(a.status(), coordinator::v1::ITEM_STATUS_UNSPECIFIED);
  EXPECT_FALSE(a.metadata().fields().contains("status"));
  EXPECT_THAT((*items)[1].files().create(), ElementsAre("f.cc"));

  items = ParseItemsJson(R"({"feature": "f", "tasks": [{"id": "T-1", "title": "one"}]})", 10);
  ASSERT_OK(items);
  ASSERT_EQ(items->size(), 1u);
  EXPECT_EQ((*items)[0].title(), "one");
}

TEST(RunCommandsTest, ItemsFilesRefuseMalformedInput) {
  for (const char* bad : {"", "not json", "{", "42", "\"text\"", R"({"no_tasks": []})", R"([1, 2])",
                          R"([{"id": 5}])", R"([{"level": "high"}])", R"([{"dependencies": "a"}])",
                          R"([{"required_capabilities": [1]}])", R"([{"files": {"create": 3}}])",
                          R"([[{"id": "a"}]])"}) {
    absl::StatusOr<std::vector<coordinator::v1::WorkItem>> items = ParseItemsJson(bad, 10);
    EXPECT_EQ(items.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  std::string many = "[";
  for (int i = 0; i < 11; ++i) absl::StrAppend(&many, i == 0 ? "" : ",", "{}");
  many += "]";
  EXPECT_THAT(ParseItemsJson(many, 10).status().message(), HasSubstr("at most 10"));
  // Deeply nested JSON is refused by the parser, not a crash.
  std::string deep = "[{\"metadata\":" + std::string(10000, '[') + std::string(10000, ']') + "}]";
  EXPECT_FALSE(ParseItemsJson(deep, 10).ok());
}

TEST(RunCommandsTest, StatusWords) {
  EXPECT_EQ(*ParseItemStatus("pending"), coordinator::v1::ITEM_STATUS_PENDING);
  EXPECT_EQ(*ParseItemStatus("blocked"), coordinator::v1::ITEM_STATUS_BLOCKED);
  for (const char* bad : {"", "PENDING", "unspecified", "done ", "item_status_done", "x\n"}) {
    EXPECT_EQ(ParseItemStatus(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(RunCommandsTest, EventLinesAreOneJsonObject) {
  coordinator::v1::WorkEvent event;
  event.set_seq(7);
  event.mutable_time()->set_seconds(1705314600);
  event.mutable_time()->set_nanos(250000000);
  event.set_run_id("r");
  event.set_kind(coordinator::v1::WorkEvent::KIND_ITEM_FAILED);
  event.set_item_id("a\"b");
  event.set_worker_id("w");
  event.set_level(2);
  event.set_item_status(coordinator::v1::ITEM_STATUS_PENDING);
  event.set_attempt(1);
  event.set_epoch(3);
  event.set_message("line1\nline2\t\x01 \\ done");
  const std::string line = EventJsonLine(event);
  EXPECT_EQ(line,
            R"({"seq":7,"ts":"2024-01-15T10:30:00.250Z","event":"item_failed","run_id":"r",)"
            R"("item_id":"a\"b","worker_id":"w","level":2,"item_status":"pending","attempt":1,)"
            R"("epoch":3,"message":"line1\nline2\t\u0001 \\ done"})");
  EXPECT_EQ(line.find('\n'), std::string::npos);
  google::protobuf::Struct parsed;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(line, &parsed).ok()) << line;

  coordinator::v1::WorkEvent level;
  level.set_seq(8);
  level.set_run_id("r");
  level.set_kind(coordinator::v1::WorkEvent::KIND_LEVEL_CHANGED);
  level.set_level(0);
  level.set_level_status(coordinator::v1::LEVEL_STATUS_MERGED);
  EXPECT_EQ(EventJsonLine(level),
            R"({"seq":8,"ts":"1970-01-01T00:00:00.000Z","event":"level_changed","run_id":"r",)"
            R"("level":0,"level_status":"merged"})");
}

TEST(RunCommandsTest, NewCommandLinesParse) {
  std::vector<Command> commands;
  AddRunCommands(&commands);
  const Command* merge = nullptr;
  for (const Command& c : commands) {
    if (c.words == std::vector<std::string>{"run", "level", "merge"}) merge = &c;
  }
  ASSERT_NE(merge, nullptr);
  absl::StatusOr<ParsedArgs> m = ParseArgs(*merge, {"r", "2", "--commit", "abc"});
  ASSERT_OK(m);
  EXPECT_EQ(m->get("commit"), "abc");
  EXPECT_FALSE(ParseArgs(*merge, {"r"}).ok());
  EXPECT_FALSE(ParseArgs(*merge, {"r", "1", "2"}).ok());
  absl::StatusOr<ParsedArgs> add = ParseArgs(
      Find(commands, "add"), {"r", "--spec", "a.md", "--spec", "b.md", "--capability", "gpu"});
  ASSERT_OK(add);
  EXPECT_THAT(add->options.at("spec"), ElementsAre("a.md", "b.md"));
  absl::StatusOr<ParsedArgs> claim =
      ParseArgs(Find(commands, "claim"),
                {"r", "--worker", "w", "--capability", "a", "--capability=b", "--pid", "9"});
  ASSERT_OK(claim);
  EXPECT_THAT(claim->options.at("capability"), ElementsAre("a", "b"));
  EXPECT_OK(ParseArgs(Find(commands, "events"), {"r", "--follow", "--after", "3"}));
  EXPECT_OK(ParseArgs(Find(commands, "status"), {"r", "--status", "done"}));
  EXPECT_FALSE(ParseArgs(Find(commands, "workers"), {}).ok());
  EXPECT_FALSE(ParseArgs(Find(commands, "events"), {"r", "--bogus"}).ok());
}

}  // namespace
}  // namespace coordctl
