// UTF-8 checking for the text that leaves the process in a format that requires valid UTF-8
// (JSON log lines, Prometheus label values).
#ifndef COMMON_UTF8_H_
#define COMMON_UTF8_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace common {

// Length (1 to 4) of the valid UTF-8 sequence at the start of `s`, or 0 when `s` is empty or
// starts with a malformed one (a stray continuation byte, an overlong form, a surrogate, a value
// above U+10FFFF, a sequence cut short).
inline size_t Utf8SequenceLength(absl::string_view s) {
  if (s.empty()) return 0;
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = byte(0);
  if (c < 0x80) return 1;
  size_t n = 0;
  uint32_t min = 0;
  uint32_t cp = 0;
  if ((c & 0xe0) == 0xc0) {
    n = 2, min = 0x80, cp = c & 0x1f;
  } else if ((c & 0xf0) == 0xe0) {
    n = 3, min = 0x800, cp = c & 0x0f;
  } else if ((c & 0xf8) == 0xf0) {
    n = 4, min = 0x10000, cp = c & 0x07;
  } else {
    return 0;
  }
  if (s.size() < n) return 0;
  for (size_t i = 1; i < n; ++i) {
    if ((byte(i) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i) & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

// The replacement character U+FFFD, for a malformed byte.
inline constexpr char kUtf8Replacement[] = "\xef\xbf\xbd";

// `s` with each byte that starts no valid sequence replaced by U+FFFD: text for a printer that
// wants UTF-8 (Protobuf's JSON printer drops such bytes silently and logs an error for each).
inline std::string ValidUtf8(absl::string_view s) {
  std::string out;
  out.reserve(s.size());
  while (!s.empty()) {
    const size_t n = Utf8SequenceLength(s);
    if (n == 0) {
      out += kUtf8Replacement;
      s.remove_prefix(1);
    } else {
      out.append(s.data(), n);
      s.remove_prefix(n);
    }
  }
  return out;
}

}  // namespace common

#endif  // COMMON_UTF8_H_
