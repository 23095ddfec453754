#include "common/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace common {
namespace {

using ::testing::HasSubstr;
using ::testing_util::TempDir;
using ::testing_util::WaitFor;

// Waits for `pid` to exit, reaping it; its wait status.
int WaitExited(pid_t pid) {
  std::optional<int> status;
  EXPECT_TRUE(WaitFor([&] { return (status = ExitedStatus(pid)).has_value(); }));
  return status.value_or(-1);
}

// True once `pid` is gone or a zombie nobody reaps (its parent died).
bool Gone(pid_t pid) {
  std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
  std::string line;
  if (!std::getline(stat, line)) return true;
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && line.size() > paren + 2 && line[paren + 2] == 'Z';
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

class ChildProcessTest : public ::testing::TestWithParam<bool> {
 protected:
  // The spawn options of the path under test: posix_spawn, or fork and exec (die_with_parent).
  SpawnOptions Options(std::vector<std::string> argv) {
    SpawnOptions options;
    options.argv = std::move(argv);
    options.die_with_parent = GetParam();
    return options;
  }

  TempDir dir_;
};

TEST_P(ChildProcessTest, OutputGoesWhereToldWithTheEnvironmentAndDirectoryGiven) {
  const std::string out = dir_.path() + "/out";
  const int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  SpawnOptions options =
      Options({"sh", "-c", "echo \"$COORD_SPAWN_TEST in $(pwd)\"; echo oops >&2; exit 3"});
  options.env_add = {"COORD_SPAWN_TEST=given"};
  options.stdout_fd = fd;
  options.cwd = dir_.path();
  absl::StatusOr<pid_t> pid = Spawn(options);
  close(fd);
  ASSERT_TRUE(pid.ok()) << pid.status();
  const int status = WaitExited(*pid);
  EXPECT_EQ(DescribeExit(status), "exit code 3");
  // stderr goes with stdout unless told otherwise.
  EXPECT_EQ(ReadFile(out), absl::StrCat("given in ", dir_.path(), "\noops\n"));
}

TEST_P(ChildProcessTest, ACommandThatCannotRunIsAClearErrorAndStartsNothing) {
  absl::StatusOr<pid_t> pid = Spawn(Options({"/nonexistent/coord-no-such-command"}));
  ASSERT_FALSE(pid.ok());
  EXPECT_EQ(pid.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(pid.status().message(),
              HasSubstr("cannot run /nonexistent/coord-no-such-command: No such file"));
  EXPECT_EQ(Spawn(Options({})).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_P(ChildProcessTest, AProcessGroupOfItsOwnUnlessToldOtherwise) {
  SpawnOptions options = Options({"sleep", "30"});
  absl::StatusOr<pid_t> own = Spawn(options);
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ(getpgid(*own), *own);
  options.own_process_group = false;
  absl::StatusOr<pid_t> shared = Spawn(options);
  ASSERT_TRUE(shared.ok()) << shared.status();
  EXPECT_EQ(getpgid(*shared), getpgrp());
  kill(*shared, SIGKILL);
  EXPECT_EQ(DescribeExit(WaitExited(*shared)), "killed by signal 9");
  StopProcessGroup(*own, absl::Seconds(5));
  EXPECT_TRUE(Gone(*own));
}

TEST_P(ChildProcessTest, StoppingTheGroupStopsWhatTheCommandStarted) {
  const std::string pids = dir_.path() + "/pids";
  absl::StatusOr<pid_t> pid =
      Spawn(Options({"sh", "-c", absl::StrCat("sleep 30 & echo $! > ", pids, "; wait")}));
  ASSERT_TRUE(pid.ok()) << pid.status();
  int grandchild = 0;
  ASSERT_TRUE(WaitFor(
      [&] { return absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadFile(pids)), &grandchild); }));
  StopProcessGroup(*pid, absl::Seconds(5));
  EXPECT_TRUE(Gone(*pid));
  EXPECT_TRUE(WaitFor([&] { return Gone(grandchild); }));
}

INSTANTIATE_TEST_SUITE_P(Paths, ChildProcessTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "ForkExec" : "PosixSpawn";
                         });

// A command started with die_with_parent is killed when the process that started it dies, even
// by SIGKILL.
TEST(ChildProcessDeathTest, ACommandBoundToItsParentDiesWithIt) {
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  const pid_t parent = fork();
  ASSERT_GE(parent, 0);
  if (parent == 0) {
    close(report[0]);
    SpawnOptions options;
    options.argv = {"sleep", "30"};
    options.die_with_parent = true;
    absl::StatusOr<pid_t> child = Spawn(options);
    const pid_t pid = child.ok() ? *child : -1;
    (void)!write(report[1], &pid, sizeof(pid));
    pause();
    _exit(0);
  }
  close(report[1]);
  pid_t child = 0;
  ASSERT_EQ(read(report[0], &child, sizeof(child)), static_cast<ssize_t>(sizeof(child)));
  close(report[0]);
  ASSERT_GT(child, 0);
  EXPECT_FALSE(Gone(child));
  kill(parent, SIGKILL);
  int status = 0;
  waitpid(parent, &status, 0);
  EXPECT_TRUE(WaitFor([&] { return Gone(child); })) << "the child outlived its parent";
  kill(child, SIGKILL);  // only if the test failed
}

}  // namespace
}  // namespace common
