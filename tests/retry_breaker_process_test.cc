// Retry state and the loop breaker with the real binaries: 64 coordctl processes incrementing
// one task, state that survives kill -9 of the coordinator, the import of the ARIA scripts'
// state files, and bad input for every coordctl task/breaker/import command. Uses the process
// helpers of tests/process_util.h; every wait is bounded.
#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::testing_util::BinaryPath;
using ::testing_util::CoordinatorProcess;
using ::testing_util::Process;
using ::testing_util::ProcessResult;
using ::testing_util::TempDir;

std::string TestDataDir() {
  return (std::filesystem::path(COORD_SOURCE_DIR) / "tests" / "testdata" / "aria").string();
}

std::string BlockedDataDir() {
  return (std::filesystem::path(COORD_SOURCE_DIR) / "tests" / "testdata" / "aria-blocked").string();
}

class RetryBreakerProcessTest : public ::testing::Test {
 protected:
  void SetUp() override { StartCoordinator(); }

  void StartCoordinator() {
    absl::StatusOr<std::unique_ptr<CoordinatorProcess>> c =
        CoordinatorProcess::Start(dir_.Sub("data"));
    ASSERT_OK(c);
    coordinator_ = *std::move(c);
  }

  // Runs coordctl against the coordinator; fails the test when it could not be run at all.
  ProcessResult Ctl(const std::vector<std::string>& args) {
    absl::StatusOr<ProcessResult> r = testing_util::RunCoordctl(coordinator_->target(), args);
    EXPECT_OK(r);
    return r.ok() ? *r : ProcessResult();
  }

  // Runs coordctl and expects exit 0; returns its stdout.
  std::string Ok(const std::vector<std::string>& args) {
    ProcessResult r = Ctl(args);
    EXPECT_EQ(r.exit_code, 0) << absl::StrJoin(args, " ") << "\n" << r.Describe();
    return r.out;
  }

  // Runs coordctl and expects exit `code` and, when given, `text` on stderr.
  ProcessResult Expect(int code, const std::vector<std::string>& args,
                       const std::string& text = "") {
    ProcessResult r = Ctl(args);
    EXPECT_EQ(r.exit_code, code) << absl::StrJoin(args, " ") << "\n" << r.Describe();
    if (!text.empty()) {
      EXPECT_THAT(r.err, HasSubstr(text)) << absl::StrJoin(args, " ");
    }
    return r;
  }

  std::string Init(const std::string& description) {
    return std::string(absl::StripTrailingAsciiWhitespace(Ok({"task", "init", description})));
  }

  TempDir dir_;
  std::unique_ptr<CoordinatorProcess> coordinator_;
};

TEST_F(RetryBreakerProcessTest, SixtyFourConcurrentAttemptsEndAtSixtyFour) {
  const std::string id = Init("One task, many workers");
  constexpr int kProcesses = 64;
  std::vector<std::unique_ptr<Process>> processes;
  for (int i = 0; i < kProcesses; ++i) {
    absl::StatusOr<std::unique_ptr<Process>> p = Process::Start(
        BinaryPath("coordctl"),
        {"--target", coordinator_->target(), "--timeout", "120s", "task", "attempt", id});
    ASSERT_OK(p);
    processes.push_back(*std::move(p));
  }
  std::set<int> counts;
  for (auto& p : processes) {
    absl::StatusOr<ProcessResult> r = p->Wait(absl::Seconds(180));
    ASSERT_OK(r);
    ASSERT_EQ(r->exit_code, 0) << r->Describe();
    int n = 0;
    ASSERT_TRUE(absl::SimpleAtoi(absl::StripTrailingAsciiWhitespace(r->out), &n)) << r->out;
    counts.insert(n);
  }
  // Every process saw a different count, and together they saw 1..64: no update was lost.
  EXPECT_EQ(counts.size(), static_cast<size_t>(kProcesses));
  EXPECT_EQ(*counts.begin(), 1);
  EXPECT_EQ(*counts.rbegin(), kProcesses);
  EXPECT_EQ(Ok({"task", "get", id, "attempt_count"}), "64\n");
}

