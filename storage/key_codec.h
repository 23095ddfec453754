// Key encoding. A key is a one-byte record type followed by fields: strings are length-prefixed
// (4-byte big-endian length, then the bytes) so that no field can run into the next, and
// integers are fixed-width big-endian so that byte order is numeric order. Keys built with the
// same leading fields share a prefix, which is how one context's records sit together.
#ifndef STORAGE_KEY_CODEC_H_
#define STORAGE_KEY_CODEC_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace storage {

class KeyBuilder {
 public:
  explicit KeyBuilder(uint8_t record_type) { key_.push_back(static_cast<char>(record_type)); }

  KeyBuilder& AddByte(uint8_t b);
  KeyBuilder& AddString(absl::string_view s);
  KeyBuilder& AddUint64(uint64_t v);

  const std::string& key() const& { return key_; }
  std::string key() && { return std::move(key_); }

 private:
  std::string key_;
};

// Reads the fields of a key back, in the order they were added. Every read checks bounds, so a
// truncated or hostile key yields DATA_LOSS instead of reading past the end; a read that fails
// consumes nothing.
class KeyReader {
 public:
  explicit KeyReader(absl::string_view key) : rest_(key) {}

  [[nodiscard]] absl::StatusOr<uint8_t> ReadByte();
  [[nodiscard]] absl::StatusOr<std::string> ReadString();
  [[nodiscard]] absl::StatusOr<uint64_t> ReadUint64();
  bool done() const { return rest_.empty(); }
  absl::string_view rest() const { return rest_; }

 private:
  absl::string_view rest_;
};

// The smallest key greater than every key that starts with `prefix`, or "" when there is none
// (a prefix of only 0xff bytes). Used as an exclusive upper bound for a prefix scan.
std::string PrefixUpperBound(absl::string_view prefix);

void AppendUint64BigEndian(uint64_t v, std::string* out);
void AppendUint32BigEndian(uint32_t v, std::string* out);

}  // namespace storage

#endif  // STORAGE_KEY_CODEC_H_
