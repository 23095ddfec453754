#include "coordctl/mahabharatha_state.h"

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
using ::testing::HasSubstr;
using ::testing_util::ExpectSameJson;
using ::testing_util::JsonObject;
using ::testing_util::ReadWholeFile;

std::string ReadMahabharathaFile(const std::string& name) {
  return ReadWholeFile(absl::StrCat(COORD_SOURCE_DIR, "/tests/testdata/mahabharatha/", name));
}

class MahabharathaRoundTripTest : public ::testing::TestWithParam<const char*> {};

// plan-only.json and user-auth.json were written by MAHABHARATHA's own StateManager.
TEST_P(MahabharathaRoundTripTest, ExportOfAnUnchangedImportIsTheFile) {
  const std::string text = ReadMahabharathaFile(GetParam());
  absl::StatusOr<MahabharathaRun> parsed = ParseMahabharathaState(text);
  ASSERT_OK(parsed);
  auto [run, items] = AsCreated(parsed->run, parsed->items);
  const std::string out = FormatMahabharathaState(run, items, {});
  ExpectSameJson(out, text);
}

INSTANTIATE_TEST_SUITE_P(Files, MahabharathaRoundTripTest,
                         ::testing::Values("plan-only.json", "user-auth.json",
                                           "seed-example.json"));

TEST(MahabharathaStateTest, ReadsTasksAsItems) {
  absl::StatusOr<MahabharathaRun> parsed =
      ParseMahabharathaState(ReadMahabharathaFile("user-auth.json"));
  ASSERT_OK(parsed);
  EXPECT_EQ(parsed->run.kind(), coordinator::v1::RUN_KIND_TASK_GRAPH);
  EXPECT_EQ(parsed->run.feature(), "user-auth");
  ASSERT_EQ(parsed->items.size(), 4u);
  EXPECT_EQ(parsed->items[0].item_id(), "AUTH-L1-001");
  EXPECT_EQ(parsed->items[0].status(), coordinator::v1::ITEM_STATUS_DONE);
  EXPECT_EQ(parsed->items[0].worker_id(), "0");
  EXPECT_TRUE(parsed->items[0].has_start_time());
  EXPECT_TRUE(parsed->items[0].has_complete_time());
  EXPECT_EQ(parsed->items[2].status(), coordinator::v1::ITEM_STATUS_RUNNING);
  EXPECT_EQ(parsed->items[3].status(), coordinator::v1::ITEM_STATUS_FAILED);
  EXPECT_EQ(parsed->items[3].last_error(), "pytest: 2 failed");
  EXPECT_EQ(parsed->items[0].level(), 1);  // the StateManager writes no level
}

