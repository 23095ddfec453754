#include "green_agent/environment.h"

#include <openssl/sha.h>

#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "green_agent/evaluation.h"

namespace green_agent {
namespace {

constexpr char kRecordFile[] = "environment.json";
constexpr size_t kMaxHandleBytes = 256;
// The longest piece of a template's output put in an error message.
constexpr size_t kErrorTailBytes = 600;

// The last `n` bytes of `text` without surrounding blanks, on one line.
std::string Tail(absl::string_view text, size_t n = kErrorTailBytes) {
  text = absl::StripAsciiWhitespace(text);
  std::string out;
  if (text.size() > n) {
    out = "...";
    text = text.substr(text.size() - n);
  }
  for (char c : text) out.push_back(c == '\n' || c == '\r' ? ' ' : c);
  return out;
}

// What a template that failed said: its exit code, then its stderr (else its stdout).
std::string Failure(const std::string& flag, const ExecResult& r, absl::Duration timeout) {
  if (r.timed_out) {
    return absl::StrCat(flag, " timed out after ", absl::FormatDuration(timeout),
                        " (its process group was killed)");
  }
  std::string said = Tail(r.error_output);
  if (said.empty()) said = Tail(r.output);
  return absl::StrCat(flag, " exited ", r.exit_code, said.empty() ? "" : ": ", said);
}

bool HasPlaceholder(const std::string& templ, absl::string_view name) {
  return absl::StrContains(templ, absl::StrCat("{", name, "}"));
}

}  // namespace

std::string EnvironmentName(absl::string_view workspaces_dir, absl::string_view context_id) {
  std::string readable;
  for (char c : context_id) {
    if (readable.size() >= 40) break;
    const bool allowed = absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.';
    if (allowed) {
      readable.push_back(c);
    } else if (!readable.empty() && readable.back() != '-') {
      readable.push_back('-');
    }
  }
  const std::string key = absl::StrCat(workspaces_dir, std::string(1, '\0'), context_id);
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(key.data()), key.size(), digest);
  const std::string hex = absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), sizeof(digest)));
  return absl::StrCat("coord-", readable, readable.empty() ? "" : "-", hex.substr(0, 12));
}

absl::Status ValidateEnvironmentOptions(const EnvironmentOptions& options,
                                        const std::string& exec_template) {
  auto bad = [](absl::string_view text) { return absl::InvalidArgumentError(text); };
  for (const auto& [flag, templ] :
       {std::pair<std::string, const std::string*>{"--env_start_template", &options.start_template},
        {"--env_stop_template", &options.stop_template}}) {
    if (templ->empty()) continue;
    if (absl::Status s = SplitWords(*templ).status(); !s.ok()) {
      return bad(absl::StrCat(flag, ": ", s.message()));
    }
    for (absl::string_view p : {"command", "argv"}) {
      if (HasPlaceholder(*templ, p)) {
        return bad(absl::StrCat(flag, " cannot use {", p, "}: no command runs there"));
      }
    }
  }
  if (options.start_template.empty()) {
    if (!options.stop_template.empty()) {
      return bad("--env_stop_template needs --env_start_template (nothing would be started)");
    }
    return absl::OkStatus();
  }
  if (options.stop_template.empty()) {
    return bad(
        "--env_start_template needs --env_stop_template: every environment started is stopped "
        "when its evaluation ends (e.g. 'podman rm -f -t 0 {container}')");
  }
  if (HasPlaceholder(options.start_template, "container")) {
    return bad(
        "--env_start_template cannot use {container}: the handle is what it prints (use "
        "{env_name} to name the container)");
  }
  if (!HasPlaceholder(exec_template, "container")) {
    return bad(
        "--env_start_template needs an --exec_template naming {container}, e.g. 'podman exec "
        "{container} {argv}'; without one the commands would run on this host");
  }
  if (options.timeout <= absl::ZeroDuration() || options.sweep_interval <= absl::ZeroDuration()) {
    return bad("--env_timeout and --env_sweep_interval must be positive");
  }
  return absl::OkStatus();
}

absl::StatusOr<ExecResult> EnvironmentRunner::RunTemplate(const std::string& flag,
                                                          const std::string& templ,
                                                          absl::string_view command,
                                                          const ExecEnv& env,
                                                          absl::Duration timeout) const {
  absl::StatusOr<std::vector<std::string>> argv = ExpandTemplate(templ, command, env);
  if (!argv.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", argv.status().message()));
  }
  ProcessOptions process;
  process.timeout = timeout;
  process.output_cap = 64 << 10;
  process.separate_stderr = true;
  return RunProcess(*std::move(argv), env, process);
}

