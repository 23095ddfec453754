// The Server-Sent Events reader: events come out whole however the bytes are split.
#include "coordinator/a2a/sse.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace coordinator {
namespace {

using ::testing::ElementsAre;

std::vector<std::string> Read(const std::vector<std::string>& pieces, bool finish = true) {
  SseParser parser(1 << 20);
  std::vector<std::string> events;
  auto on_event = [&](std::string data) {
    events.push_back(std::move(data));
    return true;
  };
  for (const std::string& piece : pieces) EXPECT_TRUE(parser.Feed(piece, on_event));
  if (finish) {
    EXPECT_TRUE(parser.Finish(on_event));
  }
  return events;
}

TEST(SseParserTest, ReadsEventsWithEveryLineEnding) {
  EXPECT_THAT(Read({"data: {\"a\":1}\n\ndata: {\"b\":2}\n\n"}),
              ElementsAre("{\"a\":1}", "{\"b\":2}"));
  EXPECT_THAT(Read({"data: one\r\n\r\ndata: two\r\rdata: three\n\n"}),
              ElementsAre("one", "two", "three"));
}

TEST(SseParserTest, EventsSplitAnywhereComeOutWhole) {
  const std::string stream =
      ": keep-alive\r\nevent: message\r\nid: 7\r\ndata: first\r\ndata:second\r\n\r\n"
      "retry: 10\ndata: {\"x\": \"y\"}\n\n";
  // Byte by byte: every split of a "\r\n" included.
  std::vector<std::string> bytes;
  for (char c : stream) bytes.emplace_back(1, c);
  EXPECT_THAT(Read(bytes), ElementsAre("first\nsecond", "{\"x\": \"y\"}"));
  EXPECT_THAT(Read({stream}), ElementsAre("first\nsecond", "{\"x\": \"y\"}"));
}

TEST(SseParserTest, EventsWithoutDataAreNotDispatchedAndALastEventIsOnFinish) {
  EXPECT_THAT(Read({"event: ping\n\n: comment\n\n\n\ndata: last"}, /*finish=*/false),
              ElementsAre());
  EXPECT_THAT(Read({"event: ping\n\n: comment\n\n\n\ndata: last"}), ElementsAre("last"));
  EXPECT_THAT(Read({"data\n\n"}), ElementsAre(""));  // a field without a colon: empty data
}

TEST(SseParserTest, StopsWhenTheCallbackSaysSoOrAnEventIsTooLong) {
  SseParser parser(1 << 20);
  int seen = 0;
  auto stop_after_one = [&](std::string) { return ++seen < 1; };
  EXPECT_FALSE(parser.Feed("data: a\n\ndata: b\n\n", stop_after_one));
  EXPECT_EQ(seen, 1);
  EXPECT_FALSE(parser.Feed("data: c\n\n", stop_after_one));
  EXPECT_TRUE(parser.status().ok());

  SseParser small(16);
  auto any = [](std::string) { return true; };
  EXPECT_FALSE(small.Feed("data: 0123456789abcdefghij\n\n", any));
  EXPECT_EQ(small.status().code(), absl::StatusCode::kResourceExhausted);
  SseParser no_newline(16);
  EXPECT_FALSE(no_newline.Feed(std::string(64, 'x'), any));  // a line that never ends
  EXPECT_EQ(no_newline.status().code(), absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace coordinator
