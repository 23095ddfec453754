// SHA-256 of bytes, as lowercase hex: record digests, stable names made from ids.
#ifndef COMMON_SHA256_H_
#define COMMON_SHA256_H_

#include <string>

#include "absl/strings/string_view.h"

namespace common {

// 64 lowercase hex digits.
std::string Sha256Hex(absl::string_view data);

}  // namespace common

#endif  // COMMON_SHA256_H_
