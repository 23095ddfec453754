#include "coordctl/mahabharatha_logs.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "gtest/gtest.h"
#include "tests/json_test_util.h"

namespace coordctl {
namespace {

using coordinator::v1::WorkEvent;
using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;
using ::testing_util::JsonObject;

constexpr int64_t kStart = 1767225600;  // 2026-01-01T00:00:00Z

WorkEvent Event(int64_t seq, WorkEvent::Kind kind, int64_t millis) {
  WorkEvent e;
  e.set_seq(seq);
  e.set_run_id("r1");
  e.set_kind(kind);
  e.mutable_time()->set_seconds(kStart + millis / 1000);
  e.mutable_time()->set_nanos(static_cast<int32_t>(millis % 1000) * 1000000);
  return e;
}

WorkEvent ItemEvent(int64_t seq, WorkEvent::Kind kind, int64_t millis, const std::string& item,
                    const std::string& worker, coordinator::v1::ItemStatus status) {
  WorkEvent e = Event(seq, kind, millis);
  e.set_item_id(item);
  e.set_worker_id(worker);
  e.set_level(1);
  e.set_item_status(status);
  if (!worker.empty()) {
    e.set_attempt(1);
    e.set_epoch(1);
  }
  return e;
}

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

const google::protobuf::Value& Field(const google::protobuf::Struct& s, const std::string& key) {
  static const auto* missing = new google::protobuf::Value();
  auto it = s.fields().find(key);
  return it == s.fields().end() ? *missing : it->second;
}

// A run of two tasks on two workers, one of them done and one failed, a level merged.
std::vector<WorkEvent> WorkEventsOfARun() {
  using coordinator::v1::ITEM_STATUS_DONE;
  using coordinator::v1::ITEM_STATUS_PENDING;
  using coordinator::v1::ITEM_STATUS_RUNNING;
  std::vector<WorkEvent> events;
  events.push_back(Event(1, WorkEvent::KIND_RUN_CREATED, 0));
  events.push_back(
      ItemEvent(2, WorkEvent::KIND_ITEM_CREATED, 0, "AUTH-L1-001", "", ITEM_STATUS_PENDING));
  events.push_back(
      ItemEvent(3, WorkEvent::KIND_ITEM_CREATED, 0, "AUTH-L1-002", "", ITEM_STATUS_PENDING));
  events.push_back(
      ItemEvent(4, WorkEvent::KIND_ITEM_CLAIMED, 250, "AUTH-L1-001", "0", ITEM_STATUS_RUNNING));
  WorkEvent level = Event(5, WorkEvent::KIND_LEVEL_CHANGED, 250);
  level.set_level(1);
  level.set_level_status(coordinator::v1::LEVEL_STATUS_RUNNING);
  events.push_back(level);
  events.push_back(
      ItemEvent(6, WorkEvent::KIND_ITEM_CLAIMED, 300, "AUTH-L1-002", "1", ITEM_STATUS_RUNNING));
  WorkEvent done =
      ItemEvent(7, WorkEvent::KIND_ITEM_COMPLETED, 1750, "AUTH-L1-001", "0", ITEM_STATUS_DONE);
  done.set_message("login endpoint done");
  events.push_back(done);
  WorkEvent failed =
      ItemEvent(8, WorkEvent::KIND_ITEM_FAILED, 2000, "AUTH-L1-002", "1", ITEM_STATUS_PENDING);
  failed.set_message("tests failed");
  events.push_back(failed);
  WorkEvent lost = ItemEvent(9, WorkEvent::KIND_ITEM_HEARTBEAT_LOST, 3000, "AUTH-L1-002", "1",
                             ITEM_STATUS_PENDING);
  lost.set_message("lease expired");
  events.push_back(lost);
  WorkEvent idle = Event(10, WorkEvent::KIND_WORKER_CHANGED, 3000);
  idle.set_worker_id("1");
  idle.set_worker_status(coordinator::v1::WORKER_STATUS_LOST);
  idle.set_message("lease of AUTH-L1-002 expired");
  events.push_back(idle);
  WorkEvent merged = Event(11, WorkEvent::KIND_LEVEL_CHANGED, 4000);
  merged.set_level(1);
  merged.set_level_status(coordinator::v1::LEVEL_STATUS_MERGED);
  merged.set_message("4f2a9c1");
  events.push_back(merged);
  return events;
}

MahabharathaLogs Build(const std::vector<WorkEvent>& events) {
  MahabharathaLogs logs("user-auth");
  for (const WorkEvent& e : events) logs.Add(e);
  return logs;
}

// Their LogAggregator reads the worker id of a file name and of every line as a number: a
// worker named with letters is written under its number.
TEST(MahabharathaLogsTest, AWorkerNamedWithLettersIsWrittenUnderItsNumber) {
  MahabharathaLogs logs("user-auth");
  std::vector<coordinator::v1::RunWorker> workers(1);
  workers[0].set_worker_id("alice");
  workers[0].set_number(2);
  logs.SetWorkers(workers);
  logs.Add(ItemEvent(1, WorkEvent::KIND_ITEM_CLAIMED, 250, "AUTH-L1-001", "alice",
                     coordinator::v1::ITEM_STATUS_RUNNING));
  ASSERT_EQ(logs.files().count("workers/worker-2.jsonl"), 1u);
  const std::vector<std::string> lines = Lines(logs.files().at("workers/worker-2.jsonl"));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(JsonObject(lines[0]).fields().at("worker_id").number_value(), 2);
  const std::vector<std::string> task = Lines(logs.files().at("tasks/AUTH-L1-001/execution.jsonl"));
  ASSERT_EQ(task.size(), 1u);
  EXPECT_EQ(JsonObject(task[0]).fields().at("worker_id").number_value(), 2);
}

TEST(MahabharathaLogsTest, OneFilePerWorkerAndTaskWhereTheirToolKeepsThem) {
  const MahabharathaLogs logs = Build(WorkEventsOfARun());
  std::vector<std::string> paths;
  for (const auto& [path, unused] : logs.files()) paths.push_back(path);
  EXPECT_THAT(paths, ElementsAre("tasks/AUTH-L1-001/execution.jsonl",
                                 "tasks/AUTH-L1-002/execution.jsonl", "workers/worker-0.jsonl",
                                 "workers/worker-1.jsonl", "workers/worker-orchestrator.jsonl"));
  EXPECT_TRUE(logs.unnamed().empty());
}

// Laid out as StructuredLogWriter.emit writes a line: json.dumps of its dict, keys in its order,
// ts as datetime.now(UTC).isoformat() with "Z".
TEST(MahabharathaLogsTest, WorkerLinesAreWhatTheirWriterWrites) {
  const MahabharathaLogs logs = Build(WorkEventsOfARun());
  const std::vector<std::string> lines = Lines(logs.files().at("workers/worker-0.jsonl"));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(
      lines[0],
      R"({"ts": "2026-01-01T00:00:00.250000Z", "level": "info", "worker_id": 0, )"
      R"("feature": "user-auth", "message": "Task AUTH-L1-001 started", )"
      R"("task_id": "AUTH-L1-001", "phase": "execute", "event": "task_started", )"
      R"("data": {"level": 1, "attempt": 1, "epoch": 1, "item_status": "running", "seq": 4}})");
  EXPECT_EQ(lines[1], R"({"ts": "2026-01-01T00:00:01.750000Z", "level": "info", "worker_id": 0, )"
                      R"("feature": "user-auth", "message": "Task AUTH-L1-001 completed", )"
                      R"("task_id": "AUTH-L1-001", "phase": "execute", "event": "task_completed", )"
                      R"("data": {"level": 1, "attempt": 1, "epoch": 1, "item_status": "done", )"
                      R"("summary": "login endpoint done", "seq": 7}, "duration_ms": 1500})");

  const std::vector<std::string> w1 = Lines(logs.files().at("workers/worker-1.jsonl"));
  ASSERT_EQ(w1.size(), 3u);
  const google::protobuf::Struct failed = JsonObject(w1[1]);
  EXPECT_EQ(Field(failed, "level").string_value(), "error");
  EXPECT_EQ(Field(failed, "event").string_value(), "task_failed");
  EXPECT_EQ(Field(failed, "message").string_value(), "Task AUTH-L1-002 failed: tests failed");
  EXPECT_EQ(Field(Field(failed, "data").struct_value(), "error").string_value(), "tests failed");
  EXPECT_EQ(Field(Field(failed, "data").struct_value(), "item_status").string_value(), "pending");
  const google::protobuf::Struct lost_worker = JsonObject(w1[2]);
  EXPECT_EQ(Field(lost_worker, "level").string_value(), "warn");
  EXPECT_EQ(Field(lost_worker, "event").string_value(), "worker_changed");
  // Six digits at a whole second too (isoformat() would drop them).
  EXPECT_EQ(Field(lost_worker, "ts").string_value(), "2026-01-01T00:00:03.000000Z");
}

// The orchestrator logs the run, the levels and what happened to a worker, under its own name.
TEST(MahabharathaLogsTest, TheOrchestratorLogsRunLevelsAndLostWorkers) {
  const MahabharathaLogs logs = Build(WorkEventsOfARun());
  const std::vector<std::string> lines =
      Lines(logs.files().at("workers/worker-orchestrator.jsonl"));
  std::vector<std::string> events;
  for (const std::string& line : lines) {
    const google::protobuf::Struct entry = JsonObject(line);
    EXPECT_EQ(Field(entry, "worker_id").string_value(), "orchestrator") << line;
    EXPECT_EQ(Field(entry, "feature").string_value(), "user-auth") << line;
    events.push_back(Field(entry, "event").string_value());
  }
  EXPECT_THAT(events, ElementsAre("run_created", "item_created", "item_created", "level_started",
                                  "heartbeat_stale", "merge_complete"));
  const google::protobuf::Struct lost = JsonObject(lines[4]);
  EXPECT_EQ(Field(lost, "task_id").string_value(), "AUTH-L1-002");
  EXPECT_EQ(Field(Field(lost, "data").struct_value(), "worker_id").number_value(), 1);
  const google::protobuf::Struct merged = JsonObject(lines[5]);
  EXPECT_EQ(Field(Field(merged, "data").struct_value(), "merge_commit").string_value(), "4f2a9c1");
  EXPECT_EQ(Field(Field(merged, "data").struct_value(), "level").number_value(), 1);
}

// TaskArtifactCapture.write_event: the event's keys, then "ts".
TEST(MahabharathaLogsTest, EachTaskHasItsExecutionLog) {
  const MahabharathaLogs logs = Build(WorkEventsOfARun());
  const std::vector<std::string> lines =
      Lines(logs.files().at("tasks/AUTH-L1-002/execution.jsonl"));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0],
            R"({"event": "item_created", "level": 1, "item_status": "pending", "seq": 3, )"
            R"("ts": "2026-01-01T00:00:00.000000Z"})");
  std::vector<std::string> events;
  for (const std::string& line : lines) {
    events.push_back(Field(JsonObject(line), "event").string_value());
  }
  EXPECT_THAT(events,
              ElementsAre("item_created", "task_started", "task_failed", "heartbeat_stale"));
  EXPECT_EQ(Field(JsonObject(lines[1]), "worker_id").number_value(), 1);
}

