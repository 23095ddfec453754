#include "common/shell_words.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace common {
namespace {

using ::testing::ElementsAre;

TEST(ShellWordsTest, CommandsSplitAsAShellSplitsWords) {
  EXPECT_THAT(*SplitShellWords("  a  b\tc "), ElementsAre("a", "b", "c"));
  EXPECT_THAT(*SplitShellWords(R"(sh -c 'echo "$HOME" | wc')"),
              ElementsAre("sh", "-c", R"(echo "$HOME" | wc)"));
  EXPECT_THAT(*SplitShellWords(R"(x "a \"b\" \$c \n" d\ e '')"),
              ElementsAre("x", R"(a "b" $c \n)", "d e", ""));
  EXPECT_THAT(*SplitShellWords(R"(--card-url="http://h:1/")"),
              ElementsAre("--card-url=http://h:1/"));
  EXPECT_TRUE(SplitShellWords("")->empty());
  EXPECT_FALSE(SplitShellWords("a \"b").ok());
  EXPECT_FALSE(SplitShellWords("a\\").ok());
}

}  // namespace
}  // namespace common