TEST_F(RetryBreakerProcessTest, RetryAndBreakerStateSurviveKill9) {
  const std::string id = Init("Fix the login bug");
  ASSERT_EQ(id, "257cb146");
  EXPECT_EQ(Ok({"task", "attempt", id}), "1\n");
  Ok({"task", "fail", id, "Timeout after 30s"});
  EXPECT_EQ(Ok({"task", "attempt", id}), "2\n");
  EXPECT_EQ(Ok({"task", "escalate", id, "too slow"}), "2\n");
  Ok({"task", "fail", id, "Rate limit exceeded"});
  Ok({"task", "qg", id, "lint", "fail", "3 errors"});
  Ok({"task", "set", id, "priority", "high"});
  EXPECT_EQ(Ok({"breaker", "force-escalate", id, "stuck on rate limits"}), "4\n");

  const std::string stuck = Init("A task that keeps failing");
  for (int i = 0; i < 2; ++i) {
    Ok({"task", "attempt", stuck});
    Ok({"task", "fail", stuck, "ModuleNotFoundError: No module named 'yaml'"});
  }
  EXPECT_EQ(Ok({"breaker", "check", stuck}), "repeated_error\n");
  EXPECT_THAT(Ok({"breaker", "break", stuck, "needs a person"}), HasSubstr("needs a person"));

  const std::string state = Ok({"task", "state", id});
  const std::string context = Ok({"task", "failure-context", id});
  const std::string status = Ok({"breaker", "status"});
  const std::string log = Ok({"breaker", "log"});
  const std::string list = Ok({"task", "list"});
  ASSERT_THAT(status, HasSubstr(stuck));
  ASSERT_THAT(log, HasSubstr("[ERROR]"));

  absl::StatusOr<ProcessResult> killed = coordinator_->Kill();
  ASSERT_OK(killed);
  EXPECT_EQ(killed->term_signal, SIGKILL) << killed->Describe();
  StartCoordinator();

  EXPECT_EQ(Ok({"task", "state", id}), state);
  EXPECT_EQ(Ok({"task", "failure-context", id}), context);
  EXPECT_EQ(context,
            "Previous failures:\n"
            "  Attempt 1 (model: codex-mini): Timeout after 30s\n"
            "  Attempt 2 (model: gpt-5.1): Rate limit exceeded\n");
  EXPECT_EQ(Ok({"breaker", "status"}), status);
  EXPECT_EQ(Ok({"breaker", "log"}), log);
  EXPECT_EQ(Ok({"task", "list"}), list);
  EXPECT_EQ(Ok({"task", "tier", id}), "4\n");
  Expect(3, {"task", "attempt", stuck}, "FAILED_PRECONDITION");
  // The counter goes on from where it was.
  EXPECT_EQ(Ok({"task", "attempt", id}), "3\n");
}