TEST(MahabharathaStateTest, ExportWritesWhatChangedAsTheStateManagerWould) {
  absl::StatusOr<MahabharathaRun> parsed =
      ParseMahabharathaState(ReadMahabharathaFile("plan-only.json"));
  ASSERT_OK(parsed);
  auto [run, items] = AsCreated(parsed->run, parsed->items);
  // Worker "3" took DOCS-L1-001 and completed it; level 1 runs.
  WorkItem& done = items[0];
  done.set_version(3);
  done.set_status(coordinator::v1::ITEM_STATUS_DONE);
  done.set_worker_id("3");
  done.set_attempts(1);
  done.mutable_start_time()->set_seconds(1767225660);
  done.mutable_complete_time()->set_seconds(1767225720);
  done.mutable_update_time()->set_seconds(1767225720);
  run.set_current_level(1);
  run.mutable_update_time()->set_seconds(1767225720);
  coordinator::v1::LevelState* level = run.add_level_states();
  level->set_level(1);
  level->set_status(coordinator::v1::LEVEL_STATUS_RUNNING);
  level->mutable_start_time()->set_seconds(1767225660);
  coordinator::v1::RunWorker worker;
  worker.set_worker_id("3");
  worker.set_status(coordinator::v1::WORKER_STATUS_IDLE);
  worker.mutable_last_heartbeat_time()->set_seconds(1767225720);
  worker.mutable_create_time()->set_seconds(1767225660);
  worker.set_items_completed(1);
  const google::protobuf::Struct out = JsonObject(FormatMahabharathaState(run, items, {worker}));
  EXPECT_EQ(out.fields().at("current_level").number_value(), 1);
  const auto& task = out.fields().at("tasks").struct_value().fields().at("DOCS-L1-001");
  ExpectSameJson(absl::StrCat(R"({"v":)",
                              [&] {
                                std::string s;
                                (void)google::protobuf::util::MessageToJsonString(task, &s);
                                return s;
                              }(),
                              "}"),
                 R"({"v":{"status":"complete","updated_at":"2026-01-01T00:02:00",
                    "worker_id":3,"claimed_at":"2026-01-01T00:01:00",
                    "started_at":"2026-01-01T00:01:00","completed_at":"2026-01-01T00:02:00",
                    "duration_ms":60000}})");
  const auto& untouched = out.fields().at("tasks").struct_value().fields().at("DOCS-L1-002");
  EXPECT_EQ(untouched.struct_value().fields().at("updated_at").string_value(),
            "2026-11-24T11:18:44.985380");  // as imported
  const auto& l1 = out.fields().at("levels").struct_value().fields().at("1").struct_value();
  EXPECT_EQ(l1.fields().at("status").string_value(), "running");
  EXPECT_EQ(l1.fields().at("started_at").string_value(), "2026-01-01T00:01:00");
  const auto& w = out.fields().at("workers").struct_value().fields().at("3").struct_value();
  EXPECT_EQ(w.fields().at("worker_id").number_value(), 3);
  EXPECT_EQ(w.fields().at("status").string_value(), "idle");
  EXPECT_TRUE(w.fields().at("current_task").has_null_value());
  EXPECT_EQ(w.fields().at("health_check_at").string_value(), "2026-01-01T00:02:00");
  EXPECT_EQ(w.fields().at("tasks_completed").number_value(), 1);
  EXPECT_TRUE(w.fields().contains("port"));  // every key WorkerState.to_dict writes
  // but a null branch, which their state renderer cannot show (len(None)); without it, "-".
  EXPECT_FALSE(w.fields().contains("branch"));
}

// A run stopped by a failure shows it as their set_error would, unless the file had an error.
TEST(MahabharathaStateTest, AFailedRunSaysWhichTaskStoppedIt) {
  absl::StatusOr<MahabharathaRun> parsed =
      ParseMahabharathaState(ReadMahabharathaFile("plan-only.json"));
  ASSERT_OK(parsed);
  auto [run, items] = AsCreated(parsed->run, parsed->items);
  run.set_status(coordinator::v1::RUN_STATUS_FAILED);
  items[1].set_version(4);
  items[1].set_status(coordinator::v1::ITEM_STATUS_FAILED);
  items[1].set_last_error("pytest: 2 failed");
  items[2].set_version(4);
  items[2].set_status(coordinator::v1::ITEM_STATUS_FAILED);
  const google::protobuf::Struct out = JsonObject(FormatMahabharathaState(run, items, {}));
  EXPECT_EQ(out.fields().at("error").string_value(),
            absl::StrCat("2 tasks failed: ", items[1].item_id(), " (pytest: 2 failed) and 1 more"));

  run.set_status(coordinator::v1::RUN_STATUS_BLOCKED);
  items[2].set_status(coordinator::v1::ITEM_STATUS_PENDING);
  items[1].set_status(coordinator::v1::ITEM_STATUS_BLOCKED);
  EXPECT_EQ(JsonObject(FormatMahabharathaState(run, items, {})).fields().at("error").string_value(),
            absl::StrCat("1 task out of attempts: ", items[1].item_id(), " (pytest: 2 failed)"));

  run.set_status(coordinator::v1::RUN_STATUS_RUNNING);
  EXPECT_TRUE(
      JsonObject(FormatMahabharathaState(run, items, {})).fields().at("error").has_null_value());
}

