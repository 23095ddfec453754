#include "green_agent/environment.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace green_agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

EnvironmentRunner Runner(const std::string& start, const std::string& stop,
                         const std::string& exec = "podman exec {container} {argv}") {
  EnvironmentOptions options;
  options.start_template = start;
  options.stop_template = stop;
  options.timeout = absl::Seconds(5);
  ExecutorOptions executor;
  executor.exec_template = exec;
  return EnvironmentRunner(options, executor);
}

TEST(EnvironmentNameTest, StableReadableAndDistinctPerWorkspacesFolder) {
  const std::string a = EnvironmentName("/srv/ws", "eval-1");
  EXPECT_EQ(a, EnvironmentName("/srv/ws", "eval-1"));
  EXPECT_THAT(a, MatchesRegex("coord-eval-1-[0-9a-f]{12}"));
  EXPECT_NE(a, EnvironmentName("/srv/other", "eval-1"));
  EXPECT_NE(a, EnvironmentName("/srv/ws", "eval-2"));
  // Characters container names do not allow become one dash; long ids are cut.
  EXPECT_THAT(EnvironmentName("/w", "ctx/heap overflow"),
              MatchesRegex("coord-ctx-heap-overflow-[0-9a-f]{12}"));
  EXPECT_THAT(EnvironmentName("/w", std::string(300, 'x')),
              MatchesRegex("coord-x{40}-[0-9a-f]{12}"));
  EXPECT_THAT(EnvironmentName("/w", "///"), MatchesRegex("coord-[0-9a-f]{12}"));
}

TEST(EnvironmentOptionsTest, StartNeedsStopAndAContainerExecTemplate) {
  const std::string exec = "podman exec {container} {argv}";
  EnvironmentOptions options;
  EXPECT_OK(ValidateEnvironmentOptions(options, ""));  // off
  options.start_template = "podman run -d --rm --name {env_name} img sleep infinity";
  EXPECT_THAT(ValidateEnvironmentOptions(options, exec).message(),
              HasSubstr("needs --env_stop_template"));
  options.stop_template = "podman rm -f -t 0 {container}";
  EXPECT_OK(ValidateEnvironmentOptions(options, exec));
  EXPECT_THAT(ValidateEnvironmentOptions(options, "").message(),
              HasSubstr("commands would run on this host"));
  EXPECT_THAT(ValidateEnvironmentOptions(options, "sh -c {command}").message(),
              HasSubstr("naming {container}"));

  EnvironmentOptions bad = options;
  bad.start_template = "podman run {container}";
  EXPECT_THAT(ValidateEnvironmentOptions(bad, exec).message(), HasSubstr("cannot use {container}"));
  bad = options;
  bad.stop_template = "podman exec {container} {argv}";
  EXPECT_THAT(ValidateEnvironmentOptions(bad, exec).message(),
              HasSubstr("--env_stop_template cannot use {argv}"));
  bad = options;
  bad.start_template = "podman run 'oops";
  EXPECT_THAT(ValidateEnvironmentOptions(bad, exec).message(),
              HasSubstr("--env_start_template: unterminated single quote"));
  bad = EnvironmentOptions{};
  bad.stop_template = "podman rm -f {container}";
  EXPECT_THAT(ValidateEnvironmentOptions(bad, exec).message(),
              HasSubstr("needs --env_start_template"));
}

TEST(EnvironmentRunnerTest, TheHandleIsTheLastLineOfStdout) {
  ExecEnv env;
  env.env_name = "coord-x-0123456789ab";
  env.context_id = "x";
  // Progress on stdout before the id (docker pulling an image), warnings on stderr.
  absl::StatusOr<std::string> handle =
      Runner("sh -c 'echo pulling...; echo warning >&2; echo \"  $0  \"; echo' {env_name}", "true")
          .Start(env);
  ASSERT_OK(handle);
  EXPECT_EQ(*handle, "coord-x-0123456789ab");
}

