#include "coordctl/arial_state.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "coordctl/import_json.h"
#include "coordctl/import_test_util.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/json_test_util.h"
#include "tests/test_util.h"

namespace coordctl {
namespace {

using coordinator::v1::WorkItem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing_util::ExpectSameJson;
using ::testing_util::JsonObject;
using ::testing_util::ReadWholeFile;

std::string ReadArialFile(const std::string& name) {
  return ReadWholeFile(absl::StrCat(COORD_SOURCE_DIR, "/tests/testdata/arial/", name));
}

// specsDir, then each workstream's specFile, of an exported state file.
std::vector<std::string> ExportedPaths(const std::string& json) {
  const google::protobuf::Struct state = JsonObject(json);
  std::vector<std::string> paths = {state.fields().at("specsDir").string_value()};
  for (const auto& w : state.fields().at("workstreams").list_value().values()) {
    paths.push_back(w.struct_value().fields().at("specFile").string_value());
  }
  return paths;
}

class ArialRoundTripTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ArialRoundTripTest, ExportOfAnUnchangedImportIsTheFile) {
  const std::string text = ReadArialFile(GetParam());
  absl::StatusOr<ArialRun> parsed = ParseArialState(text);
  ASSERT_OK(parsed);
  auto [run, items] = AsCreated(parsed->run, parsed->items);
  ExpectSameJson(FormatArialState(run, items), text);
}

INSTANTIATE_TEST_SUITE_P(Files, ArialRoundTripTest,
                         ::testing::Values("state-v2.json", "state-full.json", "state-plan.json"));

TEST(ArialStateTest, ReadsEveryWorkstreamField) {
  absl::StatusOr<ArialRun> parsed = ParseArialState(ReadArialFile("state-full.json"));
  ASSERT_OK(parsed);
  EXPECT_EQ(parsed->run.kind(), coordinator::v1::RUN_KIND_WORKSTREAMS);
  EXPECT_EQ(parsed->run.specs_dir(), "./specs");
  EXPECT_EQ(parsed->run.base_branch(), "main");
  ASSERT_EQ(parsed->items.size(), 4u);
  const WorkItem& auth = parsed->items[0];
  EXPECT_EQ(auth.item_id(), "auth-system");
  EXPECT_EQ(auth.status(), coordinator::v1::ITEM_STATUS_DONE);
  EXPECT_EQ(auth.branch(), "arial/auth-system");
  EXPECT_EQ(auth.worktree(), ".arial/worktrees/auth-system");
  EXPECT_EQ(auth.adapter(), "claude-code");
  EXPECT_EQ(auth.summary(), "Added JWT auth with login/logout endpoints");
  EXPECT_EQ(auth.start_time().seconds(), 1740902405);
  EXPECT_EQ(auth.start_time().nanos(), 120000000);
  EXPECT_EQ(auth.complete_time().seconds(), 1740904870);
  const WorkItem& payment = parsed->items[1];
  EXPECT_EQ(payment.status(), coordinator::v1::ITEM_STATUS_FAILED);
  EXPECT_EQ(payment.last_error(), "npm test exited with code 1");
  EXPECT_THAT(payment.required_capabilities(), ::testing::ElementsAre("network", "docker"));
  EXPECT_THAT(payment.dependencies(), ::testing::ElementsAre("auth-system"));
  const WorkItem& search = parsed->items[2];
  EXPECT_EQ(search.status(), coordinator::v1::ITEM_STATUS_RUNNING);
  EXPECT_EQ(search.pid(), 48213);
  EXPECT_EQ(parsed->items[3].status(), coordinator::v1::ITEM_STATUS_PENDING);
}

TEST(ArialStateTest, VersionOneIsMigrated) {
  const std::string text = ReadArialFile("state-v1.json");
  absl::StatusOr<ArialRun> parsed = ParseArialState(text);
  ASSERT_OK(parsed);
  ASSERT_EQ(parsed->items.size(), 2u);
  EXPECT_EQ(parsed->items[0].branch(), "arial/cli-parser");
  EXPECT_EQ(parsed->items[0].worktree(), ".arial/worktrees/cli-parser");
  EXPECT_EQ(parsed->items[1].branch(), "feature/config-file");  // as it was
  // The export is what Arial writes after loading it: version 2, the defaults filled in.
  auto [run, items] = AsCreated(parsed->run, parsed->items);
  google::protobuf::Struct expected = JsonObject(text);
  (*expected.mutable_fields())["version"].set_number_value(2);
  auto& list = *(*expected.mutable_fields())["workstreams"].mutable_list_value();
  auto& first = *list.mutable_values(0)->mutable_struct_value()->mutable_fields();
  first["branch"].set_string_value("arial/cli-parser");
  first["worktreePath"].set_string_value(".arial/worktrees/cli-parser");
  first["retryCount"].set_number_value(0);
  auto& second = *list.mutable_values(1)->mutable_struct_value()->mutable_fields();
  second["worktreePath"].set_string_value(".arial/worktrees/config-file");
  std::string expected_json;
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(expected, &expected_json).ok());
  ExpectSameJson(FormatArialState(run, items), expected_json);
}