TEST(MahabharathaStateTest, ARunMadeHereExportsWithTheInitialKeys) {
  coordinator::v1::Run run;
  run.set_feature("made-here");
  run.mutable_create_time()->set_seconds(1767225600);
  WorkItem item;
  item.set_item_id("T-1");
  item.set_status(coordinator::v1::ITEM_STATUS_PENDING);
  item.set_version(1);
  item.mutable_update_time()->set_seconds(1767225600);
  ExpectSameJson(FormatMahabharathaState(run, {item}, {}),
                 R"({"feature":"made-here","started_at":"2026-01-01T00:00:00","current_level":0,
                     "tasks":{"T-1":{"status":"pending","updated_at":"2026-01-01T00:00:00"}},
                     "workers":{},"levels":{},"execution_log":[],"metrics":null,
                     "paused":false,"error":null})");
}

// Their status and StateManager read every worker id with int(): workers named with letters are
// written under their numbers (RunWorker.number, or the one a worker registered before numbers
// were kept would have got), in the workers map, the tasks, the execution log and the
// assignments alike.
TEST(MahabharathaStateTest, TheirStatusReadsEveryWorkerIdAsANumber) {
  coordinator::v1::Run run;
  run.set_feature("named-workers");
  run.mutable_create_time()->set_seconds(1767225600);
  std::vector<coordinator::v1::RunWorker> workers(3);
  workers[0].set_worker_id("alice");
  workers[0].set_number(0);
  workers[1].set_worker_id("4");
  workers[1].set_number(4);
  workers[2].set_worker_id("legacy");  // registered before numbers were kept: after the highest
  workers[2].mutable_create_time()->set_seconds(1767225601);
  std::vector<WorkItem> items(2);
  for (int i = 0; i < 2; ++i) {
    items[i].set_item_id(absl::StrCat("T-", i));
    items[i].set_status(coordinator::v1::ITEM_STATUS_RUNNING);
    items[i].set_version(2);
    items[i].set_worker_id(i == 0 ? "alice" : "legacy");
  }
  coordinator::v1::WorkEvent claimed;
  claimed.set_seq(1);
  claimed.set_kind(coordinator::v1::WorkEvent::KIND_ITEM_CLAIMED);
  claimed.set_item_id("T-0");
  claimed.set_worker_id("alice");
  const std::vector<coordinator::v1::WorkEvent> events = {claimed};
  const google::protobuf::Struct out =
      JsonObject(FormatMahabharathaState(run, items, workers, &events));
  const auto& map = out.fields().at("workers").struct_value().fields();
  ASSERT_EQ(map.size(), 3u);
  EXPECT_EQ(map.at("0").struct_value().fields().at("worker_id").number_value(), 0);
  EXPECT_EQ(map.at("4").struct_value().fields().at("worker_id").number_value(), 4);
  EXPECT_EQ(map.at("5").struct_value().fields().at("worker_id").number_value(), 5);
  const auto& tasks = out.fields().at("tasks").struct_value().fields();
  EXPECT_EQ(tasks.at("T-0").struct_value().fields().at("worker_id").number_value(), 0);
  EXPECT_EQ(tasks.at("T-1").struct_value().fields().at("worker_id").number_value(), 5);
  const auto& log = out.fields().at("execution_log").list_value();
  ASSERT_EQ(log.values_size(), 1);
  EXPECT_EQ(log.values(0)
                .struct_value()
                .fields()
                .at("data")
                .struct_value()
                .fields()
                .at("worker_id")
                .number_value(),
            0);
  const google::protobuf::Struct assignments =
      JsonObject(FormatMahabharathaAssignments(run, items, workers, absl::UnixEpoch()));
  const auto& list = assignments.fields().at("assignments").list_value();
  ASSERT_EQ(list.values_size(), 2);
  EXPECT_EQ(list.values(1).struct_value().fields().at("worker_id").number_value(), 5);
}

