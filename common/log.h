// Minimal leveled logging to stderr, one line per event with a UTC timestamp. Abseil 20220623
// has no logging library; this keeps every binary's lines in one shape until structured logs.
#ifndef COMMON_LOG_H_
#define COMMON_LOG_H_

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace common {

template <typename... Args>
void Log(const char* level, const absl::FormatSpec<Args...>& format, const Args&... args) {
  std::string line =
      absl::StrCat(absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone()), " ",
                   level, " ", absl::StrFormat(format, args...), "\n");
  std::fwrite(line.data(), 1, line.size(), stderr);
}

#define LOG_INFO(...) ::common::Log("INFO", __VA_ARGS__)
#define LOG_WARN(...) ::common::Log("WARN", __VA_ARGS__)
#define LOG_ERROR(...) ::common::Log("ERROR", __VA_ARGS__)

}  // namespace common

#endif  // COMMON_LOG_H_