// The run's status as Arial's updateRunStatus derives it once a workstream changes.
TEST(ArialStateTest, RunStatusIsDerivedAsArialDoes) {
  absl::StatusOr<ArialRun> parsed = ParseArialState(ReadArialFile("state-plan.json"));
  ASSERT_OK(parsed);
  // Named variables, not a structured binding: C++17 lambdas cannot capture those.
  const auto created = AsCreated(parsed->run, parsed->items);
  const auto& run = created.first;
  const auto& items = created.second;
  auto status_of = [&](const std::vector<WorkItem>& now) {
    return JsonObject(FormatArialState(run, now)).fields().at("status").string_value();
  };
  EXPECT_EQ(status_of(items), "planning");  // unchanged: as imported
  std::vector<WorkItem> changed = items;
  changed[0].set_version(2);  // claimed and given back: nothing matches, the status stays
  EXPECT_EQ(status_of(changed), "planning");
  changed[0].set_status(coordinator::v1::ITEM_STATUS_RUNNING);
  EXPECT_EQ(status_of(changed), "running");
  changed[0].set_status(coordinator::v1::ITEM_STATUS_DONE);
  EXPECT_EQ(status_of(changed), "planning");  // done and pending: no rule, kept
  changed[1].set_status(coordinator::v1::ITEM_STATUS_BLOCKED);
  EXPECT_EQ(status_of(changed), "failed");  // Arial has no blocked: out of attempts is failed
  changed[1].set_status(coordinator::v1::ITEM_STATUS_DONE);
  EXPECT_EQ(status_of(changed), "completed");
}