absl::StatusOr<std::string> EnvironmentRunner::Start(const ExecEnv& env) const {
  const std::string flag = "--env_start_template";
  ASSIGN_OR_RETURN(ExecResult r,
                   RunTemplate(flag, options_.start_template, "", env, options_.timeout));
  if (r.timed_out || r.exit_code != 0) {
    return absl::UnavailableError(Failure(flag, r, options_.timeout));
  }
  std::string handle;
  for (absl::string_view line : absl::StrSplit(r.output, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (!line.empty()) handle = std::string(line);
  }
  if (handle.empty()) {
    const std::string said = Tail(r.error_output);
    return absl::FailedPreconditionError(absl::StrCat(
        flag, " printed no handle on stdout (it exited 0", said.empty() ? "" : "; stderr: ", said,
        "): it must print the environment's id, as `podman run -d` does"));
  }
  bool printable = handle.size() <= kMaxHandleBytes;
  for (char c : handle) {
    if (!absl::ascii_isgraph(c)) printable = false;
  }
  if (!printable) {
    return absl::FailedPreconditionError(absl::StrCat(
        flag, " printed no usable handle: the last line of its stdout, \"", Tail(handle, 80),
        "\", is not 1 to ", kMaxHandleBytes, " printable characters without blanks"));
  }
  return handle;
}

absl::Status EnvironmentRunner::Stop(const ExecEnv& env) const {
  const std::string flag = "--env_stop_template";
  ASSIGN_OR_RETURN(ExecResult r,
                   RunTemplate(flag, options_.stop_template, "", env, options_.timeout));
  if (r.timed_out || r.exit_code != 0) {
    return absl::UnavailableError(Failure(flag, r, options_.timeout));
  }
  return absl::OkStatus();
}

absl::Status EnvironmentRunner::Check(const ExecEnv& env) const {
  const absl::Duration timeout = std::min(executor_.timeout, absl::Seconds(30));
  ASSIGN_OR_RETURN(ExecResult r,
                   RunTemplate("--exec_template", executor_.exec_template, "true", env, timeout));
  if (r.timed_out || r.exit_code != 0) {
    return absl::UnavailableError(
        absl::StrCat("`true` through ", Failure("--exec_template", r, timeout)));
  }
  return absl::OkStatus();
}

absl::StatusOr<EnvironmentRecord> ReadEnvironmentRecord(const std::string& context_root) {
  const std::string path = (std::filesystem::path(context_root) / kRecordFile).string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return absl::NotFoundError(absl::StrCat("no ", path));
  ASSIGN_OR_RETURN(const std::string json, ReadFile(path));
  google::protobuf::Struct s;
  if (!google::protobuf::util::JsonStringToMessage(json, &s).ok()) {
    return absl::DataLossError(absl::StrCat(path, " is not valid JSON"));
  }
  auto field = [&s](const std::string& name) {
    auto it = s.fields().find(name);
    return it != s.fields().end() && it->second.has_string_value() ? it->second.string_value()
                                                                   : std::string();
  };
  EnvironmentRecord record{field("context_id"), field("env_name"), field("handle"), field("state"),
                           field("error")};
  if (record.context_id.empty() || record.env_name.empty()) {
    return absl::DataLossError(absl::StrCat(path, " names no context or environment"));
  }
  return record;
}

absl::Status WriteEnvironmentRecord(const std::string& context_root,
                                    const EnvironmentRecord& record) {
  std::error_code ec;
  std::filesystem::create_directories(context_root, ec);
  google::protobuf::Struct s;
  auto set = [&s](const std::string& name, const std::string& value) {
    (*s.mutable_fields())[name].set_string_value(value);
  };
  set("context_id", record.context_id);
  set("env_name", record.env_name);
  set("handle", record.handle);
  set("state", record.state);
  set("error", record.error);
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(s, &json);
  return WriteFileAtomically((std::filesystem::path(context_root) / kRecordFile).string(),
                             json + "\n");
}

void RemoveEnvironmentRecord(const std::string& context_root) {
  std::error_code ec;
  std::filesystem::remove(std::filesystem::path(context_root) / kRecordFile, ec);
}

std::vector<EnvironmentRecord> ListEnvironmentRecords(const std::string& workspaces_dir) {
  std::vector<EnvironmentRecord> records;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(workspaces_dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (!it->is_directory(ec)) continue;
    absl::StatusOr<EnvironmentRecord> record = ReadEnvironmentRecord(it->path().string());
    if (record.ok()) records.push_back(*std::move(record));
  }
  return records;
}

}  // namespace green_agent
