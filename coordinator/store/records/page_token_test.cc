#include "coordinator/store/records/page_token.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace coordinator {
namespace {

TEST(PageTokenTest, RoundTrip) {
  const std::string resume(
      "\x00\x01"
      "binary",
      8);
  const std::string token = EncodePageToken("commands", "ctx-1", resume);
  absl::StatusOr<std::string> decoded = DecodePageToken(token, "commands", "ctx-1");
  ASSERT_OK(decoded);
  EXPECT_EQ(*decoded, resume);
}

TEST(PageTokenTest, EmptyTokenStartsAtTheBeginning) {
  absl::StatusOr<std::string> decoded = DecodePageToken("", "contexts", "anything");
  ASSERT_OK(decoded);
  EXPECT_EQ(*decoded, "");
}

TEST(PageTokenTest, TokenOfAnotherListingIsRefused) {
  const std::string token = EncodePageToken("contexts", "f", "x");
  const absl::Status s = DecodePageToken(token, "commands", "f").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("another listing"), absl::string_view::npos) << s;
}

TEST(PageTokenTest, TokenForOtherFiltersIsRefused) {
  const std::string token = EncodePageToken("contexts", "5:alice:0", "x");
  const absl::Status s = DecodePageToken(token, "contexts", "3:bob:0").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("other filters"), absl::string_view::npos) << s;
}

TEST(PageTokenTest, MalformedTokensAreRefused) {
  for (const std::string& token :
       {std::string("not base64!"), std::string("////"), absl::WebSafeBase64Escape("\xff\xff"),
        std::string(5000, 'A'), EncodePageToken("contexts", "f", "")}) {
    EXPECT_EQ(DecodePageToken(token, "contexts", "f").status().code(),
              absl::StatusCode::kInvalidArgument)
        << token.substr(0, 40);
  }
}

TEST(PageTokenTest, ResolvePageSize) {
  EXPECT_EQ(*ResolvePageSize(0, 50, 1000), 50);
  EXPECT_EQ(*ResolvePageSize(7, 50, 1000), 7);
  EXPECT_EQ(*ResolvePageSize(5000, 50, 1000), 1000);
  EXPECT_EQ(ResolvePageSize(-1, 50, 1000).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coordinator