// Arial's status is sticky, so the export replays the run's event log.
TEST(ArialStateTest, TheStatusIsReplayedFromTheEventLog) {
  using Event = coordinator::v1::WorkEvent;
  std::vector<Event> events;
  auto add = [&](Event::Kind kind, const std::string& item, coordinator::v1::ItemStatus status) {
    Event& e = events.emplace_back();
    e.set_kind(kind);
    e.set_item_id(item);
    e.set_item_status(status);
  };
  Event& created = events.emplace_back();
  created.set_kind(Event::KIND_RUN_CREATED);
  add(Event::KIND_ITEM_CREATED, "a", coordinator::v1::ITEM_STATUS_PENDING);
  add(Event::KIND_ITEM_CREATED, "b", coordinator::v1::ITEM_STATUS_PENDING);
  auto after = [&](size_t n) {
    return ReplayArialRunStatus("planning", std::vector<Event>(events.begin(), events.begin() + n));
  };
  EXPECT_EQ(after(events.size()), "planning");
  add(Event::KIND_ITEM_CLAIMED, "a", coordinator::v1::ITEM_STATUS_RUNNING);
  EXPECT_EQ(after(events.size()), "running");
  add(Event::KIND_ITEM_COMPLETED, "a", coordinator::v1::ITEM_STATUS_DONE);
  EXPECT_EQ(after(events.size()), "running");  // a done, b pending: no rule, kept
  add(Event::KIND_ITEM_CLAIMED, "b", coordinator::v1::ITEM_STATUS_RUNNING);
  add(Event::KIND_ITEM_FAILED, "b", coordinator::v1::ITEM_STATUS_FAILED);
  EXPECT_EQ(after(events.size()), "failed");
  add(Event::KIND_ITEM_RETRIED, "b", coordinator::v1::ITEM_STATUS_PENDING);
  EXPECT_EQ(after(events.size()), "failed");  // sticky until something runs
  add(Event::KIND_ITEM_CREATED, "c", coordinator::v1::ITEM_STATUS_PENDING);  // run add
  add(Event::KIND_ITEM_CLAIMED, "b", coordinator::v1::ITEM_STATUS_RUNNING);
  EXPECT_EQ(after(events.size()), "running");
  add(Event::KIND_ITEM_COMPLETED, "b", coordinator::v1::ITEM_STATUS_DONE);
  add(Event::KIND_ITEM_CLAIMED, "c", coordinator::v1::ITEM_STATUS_RUNNING);
  add(Event::KIND_ITEM_COMPLETED, "c", coordinator::v1::ITEM_STATUS_DONE);
  EXPECT_EQ(after(events.size()), "completed");

  // The export uses it once an item changed.
  absl::StatusOr<ArialRun> parsed = ParseArialState(ReadArialFile("state-plan.json"));
  ASSERT_OK(parsed);
  auto [run, items] = AsCreated(parsed->run, parsed->items);
  items[0].set_version(3);
  items[0].set_status(coordinator::v1::ITEM_STATUS_DONE);
  std::vector<Event> log(events.begin(), events.begin() + 5);  // ..., a done
  for (Event& e : log) {
    if (e.item_id() == "a") e.set_item_id("api");
    if (e.item_id() == "b") e.set_item_id("ui");
  }
  EXPECT_EQ(JsonObject(FormatArialState(run, items, &log)).fields().at("status").string_value(),
            "running");
  EXPECT_EQ(JsonObject(FormatArialState(run, items)).fields().at("status").string_value(),
            "planning");  // without a log: derived from the items now
}

TEST(ArialStateTest, ExportWritesWhatChangedAsArialWouldHave) {
  absl::StatusOr<ArialRun> parsed = ParseArialState(ReadArialFile("state-full.json"));
  ASSERT_OK(parsed);
  auto [run, items] = AsCreated(parsed->run, parsed->items);
  // search-index completed here after a second claim; docs started.
  WorkItem& search = items[2];
  search.set_version(5);
  search.set_status(coordinator::v1::ITEM_STATUS_DONE);
  search.set_pid(0);  // not running any more
  search.set_attempts(2);
  search.set_summary("indexed 12k products");
  search.mutable_complete_time()->set_seconds(1767225900);
  search.mutable_complete_time()->set_nanos(250000000);
  WorkItem& docs = items[3];
  docs.set_version(2);
  docs.set_status(coordinator::v1::ITEM_STATUS_RUNNING);
  docs.set_pid(5150);
  docs.set_attempts(1);
  docs.mutable_start_time()->set_seconds(1767225660);
  run.mutable_update_time()->set_seconds(1767225900);
  const google::protobuf::Struct out = JsonObject(FormatArialState(run, items));
  EXPECT_EQ(out.fields().at("updatedAt").string_value(), "2026-01-01T00:05:00.000Z");
  EXPECT_EQ(out.fields().at("status").string_value(), "failed");  // payment-flow still failed
  const auto& list = out.fields().at("workstreams").list_value();
  const auto& s = list.values(2).struct_value().fields();
  EXPECT_EQ(s.at("status").string_value(), "done");
  EXPECT_FALSE(s.contains("pid"));
  EXPECT_EQ(s.at("startedAt").string_value(), "2025-03-02T09:10:00.000Z");  // as imported
  EXPECT_EQ(s.at("completedAt").string_value(), "2026-01-01T00:05:00.250Z");
  EXPECT_EQ(s.at("retryCount").number_value(), 1);
  EXPECT_EQ(s.at("summary").string_value(), "indexed 12k products");
  EXPECT_EQ(s.at("notes").struct_value().fields().at("owner").string_value(), "dana");
  const auto& d = list.values(3).struct_value().fields();
  EXPECT_EQ(d.at("status").string_value(), "running");
  EXPECT_EQ(d.at("pid").number_value(), 5150);
  EXPECT_EQ(d.at("startedAt").string_value(), "2026-01-01T00:01:00.000Z");
  EXPECT_EQ(d.at("retryCount").number_value(), 0);
}

