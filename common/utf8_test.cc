#include "common/utf8.h"

#include "gtest/gtest.h"

namespace common {
namespace {

TEST(Utf8Test, ValidUtf8KeepsValidTextAndReplacesEachMalformedByte) {
  EXPECT_EQ(ValidUtf8(""), "");
  EXPECT_EQ(ValidUtf8("plain \xc3\xa9t\xc3\xa9 \xf0\x9f\x99\x82"),
            "plain \xc3\xa9t\xc3\xa9 \xf0\x9f\x99\x82");
  EXPECT_EQ(ValidUtf8("b\xff"
                      "d"),
            "b\xef\xbf\xbd"
            "d");
  // A sequence cut short: each of its bytes is replaced (none starts a valid sequence).
  EXPECT_EQ(ValidUtf8("\xe2\x82"), "\xef\xbf\xbd\xef\xbf\xbd");
  // A surrogate, encoded: not UTF-8.
  EXPECT_EQ(ValidUtf8("\xed\xa0\x80").size(), 9u);
}

}  // namespace
}  // namespace common
