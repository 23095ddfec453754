// The coordinator binary's life cycle: start-up refusals (a database in use, a data dir that
// cannot be used, bad flags) and a clean stop on SIGTERM.
#include <signal.h>

#include <fstream>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing_util::BinaryPath;
using ::testing_util::CoordinatorProcess;
using ::testing_util::ProcessResult;
using ::testing_util::RunCoordctl;
using ::testing_util::RunProcess;
using ::testing_util::TempDir;

TEST(CoordinatorProcessTest, SigtermStopsCleanlyAndKeepsData) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> coordinator =
      CoordinatorProcess::Start(dir.Sub("data"));
  ASSERT_OK(coordinator);
  absl::StatusOr<ProcessResult> put =
      RunCoordctl((*coordinator)->target(), {"context", "put", "kept", "--agent", "green"});
  ASSERT_OK(put);
  ASSERT_EQ(put->exit_code, 0) << put->Describe();

  absl::StatusOr<ProcessResult> stopped = (*coordinator)->Stop();
  ASSERT_OK(stopped);
  EXPECT_EQ(stopped->exit_code, 0) << stopped->Describe();
  EXPECT_THAT(stopped->err, HasSubstr("received SIGTERM"));
  EXPECT_THAT(stopped->err, HasSubstr("database closed"));
  EXPECT_THAT(stopped->err, HasSubstr("stopped cleanly"));

  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> again =
      CoordinatorProcess::Start(dir.Sub("data"));
  ASSERT_OK(again);
  absl::StatusOr<ProcessResult> get = RunCoordctl((*again)->target(), {"context", "get", "kept"});
  ASSERT_OK(get);
  EXPECT_EQ(get->exit_code, 0) << get->Describe();
  EXPECT_THAT(get->out, HasSubstr("green"));
}

TEST(CoordinatorProcessTest, SecondCoordinatorOnTheSameDataDirExitsSayingInUse) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> first =
      CoordinatorProcess::Start(dir.Sub("data"));
  ASSERT_OK(first);
  absl::StatusOr<ProcessResult> second =
      RunProcess(BinaryPath("coordinator"),
                 {"--listen=127.0.0.1:0", "--data_dir=" + dir.Sub("data")}, absl::Seconds(60));
  ASSERT_OK(second);
  EXPECT_TRUE(second->exited()) << second->Describe();
  EXPECT_NE(second->exit_code, 0) << second->Describe();
  EXPECT_THAT(second->err, HasSubstr("in use")) << second->Describe();
  EXPECT_THAT(second->err, Not(HasSubstr("listening on")));

  // The first one is unaffected.
  absl::StatusOr<ProcessResult> health = RunCoordctl((*first)->target(), {"health"});
  ASSERT_OK(health);
  EXPECT_EQ(health->exit_code, 0) << health->Describe();
  EXPECT_THAT(health->out, HasSubstr("SERVING"));
}

TEST(CoordinatorProcessTest, DataDirThatIsNotWritableExitsWithAClearMessage) {
  // Tests run as root, which chmod does not stop; nobody can create a directory below a
  // regular file.
  TempDir dir;
  const std::string file = dir.Sub("regular_file");
  std::ofstream(file) << "x";
  absl::StatusOr<ProcessResult> result =
      RunProcess(BinaryPath("coordinator"),
                 {"--listen=127.0.0.1:0", "--data_dir=" + file + "/data"}, absl::Seconds(60));
  ASSERT_OK(result);
  EXPECT_EQ(result->exit_code, 1) << result->Describe();
  EXPECT_THAT(result->err, HasSubstr("cannot use data dir")) << result->Describe();
}