TEST(ArialStateTest, ARunMadeHereExportsToo) {
  coordinator::v1::Run run;
  run.set_run_id("r2");
  run.set_specs_dir("/repo/specs");
  run.set_base_branch("main");
  run.set_status(coordinator::v1::RUN_STATUS_PLANNING);
  run.mutable_create_time()->set_seconds(1767225600);
  *run.mutable_update_time() = run.create_time();
  WorkItem b;
  b.set_item_id("b");
  b.set_title("B");
  b.set_description("/repo/specs/b.md");
  b.set_status(coordinator::v1::ITEM_STATUS_PENDING);
  b.set_branch("arial/b");
  b.set_worktree(".arial/worktrees/b");
  b.set_version(1);
  WorkItem a = b;
  a.set_item_id("a");
  a.set_description("/repo/specs/a.md");
  // Paths relative to the project (the folder holding the specs folder), as Arial's schema
  // has them.
  ExpectSameJson(FormatArialState(run, {b, a}),
                 R"({"version":2,"specsDir":"./specs","baseBranch":"main","status":"planning",
                     "createdAt":"2026-01-01T00:00:00.000Z","updatedAt":"2026-01-01T00:00:00.000Z",
                     "workstreams":[
                       {"id":"a","specFile":"specs/a.md","title":"B",
                        "description":"/repo/specs/a.md","status":"pending","branch":"arial/b",
                        "worktreePath":".arial/worktrees/b","retryCount":0},
                       {"id":"b","specFile":"specs/b.md","title":"B",
                        "description":"/repo/specs/b.md","status":"pending","branch":"arial/b",
                        "worktreePath":".arial/worktrees/b","retryCount":0}]})");
  // Another project (--project-dir): the specs lie outside it, so their paths stay absolute.
  const google::protobuf::Struct elsewhere =
      JsonObject(FormatArialState(run, {a}, nullptr, "/other"));
  EXPECT_EQ(elsewhere.fields().at("specsDir").string_value(), "/repo/specs");
  EXPECT_EQ(elsewhere.fields()
                .at("workstreams")
                .list_value()
                .values(0)
                .struct_value()
                .fields()
                .at("specFile")
                .string_value(),
            "/repo/specs/a.md");
  // The repository's root as the project.
  EXPECT_EQ(
      JsonObject(FormatArialState(run, {a}, nullptr, "/")).fields().at("specsDir").string_value(),
      "./repo/specs");
}

TEST(ArialStateTest, SpecPathsAreRelativeToTheProjectOnlyInsideIt) {
  EXPECT_EQ(ArialProjectPath("/p/specs/auth.md", "", "/p", false), "specs/auth.md");
  EXPECT_EQ(ArialProjectPath("/p/specs", "", "/p", true), "./specs");
  EXPECT_EQ(ArialProjectPath("/p/specs", "", "/p/", true), "./specs");
  EXPECT_EQ(ArialProjectPath("/p/specs/../other/a.md", "", "/p", false), "other/a.md");
  EXPECT_EQ(ArialProjectPath("/p", "", "/p", true), ".");
  // Outside the project: absolute, as given.
  EXPECT_EQ(ArialProjectPath("/q/specs/auth.md", "", "/p", false), "/q/specs/auth.md");
  EXPECT_EQ(ArialProjectPath("/pp/specs/a.md", "", "/p", false), "/pp/specs/a.md");
}

