// Structured logging to stderr: one event per line, as a JSON object (the default, for
// containers and log collectors) or as human-readable text (--log_format=text). Every event has
// a time (UTC, milliseconds), a level and a message; events about an evaluation or a task also
// carry the fields `context_id`, `task_id` and `agent`, so that `grep <context_id>` pulls out
// one evaluation's lines.
//
//   LOG_INFO("listening on %s", address);                                  // no fields
//   common::LogInfo({{"context_id", id}, {"agent", name}}, "attempt %d", n);  // with fields
//
// writes, as JSON (one line):
//   {"time":"2026-01-02T03:04:05.678Z","level":"INFO","message":"attempt 2",
//    "context_id":"c1","agent":"purple"}
// and as text:
//   2026-01-02T03:04:05.678Z INFO attempt 2 context_id=c1 agent=purple
//
// A line is written with one fwrite, so lines of concurrent threads never interleave. Strings
// are escaped for JSON; bytes that are not valid UTF-8 become U+FFFD. Fields with an empty
// value are left out, so callers can pass optional ones.
#ifndef COMMON_LOG_H_
#define COMMON_LOG_H_

#include <string>

#include "absl/flags/declare.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace common {

enum class LogLevel { kInfo, kWarn, kError };
enum class LogFormat { kJson, kText };

// For the --log_format flag: "json" or "text".
bool AbslParseFlag(absl::string_view text, LogFormat* format, std::string* error);
std::string AbslUnparseFlag(LogFormat format);

// The format of every following line of this process (default JSON). InitFlags
// (common/env_flags.h) sets it from --log_format.
void SetLogFormat(LogFormat format);
LogFormat GetLogFormat();

// One key and value of an event. Both are views: they must outlive the call.
struct LogField {
  absl::string_view key;
  absl::string_view value;
};
using LogFields = absl::Span<const LogField>;

// The line (with its newline) for one event; for tests and for WriteLog.
std::string FormatLogLine(LogFormat format, absl::Time time, LogLevel level,
                          absl::string_view message, LogFields fields);

// Writes one event to stderr in the current format.
void WriteLog(LogLevel level, absl::string_view message, LogFields fields = {});

// JSON string literal of `text` (with the quotes).
std::string JsonQuote(absl::string_view text);

template <typename... Args>
void Log(LogLevel level, LogFields fields, const absl::FormatSpec<Args...>& format,
         const Args&... args) {
  WriteLog(level, absl::StrFormat(format, args...), fields);
}
template <typename... Args>
void LogInfo(LogFields fields, const absl::FormatSpec<Args...>& format, const Args&... args) {
  Log(LogLevel::kInfo, fields, format, args...);
}
template <typename... Args>
void LogWarn(LogFields fields, const absl::FormatSpec<Args...>& format, const Args&... args) {
  Log(LogLevel::kWarn, fields, format, args...);
}
template <typename... Args>
void LogError(LogFields fields, const absl::FormatSpec<Args...>& format, const Args&... args) {
  Log(LogLevel::kError, fields, format, args...);
}

#define LOG_INFO(...) ::common::Log(::common::LogLevel::kInfo, {}, __VA_ARGS__)
#define LOG_WARN(...) ::common::Log(::common::LogLevel::kWarn, {}, __VA_ARGS__)
#define LOG_ERROR(...) ::common::Log(::common::LogLevel::kError, {}, __VA_ARGS__)

}  // namespace common

ABSL_DECLARE_FLAG(common::LogFormat, log_format);

#endif  // COMMON_LOG_H_