TEST(EnvironmentRunnerTest, AFailedStartSaysWhatTheTemplateSaid) {
  absl::StatusOr<std::string> handle =
      Runner("sh -c 'echo abc; echo Error: image not known >&2; exit 125'", "true")
          .Start(ExecEnv{});
  EXPECT_TRUE(absl::IsUnavailable(handle.status()));
  EXPECT_EQ(handle.status().message(), "--env_start_template exited 125: Error: image not known");

  handle = Runner("sh -c 'echo started >&2'", "true").Start(ExecEnv{});
  EXPECT_TRUE(absl::IsFailedPrecondition(handle.status()));
  EXPECT_THAT(handle.status().message(),
              HasSubstr("--env_start_template printed no handle on stdout (it exited 0; "
                        "stderr: started)"));

  handle = Runner("echo two words", "true").Start(ExecEnv{});
  EXPECT_THAT(handle.status().message(), HasSubstr("printed no usable handle"));

  handle = Runner("no-such-engine-here run", "true").Start(ExecEnv{});
  EXPECT_THAT(handle.status().message(),
              HasSubstr("--env_start_template exited 127: cannot run no-such-engine-here"));

  EnvironmentOptions options;
  options.start_template = "sleep 30";
  options.stop_template = "true";
  options.timeout = absl::Milliseconds(300);
  handle = EnvironmentRunner(options, ExecutorOptions{}).Start(ExecEnv{});
  EXPECT_THAT(handle.status().message(), HasSubstr("--env_start_template timed out after 300ms"));
}

TEST(EnvironmentRunnerTest, StopGetsTheHandle) {
  testing_util::TempDir dir;
  const std::string marker = dir.path() + "/stopped";
  ExecEnv env;
  env.environment_handle = "box-7";
  ASSERT_OK(Runner("true", "sh -c 'echo $0 > " + marker + "' {container}").Stop(env));
  std::ifstream in(marker);
  std::string got;
  std::getline(in, got);
  EXPECT_EQ(got, "box-7");

  absl::Status s = Runner("true", "sh -c 'echo no such engine >&2; exit 3'").Stop(env);
  EXPECT_TRUE(absl::IsUnavailable(s));
  EXPECT_EQ(s.message(), "--env_stop_template exited 3: no such engine");
}

TEST(EnvironmentRunnerTest, CheckRunsTrueThroughTheExecTemplate) {
  testing_util::TempDir dir;
  const std::string box = dir.path() + "/box";
  std::ofstream(box) << "";
  // A "container" that runs commands while its file exists.
  const std::string exec =
      "sh -c 'test -e \"$0\" || { echo \"Error: no container $0\" >&2; exit 125; }; exec \"$@\"' "
      "{container} {argv}";
  EnvironmentRunner runner = Runner("true", "true", exec);
  ExecEnv env;
  env.environment_handle = box;
  EXPECT_OK(runner.Check(env));
  std::filesystem::remove(box);
  absl::Status s = runner.Check(env);
  EXPECT_TRUE(absl::IsUnavailable(s));
  EXPECT_EQ(s.message(), "`true` through --exec_template exited 125: Error: no container " + box);
}

TEST(EnvironmentRecordTest, WrittenReadListedRemoved) {
  testing_util::TempDir dir;
  const std::string root = dir.path() + "/ctx-1";
  EXPECT_TRUE(absl::IsNotFound(ReadEnvironmentRecord(root).status()));
  ASSERT_OK(WriteEnvironmentRecord(root, {"ctx/1", "coord-ctx-1-abc", "", "starting", ""}));
  ASSERT_OK(WriteEnvironmentRecord(dir.path() + "/ctx-2",
                                   {"ctx-2", "coord-ctx-2-def", "f00d", "running", ""}));
  std::filesystem::create_directories(dir.path() + "/no-record/workspace");
  absl::StatusOr<EnvironmentRecord> record = ReadEnvironmentRecord(root);
  ASSERT_OK(record);
  EXPECT_EQ(record->context_id, "ctx/1");
  EXPECT_EQ(record->env_name, "coord-ctx-1-abc");
  EXPECT_EQ(record->state, "starting");
  std::vector<std::string> listed;
  for (const EnvironmentRecord& r : ListEnvironmentRecords(dir.path())) {
    listed.push_back(r.context_id + "=" + r.handle);
  }
  std::sort(listed.begin(), listed.end());
  EXPECT_THAT(listed, ElementsAre("ctx-2=f00d", "ctx/1="));
  RemoveEnvironmentRecord(root);
  EXPECT_TRUE(absl::IsNotFound(ReadEnvironmentRecord(root).status()));
  std::ofstream(dir.path() + "/ctx-2/environment.json") << "{not json";
  EXPECT_TRUE(absl::IsDataLoss(ReadEnvironmentRecord(dir.path() + "/ctx-2").status()));
  EXPECT_TRUE(ListEnvironmentRecords(dir.path()).empty());
}

}  // namespace
}  // namespace green_agent
