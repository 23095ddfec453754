#include "coordctl/aria_state_json.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/proto_json.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace coordctl {
namespace {

using common::CompactJson;
using coordinator::v1::AriaStateFile;
using coordinator::v1::TaskState;
using google::protobuf::Struct;
using google::protobuf::Value;

// The top-level keys AriaStateFile knows; all others are custom fields.
constexpr const char* kKnownKeys[] = {
    "task_id",    "task_desc",  "attempt_count",  "model_tier",
    "created_at", "failures",   "escalation_log", "quality_gate_results",
    "blocked",    "blocked_at", "block_reason",
};

bool IsKnownKey(const std::string& key) {
  return std::any_of(std::begin(kKnownKeys), std::end(kKnownKeys),
                     [&](const char* k) { return key == k; });
}

std::string QuotedString(const std::string& s) {
  Value v;
  v.set_string_value(s);
  return CompactJson(v);
}

// A time written as Unix seconds becomes a JSON string, as the scripts wrote it, so that the
// strict parse into AriaStateFile accepts numbers as well.
void NumberToString(Value* v) {
  if (v->kind_case() == Value::kNumberValue) {
    const double d = v->number_value();
    if (d == std::floor(d) && std::fabs(d) < 1e15) {
      v->set_string_value(absl::StrCat(static_cast<int64_t>(d)));
    }
  }
}

void NormalizeTimes(Struct* known) {
  auto& fields = *known->mutable_fields();
  for (const char* key : {"created_at", "blocked_at"}) {
    if (auto it = fields.find(key); it != fields.end()) NumberToString(&it->second);
  }
  for (const char* list : {"failures", "escalation_log", "quality_gate_results"}) {
    auto it = fields.find(list);
    if (it == fields.end() || !it->second.has_list_value()) continue;
    for (Value& item : *it->second.mutable_list_value()->mutable_values()) {
      if (!item.has_struct_value()) continue;
      auto& entry = *item.mutable_struct_value()->mutable_fields();
      if (auto t = entry.find("timestamp"); t != entry.end()) NumberToString(&t->second);
    }
  }
}

absl::StatusOr<google::protobuf::Timestamp> ParseUnixSeconds(const std::string& field,
                                                             const std::string& text,
                                                             bool required) {
  google::protobuf::Timestamp ts;
  if (text.empty() && !required) return ts;
  int64_t seconds = 0;
  if (!absl::SimpleAtoi(text, &seconds) || seconds < 0) {
    return absl::InvalidArgumentError(absl::StrCat(field, " must be Unix seconds (digits), not \"",
                                                   absl::CEscape(text.substr(0, 40)), "\""));
  }
  ts.set_seconds(seconds);
  return ts;
}

// The text of a custom field's value; first is false for a JSON null (the field is dropped).
absl::StatusOr<std::pair<bool, std::string>> CustomValueText(const Value& v) {
  switch (v.kind_case()) {
    case Value::kNullValue:
      return std::make_pair(false, std::string());
    case Value::kStringValue:
      return std::make_pair(true, v.string_value());
    case Value::kBoolValue:
      return std::make_pair(true, std::string(v.bool_value() ? "true" : "false"));
    case Value::kNumberValue: {
      const double d = v.number_value();
      if (d == std::floor(d) && std::fabs(d) < 1e15) {
        return std::make_pair(true, absl::StrCat(static_cast<int64_t>(d)));
      }
      return std::make_pair(true, CompactJson(v));
    }
    case Value::kListValue:
    case Value::kStructValue:
      return std::make_pair(true, CompactJson(v));
    default:
      return absl::InvalidArgumentError("a custom field has no value");
  }
}

// Deepest nesting accepted in a state file. The scripts' files nest 3 levels; Protobuf's JSON
// parser takes time quadratic in the depth, so a hostile file is refused before it is parsed.
constexpr int kMaxJsonDepth = 32;

// True when the brackets of `json` (outside strings) nest at most `max_depth` deep. Only
// counts; the parsing itself is Protobuf's.
bool NestingWithin(absl::string_view json, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // skip the escaped character
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

// A value the state file holds as a JSON number: digits without a leading zero, of any length.
// The digits are written as they were stored; a reader such as jq takes them as a double, as it
// took the original's `jq ".f = <digits>"` (99999999999999999999 reads as 1e+20 both ways).
bool AllDigits(const std::string& s) {
  return !s.empty() && (s.size() == 1 || s[0] != '0') &&
         std::all_of(s.begin(), s.end(), [](char c) { return absl::ascii_isdigit(c); });
}

}  // namespace

absl::StatusOr<std::string> ReadBoundedFile(const std::string& path, size_t max_bytes) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int e = errno;
    const std::string message = absl::StrCat("cannot open: ", std::strerror(e));
    return e == ENOENT ? absl::NotFoundError(message) : absl::InvalidArgumentError(message);
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return absl::InvalidArgumentError("not a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    close(fd);
    return absl::ResourceExhaustedError(absl::StrCat(
        "file is ", st.st_size, " bytes; state files are at most ", max_bytes, " bytes"));
  }
  // Read at most max_bytes + 1, so a file that grows while it is read is still caught.
  std::string data;
  data.resize(max_bytes + 1);
  size_t got = 0;
  while (got < data.size()) {
    const ssize_t n = read(fd, data.data() + got, data.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      close(fd);
      return absl::InvalidArgumentError(absl::StrCat("cannot read: ", std::strerror(e)));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  if (got > max_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("file is over ", max_bytes, " bytes, the limit for state files"));
  }
  data.resize(got);
  return data;
}

absl::StatusOr<Struct> ParseJsonObject(absl::string_view json) {
  if (!NestingWithin(json, kMaxJsonDepth)) {
    return absl::InvalidArgumentError(
        absl::StrCat("JSON nests deeper than ", kMaxJsonDepth, " levels"));
  }
  Struct whole;
  google::protobuf::util::JsonParseOptions strict;
  if (auto s = google::protobuf::util::JsonStringToMessage(
          google::protobuf::StringPiece(json.data(), json.size()), &whole, strict);
      !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a JSON object: ", std::string(s.message())));
  }
  return whole;
}

absl::StatusOr<TaskState> ParseAriaStateJson(absl::string_view json) {
  absl::StatusOr<Struct> parsed = ParseJsonObject(json);
  if (!parsed.ok()) return parsed.status();
  const Struct& whole = *parsed;

  // Split the known keys off; the rest are custom fields.
  Struct known;
  TaskState state;
  std::vector<std::string> custom_names;
  for (const auto& [key, value] : whole.fields()) {
    if (IsKnownKey(key)) {
      (*known.mutable_fields())[key] = value;
      continue;
    }
    absl::StatusOr<std::pair<bool, std::string>> text = CustomValueText(value);
    if (!text.ok()) return text.status();
    if (text->first) (*state.mutable_custom_fields())[key] = text->second;
  }
  NormalizeTimes(&known);
  std::string known_json = CompactJson(known);
  AriaStateFile file;
  google::protobuf::util::JsonParseOptions lenient;
  lenient.ignore_unknown_fields = true;  // extra keys inside list entries are dropped
  if (auto s = google::protobuf::util::JsonStringToMessage(known_json, &file, lenient); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("a known field has the wrong type: ", std::string(s.message())));
  }

