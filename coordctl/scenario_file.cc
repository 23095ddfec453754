#include "coordctl/scenario_file.h"

#include <cpptoml.h>

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/shell_words.h"

namespace coordctl {
namespace {

// Deepest nesting of arrays and tables the config may have.
constexpr int kMaxDepth = 32;

absl::Status LineError(int line, absl::string_view what) {
  return absl::InvalidArgumentError(line > 0 ? absl::StrCat("line ", line, ": ", what)
                                             : std::string(what));
}

// Line (from 1) of the `nth` (from 0) header `header` ("[green_agent]", "[[participants]]"),
// blanks inside the brackets allowed; 0 when there is none.
int HeaderLine(absl::string_view text, absl::string_view header, int nth) {
  int line = 0;
  for (absl::string_view l : absl::StrSplit(text, '\n')) {
    ++line;
    std::string compact;
    for (char c : absl::StripAsciiWhitespace(l)) {
      if (c == '#') break;
      if (c != ' ' && c != '\t') compact.push_back(c);
    }
    if (compact == header && nth-- == 0) return line;
  }
  return 0;
}

// How deep arrays and inline tables nest in `text` (comments and strings skipped): the parser
// recurses once per level, so a hostile file must be refused before it is parsed.
int NestingDepth(absl::string_view text) {
  int depth = 0;
  int deepest = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '#') {
      i = text.find('\n', i);
      if (i == absl::string_view::npos) break;
    } else if (c == '"' || c == '\'') {
      const bool triple = text.substr(i, 3) == std::string(3, c);
      const std::string close = triple ? std::string(3, c) : std::string(1, c);
      size_t j = i + close.size();
      while (j < text.size() && text.substr(j, close.size()) != close) {
        if (c == '"' && text[j] == '\\') ++j;   // an escaped character of a basic string
        if (!triple && text[j] == '\n') break;  // unclosed: the parser says so
        ++j;
      }
      i = j + close.size() - 1;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

bool IsRoleChar(char c) { return absl::ascii_isalnum(c) || c == '_' || c == '.' || c == '-'; }

absl::StatusOr<google::protobuf::Value> ToValue(const cpptoml::base& node, int depth);

absl::StatusOr<google::protobuf::Struct> ToStruct(const cpptoml::table& table, int depth) {
  google::protobuf::Struct out;
  for (const auto& [key, node] : table) {
    absl::StatusOr<google::protobuf::Value> value = ToValue(*node, depth + 1);
    if (!value.ok()) return value.status();
    (*out.mutable_fields())[key] = *std::move(value);
  }
  return out;
}

template <typename T>
std::optional<std::string> Printed(const cpptoml::base& node) {
  if (auto v = node.as<T>()) {
    std::ostringstream out;
    out << v->get();
    return out.str();
  }
  return std::nullopt;
}

// A TOML value as JSON: strings, numbers, booleans, arrays and tables as they are; dates and
// times as their TOML text.
absl::StatusOr<google::protobuf::Value> ToValue(const cpptoml::base& node, int depth) {
  if (depth > kMaxDepth) {
    return absl::InvalidArgumentError(
        absl::StrCat("[config] nests deeper than ", kMaxDepth, " arrays and tables"));
  }
  google::protobuf::Value out;
  if (node.is_table()) {
    auto table = std::static_pointer_cast<const cpptoml::table>(node.shared_from_this());
    absl::StatusOr<google::protobuf::Struct> s = ToStruct(*table, depth);
    if (!s.ok()) return s.status();
    *out.mutable_struct_value() = *std::move(s);
  } else if (node.is_table_array()) {
    auto tables = std::static_pointer_cast<const cpptoml::table_array>(node.shared_from_this());
    google::protobuf::ListValue* list = out.mutable_list_value();
    for (const auto& table : *tables) {
      absl::StatusOr<google::protobuf::Struct> s = ToStruct(*table, depth + 1);
      if (!s.ok()) return s.status();
      *list->add_values()->mutable_struct_value() = *std::move(s);
    }
  } else if (node.is_array()) {
    auto array = std::static_pointer_cast<const cpptoml::array>(node.shared_from_this());
    google::protobuf::ListValue* list = out.mutable_list_value();
    for (const auto& element : *array) {
      absl::StatusOr<google::protobuf::Value> v = ToValue(*element, depth + 1);
      if (!v.ok()) return v.status();
      *list->add_values() = *std::move(v);
    }
  } else if (auto s = node.as<std::string>()) {
    out.set_string_value(s->get());
  } else if (auto i = node.as<int64_t>()) {
    out.set_number_value(static_cast<double>(i->get()));
  } else if (auto d = node.as<double>()) {
    out.set_number_value(d->get());
  } else if (auto b = node.as<bool>()) {
    out.set_bool_value(b->get());
  } else if (std::optional<std::string> t = Printed<cpptoml::offset_datetime>(node)) {
    out.set_string_value(*t);
  } else if (std::optional<std::string> t = Printed<cpptoml::local_datetime>(node)) {
    out.set_string_value(*t);
  } else if (std::optional<std::string> t = Printed<cpptoml::local_date>(node)) {
    out.set_string_value(*t);
  } else if (std::optional<std::string> t = Printed<cpptoml::local_time>(node)) {
    out.set_string_value(*t);
  } else {
    return absl::InvalidArgumentError("[config] holds a value of a kind TOML does not have");
  }
  return out;
}

// `key` of `table` as a string: NOT_FOUND when absent, INVALID_ARGUMENT when not a string.
absl::StatusOr<std::string> StringKey(const cpptoml::table& table, const std::string& key,
                                      const std::string& where, int line) {
  if (!table.contains(key)) {
    return absl::NotFoundError(absl::StrCat("line ", line, ": ", where, " has no `", key, "`"));
  }
  auto value = table.get(key)->as<std::string>();
  if (value == nullptr) {
    return LineError(line, absl::StrCat(where, ": `", key, "` must be a string"));
  }
  return value->get();
}

// "http(s)://host:port[/path]": the host and the port.
absl::Status ParseEndpoint(ScenarioAgent* agent, const std::string& where) {
  absl::string_view rest = agent->endpoint;
  if (!absl::ConsumePrefix(&rest, "http://") && !absl::ConsumePrefix(&rest, "https://")) {
    return LineError(agent->line, absl::StrCat(where, ": endpoint \"", agent->endpoint,
                                               "\" must start with http:// or https://"));
  }
  absl::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
  if (absl::StrContains(authority, '@')) {
    return LineError(agent->line,
                     absl::StrCat(where, ": endpoint \"", agent->endpoint, "\" has credentials"));
  }
  size_t colon = authority.rfind(':');
  const size_t bracket = authority.rfind(']');
  if (colon == absl::string_view::npos || (bracket != absl::string_view::npos && colon < bracket)) {
    return LineError(agent->line, absl::StrCat(where, ": endpoint \"", agent->endpoint,
                                               "\" has no port (http://host:port)"));
  }
  agent->host = std::string(authority.substr(0, colon));
  int port = 0;
  if (!absl::SimpleAtoi(authority.substr(colon + 1), &port) || port < 1 || port > 65535) {
    return LineError(agent->line, absl::StrCat(where, ": endpoint \"", agent->endpoint,
                                               "\" has no port from 1 to 65535"));
  }
  agent->port = port;
  if (agent->host.empty()) {
    return LineError(agent->line,
                     absl::StrCat(where, ": endpoint \"", agent->endpoint, "\" has no host"));
  }
  for (char c : agent->endpoint) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) {
      return LineError(agent->line, absl::StrCat(where,
                                                 ": endpoint has a blank or control "
                                                 "character"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ScenarioAgent> ReadAgent(const cpptoml::table& table, std::string role,
                                        const std::string& where, int line) {
  ScenarioAgent agent;
  agent.role = std::move(role);
  agent.line = line;
  absl::StatusOr<std::string> endpoint = StringKey(table, "endpoint", where, line);
  if (!endpoint.ok()) return absl::InvalidArgumentError(endpoint.status().message());
  agent.endpoint = *std::move(endpoint);
  if (absl::Status s = ParseEndpoint(&agent, where); !s.ok()) return s;
  absl::StatusOr<std::string> cmd = StringKey(table, "cmd", where, line);
  if (cmd.ok()) {
    absl::StatusOr<std::vector<std::string>> words = common::SplitShellWords(*cmd);
    if (!words.ok())
      return LineError(line, absl::StrCat(where, ": cmd: ", words.status().message()));
    if (words->empty()) return LineError(line, absl::StrCat(where, ": cmd is empty"));
    agent.cmd = *std::move(words);
  } else if (!absl::IsNotFound(cmd.status())) {
    return cmd.status();
  }
  return agent;
}

}  // namespace

absl::StatusOr<Scenario> ParseScenario(absl::string_view text) {
  if (text.size() > kMaxScenarioBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("the scenario file is ", text.size(), " bytes; at most ", kMaxScenarioBytes));
  }
  if (text.find('\0') != absl::string_view::npos) {
    return absl::InvalidArgumentError("the scenario file holds a NUL byte: it is not TOML");
  }
  if (NestingDepth(text) > kMaxDepth) {
    return absl::InvalidArgumentError(
        absl::StrCat("the scenario file nests arrays or tables deeper than ", kMaxDepth));
  }
  std::shared_ptr<cpptoml::table> root;
  try {
    std::istringstream in{std::string(text)};
    cpptoml::parser parser(in);
    root = parser.parse();
  } catch (const cpptoml::parse_exception& e) {
    // cpptoml's message ends "at line N".
    return absl::InvalidArgumentError(absl::StrCat("not a TOML file: ", e.what()));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("not a TOML file: ", e.what()));
  }

  Scenario scenario;
  if (!root->contains("green_agent") || !root->get("green_agent")->is_table()) {
    return absl::InvalidArgumentError(
        root->contains("green_agent")
            ? "green_agent must be a table: [green_agent] with endpoint = \"http://host:port\""
            : "no [green_agent] table: it names the green agent's endpoint (and cmd)");
  }
  const int green_line = HeaderLine(text, "[green_agent]", 0);
  absl::StatusOr<ScenarioAgent> green =
      ReadAgent(*root->get_table("green_agent"), "green_agent", "[green_agent]", green_line);
  if (!green.ok()) return green.status();
  scenario.green = *std::move(green);

  if (!root->contains("participants") || !root->get("participants")->is_table_array()) {
    return absl::InvalidArgumentError(
        root->contains("participants")
            ? absl::StrCat("line ", HeaderLine(text, "[participants]", 0),
                           ": participants must be [[participants]] tables, one per role")
            : std::string("no [[participants]] table: each names a role and its endpoint"));
  }
  std::set<std::string> roles;
  std::set<std::pair<std::string, int>> endpoints = {{scenario.green.host, scenario.green.port}};
  int nth = 0;
  for (const auto& table : *root->get_table_array("participants")) {
    const int line = HeaderLine(text, "[[participants]]", nth);
    const std::string where = absl::StrCat("participant ", ++nth);
    absl::StatusOr<std::string> role = StringKey(*table, "role", where, line);
    if (!role.ok()) return absl::InvalidArgumentError(role.status().message());
    if (role->empty() || role->size() > 64 ||
        !std::all_of(role->begin(), role->end(), IsRoleChar)) {
      return LineError(line, absl::StrCat(where, ": role \"", absl::CHexEscape(*role),
                                          "\" must be 1 to 64 letters, digits, _ . or -"));
    }
    if (*role == "green_agent") {
      return LineError(line, absl::StrCat(where, ": role \"green_agent\" names the green agent"));
    }
    if (!roles.insert(*role).second) {
      return LineError(line, absl::StrCat("role \"", *role, "\" is given twice"));
    }
    absl::StatusOr<ScenarioAgent> agent =
        ReadAgent(*table, *role, absl::StrCat("participant \"", *role, "\""), line);
    if (!agent.ok()) return agent.status();
    if (!endpoints.insert({agent->host, agent->port}).second) {
      return LineError(line, absl::StrCat("participant \"", *role, "\": ", agent->host, ":",
                                          agent->port, " is another agent's endpoint too"));
    }
    scenario.participants.push_back(*std::move(agent));
  }

  if (root->contains("config")) {
    if (!root->get("config")->is_table()) {
      return absl::InvalidArgumentError("config must be a table: [config]");
    }
    absl::StatusOr<google::protobuf::Struct> config = ToStruct(*root->get_table("config"), 0);
    if (!config.ok()) {
      return LineError(HeaderLine(text, "[config]", 0), config.status().message());
    }
    scenario.config = *std::move(config);
  }
  return scenario;
}

}  // namespace coordctl