TEST_F(RetryBreakerProcessTest, ImportsADirectoryOfScriptStateFiles) {
  ProcessResult r = Expect(3, {"import", "aria", TestDataDir()});
  EXPECT_THAT(r.out, HasSubstr("imported 257cb146 from "));
  EXPECT_THAT(r.out, HasSubstr("imported 827ebbe6 from "));
  EXPECT_THAT(r.out, HasSubstr("imported a52cca19 from "));
  EXPECT_THAT(r.out, HasSubstr("imported c12e5bd5 from "));
  EXPECT_THAT(r.out, HasSubstr("4 imported, 1 skipped"));
  EXPECT_THAT(r.err, HasSubstr("aria-task-broken.json: skipped: not a JSON object"));
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("README.txt")));

  EXPECT_EQ(Ok({"task", "list"}),
            "257cb146 | Attempts: 2 | Tier: 2 | Fix the login bug\n"
            "827ebbe6 | Attempts: 3 | Tier: 1 | Refactor the payment module to\n"
            "a52cca19 | Attempts: 0 | Tier: 1 | Write unit tests for the parse\n"
            "c12e5bd5 | Attempts: 6 | Tier: 6 | Migrate the users table to the\n");
  EXPECT_EQ(Ok({"task", "failure-context", "257cb146"}),
            "Previous failures:\n"
            "  Attempt 1 (model: codex-mini): Timeout after 30s\n"
            "  Attempt 2 (model: gpt-5.1): Rate limit exceeded\n");
  EXPECT_EQ(Ok({"task", "get", "257cb146", "priority"}), "high\n");
  EXPECT_EQ(Ok({"task", "get", "257cb146", "retry_budget"}), "5\n");
  EXPECT_EQ(Ok({"task", "get", "257cb146", "created_at"}), "1731000000\n");
  EXPECT_EQ(Ok({"task", "get", "c12e5bd5", "owner"}), "dba-team\n");
  // The imported history drives the breaker.
  EXPECT_EQ(Ok({"breaker", "check", "827ebbe6"}), "repeated_error\n");
  EXPECT_THAT(Ok({"breaker", "status"}), StartsWith("c12e5bd5 | Blocked: 2024-11-07 "));
  Expect(3, {"task", "attempt", "c12e5bd5"}, "FAILED_PRECONDITION");
  EXPECT_EQ(Ok({"breaker", "force-escalate", "c12e5bd5"}), "HUMAN_INTERVENTION_REQUIRED\n");
  // Init of an imported description keeps the imported state.
  EXPECT_EQ(Init("Fix the login bug"), "257cb146");
  EXPECT_EQ(Ok({"task", "get", "257cb146", "attempt_count"}), "2\n");

  // A second import skips what exists; --replace overwrites.
  r = Expect(3, {"import", "aria", TestDataDir() + "/aria-task-257cb146.json"}, "already exists");
  EXPECT_THAT(r.out, HasSubstr("0 imported, 1 skipped"));
  Ok({"task", "attempt", "257cb146"});
  r = Ctl({"import", "aria", "--replace", TestDataDir() + "/aria-task-257cb146.json"});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_THAT(r.out, HasSubstr("replaced 257cb146"));
  EXPECT_EQ(Ok({"task", "get", "257cb146", "attempt_count"}), "2\n");
}