// A relative path is the imported file's: relative to the project it came from.
TEST(ArialStateTest, ImportedPathsFollowTheProjectTheyCameFrom) {
  // Exported to the same project: as the file had them.
  EXPECT_EQ(ArialProjectPath("./specs", "/p", "/p", true), "./specs");
  EXPECT_EQ(ArialProjectPath("specs", "/p", "/p/", true), "specs");
  EXPECT_EQ(ArialProjectPath("specs/a.md", "/p", "/p", false), "specs/a.md");
  // Exported to another project (--project-dir): relative to it, or absolute outside it.
  EXPECT_EQ(ArialProjectPath("./specs", "/p", "/", true), "./p/specs");
  EXPECT_EQ(ArialProjectPath("specs/a.md", "/p", "/p/specs", false), "a.md");
  EXPECT_EQ(ArialProjectPath("./specs", "/p", "/q", true), "/p/specs");
  // Where it came from is not known (a relative one is no better): as the file had it.
  EXPECT_EQ(ArialProjectPath("./specs", "", "/q", true), "./specs");
  EXPECT_EQ(ArialProjectPath("./specs", "p", "/q", true), "./specs");
}

TEST(ArialStateTest, PathsClimbingOutOfTheProjectAreAbsolute) {
  // ".." segments are resolved before the path is placed: out of the project is outside.
  EXPECT_EQ(ArialProjectPath("/p/specs/../../etc/passwd", "", "/p", false),
            "/p/specs/../../etc/passwd");
  EXPECT_EQ(ArialProjectPath("../../etc/passwd", "/p/a", "/p/a", false), "/etc/passwd");
  EXPECT_EQ(ArialProjectPath("..", "/p", "/p", true), "/");
  EXPECT_EQ(ArialProjectPath("specs/../../p/specs/a.md", "/p", "/", false), "p/specs/a.md");
  // No project (empty or relative): nothing to be relative to, so absolute where known.
  EXPECT_EQ(ArialProjectPath("/p/specs/a.md", "", "", false), "/p/specs/a.md");
  EXPECT_EQ(ArialProjectPath("/p/specs/a.md", "", "p", false), "/p/specs/a.md");
  EXPECT_EQ(ArialProjectPath("specs/a.md", "/p", "", false), "/p/specs/a.md");
  // An empty path names no file, so it stays empty.
  EXPECT_EQ(ArialProjectPath("", "/p", "/", false), "");
}

TEST(ArialStateTest, TheProjectIsTheDirectoryHoldingDotArial) {
  EXPECT_EQ(ArialProjectDir("/home/dana/shop/.arial/state.json"), "/home/dana/shop");
  EXPECT_EQ(ArialProjectDir("/home/dana/shop/./.arial/../.arial/state.json"), "/home/dana/shop");
  EXPECT_EQ(ArialProjectDir("/.arial/state.json"), "/");
  // A state file kept anywhere else: the directory it was imported from.
  EXPECT_EQ(ArialProjectDir("/srv/copies/state.json"), "/srv/copies");
  // Not the path of a file with a place: no project.
  EXPECT_EQ(ArialProjectDir(".arial/state.json"), "");
  EXPECT_EQ(ArialProjectDir("/home/dana/shop/.arial/"), "");
  EXPECT_EQ(ArialProjectDir(""), "");
}