  if (file.task_id().empty()) return absl::InvalidArgumentError("task_id is missing");
  if (file.task_desc().empty()) return absl::InvalidArgumentError("task_desc is missing");
  state.set_task_id(file.task_id());
  state.set_description(file.task_desc());
  state.set_attempt_count(file.attempt_count());
  state.set_model_tier(whole.fields().contains("model_tier") ? file.model_tier() : 1);
  auto created = ParseUnixSeconds("created_at", file.created_at(), /*required=*/true);
  if (!created.ok()) return created.status();
  *state.mutable_create_time() = *created;

  for (int i = 0; i < file.failures_size(); ++i) {
    const auto& f = file.failures(i);
    auto* out = state.add_failures();
    out->set_attempt(f.attempt());
    out->set_error(f.error());
    out->set_model(f.model());
    auto time = ParseUnixSeconds(absl::StrCat("failures[", i, "].timestamp"), f.timestamp(),
                                 /*required=*/true);
    if (!time.ok()) return time.status();
    *out->mutable_time() = *time;
  }
  for (int i = 0; i < file.escalation_log_size(); ++i) {
    const auto& e = file.escalation_log(i);
    auto* out = state.add_escalation_log();
    out->set_reason(e.reason());
    out->set_from_tier(e.from_tier());
    out->set_to_tier(e.to_tier());
    out->set_forced(e.forced());
    auto time = ParseUnixSeconds(absl::StrCat("escalation_log[", i, "].timestamp"), e.timestamp(),
                                 /*required=*/true);
    if (!time.ok()) return time.status();
    *out->mutable_time() = *time;
  }
  for (int i = 0; i < file.quality_gate_results_size(); ++i) {
    const auto& q = file.quality_gate_results(i);
    auto* out = state.add_quality_gate_results();
    out->set_check(q.check());
    out->set_passed(q.passed());
    out->set_detail(q.detail());
    auto time = ParseUnixSeconds(absl::StrCat("quality_gate_results[", i, "].timestamp"),
                                 q.timestamp(), /*required=*/false);
    if (!time.ok()) return time.status();
    *out->mutable_time() = *time;
  }
  if (file.blocked()) {
    state.set_blocked(true);
    state.set_block_reason(file.block_reason());
    auto time = ParseUnixSeconds("blocked_at", file.blocked_at(), /*required=*/false);
    if (!time.ok()) return time.status();
    *state.mutable_blocked_time() = *time;
  }
  return state;
}

