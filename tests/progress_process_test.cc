// The progress views of coordctl as a person and a script see them: `run watch` and `watch`
// under a pseudo-terminal (util-linux `script`) redraw their lines in place with ANSI escape
// sequences; without a terminal they print plain lines; `run status` prints an aligned table.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "coordinator/v1/work.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace {

namespace v1 = ::coordinator::v1;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing_util::BinaryPath;
using ::testing_util::CoordinatorProcess;
using ::testing_util::Process;
using ::testing_util::ProcessResult;
using ::testing_util::RunCoordctl;
using ::testing_util::TempDir;

const absl::Duration kPatience = absl::Seconds(60);

// Waits until the process's stdout contains `needle`; false on timeout or exit.
bool WaitForOutput(Process& p, const std::string& needle) {
  for (const absl::Time end = absl::Now() + kPatience; absl::Now() < end;) {
    if (absl::StrContains(p.stdout_text(), needle)) return true;
    if (p.ended()) return absl::StrContains(p.stdout_text(), needle);
    absl::SleepFor(absl::Milliseconds(50));
  }
  return false;
}

// `command` run by `script` in a pseudo-terminal of its own.
absl::StatusOr<std::unique_ptr<Process>> UnderTerminal(const std::string& command) {
  return Process::Start("/usr/bin/script", {"-qfec", command, "/dev/null"}, "", {"TERM=xterm"});
}

class ProgressTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<CoordinatorProcess>> c =
        CoordinatorProcess::Start(dir_.Sub("data"), {"--a2a_delivery_ttl=1s"});
    ASSERT_OK(c);
    coordinator_ = *std::move(c);
    target_ = coordinator_->target();
    v1::CreateRunRequest run;
    run.mutable_run()->set_run_id("run-1");
    run.mutable_run()->set_kind(v1::RUN_KIND_WORKSTREAMS);
    for (const char* item : {"parser", "a-much-longer-item-name"}) {
      v1::WorkItem* w = run.add_items();
      w->set_item_id(item);
      w->set_title(item);
    }
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::Run created;
    auto stub =
        v1::WorkService::NewStub(grpc::CreateChannel(target_, grpc::InsecureChannelCredentials()));
    ASSERT_TRUE(stub->CreateRun(&ctx, run, &created).ok());
  }

  std::string Coordctl() const { return BinaryPath("coordctl") + " --target " + target_; }

  TempDir dir_;
  std::unique_ptr<CoordinatorProcess> coordinator_;
  std::string target_;
};

TEST_F(ProgressTest, RunWatchRedrawsInPlaceOnATerminal) {
  absl::StatusOr<std::unique_ptr<Process>> watch = UnderTerminal(Coordctl() + " run watch run-1");
  ASSERT_OK(watch);
  // The first frame: a line per item and the run's summary, each cleared before it is written.
  ASSERT_TRUE(WaitForOutput(**watch, "run-1  workstreams  planning")) << (*watch)->stdout_text();
  EXPECT_THAT((*watch)->stdout_text(), HasSubstr("\x1b[2Kparser "));
  ASSERT_EQ(RunCoordctl(target_, {"run", "claim", "run-1", "--worker", "w1"})->exit_code, 0);
  // The change redraws the block: up over the three lines drawn, then the item is running.
  ASSERT_TRUE(WaitForOutput(**watch, "\x1b[3A")) << (*watch)->stdout_text();
  ASSERT_TRUE(WaitForOutput(**watch, "worker=w1")) << (*watch)->stdout_text();
  // No line is ever printed twice below the block as a plain "changed" line.
  EXPECT_THAT((*watch)->stdout_text(), Not(HasSubstr("changed ")));
  ASSERT_OK((*watch)->Kill());
}