TEST(ArialStateTest, AnImportKeepsItsProjectForTheExport) {
  const std::string text = ReadArialFile("state-plan.json");
  absl::StatusOr<ArialRun> parsed = ParseArialState(text, "/home/dana/shop");
  ASSERT_OK(parsed);
  EXPECT_EQ(parsed->run.metadata()
                .fields()
                .at("arial")
                .struct_value()
                .fields()
                .at("projectDir")
                .string_value(),
            "/home/dana/shop");
  const auto plan = AsCreated(parsed->run, parsed->items);
  ExpectSameJson(FormatArialState(plan.first, plan.second), text);  // kept, not exported
  EXPECT_THAT(ExportedPaths(FormatArialState(plan.first, plan.second, nullptr, "/home/dana")),
              ElementsAre("./shop/specs", "shop/specs/api.md", "shop/specs/ui.md"));
  EXPECT_THAT(ExportedPaths(FormatArialState(plan.first, plan.second, nullptr, "/elsewhere")),
              ElementsAre("/home/dana/shop/specs", "/home/dana/shop/specs/api.md",
                          "/home/dana/shop/specs/ui.md"));

  // A file with absolute paths: relative to the project it came from, not to the folder
  // holding the specs; absolute for a spec outside the project.
  const std::string absolute =
      absl::StrReplaceAll(text, {{R"("./specs")", R"("/home/dana/shop/docs/specs")"},
                                 {R"("specs/api.md")", R"("/home/dana/shop/docs/specs/api.md")"},
                                 {R"("specs/ui.md")", R"("/home/dana/shared/ui.md")"}});
  parsed = ParseArialState(absolute, "/home/dana/shop");
  ASSERT_OK(parsed);
  auto [run, items] = AsCreated(parsed->run, parsed->items);
  // Added here: a spec's absolute path, and free text that is no path.
  WorkItem spec = items[0];
  spec.set_item_id("new");
  spec.clear_metadata();
  spec.set_description("/home/dana/shop/docs/specs/new.md");
  WorkItem text_only = spec;
  text_only.set_item_id("prose");
  text_only.set_description("Write the docs");
  items.push_back(spec);
  items.push_back(text_only);
  EXPECT_THAT(ExportedPaths(FormatArialState(run, items)),
              ElementsAre("./docs/specs", "docs/specs/api.md", "/home/dana/shared/ui.md",
                          "docs/specs/new.md", "Write the docs"));
  EXPECT_THAT(ExportedPaths(FormatArialState(run, items, nullptr, "/home/dana")),
              ElementsAre("./shop/docs/specs", "shop/docs/specs/api.md", "shared/ui.md",
                          "shop/docs/specs/new.md", "Write the docs"));
}

