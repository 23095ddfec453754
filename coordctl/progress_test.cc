#include "coordctl/progress.h"

#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace coordctl {
namespace {

TEST(FormatTableTest, AlignsEveryColumnToItsWidestCell) {
  const std::string table = FormatTable({{"ITEM", "STATE", "ATTEMPTS", "NOTE"},
                                         {"parser", "running", "1", "x"},
                                         {"a-much-longer-item", "done", "12", "-"}});
  std::vector<std::string> lines = absl::StrSplit(table, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "ITEM                STATE    ATTEMPTS  NOTE");
  EXPECT_EQ(lines[1], "parser              running  1         x");
  EXPECT_EQ(lines[2], "a-much-longer-item  done     12        -");
  // Every column starts at the same offset on every line.
  for (const char* header : {"STATE", "ATTEMPTS", "NOTE"}) {
    const size_t at = lines[0].find(header);
    EXPECT_EQ(lines[1][at - 1], ' ');
    EXPECT_NE(lines[1][at], ' ');
    EXPECT_NE(lines[2][at], ' ');
  }
}

TEST(LiveLinesTest, RedrawsTheBlockInPlace) {
  std::ostringstream out;
  LiveLines lines(&out);
  lines.Set("a", "a pending");
  EXPECT_EQ(out.str(), "\r\x1b[2Ka pending\n");
  lines.Set("b", "b pending");
  lines.SetFooter("run pending");
  EXPECT_EQ(lines.height(), 3u);
  out.str("");
  lines.Set("a", "a running");
  // Up three lines, then each line cleared and written again; the order stays.
  EXPECT_EQ(out.str(), "\x1b[3A\r\x1b[2Ka running\n\r\x1b[2Kb pending\n\r\x1b[2Krun pending\n");
}

TEST(LiveLinesTest, AStringStreamIsNotInteractive) {
  std::ostringstream out;
  EXPECT_FALSE(IsInteractive(&out));
}

}  // namespace
}  // namespace coordctl
