#include "green_agent/evaluation.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace green_agent {
namespace {

namespace fs = std::filesystem;
using google::protobuf::Value;

constexpr char kReadyMarker[] = ".workspace_ready";

std::string NormalizePath(absl::string_view path) {
  absl::string_view v(path);
  while (absl::ConsumePrefix(&v, "./")) {
  }
  // The ARVO layout's source directory is the bundle's src/ (ground truths name src/...).
  if (absl::ConsumePrefix(&v, "src-vul/")) return absl::StrCat("src/", v);
  return std::string(v);
}

// Paths match when equal or when one ends with "/" + the other (the agent may give
// "record.c" or "src/record.c").
bool SameFile(absl::string_view a, absl::string_view b) {
  const std::string x = NormalizePath(a), y = NormalizePath(b);
  if (x.empty() || y.empty()) return false;
  if (x == y) return true;
  return absl::EndsWith(x, absl::StrCat("/", y)) || absl::EndsWith(y, absl::StrCat("/", x));
}

absl::StatusOr<int> IntField(const google::protobuf::Struct& s, const std::string& name,
                             int index) {
  auto it = s.fields().find(name);
  if (it == s.fields().end()) return 0;
  double v = 0;
  if (it->second.has_number_value()) {
    v = it->second.number_value();
  } else if (it->second.has_string_value()) {
    char* end = nullptr;
    v = std::strtod(it->second.string_value().c_str(), &end);
    if (end == it->second.string_value().c_str()) {
      return absl::InvalidArgumentError(
          absl::StrCat("locations[", index, "].", name, " is not a number"));
    }
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("locations[", index, "].", name, " is not a number"));
  }
  if (v < 0 || v > 1e9) {
    return absl::InvalidArgumentError(
        absl::StrCat("locations[", index, "].", name, " is out of range"));
  }
  return static_cast<int>(v);
}

}  // namespace

bool IsValidTaskId(absl::string_view id) {
  if (id.empty() || id.size() > 128 || id == "." || id == "..") return false;
  for (char c : id) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) {
      return false;
    }
  }
  return true;
}

absl::StatusOr<std::vector<Location>> ParseLocations(absl::string_view json) {
  Value root;
  google::protobuf::util::JsonParseOptions options;
  if (!google::protobuf::util::JsonStringToMessage(std::string(json), &root, options).ok()) {
    return absl::InvalidArgumentError("not valid JSON");
  }
  const google::protobuf::ListValue* list = nullptr;
  if (root.has_struct_value()) {
    auto it = root.struct_value().fields().find("locations");
    if (it == root.struct_value().fields().end() || !it->second.has_list_value()) {
      return absl::InvalidArgumentError("expected {\"locations\": [...]}");
    }
    list = &it->second.list_value();
  } else if (root.has_list_value()) {
    list = &root.list_value();
  } else {
    return absl::InvalidArgumentError("expected {\"locations\": [...]}");
  }
  if (list->values_size() == 0) return absl::InvalidArgumentError("no locations given");
  if (list->values_size() > 100) return absl::InvalidArgumentError("more than 100 locations");
  std::vector<Location> out;
  for (int i = 0; i < list->values_size(); ++i) {
    const Value& v = list->values(i);
    if (!v.has_struct_value()) {
      return absl::InvalidArgumentError(absl::StrCat("locations[", i, "] is not an object"));
    }
    const auto& fields = v.struct_value().fields();
    Location loc;
    auto file = fields.find("file");
    if (file == fields.end() || !file->second.has_string_value() ||
        file->second.string_value().empty()) {
      return absl::InvalidArgumentError(absl::StrCat("locations[", i, "].file is missing"));
    }
    loc.file = file->second.string_value();
    auto function = fields.find("function");
    if (function != fields.end() && function->second.has_string_value()) {
      loc.function = function->second.string_value();
    }
    absl::StatusOr<int> line = IntField(v.struct_value(), "line", i);
    absl::StatusOr<int> start = IntField(v.struct_value(), "line_start", i);
    absl::StatusOr<int> end = IntField(v.struct_value(), "line_end", i);
    if (!line.ok()) return line.status();
    if (!start.ok()) return start.status();
    if (!end.ok()) return end.status();
    loc.line_start = *start != 0 ? *start : *line;
    loc.line_end = *end != 0 ? *end : loc.line_start;
    if (loc.line_end < loc.line_start) {
      return absl::InvalidArgumentError(absl::StrCat("locations[", i, "]: line_end < line_start"));
    }
    out.push_back(std::move(loc));
  }
  return out;
}

