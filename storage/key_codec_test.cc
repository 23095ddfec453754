#include "storage/key_codec.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace storage {
namespace {

TEST(KeyCodecTest, BigEndianIntegersSortNumerically) {
  std::vector<uint64_t> values = {0,
                                  1,
                                  2,
                                  127,
                                  128,
                                  255,
                                  256,
                                  257,
                                  65535,
                                  65536,
                                  (1ull << 32) - 1,
                                  1ull << 32,
                                  1ull << 56,
                                  (1ull << 63) - 1,
                                  1ull << 63,
                                  UINT64_MAX - 1,
                                  UINT64_MAX};
  std::vector<std::string> keys;
  for (uint64_t v : values) keys.push_back(KeyBuilder(0x01).AddUint64(v).key());
  // The values are listed in numeric order; their keys must already be in byte order.
  for (size_t i = 1; i < keys.size(); ++i) {
    EXPECT_LT(keys[i - 1], keys[i]) << values[i - 1] << " vs " << values[i];
  }
  for (const std::string& key : keys) EXPECT_EQ(key.size(), 9u);
}

TEST(KeyCodecTest, FixedWidthBigEndianBytes) {
  std::string out;
  AppendUint32BigEndian(0x01020304u, &out);
  AppendUint64BigEndian(0x0a0b0c0d0e0f1011ull, &out);
  EXPECT_EQ(out, std::string("\x01\x02\x03\x04\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11", 12));
}

TEST(KeyCodecTest, LengthPrefixedStringsCannotRunTogether) {
  const std::string a_bc = KeyBuilder(0x10).AddString("a").AddString("bc").key();
  const std::string ab_c = KeyBuilder(0x10).AddString("ab").AddString("c").key();
  EXPECT_NE(a_bc, ab_c);
  // Nor can one id's records fall under another id's prefix.
  const std::string prefix_a = KeyBuilder(0x10).AddString("a").key();
  const std::string prefix_ab = KeyBuilder(0x10).AddString("ab").key();
  EXPECT_FALSE(ab_c.compare(0, prefix_a.size(), prefix_a) == 0);
  EXPECT_TRUE(ab_c.compare(0, prefix_ab.size(), prefix_ab) == 0);
  // An empty field still takes its length.
  EXPECT_NE(KeyBuilder(0x10).AddString("").AddString("x").key(),
            KeyBuilder(0x10).AddString("x").AddString("").key());
}

TEST(KeyCodecTest, RoundTripsEveryFieldKind) {
  const std::string binary("a\0b\xff", 4);
  const std::string key = KeyBuilder(0x42)
                              .AddString(binary)
                              .AddByte(0x07)
                              .AddUint64(1234567890123ull)
                              .AddString("")
                              .key();
  KeyReader reader(key);
  absl::StatusOr<uint8_t> type = reader.ReadByte();
  ASSERT_OK(type);
  EXPECT_EQ(*type, 0x42);
  absl::StatusOr<std::string> s = reader.ReadString();
  ASSERT_OK(s);
  EXPECT_EQ(*s, binary);
  absl::StatusOr<uint8_t> b = reader.ReadByte();
  ASSERT_OK(b);
  EXPECT_EQ(*b, 0x07);
  absl::StatusOr<uint64_t> v = reader.ReadUint64();
  ASSERT_OK(v);
  EXPECT_EQ(*v, 1234567890123ull);
  absl::StatusOr<std::string> empty = reader.ReadString();
  ASSERT_OK(empty);
  EXPECT_EQ(*empty, "");
  EXPECT_TRUE(reader.done());
}

// Reads a key laid out as byte, string, uint64; returns the first failure.
absl::Status ReadAll(absl::string_view key) {
  KeyReader reader(key);
  if (absl::Status s = reader.ReadByte().status(); !s.ok()) return s;
  if (absl::Status s = reader.ReadString().status(); !s.ok()) return s;
  if (absl::Status s = reader.ReadUint64().status(); !s.ok()) return s;
  return absl::OkStatus();
}

TEST(KeyCodecTest, EveryTruncationIsDataLoss) {
  const std::string key = KeyBuilder(0x10).AddString("context-1").AddUint64(99).key();
  ASSERT_OK(ReadAll(key));
  for (size_t len = 0; len < key.size(); ++len) {
    // An exactly sized heap copy, so that a read past the end is caught by ASan.
    std::unique_ptr<char[]> copy(new char[len == 0 ? 1 : len]);
    std::memcpy(copy.get(), key.data(), len);
    const absl::Status s = ReadAll(absl::string_view(copy.get(), len));
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << "length " << len << ": " << s;
  }
}

TEST(KeyCodecTest, HostileLengthIsDataLoss) {
  // A length that claims far more bytes than the key holds, including one that would wrap a
  // 32-bit size computation.
  for (const std::string& length :
       {std::string("\xff\xff\xff\xff", 4), std::string("\x80\x00\x00\x00", 4),
        std::string("\x00\x00\x00\x04", 4)}) {
    const std::string key = length + "abc";
    KeyReader reader(key);
    absl::StatusOr<std::string> s = reader.ReadString();
    EXPECT_EQ(s.status().code(), absl::StatusCode::kDataLoss) << s.status();
  }
  KeyReader empty("");
  EXPECT_EQ(empty.ReadByte().status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(KeyReader("abc").ReadString().status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(KeyReader("1234567").ReadUint64().status().code(), absl::StatusCode::kDataLoss);
}

// Found by fuzz/fuzz_key_codec (its input is fuzz/corpus/fuzz_key_codec/truncated): a string
// whose length says more than remains used to consume the length before failing.
TEST(KeyCodecTest, AFailedReadConsumesNothing) {
  const std::string key(
      "\x10\x00\x00\x00\x03"
      "c",
      6);
  KeyReader reader(key);
  ASSERT_OK(reader.ReadByte());
  const absl::string_view before = reader.rest();
  EXPECT_EQ(reader.ReadString().status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(reader.rest(), before);
  EXPECT_EQ(reader.ReadUint64().status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(reader.rest(), before);
  // What is there can still be read as what it is.
  absl::StatusOr<uint8_t> b = reader.ReadByte();
  ASSERT_OK(b);
  EXPECT_EQ(*b, 0);
}

TEST(KeyCodecTest, PrefixUpperBoundEdgeCases) {
  EXPECT_EQ(PrefixUpperBound("abc"), "abd");
  EXPECT_EQ(PrefixUpperBound(std::string("ab\xff", 3)), "ac");
  EXPECT_EQ(PrefixUpperBound(std::string("a\xff\xff", 3)), "b");
  EXPECT_EQ(PrefixUpperBound(std::string("\x00", 1)), std::string("\x01", 1));
  EXPECT_EQ(PrefixUpperBound(std::string("\x10\xfe", 2)), std::string("\x10\xff", 2));
  // No key is greater than every key starting with only 0xff bytes: no bound.
  EXPECT_EQ(PrefixUpperBound(std::string("\xff", 1)), "");
  EXPECT_EQ(PrefixUpperBound(std::string("\xff\xff\xff", 3)), "");
  EXPECT_EQ(PrefixUpperBound(""), "");
}

TEST(KeyCodecTest, PrefixUpperBoundIsAboveEveryKeyWithThePrefix) {
  const std::vector<std::string> prefixes = {KeyBuilder(0x10).AddString("ctx").key(),
                                             std::string("a\xff", 2),
                                             std::string("\x01\xff\xff", 3), "z"};
  const std::vector<std::string> suffixes = {"", std::string("\x00", 1), "x",
                                             std::string("\xff\xff\xff\xff", 4)};
  for (const std::string& prefix : prefixes) {
    const std::string bound = PrefixUpperBound(prefix);
    ASSERT_FALSE(bound.empty());
    for (const std::string& suffix : suffixes) {
      EXPECT_LT(prefix + suffix, bound);
    }
    // And the bound itself does not start with the prefix.
    EXPECT_NE(bound.compare(0, prefix.size(), prefix), 0);
  }
}

}  // namespace
}  // namespace storage
