#include "common/log.h"

#include <atomic>
#include <cstdio>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/utf8.h"

ABSL_FLAG(common::LogFormat, log_format, common::LogFormat::kJson,
          "log lines on stderr: json (one JSON object per line: time, level, message, and "
          "context_id, task_id, agent where they apply) or text (for people)");

namespace common {
namespace {

std::atomic<LogFormat> g_format{LogFormat::kJson};

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kInfo:
      return "INFO";
    case LogLevel::kWarn:
      return "WARN";
    case LogLevel::kError:
      return "ERROR";
  }
  return "INFO";
}

// Text format: valid UTF-8 as it is, control characters and malformed bytes escaped, so that
// one event stays one line.
std::string TextSafe(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const size_t n = Utf8SequenceLength(text);
    const unsigned char c = static_cast<unsigned char>(text[0]);
    if (n == 0 || c < 0x20 || c == 0x7f) {
      if (c == '\n') {
        out += "\\n";
      } else if (c == '\t') {
        out += "\\t";
      } else {
        absl::StrAppend(&out, "\\x", absl::Hex(c, absl::kZeroPad2));
      }
      text.remove_prefix(1);
      continue;
    }
    out.append(text.data(), n);
    text.remove_prefix(n);
  }
  return out;
}

}  // namespace

bool AbslParseFlag(absl::string_view text, LogFormat* format, std::string* error) {
  const std::string lower = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  if (lower == "json") {
    *format = LogFormat::kJson;
    return true;
  }
  if (lower == "text") {
    *format = LogFormat::kText;
    return true;
  }
  *error = "must be json or text";
  return false;
}

std::string AbslUnparseFlag(LogFormat format) {
  return format == LogFormat::kText ? "text" : "json";
}

void SetLogFormat(LogFormat format) { g_format.store(format, std::memory_order_relaxed); }

LogFormat GetLogFormat() { return g_format.load(std::memory_order_relaxed); }

std::string JsonQuote(absl::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  while (!text.empty()) {
    const size_t n = Utf8SequenceLength(text);
    if (n == 0) {
      out += "\\ufffd";
      text.remove_prefix(1);
      continue;
    }
    const unsigned char c = static_cast<unsigned char>(text[0]);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          absl::StrAppend(&out, "\\u00", absl::Hex(c, absl::kZeroPad2));
        } else {
          out.append(text.data(), n);
        }
    }
    text.remove_prefix(n);
  }
  out += '"';
  return out;
}

std::string FormatLogLine(LogFormat format, absl::Time time, LogLevel level,
                          absl::string_view message, LogFields fields) {
  const std::string when = absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", time, absl::UTCTimeZone());
  std::string line;
  if (format == LogFormat::kText) {
    absl::StrAppend(&line, when, " ", LevelName(level), " ", TextSafe(message));
    for (const LogField& field : fields) {
      if (field.value.empty()) continue;
      absl::StrAppend(&line, " ", TextSafe(field.key), "=", TextSafe(field.value));
    }
  } else {
    absl::StrAppend(&line, "{\"time\":\"", when, "\",\"level\":\"", LevelName(level),
                    "\",\"message\":", JsonQuote(message));
    for (const LogField& field : fields) {
      if (field.value.empty()) continue;
      absl::StrAppend(&line, ",", JsonQuote(field.key), ":", JsonQuote(field.value));
    }
    line += '}';
  }
  line += '\n';
  return line;
}

void WriteLog(LogLevel level, absl::string_view message, LogFields fields) {
  const std::string line = FormatLogLine(GetLogFormat(), absl::Now(), level, message, fields);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace common
