#include "green_agent/assessment.h"

#include <openssl/sha.h>

#include <algorithm>
#include <cstring>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "green_agent/evaluation.h"

namespace green_agent {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

constexpr size_t kMaxUrlBytes = 2048;
constexpr size_t kMaxRoleNameBytes = 40;
constexpr char kWellKnownCard[] = "/.well-known/agent-card.json";

absl::Status Invalid(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("assessment request: ", what));
}

// How a JSON value reads in an error message ("a number", "a list", ...).
std::string KindName(const Value& v) {
  switch (v.kind_case()) {
    case Value::kStringValue:
      return "a string";
    case Value::kNumberValue:
      return "a number";
    case Value::kBoolValue:
      return "a boolean";
    case Value::kStructValue:
      return "an object";
    case Value::kListValue:
      return "a list";
    case Value::kNullValue:
    case Value::KIND_NOT_SET:
      break;
  }
  return "null";
}

std::string Quoted(absl::string_view s) {
  return absl::StrCat("\"", absl::CHexEscape(s.substr(0, std::min<size_t>(s.size(), 200))), "\"");
}

bool IsAssessment(const Struct& s) {
  return s.fields().count("participants") > 0 || s.fields().count("config") > 0;
}

absl::StatusOr<std::vector<std::string>> TaskIds(const Value& config) {
  if (!config.has_struct_value()) {
    return Invalid(absl::StrCat(
        "\"config\" must be an object such as {\"task_ids\": [\"<id>\"]}, not ", KindName(config)));
  }
  const auto& fields = config.struct_value().fields();
  for (const auto& [key, value] : fields) {
    if (key != "task_ids" && key != "task_id") {
      return Invalid(absl::StrCat("unknown field config.", Quoted(key),
                                  " (config takes \"task_ids\" or \"task_id\")"));
    }
  }
  auto list = fields.find("task_ids");
  auto one = fields.find("task_id");
  if (list != fields.end() && one != fields.end()) {
    return Invalid("config has both \"task_ids\" and \"task_id\": give one of them");
  }
  std::vector<std::pair<std::string, const Value*>> given;  // (where, value)
  if (one != fields.end()) {
    given.emplace_back("config.task_id", &one->second);
  } else if (list != fields.end()) {
    if (!list->second.has_list_value()) {
      return Invalid(absl::StrCat("config.task_ids must be a list of task id strings, not ",
                                  KindName(list->second)));
    }
    const auto& values = list->second.list_value().values();
    if (static_cast<size_t>(values.size()) > kMaxAssessmentTasks) {
      return Invalid(absl::StrCat("config.task_ids names ", values.size(),
                                  " tasks; one assessment takes at most ", kMaxAssessmentTasks));
    }
    for (int i = 0; i < values.size(); ++i) {
      given.emplace_back(absl::StrCat("config.task_ids[", i, "]"), &values[i]);
    }
  }
  if (given.empty()) {
    return Invalid(
        "config names no task: give \"task_ids\": [\"<id>\", ...] or \"task_id\": \"<id>\"");
  }
  std::vector<std::string> ids;
  absl::flat_hash_set<std::string> seen;
  for (const auto& [where, value] : given) {
    if (!value->has_string_value()) {
      return Invalid(absl::StrCat(where, " must be a task id string, not ", KindName(*value)));
    }
    const std::string& id = value->string_value();
    if (!IsValidTaskId(id)) {
      return Invalid(absl::StrCat(where, " ", Quoted(id),
                                  " is not a task id (1 to 128 letters, digits, '-', '_' or '.')"));
    }
    if (!seen.insert(id).second) {
      return Invalid(absl::StrCat(where, " names task ", Quoted(id), " a second time"));
    }
    ids.push_back(id);
  }
  return ids;
}

absl::StatusOr<AssessmentRequest> FromStruct(const Struct& request, absl::string_view role) {
  const auto& fields = request.fields();
  for (const auto& [key, value] : fields) {
    if (key != "participants" && key != "config") {
      return Invalid(absl::StrCat("unknown field ", Quoted(key),
                                  " (the request has \"participants\" and "
                                  "\"config\")"));
    }
  }
  auto participants = fields.find("participants");
  if (participants == fields.end()) {
    return Invalid(
        "\"participants\" is missing: it maps each role to the agent card URL of the agent that "
        "plays it, e.g. {\"purple\": \"http://host:port/.well-known/agent-card.json\"}");
  }
  if (!participants->second.has_struct_value()) {
    return Invalid(
        absl::StrCat("\"participants\" must be an object mapping roles to agent card URLs, not ",
                     KindName(participants->second)));
  }
  const auto& roles = participants->second.struct_value().fields();
  auto it = roles.find(std::string(role));
  if (it == roles.end()) {
    std::vector<std::string> given;
    for (const auto& [name, url] : roles) given.push_back(Quoted(name));
    std::sort(given.begin(), given.end());
    return Invalid(
        absl::StrCat("no participant plays the role ", Quoted(role),
                     " (roles given: ", given.empty() ? "none" : absl::StrJoin(given, ", "),
                     "); the green agent evaluates the participant named by its --purple_role"));
  }
  if (!it->second.has_string_value()) {
    return Invalid(absl::StrCat("participants.", Quoted(role),
                                " must be an agent card URL string, not ", KindName(it->second)));
  }
  absl::StatusOr<std::string> card_url = ParticipantCardUrl(it->second.string_value());
  if (!card_url.ok()) {
    return Invalid(absl::StrCat("participants.", Quoted(role), ": ", card_url.status().message()));
  }
  auto config = fields.find("config");
  if (config == fields.end()) {
    return Invalid(
        "\"config\" is missing: it names the tasks, e.g. {\"task_ids\": "
        "[\"heap-overflow-record\"]}");
  }
  absl::StatusOr<std::vector<std::string>> task_ids = TaskIds(config->second);
  if (!task_ids.ok()) return task_ids.status();
  AssessmentRequest out;
  out.role = std::string(role);
  out.card_url = *std::move(card_url);
  out.task_ids = *std::move(task_ids);
  return out;
}

}  // namespace