TEST(ArialStateTest, BadFilesAreRefusedWithWhatIsWrong) {
  const std::string good = ReadArialFile("state-plan.json");
  auto with = [&](const std::string& from, const std::string& to) {
    std::string text = absl::StrReplaceAll(good, {{from, to}});
    EXPECT_NE(text, good) << from;
    return text;
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{", "not a JSON object"},
      {"[]", "not a JSON object"},
      {std::string(100, '[') + std::string(100, ']'), "nests deeper"},
      {with("\"version\":2,", ""), "version is missing"},
      {with("\"version\":2", "\"version\":3"), "version 3 is not one this coordinator reads"},
      {with("\"version\":2", "\"version\":\"2\""), "version must be a number, not a string"},
      {with("\"version\":2", "\"version\":1.5"), "version must be a whole number"},
      {with("\"status\":\"planning\"", "\"status\":\"paused\""), "Arial's are planning"},
      {with("\"baseBranch\":\"develop\",", ""), "baseBranch is missing"},
      {with("\"createdAt\":\"2025-04-01T12:00:00.000Z\"", "\"createdAt\":\"yesterday\""),
       "createdAt is not an ISO 8601 time"},
      {with("\"workstreams\":[", "\"workstreams\":{\"x\":["), "not a JSON object"},
      {with("\"id\":\"api\"", "\"id\":\"../../etc\""),
       "workstreams[0].id \"../../etc\" would name"},
      {with("\"id\":\"api\"", "\"id\":\"a\\u0000b\""), "has a control character"},
      {with("\"id\":\"api\"", "\"id\":\"\""), "workstreams[0].id is empty"},
      {with("\"id\":\"api\"", absl::StrCat("\"id\":\"", std::string(300, 'x'), "\"")),
       "300 bytes long"},
      {with("\"id\":\"ui\"", "\"id\":\"api\""), "workstream api appears twice"},
      {with("\"status\":\"pending\",\"branch\":\"arial/ui\"",
            "\"status\":\"stuck\",\"branch\":\"arial/ui\""),
       "workstreams[1].status is \"stuck\""},
      {with("\"retryCount\":0,\"dependencies\"", "\"retryCount\":-1,\"dependencies\""),
       "workstreams[1].retryCount must be a whole number from 0"},
      {with("\"dependencies\":[\"api\"]", "\"dependencies\":\"api\""),
       "workstreams[1].dependencies must be an array"},
      {with("\"requiredCapabilities\":[\"network\"]", "\"requiredCapabilities\":[7]"),
       "workstreams[0].requiredCapabilities[0] must be a string"},
  };
  for (const auto& [text, message] : cases) {
    absl::StatusOr<ArialRun> parsed = ParseArialState(text);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(parsed.status().message(), HasSubstr(message)) << text;
  }
}

// A run under way: what ImportRun is asked to keep, and the export of the run as imported (its
// items carry those states now) is still the file.
TEST(ArialStateTest, ARunUnderWayIsImportedWithItsStates) {
  const std::string text = ReadArialFile("state-full.json");
  absl::StatusOr<ArialRun> parsed = ParseArialState(text);
  ASSERT_OK(parsed);
  const coordinator::v1::ImportRunRequest request = ArialImportRequest(*parsed);
  ASSERT_EQ(request.items_size(), 4);
  const WorkItem& auth = request.items(0);
  EXPECT_EQ(auth.status(), coordinator::v1::ITEM_STATUS_DONE);
  EXPECT_EQ(auth.attempts(), 1);  // its retryCount stays in the metadata
  EXPECT_TRUE(auth.has_complete_time());
  const WorkItem& payment = request.items(1);
  EXPECT_EQ(payment.status(), coordinator::v1::ITEM_STATUS_FAILED);
  EXPECT_EQ(payment.attempts(), 1);
  EXPECT_EQ(payment.last_error(), "npm test exited with code 1");
  EXPECT_TRUE(payment.worker_id().empty());
  const WorkItem& search = request.items(2);
  EXPECT_EQ(search.status(), coordinator::v1::ITEM_STATUS_RUNNING);
  EXPECT_EQ(search.worker_id(), "arial-48213");
  EXPECT_EQ(search.pid(), 48213);
  const WorkItem& docs = request.items(3);
  EXPECT_EQ(docs.status(), coordinator::v1::ITEM_STATUS_PENDING);
  EXPECT_EQ(docs.attempts(), 0);
  EXPECT_TRUE(request.workers().empty());

  // A running workstream without a pid is held by "arial".
  ArialRun no_pid = *parsed;
  no_pid.items[2].set_pid(0);
  EXPECT_EQ(ArialImportRequest(no_pid).items(2).worker_id(), "arial");

  // As the coordinator keeps them (version 1): the export is the file, retryCount included.
  ArialRun imported = *parsed;
  for (int i = 0; i < request.items_size(); ++i) imported.items[i] = request.items(i);
  auto [run, items] = AsCreated(imported.run, imported.items);
  ExpectSameJson(FormatArialState(run, items), text);
}

// A failed workstream's completedAt (Arial may write one) comes back on an unchanged export,
// though the coordinator keeps a complete time only for done items.
TEST(ArialStateTest, CompletedAtOfAFailedWorkstreamComesBackAsImported) {
  const std::string text = absl::StrReplaceAll(
      ReadArialFile("state-full.json"),
      {{R"("status":"failed","branch":"arial/payment-flow","worktreePath":".arial/worktrees/payment-flow","startedAt":"2025-03-02T08:00:05.301Z",)",
        R"("status":"failed","branch":"arial/payment-flow","worktreePath":".arial/worktrees/payment-flow","startedAt":"2025-03-02T08:00:05.301Z","completedAt":"2025-03-02T08:30:00.000Z",)"}});
  ASSERT_NE(text, ReadArialFile("state-full.json"));
  absl::StatusOr<ArialRun> parsed = ParseArialState(text);
  ASSERT_OK(parsed);
  const coordinator::v1::ImportRunRequest request = ArialImportRequest(*parsed);
  EXPECT_FALSE(request.items(1).has_complete_time());
  ArialRun imported = *parsed;
  for (int i = 0; i < request.items_size(); ++i) imported.items[i] = request.items(i);
  auto [run, items] = AsCreated(imported.run, imported.items);
  ExpectSameJson(FormatArialState(run, items), text);
}

}  // namespace
}  // namespace coordctl
