// jq-style read paths and jq's pretty layout (see json_path.h).
#include "coordctl/json_path.h"

#include <cmath>
#include <cstdio>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace coordctl {
namespace {

using google::protobuf::Value;

bool IsKeyStart(char c) { return absl::ascii_isalpha(c) || c == '_'; }
bool IsKeyChar(char c) { return absl::ascii_isalnum(c) || c == '_'; }

absl::Status BadPath(absl::string_view path, size_t at, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("\"", path, "\" is not a field path (name, name.sub, name[0]): ", what,
                   " at character ", at + 1));
}

// A number as jq 1.6 prints it: integers without a fraction, others with 17 significant digits.
std::string JqNumber(double d) {
  if (d == std::floor(d) && std::fabs(d) < 1e17) {
    return absl::StrCat(static_cast<int64_t>(d));
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", d);
  return buf;
}

}  // namespace

absl::StatusOr<std::vector<JsonPathStep>> ParseJsonPath(absl::string_view path) {
  std::vector<JsonPathStep> steps;
  size_t i = 0;
  if (i < path.size() && path[i] == '.') ++i;
  bool need_key = true;  // at the start and after a dot a key must follow
  while (i < path.size() || need_key) {
    if (need_key) {
      if (i >= path.size() || !IsKeyStart(path[i])) {
        return BadPath(path, i, "a name (letters, digits, _) was expected");
      }
      const size_t start = i;
      while (i < path.size() && IsKeyChar(path[i])) ++i;
      steps.emplace_back(std::string(path.substr(start, i - start)));
      need_key = false;
      continue;
    }
    if (path[i] == '.') {
      ++i;
      need_key = true;
    } else if (path[i] == '[') {
      const size_t close = path.find(']', i);
      int64_t index = 0;
      if (close == absl::string_view::npos ||
          !absl::SimpleAtoi(path.substr(i + 1, close - i - 1), &index) ||
          (path[i + 1] != '-' && !absl::ascii_isdigit(path[i + 1]))) {
        return BadPath(path, i, "an index [N] was expected");
      }
      steps.emplace_back(index);
      i = close + 1;
    } else {
      return BadPath(path, i, absl::StrCat("unexpected '", path.substr(i, 1), "'"));
    }
  }
  return steps;
}

absl::StatusOr<std::optional<std::string>> ReadJsonPath(absl::string_view json,
                                                        const std::vector<JsonPathStep>& path) {
  Value root;
  if (auto s = google::protobuf::util::JsonStringToMessage(std::string(json), &root); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("not JSON: ", s.message().as_string()));
  }
  const Value* v = &root;
  for (const JsonPathStep& step : path) {
    if (const auto* key = std::get_if<std::string>(&step)) {
      if (v->kind_case() != Value::kStructValue) return std::nullopt;
      const auto& fields = v->struct_value().fields();
      auto it = fields.find(*key);
      if (it == fields.end()) return std::nullopt;
      v = &it->second;
    } else {
      if (v->kind_case() != Value::kListValue) return std::nullopt;
      const auto& values = v->list_value().values();
      int64_t index = std::get<int64_t>(step);
      if (index < 0) index += values.size();
      if (index < 0 || index >= static_cast<int64_t>(values.size())) return std::nullopt;
      v = &values[static_cast<int>(index)];
    }
  }
  switch (v->kind_case()) {
    case Value::kStringValue:
      return v->string_value();
    case Value::kNumberValue:
      return JqNumber(v->number_value());
    case Value::kBoolValue:
      if (!v->bool_value()) return std::nullopt;
      return std::string("true");
    case Value::kStructValue:
    case Value::kListValue: {
      std::string out;
      if (auto s = google::protobuf::util::MessageToJsonString(*v, &out); !s.ok()) {
        return absl::InternalError(s.message().as_string());
      }
      return out;
    }
    default:
      return std::nullopt;  // null
  }
}

std::string PrettyJson(absl::string_view json) {
  std::string out;
  int depth = 0;
  auto newline = [&] {
    out.push_back('\n');
    out.append(2 * depth, ' ');
  };
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (c == '"') {
      // Copy the string as it is, escapes included.
      const size_t start = i++;
      while (i < json.size() && json[i] != '"') i += json[i] == '\\' ? 2 : 1;
      const absl::string_view literal = json.substr(start, i - start + 1);
      out.append(literal.data(), literal.size());
    } else if (c == '{' || c == '[') {
      size_t next = i + 1;
      while (next < json.size() && absl::ascii_isspace(json[next])) ++next;
      if (next < json.size() && (json[next] == '}' || json[next] == ']')) {
        out.push_back(c);
        out.push_back(json[next]);
        i = next;
        continue;
      }
      out.push_back(c);
      ++depth;
      newline();
    } else if (c == '}' || c == ']') {
      --depth;
      newline();
      out.push_back(c);
    } else if (c == ',') {
      out.push_back(',');
      newline();
    } else if (c == ':') {
      out.append(": ");
    } else if (!absl::ascii_isspace(c)) {
      out.push_back(c);
    }
  }
  out.push_back('\n');
  return out;
}

}  // namespace coordctl