std::string FormatAriaStateJson(const TaskState& state) {
  std::vector<std::string> lines;
  auto add = [&](absl::string_view key, const std::string& json_value) {
    lines.push_back(absl::StrCat("  ", QuotedString(std::string(key)), ": ", json_value));
  };
  auto add_list = [&](absl::string_view key, const std::vector<std::string>& items) {
    if (items.empty()) {
      add(key, "[]");
      return;
    }
    add(key, absl::StrCat("[\n    ", absl::StrJoin(items, ",\n    "), "\n  ]"));
  };
  add("task_id", QuotedString(state.task_id()));
  add("task_desc", QuotedString(state.description()));
  add("attempt_count", absl::StrCat(state.attempt_count()));
  add("model_tier", absl::StrCat(state.model_tier()));
  add("created_at", QuotedString(absl::StrCat(state.create_time().seconds())));

  std::vector<std::string> items;
  for (const auto& f : state.failures()) {
    coordinator::v1::AriaFailure item;
    item.set_attempt(f.attempt());
    item.set_error(f.error());
    item.set_model(f.model());
    item.set_timestamp(absl::StrCat(f.time().seconds()));
    items.push_back(CompactJson(item));
  }
  add_list("failures", items);
  items.clear();
  for (const auto& e : state.escalation_log()) {
    // "forced" sits between reason and from_tier, where the breaker script wrote it.
    items.push_back(
        absl::StrCat("{\"timestamp\":", QuotedString(absl::StrCat(e.time().seconds())),
                     ",\"reason\":", QuotedString(e.reason()), e.forced() ? ",\"forced\":true" : "",
                     ",\"from_tier\":", e.from_tier(), ",\"to_tier\":", e.to_tier(), "}"));
  }
  add_list("escalation_log", items);
  items.clear();
  for (const auto& q : state.quality_gate_results()) {
    coordinator::v1::AriaQualityGate item;
    item.set_check(q.check());
    item.set_passed(q.passed());
    item.set_detail(q.detail());
    item.set_timestamp(absl::StrCat(q.time().seconds()));
    items.push_back(CompactJson(item));
  }
  add_list("quality_gate_results", items);
  if (state.blocked()) {
    add("blocked", "true");
    add("blocked_at", QuotedString(absl::StrCat(state.blocked_time().seconds())));
    add("block_reason", QuotedString(state.block_reason()));
  }
  std::vector<std::pair<std::string, std::string>> custom(state.custom_fields().begin(),
                                                          state.custom_fields().end());
  std::sort(custom.begin(), custom.end());
  for (const auto& [key, value] : custom) {
    add(key, AllDigits(value) ? value : QuotedString(value));
  }
  return absl::StrCat("{\n", absl::StrJoin(lines, ",\n"), "\n}\n");
}