// tests/testdata/aria-blocked/ was written by the original scripts (its README): four state
// files, blocked.json (one task broken twice, one whose state file was removed after its break)
// and the summary files, with the original's `status` and `analyze` outputs.
TEST_F(RetryBreakerProcessTest, ImportsTheBreakersRegistryAsTheScriptShowedIt) {
  const std::string data = BlockedDataDir();
  std::vector<std::string> args = {"import", "aria"};
  for (const char* id : {"30f85d1a", "5b60c329", "c8bff521", "e15fa68f"}) {
    args.push_back(absl::StrCat(data, "/aria-task-", id, ".json"));
  }
  args.push_back(data + "/blocked/blocked.json");
  ProcessResult r = Ctl(args);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_THAT(r.out, HasSubstr("imported blocked 30f85d1a from "));
  EXPECT_THAT(r.out, HasSubstr("imported blocked 75ba6a6b from " + data + "/blocked/blocked.json"));
  EXPECT_THAT(r.out, HasSubstr("5 imported, 0 skipped"));

  // `status`: each task as the script's status listed it (a task broken twice: its last line).
  const std::string status = Ok({"breaker", "status"});
  std::ifstream original(data + "/expected/status.out");
  std::string line;
  int tasks = 0;
  std::set<std::string> seen;
  std::vector<std::string> lines;
  while (std::getline(original, line)) lines.push_back(line);
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    std::vector<std::string> words = absl::StrSplit(*it, ' ', absl::SkipEmpty());
    if (words.size() != 7 || words[1] != "Attempts:") continue;
    if (!seen.insert(words[0]).second) continue;  // an earlier break of the same task
    ++tasks;
    EXPECT_THAT(status, HasSubstr(absl::StrCat(words[0], " | Blocked: ")));
    EXPECT_THAT(status, HasSubstr(absl::StrCat("Pattern: ", words[6], " | Attempts: ", words[2],
                                               " | Tier: ", words[4])))
        << *it << "\n"
        << status;
  }
  EXPECT_EQ(tasks, 5);

  for (const std::string id : {"30f85d1a", "5b60c329", "c8bff521", "e15fa68f", "75ba6a6b"}) {
    SCOPED_TRACE(id);
    // The summary file, byte for byte.
    std::ifstream file(absl::StrCat(data, "/blocked/", id, "-summary.txt"), std::ios::binary);
    const std::string summary((std::istreambuf_iterator<char>(file)),
                              std::istreambuf_iterator<char>());
    EXPECT_EQ(Ok({"breaker", "summary", id}), summary);
    // `analyze`: at_block holds what the script's analysis said.
    std::ifstream expected_file(absl::StrCat(data, "/expected/analyze-", id, ".out"));
    const std::string expected((std::istreambuf_iterator<char>(expected_file)),
                               std::istreambuf_iterator<char>());
    if (id == "75ba6a6b") {
      // No state file: the script's analyze printed nothing and exited 1, as ours does.
      EXPECT_EQ(expected, "exit 1\n");
      Expect(1, {"breaker", "analyze", id}, "not found");
      continue;
    }
    google::protobuf::Struct theirs;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(
                    expected.substr(0, expected.rfind("exit 0")), &theirs)
                    .ok());
    google::protobuf::Struct ours;
    ASSERT_TRUE(
        google::protobuf::util::JsonStringToMessage(Ok({"breaker", "analyze", id}), &ours).ok());
    const auto& at_block = ours.fields().at("at_block").struct_value().fields();
    EXPECT_EQ(at_block.at("source").string_value(), "aria-scripts");
    const auto& analysis = at_block.at("analysis").struct_value().fields();
    for (const auto& [key, value] : theirs.fields()) {
      if (key == "analysis_timestamp") continue;  // theirs was made again when analyze ran
      ASSERT_TRUE(analysis.contains(key)) << key;
      EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(analysis.at(key), value))
          << key << ": " << analysis.at(key).DebugString() << " vs " << value.DebugString();
    }
  }
  // The drop-in script's status lists the same lines as the original's (the original listed
  // 5b60c329 once per break and in the order of the breaks; ours once, in id order).
  absl::StatusOr<ProcessResult> compat = testing_util::RunProcess(
      "/usr/bin/env",
      {absl::StrCat("ARIA_COORDCTL=", BinaryPath("coordctl")),
       absl::StrCat("COORDCTL_TARGET=", coordinator_->target()),
       absl::StrCat("ARIA_BLOCKED_TASKS_DIR=", dir_.Sub("blocked")),
       absl::StrCat("ARIA_BREAKER_VAR_DIR=", dir_.Sub("vars")), "LC_ALL=C.UTF-8", "bash",
       (std::filesystem::path(COORD_SOURCE_DIR) / "scripts" / "compat" /
        "aria-iteration-breaker.sh")
           .string(),
       "status"});
  ASSERT_OK(compat);
  ASSERT_EQ(compat->exit_code, 0) << compat->Describe();
  std::vector<std::string> ours = absl::StrSplit(compat->out, '\n');
  std::vector<std::string> theirs = lines;
  theirs.erase(std::find_if(theirs.begin(), theirs.end(),
                            [](const std::string& l) { return absl::StartsWith(l, "5b60c329"); }));
  for (std::string& l : theirs) {
    if (l == "Blocked Tasks: 6") l = "Blocked Tasks: 5";
    if (l == "Summary files in: /tmp/aria-blocked-tasks") {
      l = "Summary files in: " + dir_.Sub("blocked");
    }
  }
  theirs.push_back("");  // the split of ours ends with the text after the last newline
  std::sort(ours.begin(), ours.end());
  std::sort(theirs.begin(), theirs.end());
  EXPECT_EQ(ours, theirs) << compat->out;

  // Blocked as in the scripts: no more attempts until cleanup; cleanup of the entry without a
  // state file works too.
  Expect(3, {"task", "attempt", "30f85d1a"}, "FAILED_PRECONDITION");
  Ok({"breaker", "cleanup", "75ba6a6b"});
  EXPECT_THAT(Ok({"breaker", "status"}), ::testing::Not(HasSubstr("75ba6a6b")));
}

