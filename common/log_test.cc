#include "common/log.h"

#include <string>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace common {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const absl::Time kTime = absl::FromUnixMillis(1767323045678);  // 2026-01-02T03:04:05.678Z

TEST(LogTest, JsonLineHasTimeLevelMessageAndFields) {
  EXPECT_EQ(FormatLogLine(LogFormat::kJson, kTime, LogLevel::kInfo, "attempt 2",
                          {{"context_id", "c1"}, {"agent", "purple"}}),
            "{\"time\":\"2026-01-02T03:04:05.678Z\",\"level\":\"INFO\",\"message\":\"attempt "
            "2\",\"context_id\":\"c1\",\"agent\":\"purple\"}\n");
  EXPECT_EQ(FormatLogLine(LogFormat::kJson, kTime, LogLevel::kError, "x", {}),
            "{\"time\":\"2026-01-02T03:04:05.678Z\",\"level\":\"ERROR\",\"message\":\"x\"}\n");
}

TEST(LogTest, TextLineIsForPeople) {
  EXPECT_EQ(FormatLogLine(LogFormat::kText, kTime, LogLevel::kWarn, "attempt 2",
                          {{"context_id", "c1"}, {"task_id", "t9"}}),
            "2026-01-02T03:04:05.678Z WARN attempt 2 context_id=c1 task_id=t9\n");
}

TEST(LogTest, EmptyFieldsAreLeftOut) {
  const std::string line = FormatLogLine(LogFormat::kJson, kTime, LogLevel::kInfo, "m",
                                         {{"context_id", ""}, {"agent", "green"}});
  EXPECT_THAT(line, Not(HasSubstr("context_id")));
  EXPECT_THAT(line, HasSubstr("\"agent\":\"green\""));
}

TEST(LogTest, JsonEscapesEverythingThatCouldBreakTheLine) {
  EXPECT_EQ(JsonQuote("a\"b\\c\nd\re\tf"), "\"a\\\"b\\\\c\\nd\\re\\tf\"");
  EXPECT_EQ(JsonQuote(std::string("nul\0bell\x07"
                                  "del\x7f",
                                  13)),
            "\"nul\\u0000bell\\u0007del\\u007f\"");
  // Valid UTF-8 stays as it is; malformed bytes become U+FFFD.
  EXPECT_EQ(JsonQuote("caf\xc3\xa9 \xe6\x97\xa5"), "\"caf\xc3\xa9 \xe6\x97\xa5\"");
  EXPECT_EQ(JsonQuote("bad\xff\xc3"), "\"bad\\ufffd\\ufffd\"");
  EXPECT_EQ(JsonQuote("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");  // a surrogate
  // A hostile message and field stay one line.
  const std::string line = FormatLogLine(LogFormat::kJson, kTime, LogLevel::kInfo,
                                         "line1\nline2\"}{\"x\":\"", {{"context_id", "c\n\"1"}});
  EXPECT_EQ(line.find('\n'), line.size() - 1) << line;
  EXPECT_THAT(line, HasSubstr("\"message\":\"line1\\nline2\\\"}{\\\"x\\\":\\\"\""));
  EXPECT_THAT(line, HasSubstr("\"context_id\":\"c\\n\\\"1\""));
}

TEST(LogTest, TextEscapesControlCharacters) {
  const std::string line =
      FormatLogLine(LogFormat::kText, kTime, LogLevel::kInfo, "a\nb\x01\xff", {{"k", "v\tw"}});
  EXPECT_EQ(line, "2026-01-02T03:04:05.678Z INFO a\\nb\\x01\\xff k=v\\tw\n");
}

TEST(LogTest, OversizedMessageIsOneLine) {
  const std::string big(1 << 20, 'x');
  const std::string line = FormatLogLine(LogFormat::kJson, kTime, LogLevel::kInfo, big, {});
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  EXPECT_GT(line.size(), big.size());
}

TEST(LogTest, FormatFlagParsing) {
  LogFormat format = LogFormat::kJson;
  std::string error;
  EXPECT_TRUE(AbslParseFlag("text", &format, &error));
  EXPECT_EQ(format, LogFormat::kText);
  EXPECT_TRUE(AbslParseFlag("JSON", &format, &error));
  EXPECT_EQ(format, LogFormat::kJson);
  EXPECT_FALSE(AbslParseFlag("xml", &format, &error));
  EXPECT_THAT(error, HasSubstr("json or text"));
  EXPECT_FALSE(AbslParseFlag("", &format, &error));
  EXPECT_EQ(AbslUnparseFlag(LogFormat::kText), "text");
  EXPECT_EQ(AbslUnparseFlag(LogFormat::kJson), "json");
}

}  // namespace
}  // namespace common