namespace {

// The LoopPattern of a pattern name the scripts wrote ("unknown" and anything else: none).
coordinator::v1::LoopPattern PatternOf(const std::string& name) {
  if (name == "repeated_error") return coordinator::v1::LOOP_PATTERN_REPEATED_ERROR;
  if (name == "stuck_tier") return coordinator::v1::LOOP_PATTERN_STUCK_TIER;
  if (name == "quality_gate_loop") return coordinator::v1::LOOP_PATTERN_QUALITY_GATE_LOOP;
  return coordinator::v1::LOOP_PATTERN_NONE;
}

// OK when `id` is a task id the coordinator takes (1 to 256 bytes, no control characters)
// that can also name <id>-summary.txt in the registry's directory and nothing else.
absl::Status ValidateBlockedTaskId(const std::string& id) {
  if (id.empty()) return absl::InvalidArgumentError("task_id is missing");
  if (id.size() > 256) {
    return absl::InvalidArgumentError(
        absl::StrCat("task_id is ", id.size(), " bytes long; task ids are at most 256"));
  }
  for (const char c : id) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
      return absl::InvalidArgumentError(
          absl::StrCat("task_id \"", absl::CEscape(id), "\" has a control character"));
    }
  }
  if (id.find('/') != std::string::npos || id == "." || id == "..") {
    return absl::InvalidArgumentError(
        absl::StrCat("task_id \"", id, "\" cannot name a summary file (a path separator)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<coordinator::v1::ImportedBlock>> ParseAriaBlockedJson(
    absl::string_view json) {
  std::vector<coordinator::v1::ImportedBlock> blocks;
  if (absl::StripAsciiWhitespace(json).empty()) return blocks;
  absl::StatusOr<Struct> parsed = ParseJsonObject(json);
  if (!parsed.ok()) return parsed.status();
  Struct whole = *std::move(parsed);
  auto list = whole.mutable_fields()->find("blocked_tasks");
  if (list == whole.mutable_fields()->end() || !list->second.has_list_value()) {
    return absl::InvalidArgumentError("not a blocked registry: no \"blocked_tasks\" array");
  }
  // Times as numbers become strings, as the script wrote them; whether an analysis had any
  // key is noted before the typed parse, which cannot tell {} from a default.
  std::vector<bool> has_analysis;
  for (Value& item : *list->second.mutable_list_value()->mutable_values()) {
    bool analysis = false;
    if (item.has_struct_value()) {
      auto& entry = *item.mutable_struct_value()->mutable_fields();
      if (auto t = entry.find("blocked_at"); t != entry.end()) NumberToString(&t->second);
      if (auto a = entry.find("analysis"); a != entry.end() && a->second.has_struct_value()) {
        auto& fields = *a->second.mutable_struct_value()->mutable_fields();
        analysis = !fields.empty();
        if (auto t = fields.find("analysis_timestamp"); t != fields.end()) {
          NumberToString(&t->second);
        }
      }
    }
    has_analysis.push_back(analysis);
  }
  coordinator::v1::AriaBlockedFile file;
  google::protobuf::util::JsonParseOptions lenient;
  lenient.ignore_unknown_fields = true;
  if (auto s = google::protobuf::util::JsonStringToMessage(CompactJson(whole), &file, lenient);
      !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("an entry has a field of the wrong type: ", std::string(s.message())));
  }

  // The last entry of each task wins; the order is that of those last entries.
  std::vector<std::string> order;
  absl::flat_hash_map<std::string, coordinator::v1::ImportedBlock> by_id;
  for (int i = 0; i < file.blocked_tasks_size(); ++i) {
    const coordinator::v1::AriaBlockedEntry& e = file.blocked_tasks(i);
    const std::string where = absl::StrCat("blocked_tasks[", i, "]: ");
    if (absl::Status s = ValidateBlockedTaskId(e.task_id()); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(where, s.message()));
    }
    coordinator::v1::ImportedBlock block;
    coordinator::v1::BlockedTask* entry = block.mutable_entry();
    entry->set_task_id(e.task_id());
    entry->set_task_desc(e.task_desc());
    entry->set_reason(e.reason());
    auto blocked_at = ParseUnixSeconds("blocked_at", e.blocked_at(), /*required=*/true);
    if (!blocked_at.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(where, blocked_at.status().message()));
    }
    *entry->mutable_blocked_time() = *blocked_at;
    if (e.attempts() < 0 || e.final_tier() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "attempts and final_tier must not be negative"));
    }
    entry->set_attempt_count(e.attempts());
    entry->set_final_tier(e.final_tier());
    const coordinator::v1::AriaBlockedAnalysis& a = e.analysis();
    entry->set_pattern_type(a.pattern_type().empty() ? "unknown" : a.pattern_type());
    if (has_analysis[static_cast<size_t>(i)]) {
      coordinator::v1::StoredAnalysis* stored = block.mutable_analysis();
      coordinator::v1::LoopAnalysis* out = stored->mutable_analysis();
      out->set_task_id(a.task_id());
      out->set_task_desc(a.task_desc());
      out->set_pattern_type(a.pattern_type());
      out->set_pattern(PatternOf(a.pattern_type()));
      out->set_attempt_count(a.attempt_count());
      out->set_current_tier(a.current_tier());
      out->set_current_model(a.current_model());
      out->set_escalations_done(a.escalations_done());
      out->set_repeated_error_count(a.repeated_error_count());
      out->set_latest_error(a.latest_error());
      out->set_suggested_action(a.suggested_action());
      auto time = ParseUnixSeconds("analysis.analysis_timestamp", a.analysis_timestamp(),
                                   /*required=*/false);
      if (!time.ok())
        return absl::InvalidArgumentError(absl::StrCat(where, time.status().message()));
      if (!a.analysis_timestamp().empty()) *stored->mutable_time() = *time;
      stored->set_source("aria-scripts");
    }
    auto [it, inserted] = by_id.insert_or_assign(e.task_id(), std::move(block));
    if (inserted) {
      order.push_back(e.task_id());
    } else {
      // Move the task to where its last entry is.
      order.erase(std::find(order.begin(), order.end(), e.task_id()));
      order.push_back(e.task_id());
    }
  }
  blocks.reserve(order.size());
  for (const std::string& id : order) blocks.push_back(std::move(by_id[id]));
  return blocks;
}

}  // namespace coordctl
