#include "common/validation.h"

#include <string>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace common {
namespace {

TEST(ValidateIdTest, AcceptsOrdinaryIdentifiers) {
  EXPECT_OK(ValidateId("context_id", "ctx-1"));
  EXPECT_OK(ValidateId("context_id", "a"));
  EXPECT_OK(ValidateId("context_id", "with space and: punctuation/.~"));
  EXPECT_OK(ValidateId("context_id", "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80"));
  EXPECT_OK(ValidateId("context_id", std::string(kMaxIdBytes, 'x')));
}

TEST(ValidateIdTest, EmptyIsRequiredButOptionalAllowsIt) {
  const absl::Status s = ValidateId("context_id", "");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("context_id"), absl::string_view::npos) << s;
  EXPECT_OK(ValidateOptionalId("agent", ""));
}

TEST(ValidateIdTest, TooLongIsRefused) {
  const std::string id(kMaxIdBytes + 1, 'x');
  for (const absl::Status& s : {ValidateId("context_id", id), ValidateOptionalId("agent", id)}) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("257 bytes"), absl::string_view::npos) << s;
  }
  // The limit is in bytes: 129 two-byte characters are 258 bytes.
  std::string wide;
  for (int i = 0; i < 129; ++i) wide += "\xc3\xa9";
  EXPECT_EQ(ValidateId("context_id", wide).code(), absl::StatusCode::kInvalidArgument);
}

TEST(ValidateIdTest, ControlCharactersAreRefused) {
  for (const std::string& id :
       {std::string("a\nb"), std::string("tab\there"), std::string("nul\0x", 5),
        std::string("\x1b[31m"), std::string("del\x7f")}) {
    const absl::Status s = ValidateId("context_id", id);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << id;
    EXPECT_NE(s.message().find("control character"), absl::string_view::npos) << s;
  }
}

TEST(ValidateIdTest, InvalidUtf8IsRefused) {
  for (const std::string& id : {
           std::string("\xff"),              // never valid
           std::string("\xc3"),              // truncated two-byte sequence
           std::string("\xc3(", 2),          // bad continuation
           std::string("\xc0\xaf"),          // overlong '/'
           std::string("\xe2\x82"),          // truncated three-byte sequence
           std::string("\xf5\x80\x80\x80"),  // beyond U+10FFFF
           std::string("ok\x80"),            // stray continuation byte
           std::string("\xed\xa0\x80"),      // a UTF-16 surrogate (U+D800)
           std::string("\xe0\x80\xaf"),      // overlong three-byte '/'
       }) {
    const absl::Status s = ValidateId("context_id", id);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("UTF-8"), absl::string_view::npos) << s;
  }
}

TEST(ValidateSizeTest, BoundIsInclusiveAndExhaustionIsResourceExhausted) {
  EXPECT_OK(ValidateSize("text", std::string(10, 'x'), 10));
  const absl::Status s = ValidateSize("text", std::string(11, 'x'), 10);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("text"), absl::string_view::npos) << s;
}

}  // namespace
}  // namespace common