TEST_F(RetryBreakerProcessTest, ABadRegistryImportsNothing) {
  const std::string data = BlockedDataDir();
  const std::string dir = dir_.Sub("bad");
  std::filesystem::create_directories(dir);
  auto attempt = [&](const std::string& text, const std::string& message) {
    std::ofstream(dir + "/blocked.json", std::ios::trunc) << text;
    ProcessResult r = Expect(
        3, {"import", "aria", data + "/aria-task-30f85d1a.json", dir + "/blocked.json"}, message);
    EXPECT_THAT(r.err, HasSubstr("nothing imported"));
    Expect(1, {"task", "state", "30f85d1a"});
  };
  attempt("{\"blocked_tasks\": [", "not a JSON object");
  attempt(R"({"blocked_tasks": [{"task_id": "../x", "blocked_at": "1"}]})", "cannot name");
  // A fine entry whose summary file is a directory.
  std::filesystem::create_directories(dir + "/x-summary.txt");
  attempt(R"({"blocked_tasks": [{"task_id": "x", "blocked_at": "1"}]})", "not a regular file");
  // Two registries at once are refused too.
  Expect(3, {"import", "aria", dir + "/blocked.json", data + "/blocked/blocked.json"},
         "two blocked registries");
  EXPECT_EQ(Ok({"breaker", "status"}), "No blocked tasks\n");
}

TEST_F(RetryBreakerProcessTest, TaskStateOutputImportsBackUnchanged) {
  const std::string id = Init("Round trip");
  Ok({"task", "attempt", id});
  Ok({"task", "fail", id, "first \"quoted\" error\nwith a second line"});
  Ok({"task", "escalate", id, "why not", "--steps", "2"});
  Ok({"task", "qg", id, "tests", "pass"});
  Ok({"task", "set", id, "budget", "7"});
  Ok({"task", "set", id, "note", "free text"});
  const std::string state = Ok({"task", "state", id});
  const std::string file = dir_.Sub("state.json");
  std::ofstream(file) << state;
  Ok({"task", "cleanup", id});
  Expect(1, {"task", "state", id});
  ProcessResult r = Ctl({"import", "aria", file});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(Ok({"task", "state", id}), state);
}

