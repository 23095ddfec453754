#include "purple_agent/policy.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/child_process.h"
#include "common/http_deadline.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "httplib.h"

namespace purple_agent {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

std::string ToJson(const google::protobuf::Message& m) {
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(m, &out);
  return out;
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::ostringstream data;
  data << in.rdbuf();
  return data.str();
}

class ScriptPolicy : public Policy {
 public:
  explicit ScriptPolicy(std::string path) : path_(std::move(path)) {}

  absl::StatusOr<PolicyOutput> Next(const PolicyInput& input) override {
    std::string file = path_;
    std::error_code ec;
    if (std::filesystem::is_directory(path_, ec)) {
      if (input.task_id.empty() || absl::StrContains(input.task_id, "/")) {
        return absl::FailedPreconditionError("the task has no usable Task ID for a script folder");
      }
      file = absl::StrCat(path_, "/", input.task_id, "/purple_script.json");
    }
    absl::StatusOr<std::string> text = ReadWholeFile(file);
    if (!text.ok()) return text.status();
    Value script;
    if (!google::protobuf::util::JsonStringToMessage(*text, &script).ok() ||
        !script.has_list_value()) {
      return absl::InvalidArgumentError(absl::StrCat(file, " is not a JSON list of actions"));
    }
    if (input.step >= script.list_value().values_size()) {
      return absl::OutOfRangeError(
          absl::StrCat("the script ", file, " has no action ", input.step + 1));
    }
    const Value& action = script.list_value().values(input.step);
    if (!action.has_string_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat(file, ": action ", input.step + 1, " is not a string"));
    }
    PolicyOutput out;
    out.action = action.string_value();
    out.tokens = EstimateTokens(out.action);
    return out;
  }

 private:
  const std::string path_;
};

// Runs argv with `input` on stdin; returns stdout. Bounded by `timeout` (the process group is
// killed) and by 1 MiB of output.
absl::StatusOr<std::string> RunWithStdin(const std::vector<std::string>& words,
                                         const std::string& input, absl::Duration timeout) {
  int in_pipe[2], out_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0) return absl::InternalError("pipe");
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    close(in_pipe[0]);
    close(in_pipe[1]);
    return absl::InternalError("pipe");
  }
  common::SpawnOptions spawn;
  spawn.argv = words;
  spawn.stdin_fd = in_pipe[0];
  spawn.stdout_fd = out_pipe[1];
  spawn.stderr_fd = common::kInherit;
  absl::StatusOr<pid_t> spawned = common::Spawn(spawn);
  close(in_pipe[0]);
  close(out_pipe[1]);
  if (!spawned.ok()) {
    close(in_pipe[1]);
    close(out_pipe[0]);
    return spawned.status();
  }
  const pid_t pid = *spawned;
  fcntl(in_pipe[1], F_SETFL, O_NONBLOCK);
  size_t written = 0;
  int in_fd = in_pipe[1];
  if (input.empty()) {
    close(in_fd);
    in_fd = -1;
  }
  std::string out;
  const absl::Time deadline = absl::Now() + timeout;
  bool timed_out = false;
  while (true) {
    pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {in_fd, POLLOUT, 0}};
    const int n = poll(fds, in_fd >= 0 ? 2 : 1, 50);
    if (n > 0 && in_fd >= 0 && (fds[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
      const ssize_t w = write(in_fd, input.data() + written, input.size() - written);
      if (w > 0) written += static_cast<size_t>(w);
      if (w < 0 && errno != EAGAIN && errno != EINTR) written = input.size();
      if (written >= input.size()) {
        close(in_fd);
        in_fd = -1;
      }
    }
    if (n > 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      char buf[8192];
      const ssize_t r = read(out_pipe[0], buf, sizeof(buf));
      if (r == 0) break;
      if (r > 0 && out.size() < (1 << 20)) out.append(buf, static_cast<size_t>(r));
    }
    if (absl::Now() >= deadline) {
      timed_out = true;
      break;
    }
  }
  if (in_fd >= 0) close(in_fd);
  close(out_pipe[0]);
  int status = 0;
  if (timed_out) kill(-pid, SIGKILL);
  waitpid(pid, &status, 0);
  if (timed_out) {
    return absl::DeadlineExceededError(
        absl::StrCat(words[0], " did not answer within ", absl::FormatDuration(timeout)));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(words[0], " failed (status ", status, ")"));
  }
  return out;
}