TEST(MahabharathaStateTest, BadFilesAreRefusedWithWhatIsWrong) {
  const std::string good = ReadMahabharathaFile("seed-example.json");
  auto with = [&](const std::string& from, const std::string& to) {
    std::string text = absl::StrReplaceAll(good, {{from, to}});
    EXPECT_NE(text, good) << from;
    return text;
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{", "not a JSON object"},
      {std::string(100, '[') + std::string(100, ']'), "nests deeper"},
      {with("\"feature\": \"my-feature\",", ""), "feature is missing"},
      {with("\"feature\": \"my-feature\"", "\"feature\": \"../up\""), "feature \"../up\" would"},
      {with("\"TASK-001\"", "\"TASK/001\""), "task id \"TASK/001\" would name"},
      {with("\"TASK-001\"", "\"TASK\\u0007\""), "control character"},
      {with("\"TASK-001\"", absl::StrCat("\"", std::string(300, 't'), "\"")), "300 bytes long"},
      {with("\"status\": \"complete\"", "\"status\": \"done\""),
       "tasks.TASK-001.status is \"done\""},
      {with("\"worker_id\": 0", "\"worker_id\": [0]"), "tasks.TASK-001.worker_id must be"},
      {with("\"started_at\": \"2026-01-31T10:00:00\"", "\"started_at\": \"noon\""),
       "tasks.TASK-001.started_at is not an ISO 8601 time"},
      {with("\"current_level\": 2", "\"current_level\": -2"), "current_level must be a whole"},
      {with("\"0\": {\"status\": \"running\"", "\"zero\": {\"status\": \"running\""),
       "workers has the key \"zero\""},
      {with("\"0\": {\"status\": \"running\"", "\"0\": {\"status\": \"sleeping\""),
       "workers.0.status is \"sleeping\""},
      {with("\"1\": {\"status\": \"merged\"", "\"L1\": {\"status\": \"merged\""),
       "levels has the key \"L1\""},
      {with("\"tasks\": {", "\"tasks\": [{"), "not a JSON object"},
  };
  for (const auto& [text, message] : cases) {
    absl::StatusOr<MahabharathaRun> parsed = ParseMahabharathaState(text);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(parsed.status().message(), HasSubstr(message)) << text;
  }
}

// user-auth.json (written by the StateManager): level 1 merged, a task in progress on worker 0,
// worker 1 crashed, a task failed.
TEST(MahabharathaStateTest, AFeatureUnderWayIsImportedWithItsStates) {
  const std::string text = ReadMahabharathaFile("user-auth.json");
  absl::StatusOr<MahabharathaRun> parsed = ParseMahabharathaState(text);
  ASSERT_OK(parsed);
  EXPECT_FALSE(parsed->levels_known);
  absl::StatusOr<coordinator::v1::ImportRunRequest> request = MahabharathaImportRequest(*parsed);
  ASSERT_OK(request);
  ASSERT_EQ(request->items_size(), 4);
  EXPECT_EQ(request->items(0).status(), coordinator::v1::ITEM_STATUS_DONE);
  EXPECT_EQ(request->items(0).attempts(), 1);
  EXPECT_TRUE(request->items(0).has_complete_time());
  EXPECT_EQ(request->items(2).item_id(), "AUTH-L2-001");
  EXPECT_EQ(request->items(2).status(), coordinator::v1::ITEM_STATUS_RUNNING);
  EXPECT_EQ(request->items(2).worker_id(), "0");
  EXPECT_EQ(request->items(3).status(), coordinator::v1::ITEM_STATUS_FAILED);
  EXPECT_EQ(request->items(3).last_error(), "pytest: 2 failed");
  ASSERT_EQ(request->workers_size(), 2);
  EXPECT_EQ(request->workers(0).worker_id(), "0");
  EXPECT_EQ(request->workers(0).status(), coordinator::v1::WORKER_STATUS_IDLE);  // busy: server
  EXPECT_EQ(request->workers(0).items_completed(), 1);
  EXPECT_EQ(request->workers(1).status(), coordinator::v1::WORKER_STATUS_LOST);
  EXPECT_EQ(request->workers(1).status_reason(), "imported as crashed");
  // Without the tasks' levels every task is at level 1: the file's levels are not matched.
  EXPECT_TRUE(request->run().level_states().empty());

  // The run as imported, its workers registered with it and unchanged: the export is the file.
  MahabharathaRun imported = *parsed;
  for (int i = 0; i < request->items_size(); ++i) imported.items[i] = request->items(i);
  auto [run, items] = AsCreated(imported.run, imported.items);
  std::vector<coordinator::v1::RunWorker> workers(request->workers().begin(),
                                                  request->workers().end());
  for (coordinator::v1::RunWorker& w : workers) {
    *w.mutable_create_time() = run.create_time();
    *w.mutable_update_time() = run.create_time();
  }
  workers[0].set_status(coordinator::v1::WORKER_STATUS_BUSY);
  ExpectSameJson(FormatMahabharathaState(run, items, workers), text);
  // A worker that changed since is written as the registry has it.
  workers[1].mutable_update_time()->set_seconds(run.create_time().seconds() + 5);
  workers[1].set_status(coordinator::v1::WORKER_STATUS_IDLE);
  const google::protobuf::Struct state = JsonObject(FormatMahabharathaState(run, items, workers));
  EXPECT_EQ(state.fields()
                .at("workers")
                .struct_value()
                .fields()
                .at("1")
                .struct_value()
                .fields()
                .at("status")
                .string_value(),
            "idle");
}

TEST(MahabharathaStateTest, KnownLevelsKeepTheirMerge) {
  // Each task names its level: level 1's merge is kept.
  const std::string text =
      absl::StrReplaceAll(ReadMahabharathaFile("user-auth.json"),
                          {{R"("AUTH-L1-001": {)", R"("AUTH-L1-001": {"level": 1,)"},
                           {R"("AUTH-L1-002": {)", R"("AUTH-L1-002": {"level": 1,)"},
                           {R"("AUTH-L2-001": {)", R"("AUTH-L2-001": {"level": 2,)"},
                           {R"("AUTH-L2-002": {)", R"("AUTH-L2-002": {"level": 2,)"}});
  absl::StatusOr<MahabharathaRun> parsed = ParseMahabharathaState(text);
  ASSERT_OK(parsed);
  EXPECT_TRUE(parsed->levels_known);
  absl::StatusOr<coordinator::v1::ImportRunRequest> request = MahabharathaImportRequest(*parsed);
  ASSERT_OK(request);
  ASSERT_EQ(request->run().level_states_size(), 1);
  const coordinator::v1::LevelState& level = request->run().level_states(0);
  EXPECT_EQ(level.level(), 1);
  EXPECT_EQ(level.status(), coordinator::v1::LEVEL_STATUS_MERGED);
  EXPECT_EQ(level.merge_commit(), "4f2a9c1");
  EXPECT_TRUE(level.has_merge_time());
}

TEST(MahabharathaStateTest, ARunningTaskNoWorkerHoldsIsRefused) {
  const std::string text =
      absl::StrReplaceAll(ReadMahabharathaFile("user-auth.json"),
                          {{R"("worker_id": 0,
      "claimed_at": "2026-11-24T11:18:45.138071",)",
                            R"("claimed_at": "2026-11-24T11:18:45.138071",)"},
                           {R"("current_task": "AUTH-L2-001")", R"("current_task": null)"}});
  absl::StatusOr<MahabharathaRun> parsed = ParseMahabharathaState(text);
  ASSERT_OK(parsed);
  absl::StatusOr<coordinator::v1::ImportRunRequest> request = MahabharathaImportRequest(*parsed);
  EXPECT_EQ(request.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(request.status().message(),
              HasSubstr("tasks.AUTH-L2-001 is running but has no worker_id, and no worker's "
                        "current_task is it"));
  // Its worker's current_task is enough.
  const std::string held = absl::StrReplaceAll(text, {{R"("current_task": null,
      "port": 49152)",
                                                       R"("current_task": "AUTH-L2-001",
      "port": 49152)"}});
  ASSERT_NE(held, text);
  parsed = ParseMahabharathaState(held);
  ASSERT_OK(parsed);
  request = MahabharathaImportRequest(*parsed);
  ASSERT_OK(request);
  EXPECT_EQ(request->items(2).worker_id(), "0");
}

// user-auth-assignments.json was written by MAHABHARATHA's WorkerAssignment.save_to_file for
// the tasks and workers of user-auth.json (make_assignments.py): the export is that file, byte
// for byte, given its generated_at.
TEST(MahabharathaStateTest, WorkerAssignmentsAreWrittenAsSaveToFileWritesThem) {
  absl::StatusOr<MahabharathaRun> parsed =
      ParseMahabharathaState(ReadMahabharathaFile("user-auth.json"));
  ASSERT_OK(parsed);
  absl::StatusOr<coordinator::v1::ImportRunRequest> request = MahabharathaImportRequest(*parsed);
  ASSERT_OK(request);
  std::vector<WorkItem> items(request->items().begin(), request->items().end());
  std::vector<coordinator::v1::RunWorker> workers(request->workers().begin(),
                                                  request->workers().end());
  const std::string expected = ReadMahabharathaFile("user-auth-assignments.json");
  const google::protobuf::Struct file = JsonObject(expected);
  absl::StatusOr<absl::Time> generated =
      ParseIsoTime("generated_at", file.fields().at("generated_at").string_value());
  ASSERT_OK(generated);
  EXPECT_EQ(FormatMahabharathaAssignments(request->run(), items, workers, *generated), expected);

  // A task nobody took has no assignment; a holder the registry lacks still counts.
  items[3].clear_worker_id();
  items[1].set_worker_id("7");
  const google::protobuf::Struct out =
      JsonObject(FormatMahabharathaAssignments(request->run(), items, {}, *generated));
  EXPECT_EQ(out.fields().at("worker_count").number_value(), 2);
  const auto& list = out.fields().at("assignments").list_value();
  ASSERT_EQ(list.values_size(), 3);
  EXPECT_EQ(list.values(1).struct_value().fields().at("worker_id").number_value(), 7);
}

TEST(MahabharathaStateTest, TheTaskGraphGivesLevelsDependenciesAndFiles) {
  absl::StatusOr<MahabharathaRun> parsed =
      ParseMahabharathaState(ReadMahabharathaFile("user-auth.json"));
  ASSERT_OK(parsed);
  ASSERT_OK(JoinMahabharathaTaskGraph(ReadMahabharathaFile("user-auth-task-graph.json"), &*parsed));
  EXPECT_TRUE(parsed->levels_known);
  ASSERT_EQ(parsed->items.size(), 5u);
  const WorkItem& login = parsed->items[2];
  EXPECT_EQ(login.item_id(), "AUTH-L2-001");
  EXPECT_EQ(login.level(), 2);
  EXPECT_EQ(login.title(), "Login endpoint");
  EXPECT_THAT(login.dependencies(), ::testing::ElementsAre("AUTH-L1-001", "AUTH-L1-002"));
  EXPECT_EQ(login.verification().command(), "pytest tests/test_login.py");
  EXPECT_EQ(login.status(), coordinator::v1::ITEM_STATUS_RUNNING);  // the state's
  EXPECT_EQ(login.worker_id(), "0");
  const WorkItem& expiry = parsed->items[4];
  EXPECT_EQ(expiry.item_id(), "AUTH-L3-001");
  EXPECT_EQ(expiry.level(), 3);
  EXPECT_EQ(expiry.status(), coordinator::v1::ITEM_STATUS_UNSPECIFIED);  // pending
  // With the levels known, level 1's merge is kept.
  absl::StatusOr<coordinator::v1::ImportRunRequest> request = MahabharathaImportRequest(*parsed);
  ASSERT_OK(request);
  ASSERT_EQ(request->run().level_states_size(), 1);
  EXPECT_EQ(request->run().level_states(0).merge_commit(), "4f2a9c1");
}

// What their status reads from our export: a merged level as their LevelCoordinator writes it
// (status "complete", then merge_status "complete"), and each task's level and description,
// known from the task graph. Their merge format reads back as merged, and an unchanged level is
// not written again.
TEST(MahabharathaStateTest, TheExportIsWhatTheirStatusReads) {
  absl::StatusOr<MahabharathaRun> parsed =
      ParseMahabharathaState(ReadMahabharathaFile("user-auth.json"));
  ASSERT_OK(parsed);
  ASSERT_OK(JoinMahabharathaTaskGraph(ReadMahabharathaFile("user-auth-task-graph.json"), &*parsed));
  absl::StatusOr<coordinator::v1::ImportRunRequest> request = MahabharathaImportRequest(*parsed);
  ASSERT_OK(request);
  std::vector<WorkItem> imported(request->items().begin(), request->items().end());
  auto [run, items] = AsCreated(request->run(), imported);
  // Level 2 is merged since the import; the task AUTH-L2-001 completed.
  run.set_current_level(3);
  run.mutable_update_time()->set_seconds(1767225720);
  coordinator::v1::LevelState* level2 = run.add_level_states();
  level2->set_level(2);
  level2->set_status(coordinator::v1::LEVEL_STATUS_MERGED);
  level2->set_merge_commit("9c0ffee");
  level2->mutable_complete_time()->set_seconds(1767225700);
  level2->mutable_merge_time()->set_seconds(1767225710);
  items[2].set_version(2);
  items[2].set_status(coordinator::v1::ITEM_STATUS_DONE);
  items[2].mutable_update_time()->set_seconds(1767225700);
  const google::protobuf::Struct out = JsonObject(FormatMahabharathaState(run, items, {}));
  const auto& levels = out.fields().at("levels").struct_value().fields();
  const auto& l2 = levels.at("2").struct_value().fields();
  EXPECT_EQ(l2.at("status").string_value(), "complete");
  EXPECT_EQ(l2.at("merge_status").string_value(), "complete");
  EXPECT_EQ(l2.at("merge_commit").string_value(), "9c0ffee");
  EXPECT_EQ(l2.at("completed_at").string_value(), "2026-01-01T00:01:40");
  EXPECT_EQ(l2.at("merge_completed_at").string_value(), "2026-01-01T00:01:50");
  EXPECT_EQ(l2.at("merge_updated_at").string_value(), "2026-01-01T00:01:50");
  // Level 1 is as the file had it.
  EXPECT_EQ(levels.at("1").struct_value().fields().at("merge_commit").string_value(), "4f2a9c1");
  EXPECT_EQ(levels.at("1").struct_value().fields().at("updated_at").string_value(),
            "2026-11-24T11:18:45.108000");
  const auto& tasks = out.fields().at("tasks").struct_value().fields();
  const auto& login = tasks.at("AUTH-L2-001").struct_value().fields();
  EXPECT_EQ(login.at("level").number_value(), 2);
  EXPECT_EQ(login.at("title").string_value(), "Login endpoint");
  EXPECT_EQ(tasks.at("AUTH-L3-001").struct_value().fields().at("level").number_value(), 3);

  // Their format of a merge reads back as merged.
  const std::string theirs =
      absl::StrReplaceAll(FormatMahabharathaState(run, items, {}),
                          {{R"("status": "merged")", R"("status": "complete")"}});
  absl::StatusOr<MahabharathaRun> again = ParseMahabharathaState(theirs);
  ASSERT_OK(again);
  absl::StatusOr<coordinator::v1::ImportRunRequest> reread = MahabharathaImportRequest(*again);
  ASSERT_OK(reread);
  ASSERT_EQ(reread->run().level_states_size(), 2);
  for (const coordinator::v1::LevelState& level : reread->run().level_states()) {
    EXPECT_EQ(level.status(), coordinator::v1::LEVEL_STATUS_MERGED) << level.level();
  }
}

// execution_log: what their status shows as EVENTS, from the run's work log since the import,
// after the entries the file had.
TEST(MahabharathaStateTest, TheWorkLogSinceTheImportIsTheExecutionLog) {
  absl::StatusOr<MahabharathaRun> parsed =
      ParseMahabharathaState(ReadMahabharathaFile("plan-only.json"));
  ASSERT_OK(parsed);
  auto [run, items] = AsCreated(parsed->run, parsed->items);
  run.mutable_create_time()->set_seconds(1767225600);
  using coordinator::v1::WorkEvent;
  std::vector<WorkEvent> events;
  auto add = [&](WorkEvent::Kind kind, int64_t seconds) -> WorkEvent& {
    WorkEvent& e = events.emplace_back();
    e.set_seq(static_cast<int64_t>(events.size()));
    e.set_kind(kind);
    e.mutable_time()->set_seconds(seconds);
    return e;
  };
  add(WorkEvent::KIND_RUN_CREATED, 1767225600);  // the import's own: not theirs
  // The first claim starts the level, in one commit: the claim is logged first, at one time.
  WorkEvent& claimed = add(WorkEvent::KIND_ITEM_CLAIMED, 1767225602);
  claimed.set_item_id("DOCS-L1-001");
  claimed.set_worker_id("3");
  add(WorkEvent::KIND_LEVEL_CHANGED, 1767225602).set_level(1);
  events.back().set_level_status(coordinator::v1::LEVEL_STATUS_RUNNING);
  WorkEvent& failed = add(WorkEvent::KIND_ITEM_FAILED, 1767225603);
  failed.set_item_id("DOCS-L1-001");
  failed.set_worker_id("3");
  failed.set_message("pytest: 1 failed");
  add(WorkEvent::KIND_RUN_STATUS_CHANGED, 1767225604);  // no entry of theirs
  WorkEvent& complete = add(WorkEvent::KIND_LEVEL_CHANGED, 1767225604);
  complete.set_level(1);
  complete.set_level_status(coordinator::v1::LEVEL_STATUS_COMPLETE);
  WorkEvent& merged = add(WorkEvent::KIND_LEVEL_CHANGED, 1767225605);
  merged.set_level(1);
  merged.set_level_status(coordinator::v1::LEVEL_STATUS_MERGED);
  merged.set_message("4f2a9c1");
  const google::protobuf::Struct out = JsonObject(FormatMahabharathaState(run, items, {}, &events));
  const auto& log = out.fields().at("execution_log").list_value();
  const int before = 0;  // plan-only.json's log is empty
  ASSERT_EQ(log.values_size(), before + 5);
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(log, &json);
  ExpectSameJson(absl::StrCat(R"({"v":)", json, "}"), R"({"v":[
      {"timestamp":"2026-01-01T00:00:02","event":"level_started","data":{"tasks":3,"level":1}},
      {"timestamp":"2026-01-01T00:00:02","event":"task_claimed",
       "data":{"task_id":"DOCS-L1-001","worker_id":3}},
      {"timestamp":"2026-01-01T00:00:03","event":"task_failed",
       "data":{"error":"pytest: 1 failed","task_id":"DOCS-L1-001","worker_id":3}},
      {"timestamp":"2026-01-01T00:00:04","event":"level_complete",
       "data":{"merge_deferred":true,"level":1}},
      {"timestamp":"2026-01-01T00:00:05","event":"level_complete",
       "data":{"merge_commit":"4f2a9c1","level":1}}]})");
  // Without a log (an older coordinator), the file's log as it was.
  EXPECT_EQ(JsonObject(FormatMahabharathaState(run, items, {}))
                .fields()
                .at("execution_log")
                .list_value()
                .values_size(),
            before);
}

TEST(MahabharathaStateTest, ATaskGraphThatDoesNotFitIsRefused) {
  const std::string state = ReadMahabharathaFile("user-auth.json");
  const std::string graph = ReadMahabharathaFile("user-auth-task-graph.json");
  const auto join = [&](const std::string& text) {
    absl::StatusOr<MahabharathaRun> parsed = ParseMahabharathaState(state);
    EXPECT_OK(parsed);
    return parsed.ok() ? JoinMahabharathaTaskGraph(text, &*parsed) : parsed.status();
  };
  EXPECT_THAT(
      join(absl::StrReplaceAll(graph, {{R"("feature": "user-auth")", R"("feature": "billing")"}}))
          .message(),
      HasSubstr("task-graph.json is for feature \"billing\", the state file for "
                "\"user-auth\""));
  EXPECT_THAT(
      join(absl::StrReplaceAll(graph, {{R"("id": "AUTH-L2-002")", R"("id": "AUTH-L2-009")"}}))
          .message(),
      HasSubstr("tasks.AUTH-L2-002 is in the state file but not in task-graph.json"));
  EXPECT_EQ(join("{\"tasks\": [").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(join(R"({"tasks": [{"id": "AUTH-L1-001", "level": "high"}]})").code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coordctl