TEST(CoordinatorProcessTest, BadFlagsAreAUsageError) {
  TempDir dir;
  absl::StatusOr<ProcessResult> result =
      RunProcess(BinaryPath("coordinator"),
                 {"--listen=127.0.0.1:0", "--data_dir=" + dir.Sub("data"), "--max_request_bytes=0"},
                 absl::Seconds(60));
  ASSERT_OK(result);
  EXPECT_EQ(result->exit_code, 2) << result->Describe();
  EXPECT_THAT(result->err, HasSubstr("max_request_bytes"));

  // 0 picks the work pool's size by the store; a negative size is refused.
  result =
      RunProcess(BinaryPath("coordinator"),
                 {"--listen=127.0.0.1:0", "--data_dir=" + dir.Sub("data"), "--worker_threads=-1"},
                 absl::Seconds(60));
  ASSERT_OK(result);
  EXPECT_EQ(result->exit_code, 2) << result->Describe();
  EXPECT_THAT(result->err, HasSubstr("--worker_threads and --max_queued_calls not negative"));
}

TEST(CoordinatorProcessTest, RequestSizeLimitFlagIsEnforced) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> coordinator =
      CoordinatorProcess::Start(dir.Sub("data"), {"--max_request_bytes=2048"});
  ASSERT_OK(coordinator);
  absl::StatusOr<ProcessResult> put =
      RunCoordctl((*coordinator)->target(),
                  {"context", "put", "big", "--set", "workspace_dir=" + std::string(4000, 'w')});
  ASSERT_OK(put);
  EXPECT_EQ(put->exit_code, 3) << put->Describe();
  EXPECT_THAT(put->err, HasSubstr("RESOURCE_EXHAUSTED"));
  absl::StatusOr<ProcessResult> get =
      RunCoordctl((*coordinator)->target(), {"context", "get", "big"});
  ASSERT_OK(get);
  EXPECT_EQ(get->exit_code, 1) << get->Describe();
}

TEST(ParseListeningPortTest, ReadsThePortOfTheLogLine) {
  EXPECT_EQ(*testing_util::ParseListeningPort(
                "2024-01-01T00:00:00.000Z INFO listening on 127.0.0.1:43121"),
            43121);
  EXPECT_EQ(*testing_util::ParseListeningPort("INFO listening on [::1]:80"), 80);
  EXPECT_FALSE(testing_util::ParseListeningPort("INFO opened database").ok());
  EXPECT_FALSE(testing_util::ParseListeningPort("INFO listening on 127.0.0.1:").ok());
  EXPECT_FALSE(testing_util::ParseListeningPort("INFO listening on 127.0.0.1:99999").ok());
}

TEST(ProcessTest, CollectsOutputExitCodeAndStdin) {
  absl::StatusOr<ProcessResult> r = RunProcess("/bin/sh", {"-c", "cat; echo to-err >&2; exit 7"},
                                               absl::Seconds(60), "from stdin\n");
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 7);
  EXPECT_EQ(r->out, "from stdin\n");
  EXPECT_EQ(r->err, "to-err\n");
}

TEST(ProcessTest, KillReportsTheSignal) {
  absl::StatusOr<std::unique_ptr<testing_util::Process>> p =
      testing_util::Process::Start("/bin/sh", {"-c", "echo ready >&2; exec sleep 600"});
  ASSERT_OK(p);
  ASSERT_OK((*p)->WaitForStderrLine("ready", absl::Seconds(60)));
  absl::StatusOr<ProcessResult> r = (*p)->Kill();
  ASSERT_OK(r);
  EXPECT_FALSE(r->exited());
  EXPECT_EQ(r->term_signal, SIGKILL);
}

TEST(ProcessTest, WaitForStderrLineFailsWhenTheProcessEnds) {
  absl::StatusOr<std::unique_ptr<testing_util::Process>> p =
      testing_util::Process::Start("/bin/sh", {"-c", "echo something else >&2; exit 1"});
  ASSERT_OK(p);
  absl::StatusOr<std::string> line = (*p)->WaitForStderrLine("never", absl::Seconds(60));
  EXPECT_EQ(line.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(line.status().message()), HasSubstr("something else"));
}

TEST(ProcessTest, MissingBinaryIsAnError) {
  EXPECT_FALSE(RunProcess("/nonexistent/binary", {}).ok());
}

}  // namespace
