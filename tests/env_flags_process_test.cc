// Flags from the environment (common/env_flags.h) on the real binaries: the coordinator takes
// COORDINATOR_LISTEN and COORDINATOR_DATA_DIR, the command line wins over them, a bad value is
// refused naming the variable, and coordctl takes COORDCTL_TARGET and COORDCTL_TIMEOUT.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing_util::BinaryPath;
using ::testing_util::kProcessWait;
using ::testing_util::ParseListeningPort;
using ::testing_util::Process;
using ::testing_util::ProcessResult;
using ::testing_util::TempDir;

// Starts the coordinator with `args` and `env`, waits for its "listening on" line and returns
// the process and its port.
absl::StatusOr<std::pair<std::unique_ptr<Process>, int>> StartCoordinator(
    const std::vector<std::string>& args, const std::vector<std::string>& env) {
  absl::StatusOr<std::unique_ptr<Process>> p =
      Process::Start(BinaryPath("coordinator"), args, "", env);
  if (!p.ok()) return p.status();
  absl::StatusOr<std::string> line = (*p)->WaitForStderrLine("listening on ", kProcessWait);
  if (!line.ok()) return line.status();
  absl::StatusOr<int> port = ParseListeningPort(*line);
  if (!port.ok()) return port.status();
  return std::make_pair(*std::move(p), *port);
}

// Runs `binary` with `args` and `env` to the end.
absl::StatusOr<ProcessResult> RunWithEnv(const std::string& binary,
                                         const std::vector<std::string>& args,
                                         const std::vector<std::string>& env) {
  absl::StatusOr<std::unique_ptr<Process>> p = Process::Start(BinaryPath(binary), args, "", env);
  if (!p.ok()) return p.status();
  return (*p)->Wait(kProcessWait);
}

bool HasDatabase(const std::string& dir) { return std::filesystem::exists(dir + "/CURRENT"); }

TEST(EnvFlagsProcessTest, CoordinatorTakesListenAndDataDirFromTheEnvironment) {
  TempDir dir;
  auto started = StartCoordinator(
      {}, {"COORDINATOR_LISTEN=127.0.0.1:0", "COORDINATOR_DATA_DIR=" + dir.Sub("from-env"),
           "COORDINATOR_HTTP_LISTEN="});
  ASSERT_OK(started.status());
  auto& [process, port] = *started;
  EXPECT_TRUE(HasDatabase(dir.Sub("from-env")));
  // Not the default address: port 0 from the environment picked a free one.
  EXPECT_NE(port, 50051);
  // COORDINATOR_HTTP_LISTEN= (empty) turned the HTTP server off, as --http_listen= does.
  EXPECT_THAT(process->stderr_text(), Not(HasSubstr("agent card on")));

  // COORDCTL_TARGET points coordctl at it.
  absl::StatusOr<ProcessResult> health =
      RunWithEnv("coordctl", {"health"}, {"COORDCTL_TARGET=127.0.0.1:" + std::to_string(port)});
  ASSERT_OK(health.status());
  EXPECT_EQ(health->exit_code, 0) << health->Describe();
  EXPECT_THAT(health->out, HasSubstr("SERVING"));
  ASSERT_OK(process->Signal(SIGTERM));
  ASSERT_OK(process->Wait(kProcessWait).status());
}

TEST(EnvFlagsProcessTest, TheCommandLineWinsOverTheEnvironment) {
  TempDir dir;
  auto started = StartCoordinator(
      {"--data_dir=" + dir.Sub("from-argv"), "--http_listen="},
      {"COORDINATOR_LISTEN=127.0.0.1:0", "COORDINATOR_DATA_DIR=" + dir.Sub("from-env")});
  ASSERT_OK(started.status());
  EXPECT_TRUE(HasDatabase(dir.Sub("from-argv")));
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("from-env")));
  ASSERT_OK(started->first->Signal(SIGTERM));
  ASSERT_OK(started->first->Wait(kProcessWait).status());
}