class CmdPolicy : public Policy {
 public:
  CmdPolicy(std::string program, absl::Duration timeout)
      : words_(absl::StrSplit(program, ' ', absl::SkipEmpty())), timeout_(timeout) {}

  absl::StatusOr<PolicyOutput> Next(const PolicyInput& input) override {
    if (words_.empty()) return absl::InvalidArgumentError("cmd: needs a program");
    absl::StatusOr<std::string> out = RunWithStdin(words_, PolicyInputJson(input), timeout_);
    if (!out.ok()) return out.status();
    PolicyOutput result;
    result.action = std::string(absl::StripAsciiWhitespace(*out));
    if (result.action.empty()) return absl::FailedPreconditionError("the program printed nothing");
    result.tokens = EstimateTokens(PolicyInputJson(input)) + EstimateTokens(result.action);
    return result;
  }

 private:
  const std::vector<std::string> words_;
  const absl::Duration timeout_;
};

constexpr char kSystemPrompt[] =
    "You are a security engineer finding the root cause of a crash. Answer with exactly one "
    "action and nothing else: either \"execute: <command>\" to run a command in the task's "
    "workspace, or \"submit\" once shared/loc.json holds your answer.";

class OpenAIPolicy : public Policy {
 public:
  // `url` was parsed and checked against the allow-list by MakePolicy.
  OpenAIPolicy(const common::HttpUrl& url, PolicyOptions options) : options_(std::move(options)) {
    // The client's address is exactly the checked scheme, host and port; the rest is a prefix.
    host_ = absl::StrCat(url.scheme, "://", url.HostPort());
    std::string prefix = url.path.substr(0, url.path.find_first_of("?#"));
    while (absl::EndsWith(prefix, "/")) prefix.pop_back();
    path_ = absl::EndsWith(prefix, "/v1") ? absl::StrCat(prefix, "/chat/completions")
                                          : absl::StrCat(prefix, "/v1/chat/completions");
  }

  absl::StatusOr<PolicyOutput> Next(const PolicyInput& input) override {
    Struct body;
    (*body.mutable_fields())["model"].set_string_value(input.model);
    auto* messages = (*body.mutable_fields())["messages"].mutable_list_value();
    auto add = [&](const std::string& role, const std::string& content) {
      Struct* m = messages->add_values()->mutable_struct_value();
      (*m->mutable_fields())["role"].set_string_value(role);
      (*m->mutable_fields())["content"].set_string_value(content);
    };
    std::string system = kSystemPrompt;
    if (!input.failure_context.empty()) {
      absl::StrAppend(&system, "\n\nThis is attempt ", input.attempt,
                      ". Earlier attempts failed; do not repeat their mistakes.\n",
                      input.failure_context);
    }
    add("system", system);
    for (const Turn& turn : input.turns) add(turn.role, turn.text);
    httplib::Client client(host_);
    httplib::Headers headers;
    if (!options_.api_key.empty()) {
      headers.emplace("Authorization", absl::StrCat("Bearer ", options_.api_key));
    }
    // --policy_timeout bounds the whole call, however the endpoint trickles its answer.
    bool expired = false;
    httplib::Result response = common::CallWithDeadline(
        client, options_.timeout,
        [&] { return client.Post(path_, headers, ToJson(body), "application/json"); }, &expired);
    if (!response && expired) {
      return absl::DeadlineExceededError(
          absl::StrCat("model endpoint ", host_, path_, " did not answer within ",
                       absl::FormatDuration(options_.timeout), " (--policy_timeout)"));
    }
    if (!response) {
      return absl::UnavailableError(absl::StrCat("model endpoint ", host_, path_, ": ",
                                                 httplib::to_string(response.error())));
    }
    if (response->status != 200) {
      return absl::UnavailableError(absl::StrCat("model endpoint answered HTTP ", response->status,
                                                 ": ", response->body.substr(0, 200)));
    }
    Struct reply;
    if (!google::protobuf::util::JsonStringToMessage(response->body, &reply).ok()) {
      return absl::DataLossError("the model's answer is not JSON");
    }
    auto choices = reply.fields().find("choices");
    if (choices == reply.fields().end() || !choices->second.has_list_value() ||
        choices->second.list_value().values_size() == 0 ||
        !choices->second.list_value().values(0).has_struct_value()) {
      return absl::DataLossError("the model's answer has no choices");
    }
    const auto& choice = choices->second.list_value().values(0).struct_value().fields();
    auto message = choice.find("message");
    if (message == choice.end() || !message->second.has_struct_value()) {
      return absl::DataLossError("the model's answer has no message");
    }
    auto content = message->second.struct_value().fields().find("content");
    if (content == message->second.struct_value().fields().end() ||
        !content->second.has_string_value()) {
      return absl::DataLossError("the model's answer has no content");
    }
    PolicyOutput out;
    out.action = std::string(absl::StripAsciiWhitespace(content->second.string_value()));
    out.tokens = EstimateTokens(ToJson(body)) + EstimateTokens(out.action);
    auto usage = reply.fields().find("usage");
    if (usage != reply.fields().end() && usage->second.has_struct_value()) {
      auto total = usage->second.struct_value().fields().find("total_tokens");
      if (total != usage->second.struct_value().fields().end() &&
          total->second.has_number_value()) {
        out.tokens = static_cast<int64_t>(total->second.number_value());
      }
    }
    return out;
  }

