// examples/python/example.py, run by Debian's /usr/bin/python3 with the stubs the build generated
// (<build dir>/python), against a real coordinator; its writes are then read back with coordctl.
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/v1/context.pb.h"
#include "coordinator/v1/conversation.pb.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace {

using ::testing::HasSubstr;
using ::testing_util::CoordinatorProcess;
using ::testing_util::ProcessResult;
using ::testing_util::TempDir;

TEST(PythonExampleTest, DrivesContextsConversationsRetryAndBreaker) {
  const char* bin_dir = std::getenv("COORD_BIN_DIR");
  ASSERT_NE(bin_dir, nullptr) << "run through ctest (COORD_BIN_DIR)";
  TempDir dir;
  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> coordinator =
      CoordinatorProcess::Start(dir.Sub("data"));
  ASSERT_OK(coordinator);
  const std::string target = (*coordinator)->target();

  // The example's own process, with PYTHONPATH at the generated stubs.
  absl::StatusOr<std::unique_ptr<testing_util::Process>> python =
      testing_util::Process::Start("/usr/bin/python3",
                                   {std::string(COORD_SOURCE_DIR) + "/examples/python/example.py",
                                    "--target", target, "--context-id", "py-eval-1"},
                                   "", {absl::StrCat("PYTHONPATH=", bin_dir, "/../python")});
  ASSERT_OK(python);
  absl::StatusOr<ProcessResult> result = (*python)->Wait(absl::Seconds(120));
  ASSERT_OK(result);
  ASSERT_EQ(result->exit_code, 0) << result->Describe();
  const std::string& out = result->out;
  EXPECT_THAT(out, HasSubstr("created context py-eval-1"));
  EXPECT_THAT(out, HasSubstr("recorded command #2: './run_tests.sh' exit 2 (command_count 2, "
                             "failed 1)"));
  EXPECT_THAT(out, HasSubstr("appended message #2 (step_count 1, total_tokens 155)"));
  EXPECT_THAT(out, HasSubstr("loop check: looping=True pattern=repeated_error"));
  EXPECT_THAT(out, HasSubstr("force-escalated: tier 1 -> 3"));
  EXPECT_THAT(out, HasSubstr("a missing context is NOT_FOUND"));

  // What it wrote is there for any other client.
  absl::StatusOr<ProcessResult> context =
      testing_util::RunCoordctl(target, {"context", "get", "py-eval-1", "--json"});
  ASSERT_OK(context);
  ASSERT_EQ(context->exit_code, 0) << context->Describe();
  coordinator::v1::TaskContext parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(context->out, &parsed).ok());
  EXPECT_EQ(parsed.agent(), "python-agent");
  EXPECT_EQ(parsed.command_count(), 2);
  EXPECT_EQ(parsed.failed_commands(), 1);
  EXPECT_EQ(parsed.labels().at("language"), "python");
  absl::StatusOr<ProcessResult> convo =
      testing_util::RunCoordctl(target, {"convo", "show", "py-eval-1", "--json"});
  ASSERT_OK(convo);
  coordinator::v1::GetConversationResponse messages;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(convo->out, &messages).ok());
  EXPECT_EQ(messages.step_count(), 1);  // the agent message; the user one is not a step
  EXPECT_EQ(messages.message_count(), 2);
  EXPECT_EQ(messages.total_tokens(), 155);
  // The task it drove is blocked by the breaker, after a forced escalation to tier 3.
  const std::string done_line = out.substr(out.find("done: context py-eval-1 task ") + 29, 8);
  absl::StatusOr<ProcessResult> tier =
      testing_util::RunCoordctl(target, {"task", "tier", done_line});
  ASSERT_OK(tier);
  EXPECT_EQ(tier->exit_code, 0) << tier->Describe();
  EXPECT_THAT(tier->out, HasSubstr("3"));
  absl::StatusOr<ProcessResult> status = testing_util::RunCoordctl(target, {"breaker", "status"});
  ASSERT_OK(status);
  EXPECT_THAT(status->out, HasSubstr(done_line));

  // A coordinator that is not there: a clear error and exit 1, not a traceback.
  ASSERT_OK((*coordinator)->Stop());
  absl::StatusOr<std::unique_ptr<testing_util::Process>> offline = testing_util::Process::Start(
      "/usr/bin/python3",
      {std::string(COORD_SOURCE_DIR) + "/examples/python/example.py", "--target", target}, "",
      {absl::StrCat("PYTHONPATH=", bin_dir, "/../python")});
  ASSERT_OK(offline);
  absl::StatusOr<ProcessResult> failed = (*offline)->Wait(absl::Seconds(120));
  ASSERT_OK(failed);
  EXPECT_EQ(failed->exit_code, 1) << failed->Describe();
  EXPECT_THAT(failed->err, HasSubstr("example.py: UNAVAILABLE"));
  EXPECT_THAT(failed->err, ::testing::Not(HasSubstr("Traceback")));
}

}  // namespace
