// Structured logs (common/log.h) of the real coordinator: JSON lines by default, text with
// --log_format=text (or COORDINATOR_LOG_FORMAT=text), a bad format refused; tests and scripts
// find the "listening on" line in both.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace {

using ::testing::HasSubstr;
using ::testing_util::BinaryPath;
using ::testing_util::CoordinatorProcess;
using ::testing_util::ParseListeningPort;
using ::testing_util::Process;
using ::testing_util::ProcessResult;
using ::testing_util::RunCoordctl;
using ::testing_util::TempDir;

TEST(LogProcessTest, ParseListeningPortReadsJsonLines) {
  EXPECT_EQ(*ParseListeningPort("{\"time\":\"2024-01-01T00:00:00.000Z\",\"level\":\"INFO\","
                                "\"message\":\"listening on 127.0.0.1:43121\"}"),
            43121);
  EXPECT_EQ(*ParseListeningPort("{\"message\":\"agent echo listening on 127.0.0.1:80\","
                                "\"agent\":\"echo\"}"),
            80);
  EXPECT_FALSE(ParseListeningPort("{\"message\":\"listening on 127.0.0.1:\"}").ok());
}

TEST(LogProcessTest, DefaultIsOneJsonObjectPerLine) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> c = CoordinatorProcess::Start(dir.Sub("d"));
  ASSERT_OK(c);
  absl::StatusOr<ProcessResult> missing = RunCoordctl((*c)->target(), {"context", "get", "nope"});
  ASSERT_OK(missing);
  absl::StatusOr<ProcessResult> stopped = (*c)->Stop();
  ASSERT_OK(stopped);
  int lines = 0;
  for (absl::string_view line : absl::StrSplit(stopped->err, '\n', absl::SkipEmpty())) {
    ++lines;
    google::protobuf::Struct event;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(std::string(line), &event).ok())
        << line;
    for (const char* key : {"time", "level", "message"}) {
      ASSERT_TRUE(event.fields().contains(key)) << key << " missing: " << line;
      EXPECT_FALSE(event.fields().at(key).string_value().empty()) << line;
    }
    EXPECT_THAT(std::vector<std::string>({"INFO", "WARN", "ERROR"}),
                ::testing::Contains(event.fields().at("level").string_value()));
  }
  EXPECT_GE(lines, 4) << stopped->err;  // opened, listening, received SIGTERM, stopped cleanly
  EXPECT_THAT(stopped->err, HasSubstr("\"message\":\"stopped cleanly\""));
}

// gRPC's own lines (here its bind error) come out in the same format, marked as gRPC's.
TEST(LogProcessTest, GrpcLinesAreJsonToo) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> first =
      CoordinatorProcess::Start(dir.Sub("a"));
  ASSERT_OK(first);
  absl::StatusOr<ProcessResult> second = testing_util::RunProcess(
      BinaryPath("coordinator"),
      {"--listen=" + (*first)->target(), "--http_listen=", "--data_dir=" + dir.Sub("b")});
  ASSERT_OK(second);
  EXPECT_NE(second->exit_code, 0) << second->Describe();
  bool grpc_line = false;
  for (absl::string_view line : absl::StrSplit(second->err, '\n', absl::SkipEmpty())) {
    google::protobuf::Struct event;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(std::string(line), &event).ok())
        << line;
    auto source = event.fields().find("source");
    if (source == event.fields().end() || source->second.string_value() != "grpc") continue;
    grpc_line = true;
    EXPECT_EQ(event.fields().at("level").string_value(), "ERROR") << line;
    EXPECT_THAT(event.fields().at("location").string_value(), HasSubstr(".cc:")) << line;
  }
  EXPECT_TRUE(grpc_line) << second->err;
}

TEST(LogProcessTest, TextFormatByFlagOrEnvironment) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<CoordinatorProcess>> c =
      CoordinatorProcess::Start(dir.Sub("d"), {"--log_format=text"});
  ASSERT_OK(c);
  absl::StatusOr<ProcessResult> stopped = (*c)->Stop();
  ASSERT_OK(stopped);
  for (absl::string_view line : absl::StrSplit(stopped->err, '\n', absl::SkipEmpty())) {
    EXPECT_FALSE(absl::StartsWith(line, "{")) << line;
    EXPECT_TRUE(absl::StrContains(line, " INFO ") || absl::StrContains(line, " WARN ")) << line;
  }
  EXPECT_THAT(stopped->err, HasSubstr(" INFO stopped cleanly\n"));

  absl::StatusOr<std::unique_ptr<Process>> by_env =
      Process::Start(BinaryPath("coordinator"),
                     {"--listen=127.0.0.1:0", "--http_listen=", "--data_dir=" + dir.Sub("e")}, "",
                     {"COORDINATOR_LOG_FORMAT=text"});
  ASSERT_OK(by_env);
  absl::StatusOr<std::string> line =
      (*by_env)->WaitForStderrLine("listening on", absl::Seconds(60));
  ASSERT_OK(line);
  EXPECT_FALSE(absl::StartsWith(*line, "{")) << *line;
  EXPECT_OK(ParseListeningPort(*line).status());
}

TEST(LogProcessTest, ABadFormatIsRefused) {
  TempDir dir;
  absl::StatusOr<ProcessResult> flag = testing_util::RunProcess(
      BinaryPath("coordinator"),
      {"--log_format=xml", "--listen=127.0.0.1:0", "--data_dir=" + dir.Sub("d")});
  ASSERT_OK(flag);
  EXPECT_NE(flag->exit_code, 0) << flag->Describe();
  EXPECT_THAT(flag->err, HasSubstr("json or text"));
  absl::StatusOr<std::unique_ptr<Process>> env = Process::Start(
      BinaryPath("coordinator"), {"--listen=127.0.0.1:0", "--data_dir=" + dir.Sub("d")}, "",
      {"COORDINATOR_LOG_FORMAT=\x1b[31mred"});
  ASSERT_OK(env);
  absl::StatusOr<ProcessResult> r = (*env)->Wait(absl::Seconds(60));
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 1) << r->Describe();
  EXPECT_THAT(r->err, HasSubstr("COORDINATOR_LOG_FORMAT"));
  EXPECT_THAT(r->err, ::testing::Not(HasSubstr("\x1b")));  // escaped, not sent to the terminal
}

}  // namespace
