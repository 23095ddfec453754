// Random (version 4) UUIDs for ids the server or an agent assigns: task ids, context ids,
// message ids, push-config ids. Header-only; link absl::random_random.
#ifndef COMMON_UUID_H_
#define COMMON_UUID_H_

#include <cstdint>
#include <string>

#include "absl/random/random.h"
#include "absl/strings/str_format.h"

namespace common {

inline std::string NewUuid() {
  thread_local absl::BitGen gen;
  uint64_t hi = absl::Uniform<uint64_t>(gen);
  uint64_t lo = absl::Uniform<uint64_t>(gen);
  hi = (hi & ~uint64_t{0xF000}) | uint64_t{0x4000};            // version 4
  lo = (lo & ~(uint64_t{0xC} << 60)) | (uint64_t{0x8} << 60);  // RFC 4122 variant
  return absl::StrFormat("%08x-%04x-%04x-%04x-%012x", hi >> 32, (hi >> 16) & 0xFFFF, hi & 0xFFFF,
                         lo >> 48, lo & 0xFFFFFFFFFFFFULL);
}

}  // namespace common

#endif  // COMMON_UUID_H_
