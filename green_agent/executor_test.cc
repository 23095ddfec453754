#include "green_agent/executor.h"

#include <filesystem>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace green_agent {
namespace {

using ::testing::ElementsAre;

TEST(SplitWordsTest, QuotesAndEscapes) {
  absl::StatusOr<std::vector<std::string>> words =
      SplitWords(R"(grep -n "a b" 'c "d"' e\ f "x\"y" '')");
  ASSERT_OK(words);
  EXPECT_THAT(*words, ElementsAre("grep", "-n", "a b", "c \"d\"", "e f", "x\"y", ""));
}

TEST(SplitWordsTest, RefusesUnterminatedQuotesAndEmptyCommands) {
  EXPECT_FALSE(SplitWords("echo 'oops").ok());
  EXPECT_FALSE(SplitWords("echo \"oops").ok());
  EXPECT_FALSE(SplitWords("   ").ok());
}

TEST(ExecutorTest, TemplateSubstitutesWholeWordsWithoutQuoting) {
  ExecutorOptions options;
  options.exec_template = "docker exec {container} bash -lc {command}";
  CommandExecutor executor(options);
  ExecEnv env;
  env.environment_handle = "box-1";
  absl::StatusOr<std::vector<std::string>> argv = executor.Argv("cat 'a b'; rm -rf / $(evil)", env);
  ASSERT_OK(argv);
  // The command is one argument, exactly as given: nothing in it is split or expanded here.
  EXPECT_THAT(*argv,
              ElementsAre("docker", "exec", "box-1", "bash", "-lc", "cat 'a b'; rm -rf / $(evil)"));
}

TEST(ExecutorTest, ArgvIsTheCommandsWordsAndTheOtherPlaceholdersAreFilledIn) {
  ExecutorOptions options;
  options.exec_template = "podman exec -w /workspace {container} {argv}";
  CommandExecutor executor(options);
  ExecEnv env;
  env.environment_handle = "0123abcd";
  absl::StatusOr<std::vector<std::string>> argv =
      executor.Argv("sh -c 'cat a | wc -l' \"x y\"", env);
  ASSERT_OK(argv);
  // Exactly the words the command has without a template.
  EXPECT_THAT(*argv, ElementsAre("podman", "exec", "-w", "/workspace", "0123abcd", "sh", "-c",
                                 "cat a | wc -l", "x y"));
  // A command that cannot be split is the agent's error, as without a template.
  absl::StatusOr<ExecResult> r = executor.Run("echo 'oops", env);
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 2);
  EXPECT_EQ(r->output, "cannot run the command: unterminated single quote");

  env.workspace_dir = "/w";
  env.shared_dir = "/w/shared";
  env.context_id = "ctx";
  env.task_id = "task-1";
  env.env_name = "coord-ctx-0123456789ab";
  argv = ExpandTemplate(
      "run --name={env_name} -v {workspace}:/workspace {task_id}-img x{argv} {{.ID}} {shared} "
      "{context_id} {command}",
      "ls -l", env);
  ASSERT_OK(argv);
  // {argv} only as a whole word; braces that name no placeholder stay.
  EXPECT_THAT(*argv, ElementsAre("run", "--name=coord-ctx-0123456789ab", "-v", "/w:/workspace",
                                 "task-1-img", "x{argv}", "{{.ID}}", "/w/shared", "ctx", "ls -l"));
}

TEST(ExecutorTest, StderrCanBeKeptApart) {
  ProcessOptions options;
  options.separate_stderr = true;
  absl::StatusOr<ExecResult> r =
      RunProcess({"sh", "-c", "echo out; echo err >&2; echo more; exit 4"}, ExecEnv{}, options);
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 4);
  EXPECT_EQ(r->output, "out\nmore\n");
  EXPECT_EQ(r->error_output, "err\n");
}

TEST(ExecutorTest, RunsWithoutAShellInTheWorkspace) {
  testing_util::TempDir dir;
  CommandExecutor executor(ExecutorOptions{});
  ExecEnv env;
  env.workspace_dir = dir.path();
  absl::StatusOr<ExecResult> r = executor.Run("sh -c 'pwd; echo $0 >&2; exit 3' 'hi there'", env);
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_TRUE(absl::StrContains(r->output, dir.path())) << r->output;
  EXPECT_TRUE(absl::StrContains(r->output, "hi there")) << r->output;
  // No shell: metacharacters are plain arguments.
  r = executor.Run("echo a; echo b | cat", env);
  ASSERT_OK(r);
  EXPECT_EQ(r->output, "a; echo b | cat\n");
}

TEST(ExecutorTest, MissingProgramIsAnAnswerNotAnError) {
  CommandExecutor executor(ExecutorOptions{});
  absl::StatusOr<ExecResult> r = executor.Run("no-such-program-here --x", ExecEnv{});
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 127);
  EXPECT_TRUE(absl::StrContains(r->output, "no-such-program-here")) << r->output;
}

TEST(ExecutorTest, TimeoutKillsTheProcessGroup) {
  ExecutorOptions options;
  options.timeout = absl::Milliseconds(300);
  CommandExecutor executor(options);
  // The background child holds the output pipe; it must not keep the command alive.
  absl::StatusOr<ExecResult> r = executor.Run("sh -c 'sleep 30 & sleep 30'", ExecEnv{});
  ASSERT_OK(r);
  EXPECT_TRUE(r->timed_out);
  EXPECT_EQ(r->exit_code, 124);
}

TEST(ExecutorTest, OutputIsCapped) {
  ExecutorOptions options;
  options.output_cap = 1000;
  CommandExecutor executor(options);
  absl::StatusOr<ExecResult> r = executor.Run("seq 1 100000", ExecEnv{});
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_TRUE(r->truncated);
  EXPECT_LT(r->output.size(), 1200u);
  EXPECT_TRUE(absl::StrContains(r->output, "output truncated at 1000 bytes"));
}

}  // namespace
}  // namespace green_agent
