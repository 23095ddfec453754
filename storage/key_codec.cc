#include "storage/key_codec.h"

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace storage {

void AppendUint64BigEndian(uint64_t v, std::string* out) {
  for (int shift = 56; shift >= 0; shift -= 8) out->push_back(static_cast<char>(v >> shift));
}

void AppendUint32BigEndian(uint32_t v, std::string* out) {
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>(v >> shift));
}

KeyBuilder& KeyBuilder::AddByte(uint8_t b) {
  key_.push_back(static_cast<char>(b));
  return *this;
}

KeyBuilder& KeyBuilder::AddString(absl::string_view s) {
  AppendUint32BigEndian(static_cast<uint32_t>(s.size()), &key_);
  key_.append(s.data(), s.size());
  return *this;
}

KeyBuilder& KeyBuilder::AddUint64(uint64_t v) {
  AppendUint64BigEndian(v, &key_);
  return *this;
}

absl::StatusOr<uint8_t> KeyReader::ReadByte() {
  if (rest_.empty()) return absl::DataLossError("key ends before a one-byte field");
  const auto b = static_cast<uint8_t>(rest_[0]);
  rest_.remove_prefix(1);
  return b;
}

absl::StatusOr<std::string> KeyReader::ReadString() {
  if (rest_.size() < 4) return absl::DataLossError("key ends inside a string length");
  uint32_t len = 0;
  for (int i = 0; i < 4; ++i) len = (len << 8) | static_cast<uint8_t>(rest_[i]);
  // Checked before anything is consumed: a read that fails leaves the reader where it was.
  if (len > rest_.size() - 4) {
    return absl::DataLossError(
        absl::StrFormat("key string field says %d bytes but %d remain", len, rest_.size() - 4));
  }
  std::string s(rest_.substr(4, len));
  rest_.remove_prefix(4 + static_cast<size_t>(len));
  return s;
}

absl::StatusOr<uint64_t> KeyReader::ReadUint64() {
  if (rest_.size() < 8) return absl::DataLossError("key ends inside an integer field");
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<uint8_t>(rest_[i]);
  rest_.remove_prefix(8);
  return v;
}

std::string PrefixUpperBound(absl::string_view prefix) {
  std::string bound(prefix);
  while (!bound.empty()) {
    auto& last = reinterpret_cast<unsigned char&>(bound.back());
    if (last != 0xff) {
      ++last;
      return bound;
    }
    bound.pop_back();
  }
  return bound;
}

}  // namespace storage