// What their LogAggregator does with the directory: every line of workers/*.jsonl parses, has a
// ts, and sorting by ts gives the run's history in order; its filters find what they name.
TEST(MahabharathaLogsTest, MergedByTimestampTheyAreTheRunsHistory) {
  const std::vector<WorkEvent> events = WorkEventsOfARun();
  const MahabharathaLogs logs = Build(events);
  std::vector<google::protobuf::Struct> merged;
  for (const auto& [path, text] : logs.files()) {
    if (!absl::StartsWith(path, "workers/")) continue;
    for (const std::string& line : Lines(text)) merged.push_back(JsonObject(line));
  }
  ASSERT_EQ(merged.size(), events.size());
  std::stable_sort(merged.begin(), merged.end(), [](const auto& a, const auto& b) {
    // Python compares the strings.
    return Field(a, "ts").string_value() < Field(b, "ts").string_value();
  });
  std::vector<int> seqs;
  for (const auto& entry : merged) {
    seqs.push_back(
        static_cast<int>(Field(Field(entry, "data").struct_value(), "seq").number_value()));
  }
  // Lines of one instant keep their file's order (worker-1 sorts before the orchestrator).
  EXPECT_THAT(seqs, ElementsAre(1, 2, 3, 4, 5, 6, 7, 8, 10, 9, 11));
  int for_task = 0;
  int for_worker0 = 0;
  for (const auto& entry : merged) {
    if (Field(entry, "task_id").string_value() == "AUTH-L1-002") ++for_task;
    if (Field(entry, "worker_id").number_value() == 0 &&
        Field(entry, "worker_id").has_number_value()) {
      ++for_worker0;
    }
  }
  EXPECT_EQ(for_task, 4);
  EXPECT_EQ(for_worker0, 2);
}