 private:
  const PolicyOptions options_;
  std::string host_;
  std::string path_;
};

}  // namespace

int64_t EstimateTokens(const std::string& text) {
  return static_cast<int64_t>((text.size() + 3) / 4);
}

std::string PolicyInputJson(const PolicyInput& input) {
  Struct s;
  auto& f = *s.mutable_fields();
  f["context_id"].set_string_value(input.context_id);
  f["task_id"].set_string_value(input.task_id);
  f["step"].set_number_value(input.step);
  f["attempt"].set_number_value(input.attempt);
  f["tier"].set_number_value(input.tier);
  f["model"].set_string_value(input.model);
  f["failure_context"].set_string_value(input.failure_context);
  auto* turns = f["messages"].mutable_list_value();
  for (const Turn& turn : input.turns) {
    Struct* t = turns->add_values()->mutable_struct_value();
    (*t->mutable_fields())["role"].set_string_value(turn.role);
    (*t->mutable_fields())["content"].set_string_value(turn.text);
  }
  return ToJson(s);
}

absl::StatusOr<std::unique_ptr<Policy>> MakePolicy(const std::string& spec,
                                                   const PolicyOptions& options) {
  absl::string_view rest(spec);
  if (absl::ConsumePrefix(&rest, "script:") && !rest.empty()) {
    return std::unique_ptr<Policy>(new ScriptPolicy(std::string(rest)));
  }
  rest = spec;
  if (absl::ConsumePrefix(&rest, "cmd:") && !rest.empty()) {
    return std::unique_ptr<Policy>(new CmdPolicy(std::string(rest), options.timeout));
  }
  rest = spec;
  if (absl::ConsumePrefix(&rest, "openai:") && !rest.empty()) {
    PolicyOptions o = options;
    if (o.api_key.empty()) {
      const char* key = std::getenv("OPENAI_API_KEY");
      if (key != nullptr) o.api_key = key;
    }
    absl::StatusOr<common::HttpUrl> url = common::ParseHttpUrl(rest);
    if (!url.ok()) return url.status();
    // Checked once here: the endpoint cannot change while the agent runs.
    if (absl::Status allowed = o.model_allow.Check(rest, "model_allow_hosts"); !allowed.ok()) {
      return absl::Status(allowed.code(), absl::StrCat("model endpoint: ", allowed.message()));
    }
    return std::unique_ptr<Policy>(new OpenAIPolicy(*url, o));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown policy \"", spec, "\": use script:<file>, cmd:<program> or openai:<base_url>"));
}

}  // namespace purple_agent