TEST_F(ProgressTest, RunWatchPrintsPlainLinesWithoutATerminal) {
  absl::StatusOr<std::unique_ptr<Process>> watch =
      Process::Start(BinaryPath("coordctl"), {"--target", target_, "run", "watch", "run-1"});
  ASSERT_OK(watch);
  ASSERT_TRUE(WaitForOutput(**watch, "-- run-1")) << (*watch)->stdout_text();
  ASSERT_EQ(RunCoordctl(target_, {"run", "claim", "run-1", "--worker", "w1"})->exit_code, 0);
  ASSERT_TRUE(WaitForOutput(**watch, "changed ")) << (*watch)->stdout_text();
  EXPECT_THAT((*watch)->stdout_text(), Not(HasSubstr("\x1b")));
  ASSERT_OK((*watch)->Kill());
  // --plain asks for the same on a terminal.
  absl::StatusOr<std::unique_ptr<Process>> plain =
      UnderTerminal(Coordctl() + " run watch run-1 --plain");
  ASSERT_OK(plain);
  ASSERT_TRUE(WaitForOutput(**plain, "-- run-1")) << (*plain)->stdout_text();
  EXPECT_THAT((*plain)->stdout_text(), Not(HasSubstr("\x1b")));
  ASSERT_OK((*plain)->Kill());
}

TEST_F(ProgressTest, TaskWatchUpdatesOneStatusLineOnATerminal) {
  ASSERT_EQ(RunCoordctl(target_, {"agent", "register", "ghost", "127.0.0.1:1"})->exit_code, 0);
  absl::StatusOr<ProcessResult> sent = RunCoordctl(target_, {"send", "ghost", "hi"});
  ASSERT_OK(sent);
  ASSERT_EQ(sent->exit_code, 0) << sent->Describe();
  const std::vector<std::string> words = absl::StrSplit(sent->out, ' ');
  ASSERT_GE(words.size(), 2u);
  const std::string task_id = words[1];
  absl::StatusOr<std::unique_ptr<Process>> watch =
      UnderTerminal(Coordctl() + " watch " + task_id + " --for 60s");
  ASSERT_OK(watch);
  absl::StatusOr<ProcessResult> ended = (*watch)->Wait(kPatience);
  ASSERT_OK(ended);
  EXPECT_EQ(ended->exit_code, 1) << ended->Describe();  // the task FAILED: nobody answered
  EXPECT_THAT(ended->out, HasSubstr("\x1b[2Ktask " + task_id + "  "));
  // Off a terminal the same watch prints the status as a plain line.
  absl::StatusOr<ProcessResult> plain = RunCoordctl(target_, {"watch", task_id});
  ASSERT_OK(plain);
  EXPECT_THAT(plain->out, Not(HasSubstr("\x1b")));
  EXPECT_FALSE(plain->out.empty());
}

TEST_F(ProgressTest, RunStatusPrintsAnAlignedTable) {
  ASSERT_EQ(RunCoordctl(target_, {"run", "claim", "run-1", "--worker", "worker-7"})->exit_code, 0);
  absl::StatusOr<ProcessResult> status = RunCoordctl(target_, {"run", "status", "run-1"});
  ASSERT_OK(status);
  ASSERT_EQ(status->exit_code, 0) << status->Describe();
  std::vector<std::string> lines = absl::StrSplit(status->out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 4u) << status->out;  // summary, header, two items
  const std::string& header = lines[1];
  EXPECT_TRUE(absl::StartsWith(header, "ITEM ")) << header;
  for (const char* column : {"STATE", "ATTEMPTS", "HOLDER", "LEASE EXPIRES", "LEVEL"}) {
    const size_t at = header.find(column);
    ASSERT_NE(at, std::string::npos) << column;
    for (size_t row = 2; row < lines.size(); ++row) {
      ASSERT_GT(lines[row].size(), at) << lines[row];
      EXPECT_EQ(lines[row][at - 1], ' ') << column << " in " << lines[row];
      EXPECT_NE(lines[row][at], ' ') << column << " in " << lines[row];
    }
  }
  EXPECT_THAT(status->out, HasSubstr("worker-7"));
  EXPECT_THAT(status->out, HasSubstr("running"));
  EXPECT_THAT(status->out, Not(HasSubstr("\t")));
}

}  // namespace
