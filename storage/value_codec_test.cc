#include "storage/value_codec.h"

#include <string>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace storage {
namespace {

TEST(ValueCodecTest, RoundTrip) {
  const std::string payload("binary\0payload", 14);
  const std::string stored = EncodeValue(1, payload);
  ASSERT_EQ(stored.size(), payload.size() + 1);
  EXPECT_EQ(stored[0], '\x01');
  absl::StatusOr<DecodedValue> decoded = DecodeValue(stored, 1);
  ASSERT_OK(decoded);
  EXPECT_EQ(decoded->format, 1);
  EXPECT_EQ(decoded->payload, payload);
}

TEST(ValueCodecTest, EmptyPayloadIsFine) {
  absl::StatusOr<DecodedValue> decoded = DecodeValue(EncodeValue(2, ""), 3);
  ASSERT_OK(decoded);
  EXPECT_EQ(decoded->format, 2);
  EXPECT_TRUE(decoded->payload.empty());
}

TEST(ValueCodecTest, EmptyValueIsDataLoss) {
  EXPECT_EQ(DecodeValue("", 1).status().code(), absl::StatusCode::kDataLoss);
}

TEST(ValueCodecTest, NewerFormatIsRefused) {
  absl::StatusOr<DecodedValue> decoded = DecodeValue(EncodeValue(2, "x"), 1);
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(decoded.status().message().find("newer"), absl::string_view::npos);
  EXPECT_EQ(DecodeValue(EncodeValue(0xff, "x"), 1).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(ValueCodecTest, FormatZeroIsRefused) {
  EXPECT_EQ(DecodeValue(EncodeValue(0, "x"), 1).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace storage