TEST_F(RetryBreakerProcessTest, BadInputGetsAClearAnswerAndChangesNothing) {
  const std::string id = Init("Fix the login bug");
  Ok({"task", "attempt", id});
  Ok({"task", "fail", id, "Timeout after 30s"});
  const std::string before = Ok({"task", "state", id});
  const std::string long_id(300, 'a');

  // Unknown tasks: exit 1; `task get` also prints an empty line, as the scripts did.
  ProcessResult r = Expect(1, {"task", "get", "deadbeef", "attempt_count"}, "not found");
  EXPECT_EQ(r.out, "\n");
  r = Expect(1, {"task", "get", id, "never_set"}, "has no field never_set");
  EXPECT_EQ(r.out, "\n");
  Expect(1, {"task", "tier", "deadbeef"});
  Expect(1, {"task", "attempt", "deadbeef"});
  Expect(1, {"task", "escalate", "deadbeef", "r"});
  Expect(1, {"task", "fail", "deadbeef", "e"});
  Expect(1, {"task", "qg", "deadbeef", "lint", "pass"});
  Expect(1, {"task", "failure-context", "deadbeef"});
  Expect(1, {"task", "state", "deadbeef"});
  Expect(1, {"task", "set", "deadbeef", "note", "x"});
  Expect(1, {"task", "cleanup", "deadbeef"});
  Expect(1, {"breaker", "check", "deadbeef"}, "not found");
  Expect(1, {"breaker", "analyze", "deadbeef"});
  Expect(1, {"breaker", "force-escalate", "deadbeef"});
  Expect(1, {"breaker", "break", "deadbeef"});
  Expect(1, {"breaker", "summary", id});
  Expect(1, {"breaker", "cleanup", "deadbeef"});

  // Bad values: exit 3 with the server's status.
  Expect(3, {"task", "init", ""}, "INVALID_ARGUMENT");
  Expect(3, {"task", "attempt", ""}, "INVALID_ARGUMENT");
  Expect(3, {"task", "attempt", long_id}, "INVALID_ARGUMENT");
  Expect(3, {"task", "tier", long_id}, "INVALID_ARGUMENT");
  Expect(3, {"task", "get", id, "bad-field"}, "INVALID_ARGUMENT");
  Expect(3, {"task", "set", id, "bad field", "x"}, "INVALID_ARGUMENT");
  Expect(3, {"task", "set", id, "failures", "[]"}, "INVALID_ARGUMENT");
  Expect(3, {"task", "set", id, "attempt_count", "many"}, "INVALID_ARGUMENT");
  Expect(3, {"task", "set", id, "model_tier", "8"}, "INVALID_ARGUMENT");
  Expect(3, {"task", "escalate", id, "r", "--steps", "0"}, "INVALID_ARGUMENT");
  Expect(3, {"task", "escalate", id, "r", "--steps", "-1"}, "INVALID_ARGUMENT");
  Expect(3, {"task", "fail", id, std::string((16 << 10) + 1, 'e')}, "RESOURCE_EXHAUSTED");
  Expect(3, {"task", "escalate", id, std::string((4 << 10) + 1, 'r')}, "RESOURCE_EXHAUSTED");
  Expect(3, {"task", "qg", id, "", "fail"}, "INVALID_ARGUMENT");
  Expect(3, {"breaker", "check", long_id}, "INVALID_ARGUMENT");
  Expect(3, {"breaker", "force-escalate", id, std::string((4 << 10) + 1, 'r')},
         "RESOURCE_EXHAUSTED");
  Expect(3, {"breaker", "cleanup", ""}, "INVALID_ARGUMENT");

  // Bad command lines: exit 2, nothing sent.
  Expect(2, {"task", "init"});
  Expect(2, {"task", "attempt"});
  Expect(2, {"task", "attempt", id, "extra"});
  Expect(2, {"task", "get", id});
  Expect(2, {"task", "set", id, "note"});
  Expect(2, {"task", "fail", id});
  Expect(2, {"task", "qg", id, "lint", "maybe"}, "pass or fail");
  Expect(2, {"task", "escalate", id, "r", "--steps", "two"});
  Expect(2, {"task", "failure-context", id, "--tail", "0"});
  Expect(2, {"task", "list", "extra"});
  Expect(2, {"breaker", "check", id, "--repeated-error", "0"});
  Expect(2, {"breaker", "check", id, "--stuck-tier", "x"});
  Expect(2, {"breaker", "log", "--tail", "0"});
  Expect(2, {"breaker", "status", "extra"});
  Expect(2, {"import", "aria"});

  // Import of files that are not state files: reported by name, exit 3.
  const std::string big = dir_.Sub("big.json");
  std::ofstream(big) << std::string((1 << 20) + 1, ' ');
  r = Expect(3, {"import", "aria", dir_.Sub("missing.json"), big, dir_.path()});
  EXPECT_THAT(r.err, HasSubstr("missing.json: skipped: cannot open"));
  EXPECT_THAT(r.err, HasSubstr("big.json: skipped: file is"));
  EXPECT_THAT(r.out, HasSubstr("0 imported, 3 skipped"));  // the dir holds big.json

  EXPECT_EQ(Ok({"task", "state", id}), before);
  EXPECT_EQ(Ok({"breaker", "status"}), "No blocked tasks\n");
  EXPECT_EQ(Ok({"breaker", "log"}), "");
  EXPECT_EQ(Ok({"task", "list"}), "257cb146 | Attempts: 1 | Tier: 1 | Fix the login bug\n");
}