absl::StatusOr<std::optional<AssessmentRequest>> ParseAssessmentRequest(
    const lf::a2a::v1::Message& message, absl::string_view role) {
  for (const lf::a2a::v1::Part& part : message.parts()) {
    if (part.has_data() && part.data().has_struct_value() &&
        IsAssessment(part.data().struct_value())) {
      return FromStruct(part.data().struct_value(), role);
    }
  }
  for (const lf::a2a::v1::Part& part : message.parts()) {
    if (!part.has_text()) continue;
    const absl::string_view text = absl::StripAsciiWhitespace(part.text());
    if (!absl::StartsWith(text, "{")) continue;
    Struct request;
    const auto parsed = google::protobuf::util::JsonStringToMessage(std::string(text), &request);
    if (!parsed.ok()) {
      // Some other text that happens to start with "{", unless it names the request's fields.
      if (absl::StrContains(text, "\"participants\"") || absl::StrContains(text, "\"config\"")) {
        return Invalid(
            absl::StrCat("the text is not a JSON object: ", std::string(parsed.message())));
      }
      continue;
    }
    if (IsAssessment(request)) return FromStruct(request, role);
  }
  return std::nullopt;
}

absl::StatusOr<std::string> ParticipantCardUrl(absl::string_view url) {
  if (url.empty()) return absl::InvalidArgumentError("the URL is empty");
  if (url.size() > kMaxUrlBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("the URL is ", url.size(), " bytes long; at most ", kMaxUrlBytes));
  }
  for (char c : url) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) {
      return absl::InvalidArgumentError(
          absl::StrCat(Quoted(url), " has a space or a control character"));
    }
  }
  absl::string_view rest = url;
  if (absl::StartsWithIgnoreCase(rest, "http://")) {
    rest.remove_prefix(std::strlen("http://"));
  } else if (absl::StartsWithIgnoreCase(rest, "https://")) {
    rest.remove_prefix(std::strlen("https://"));
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(Quoted(url), " is not an http:// or https:// URL"));
  }
  const absl::string_view host = rest.substr(0, rest.find_first_of("/?#"));
  if (host.empty()) return absl::InvalidArgumentError(absl::StrCat(Quoted(url), " has no host"));
  if (absl::StrContains(host, "@")) {
    return absl::InvalidArgumentError(
        absl::StrCat(Quoted(url), " carries credentials (user@host); pass the plain URL"));
  }
  if (absl::StrContains(rest, "#")) {
    return absl::InvalidArgumentError(absl::StrCat(Quoted(url), " has a fragment (#...)"));
  }
  const absl::string_view path = rest.substr(host.size());
  if (absl::StrContains(path, "?") || absl::EndsWith(path, ".json")) return std::string(url);
  return absl::StrCat(absl::StripSuffix(url, "/"), kWellKnownCard);
}

std::string ParticipantAgentName(absl::string_view role, absl::string_view card_url) {
  std::string name;
  for (char c : role) {
    if (name.size() >= kMaxRoleNameBytes) break;
    const char lower = absl::ascii_tolower(c);
    const bool keep = absl::ascii_isalnum(lower) || lower == '-' || lower == '_' || lower == '.';
    if (keep) {
      name.push_back(lower);
    } else if (!name.empty() && name.back() != '-') {
      name.push_back('-');
    }
  }
  const auto edge = [](char c) { return c == '-' || c == '.'; };
  while (!name.empty() && edge(name.front())) name.erase(0, 1);
  while (!name.empty() && edge(name.back())) name.pop_back();
  if (name.empty()) name = "participant";
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(card_url.data()), card_url.size(), digest);
  const std::string hex = absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), sizeof(digest)));
  return absl::StrCat(name, "-", hex.substr(0, 12));
}

}  // namespace green_agent