TEST(EnvFlagsProcessTest, ABadValueIsRefusedNamingTheVariable) {
  TempDir dir;
  for (const std::string& bad :
       {std::string("COORDINATOR_WORKER_THREADS=lots"), std::string("COORDINATOR_WORKER_THREADS="),
        std::string("COORDINATOR_REAPER_PERIOD=soon"),
        std::string("COORDINATOR_MAX_REQUEST_BYTES=") + std::string(100000, '9')}) {
    absl::StatusOr<ProcessResult> r =
        RunWithEnv("coordinator", {"--listen=127.0.0.1:0", "--http_listen="},
                   {bad, "COORDINATOR_DATA_DIR=" + dir.Sub("data")});
    ASSERT_OK(r.status());
    EXPECT_TRUE(r->exited()) << r->Describe();
    EXPECT_EQ(r->exit_code, 1) << r->Describe();
    EXPECT_THAT(r->err, HasSubstr("environment variable " + bad.substr(0, bad.find('='))))
        << r->Describe();
    EXPECT_LT(r->err.size(), 2000u) << r->Describe();
    EXPECT_THAT(r->err, Not(HasSubstr("listening on")));
    // Refused before anything was opened.
    EXPECT_FALSE(std::filesystem::exists(dir.Sub("data")));
  }
}

TEST(EnvFlagsProcessTest, AVariableThatNamesNoFlagIsReported) {
  TempDir dir;
  auto started =
      StartCoordinator({"--listen=127.0.0.1:0", "--http_listen=", "--data_dir=" + dir.Sub("data")},
                       {"COORDINATOR_DATADIR=" + dir.Sub("typo")});
  ASSERT_OK(started.status());
  EXPECT_THAT(started->first->stderr_text(), HasSubstr("COORDINATOR_DATADIR"));
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("typo")));
  ASSERT_OK(started->first->Signal(SIGTERM));
  ASSERT_OK(started->first->Wait(kProcessWait).status());
}

TEST(EnvFlagsProcessTest, AgentsTakeTheirOwnPrefix) {
  // A bad value under each agent's prefix is refused before the agent does anything.
  for (const auto& [binary, variable] : std::vector<std::pair<std::string, std::string>>{
           {"green_agent", "GREEN_AGENT_COMMAND_TIMEOUT"},
           {"purple_agent", "PURPLE_AGENT_MAX_STEPS"}}) {
    absl::StatusOr<ProcessResult> r =
        RunWithEnv(binary, {"--coordinator=127.0.0.1:1"}, {variable + "=not-a-number"});
    ASSERT_OK(r.status());
    EXPECT_EQ(r->exit_code, 1) << binary << " " << r->Describe();
    EXPECT_THAT(r->err, HasSubstr("environment variable " + variable)) << r->Describe();
  }
}

TEST(EnvFlagsProcessTest, CoordctlTimeoutFromTheEnvironment) {
  absl::StatusOr<ProcessResult> bad =
      RunWithEnv("coordctl", {"--target", "127.0.0.1:1", "health"}, {"COORDCTL_TIMEOUT=forever"});
  ASSERT_OK(bad.status());
  EXPECT_EQ(bad->exit_code, 2) << bad->Describe();
  EXPECT_THAT(bad->err, HasSubstr("COORDCTL_TIMEOUT"));
  // --timeout wins over it.
  absl::StatusOr<ProcessResult> overridden =
      RunWithEnv("coordctl", {"--target", "127.0.0.1:1", "--timeout", "1s", "health"},
                 {"COORDCTL_TIMEOUT=forever"});
  ASSERT_OK(overridden.status());
  EXPECT_EQ(overridden->exit_code, 3) << overridden->Describe();  // nothing listens on port 1
  EXPECT_THAT(overridden->err, Not(HasSubstr("COORDCTL_TIMEOUT")));
}

}  // namespace
