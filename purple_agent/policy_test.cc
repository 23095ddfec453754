#include "purple_agent/policy.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace purple_agent {
namespace {

// Writes an executable shell script and returns its path.
std::string WriteScript(const testing_util::TempDir& dir, const std::string& name,
                        const std::string& body) {
  const std::string path = dir.Sub(name);
  std::ofstream(path) << "#!/bin/sh\n" << body;
  chmod(path.c_str(), 0755);
  return path;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

PolicyInput SampleInput() {
  PolicyInput input;
  input.context_id = "ctx-1";
  input.task_id = "heap-overflow-record";
  input.turns = {{"user", "Task ID: heap-overflow-record"},
                 {"assistant", "execute: ls src"},
                 {"user", "exit code 0\nrecord.c"}};
  input.step = 1;
  input.attempt = 2;
  input.tier = 2;
  input.model = "gpt-5.1";
  input.failure_context = "Previous failures:\n  Attempt 1 (model: codex-mini): timeout";
  return input;
}

TEST(CmdPolicyTest, ProgramGetsTheConversationOnStdinAndItsOutputIsTheAction) {
  testing_util::TempDir dir;
  const std::string seen = dir.Sub("stdin.json");
  const std::string program = WriteScript(
      dir, "policy.sh", "cat > '" + seen + "'\necho '  execute: grep -n memcpy src/record.c  '\n");
  absl::StatusOr<std::unique_ptr<Policy>> policy = MakePolicy("cmd:" + program, PolicyOptions());
  ASSERT_OK(policy);
  absl::StatusOr<PolicyOutput> out = (*policy)->Next(SampleInput());
  ASSERT_OK(out);
  EXPECT_EQ(out->action, "execute: grep -n memcpy src/record.c");
  EXPECT_GT(out->tokens, 0);
  const std::string json = ReadFile(seen);
  // The same document as PolicyInputJson (field order in JSON objects is not fixed).
  google::protobuf::Struct got, want;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &got).ok()) << json;
  ASSERT_TRUE(
      google::protobuf::util::JsonStringToMessage(PolicyInputJson(SampleInput()), &want).ok());
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(got, want)) << json;
  for (const char* expected : {"ctx-1", "gpt-5.1", "execute: ls src", "Previous failures"}) {
    EXPECT_TRUE(absl::StrContains(json, expected)) << expected << " missing from " << json;
  }
}

TEST(CmdPolicyTest, ProgramArgumentsArePassedThrough) {
  testing_util::TempDir dir;
  const std::string program = WriteScript(dir, "echo_args.sh", "cat > /dev/null\necho \"$1 $2\"\n");
  absl::StatusOr<std::unique_ptr<Policy>> policy =
      MakePolicy("cmd:" + program + " execute: pwd", PolicyOptions());
  ASSERT_OK(policy);
  absl::StatusOr<PolicyOutput> out = (*policy)->Next(SampleInput());
  ASSERT_OK(out);
  EXPECT_EQ(out->action, "execute: pwd");
}

TEST(CmdPolicyTest, FailingSilentOrHangingProgramsAreErrors) {
  testing_util::TempDir dir;
  PolicyOptions options;
  options.timeout = absl::Milliseconds(300);
  const std::string failing = WriteScript(dir, "fail.sh", "cat > /dev/null\nexit 3\n");
  const std::string silent = WriteScript(dir, "silent.sh", "cat > /dev/null\n");
  const std::string hanging = WriteScript(dir, "hang.sh", "exec sleep 30\n");

  absl::StatusOr<std::unique_ptr<Policy>> policy = MakePolicy("cmd:" + failing, options);
  ASSERT_OK(policy);
  EXPECT_EQ((*policy)->Next(SampleInput()).status().code(), absl::StatusCode::kFailedPrecondition);

  policy = MakePolicy("cmd:" + silent, options);
  ASSERT_OK(policy);
  EXPECT_EQ((*policy)->Next(SampleInput()).status().code(), absl::StatusCode::kFailedPrecondition);

  policy = MakePolicy("cmd:" + hanging, options);
  ASSERT_OK(policy);
  EXPECT_EQ((*policy)->Next(SampleInput()).status().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST(CmdPolicyTest, MissingProgramIsAnError) {
  absl::StatusOr<std::unique_ptr<Policy>> policy =
      MakePolicy("cmd:/nonexistent/policy-program", PolicyOptions());
  ASSERT_OK(policy);
  EXPECT_FALSE((*policy)->Next(SampleInput()).ok());
}

TEST(MakePolicyTest, UnknownOrEmptySpecsAreRefused) {
  for (const char* spec : {"", "cmd:", "script:", "openai:", "telepathy:x", "scriptfoo"}) {
    EXPECT_EQ(MakePolicy(spec, PolicyOptions()).status().code(), absl::StatusCode::kInvalidArgument)
        << spec;
  }
}

}  // namespace
}  // namespace purple_agent