TEST(MahabharathaLogsTest, OnlyTheFilesANewEventTouchesChange) {
  std::vector<WorkEvent> events = WorkEventsOfARun();
  MahabharathaLogs logs("user-auth");
  for (const WorkEvent& e : events) logs.Add(e);
  EXPECT_EQ(logs.TakeChanged().size(), logs.files().size());
  EXPECT_TRUE(logs.TakeChanged().empty());
  const std::string before = logs.files().at("workers/worker-0.jsonl");
  logs.Add(ItemEvent(12, WorkEvent::KIND_ITEM_CLAIMED, 5000, "AUTH-L1-002", "0",
                     coordinator::v1::ITEM_STATUS_RUNNING));
  EXPECT_THAT(logs.TakeChanged(),
              UnorderedElementsAre("workers/worker-0.jsonl", "tasks/AUTH-L1-002/execution.jsonl"));
  EXPECT_TRUE(absl::StartsWith(logs.files().at("workers/worker-0.jsonl"), before));
}

// Ids the coordinator accepts but a file name cannot hold never make a path outside the
// directory: a worker's lines go to the orchestrator's file (with their worker_id), a task
// gets no execution.jsonl.
TEST(MahabharathaLogsTest, IdsThatCannotNameAFileMakeNoPath) {
  MahabharathaLogs logs("f");
  logs.Add(ItemEvent(1, WorkEvent::KIND_ITEM_CREATED, 0, "../../etc", "",
                     coordinator::v1::ITEM_STATUS_PENDING));
  logs.Add(ItemEvent(2, WorkEvent::KIND_ITEM_CLAIMED, 0, "../../etc", "w/../../x",
                     coordinator::v1::ITEM_STATUS_RUNNING));
  logs.Add(ItemEvent(3, WorkEvent::KIND_ITEM_CLAIMED, 0, "..", "..",
                     coordinator::v1::ITEM_STATUS_RUNNING));
  const std::string long_id(250, 'a');
  logs.Add(ItemEvent(4, WorkEvent::KIND_ITEM_CLAIMED, 0, long_id, long_id,
                     coordinator::v1::ITEM_STATUS_RUNNING));
  std::vector<std::string> paths;
  for (const auto& [path, unused] : logs.files()) paths.push_back(path);
  EXPECT_THAT(paths, ElementsAre(absl::StrCat("tasks/", long_id, "/execution.jsonl"),
                                 "workers/worker-orchestrator.jsonl"));
  EXPECT_THAT(logs.unnamed(), ElementsAre("../../etc", "w/../../x", "..", long_id));
  const std::vector<std::string> lines =
      Lines(logs.files().at("workers/worker-orchestrator.jsonl"));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(Field(JsonObject(lines[1]), "worker_id").string_value(), "w/../../x");
}

}  // namespace
}  // namespace coordctl