TEST_F(RetryBreakerProcessTest, CheckExitCodesAndTierLadderFlag) {
  const std::string id = Init("t");
  ProcessResult r = Expect(1, {"breaker", "check", id});
  EXPECT_EQ(r.out, "");
  Ok({"task", "fail", id, "same"});
  Ok({"task", "fail", id, "same"});
  EXPECT_EQ(Ok({"breaker", "check", id}), "repeated_error\n");
  Expect(1, {"breaker", "check", id, "--repeated-error", "3"});
  EXPECT_THAT(Ok({"breaker", "analyze", id}), HasSubstr("\"pattern_type\": \"repeated_error\""));
  EXPECT_THAT(Ok({"breaker", "log", "--tail", "1"}), HasSubstr("[INFO] Analyzed task"));

  // A deployment's own ladder.
  absl::StatusOr<ProcessResult> stopped = coordinator_->Stop();
  ASSERT_OK(stopped);
  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> c = CoordinatorProcess::Start(
      dir_.Sub("data2"), {"--tier_ladder=small,medium,large", "--breaker_stuck_tier_threshold=1"});
  ASSERT_OK(c);
  coordinator_ = *std::move(c);
  const std::string other = Init("t");
  EXPECT_EQ(Ok({"task", "get", other, "model"}), "small\n");
  EXPECT_EQ(Ok({"task", "escalate", other, "up", "--steps", "5"}), "3\n");
  EXPECT_EQ(Ok({"task", "get", other, "model"}), "large\n");
  Ok({"task", "fail", other, "one failure"});
  EXPECT_EQ(Ok({"breaker", "check", other}), "stuck_tier\n");
  EXPECT_EQ(Ok({"breaker", "force-escalate", other}), "HUMAN_INTERVENTION_REQUIRED\n");

  // A bad ladder refuses to start.
  absl::StatusOr<ProcessResult> bad = testing_util::RunProcess(
      BinaryPath("coordinator"),
      {"--listen=127.0.0.1:0", "--data_dir=" + dir_.Sub("data3"), "--tier_ladder=a,,b"},
      absl::Seconds(60));
  ASSERT_OK(bad);
  EXPECT_NE(bad->exit_code, 0) << bad->Describe();
  EXPECT_THAT(bad->err, HasSubstr("tier model name is required"));
}

}  // namespace

namespace {

// issue 18: jq-style read paths, --compat, numeric set and --pretty for the ARIA scripts' callers.
TEST_F(RetryBreakerProcessTest, TaskGetPathsCompatNumericSetAndPrettyState) {
  const std::string id = Init("Paths and layouts");
  Ok({"task", "fail", id, "TypeError: x is undefined"});
  Ok({"task", "escalate", id, "first escalation"});
  Ok({"task", "set", id, "retries", "007"});
  EXPECT_EQ(Ok({"task", "get", id, "retries"}), "7\n");
  EXPECT_THAT(Ok({"task", "state", id}), HasSubstr("\"retries\": 7\n"));
  Ok({"task", "set", id, "label", "007x"});
  EXPECT_EQ(Ok({"task", "get", id, "label"}), "007x\n");

  EXPECT_EQ(Ok({"task", "get", id, "failures[0].error"}), "TypeError: x is undefined\n");
  EXPECT_EQ(Ok({"task", "get", id, "failures[-1].model"}), "codex-mini\n");
  EXPECT_EQ(Ok({"task", "get", id, ".escalation_log[0].reason"}), "first escalation\n");
  EXPECT_EQ(Ok({"task", "get", id, "escalation_log[0].to_tier"}), "2\n");

  // Unset: our convention (an empty line, exit 1) and the script's (--compat: nothing, exit 0).
  ProcessResult unset = Expect(1, {"task", "get", id, "failures[3].error"}, "no value at");
  EXPECT_EQ(unset.out, "\n");
  ProcessResult compat = Expect(0, {"task", "get", id, "no_such_field", "--compat"});
  EXPECT_EQ(compat.out, "");
  EXPECT_EQ(compat.err, "");
  EXPECT_EQ(Expect(0, {"task", "get", id, "blocked", "--compat"}).out, "");
  EXPECT_EQ(Expect(1, {"task", "get", "00000000", "task_id", "--compat"}).out, "");

  // Anything but a path is refused before any call, with the place it went wrong.
  for (const char* bad : {"failures[x]", "a..b", "failures[0", "a.b | env", ".[0]"}) {
    Expect(2, {"task", "get", id, bad}, "is not a field path");
  }

  // --pretty is jq's layout of the same document.
  const std::string pretty = Ok({"task", "state", id, "--pretty"});
  EXPECT_THAT(pretty, HasSubstr("  \"failures\": [\n    {\n      \"attempt\": 0,\n"));
  EXPECT_THAT(pretty, HasSubstr("  \"quality_gate_results\": [],\n"));
  EXPECT_THAT(pretty, StartsWith("{\n  \"task_id\": \""));
}

}  // namespace