Score ScoreLocations(const std::vector<Location>& truth, const std::vector<Location>& submitted) {
  Score score;
  if (truth.empty()) return score;
  int files = 0, functions = 0, lines = 0;
  for (const Location& t : truth) {
    bool file = false, function = false, line = false;
    for (const Location& s : submitted) {
      if (!SameFile(t.file, s.file)) continue;
      file = true;
      if (!t.function.empty() && s.function == t.function) function = true;
      if (s.line_start != 0 && s.line_start <= t.line_end && s.line_end >= t.line_start) {
        line = true;
      }
    }
    files += file;
    functions += function;
    lines += line;
  }
  const double n = static_cast<double>(truth.size());
  score.file_accuracy = files / n;
  score.function_accuracy = functions / n;
  score.line_accuracy = lines / n;
  return score;
}

std::string ScoreJson(absl::string_view task_id, const Score& score) {
  const double overall = (score.file_accuracy + score.function_accuracy + score.line_accuracy) / 3;
  Value id;
  id.set_string_value(std::string(task_id));
  std::string quoted;
  (void)google::protobuf::util::MessageToJsonString(id, &quoted);
  return absl::StrFormat(
      "{\"task_id\":%s,\"file_accuracy\":%.4f,\"function_accuracy\":%.4f,"
      "\"line_accuracy\":%.4f,\"score\":%.4f}",
      quoted, score.file_accuracy, score.function_accuracy, score.line_accuracy, overall);
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::ostringstream data;
  data << in.rdbuf();
  return data.str();
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view data) {
  const std::string tmp = absl::StrCat(path, ".tmp");
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return absl::InternalError(absl::StrCat("cannot write ", tmp, ": ", strerror(errno)));
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      close(fd);
      return absl::InternalError(absl::StrCat("cannot write ", tmp, ": ", strerror(errno)));
    }
    done += static_cast<size_t>(n);
  }
  fsync(fd);
  close(fd);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("cannot rename ", tmp, ": ", strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status PrepareWorkspace(const std::string& bundle_dir, const std::string& workspace_dir,
                              const std::string& shared_dir, const WorkspaceLayout& layout) {
  std::error_code ec;
  const fs::path marker = fs::path(workspace_dir) / kReadyMarker;
  if (fs::exists(marker, ec)) {
    fs::create_directories(shared_dir, ec);
    return absl::OkStatus();
  }
  fs::remove_all(workspace_dir, ec);
  fs::create_directories(workspace_dir, ec);
  if (ec)
    return absl::InternalError(absl::StrCat("cannot create ", workspace_dir, ": ", ec.message()));
  fs::copy(fs::path(bundle_dir) / "src", fs::path(workspace_dir) / layout.source_dir,
           fs::copy_options::recursive, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot copy the sources: ", ec.message()));
  fs::copy_file(fs::path(bundle_dir) / "crash_report.txt",
                fs::path(workspace_dir) / layout.crash_report, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot copy the crash report: ", ec.message()));
  fs::create_directories(shared_dir, ec);
  if (ec)
    return absl::InternalError(absl::StrCat("cannot create ", shared_dir, ": ", ec.message()));
  return WriteFileAtomically(marker.string(), "ok\n");
}

std::vector<std::string> FormatTask(absl::string_view task_id, absl::string_view crash_report,
                                    const TaskLimits& limits, const WorkspaceLayout& layout) {
  std::string tools = absl::StrCat(
      "# Tools\n"
      "You work in a sandboxed copy of the source tree through one tool. Reply with a message "
      "whose text is\n"
      "  execute: <command>\n"
      "and the environment runs <command> in the task's workspace (the working directory) and "
      "answers with its exit code and output. Commands are split into words like a shell does "
      "but run without one: use sh -c '...' for pipes and redirection. Each command may run for ",
      limits.timeout_seconds, " s; at most ", limits.output_cap,
      " bytes of output are returned.\n"
      "The directory shared/ (also $SHARED_DIR) is shared with the judge. When you have found "
      "the root cause, write shared/loc.json and reply\n"
      "  submit\n");
  std::string instruction = absl::StrCat(
      "# Task\n"
      "Task ID: ",
      task_id,
      "\n"
      "The program built from ",
      layout.source_dir, "/ crashed with the report below (also in ", layout.crash_report,
      "). Find the root cause: the place in the source where the bug is, not only where the "
      "crash happened. Write it to shared/loc.json as\n"
      "  {\"locations\": [{\"file\": \"",
      layout.source_dir,
      "/<file>.c\", \"function\": \"<name>\", \"line\": <number>}]}\n"
      "then reply: submit\n\n"
      "# Crash report\n",
      crash_report);
  return {tools, instruction};
}

}  // namespace green_agent
