#include "coordctl/cli.h"

#include <ostream>

#include "a2a_protocol/version.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/grpc_status.h"
#include "google/protobuf/util/json_util.h"

namespace coordctl {

std::string ParsedArgs::get(const std::string& name, const std::string& fallback) const {
  auto it = options.find(name);
  if (it == options.end() || it->second.empty()) return fallback;
  return it->second.back();
}

std::string ParsedArgs::free_text(size_t index) const {
  if (index < positional.size()) return positional[index];
  return absl::StrJoin(rest, " ");
}

std::unique_ptr<grpc::ClientContext> Env::NewContext() const {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(timeout));
  return context;
}

std::unique_ptr<grpc::ClientContext> Env::NewA2AContext() const {
  auto context = NewContext();
  a2a_protocol::AddVersion(context.get());
  return context;
}

absl::StatusOr<ParsedArgs> ParseArgs(const Command& command, const std::vector<std::string>& args) {
  ParsedArgs parsed;
  auto is_value_option = [&](const std::string& name) {
    return std::find(command.value_options.begin(), command.value_options.end(), name) !=
           command.value_options.end();
  };
  auto is_switch = [&](const std::string& name) {
    return std::find(command.switch_options.begin(), command.switch_options.end(), name) !=
           command.switch_options.end();
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      if (!command.takes_rest) return absl::InvalidArgumentError("unexpected \"--\"");
      parsed.rest.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    }
    if (absl::StartsWith(arg, "--") && arg.size() > 2) {
      std::string name = arg.substr(2);
      std::string value;
      bool has_value = false;
      if (const size_t eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_value = true;
      }
      if (is_switch(name)) {
        if (has_value)
          return absl::InvalidArgumentError(absl::StrCat("--", name, " takes no value"));
        parsed.switches.insert(name);
        continue;
      }
      if (!is_value_option(name)) {
        return absl::InvalidArgumentError(absl::StrCat("unknown option --", name));
      }
      if (!has_value) {
        if (i + 1 >= args.size()) {
          return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value"));
        }
        value = args[++i];
      }
      parsed.options[name].push_back(value);
      continue;
    }
    parsed.positional.push_back(arg);
  }
  const int n = static_cast<int>(parsed.positional.size());
  if (n < command.min_positional) {
    return absl::InvalidArgumentError("missing arguments");
  }
  if (command.max_positional >= 0 && n > command.max_positional) {
    return absl::InvalidArgumentError(
        absl::StrCat("unexpected argument \"", parsed.positional[command.max_positional], "\""));
  }
  return parsed;
}

int Fail(const Env& env, const std::string& message, int code) {
  *env.err << "coordctl: " << message << std::endl;
  return code;
}

int ReportRpcError(const Env& env, const grpc::Status& status) {
  if (status.error_code() == grpc::StatusCode::NOT_FOUND) {
    return Fail(env, absl::StrCat("not found: ", status.error_message()), kExitNo);
  }
  // Abseil can name the codes (gRPC's are the same).
  std::string name = absl::StatusCodeToString(common::FromGrpcStatus(status).code());
  if (name.empty()) name = "UNKNOWN";
  return Fail(env, absl::StrCat(name, ": ", status.error_message()));
}

absl::StatusOr<absl::Duration> ParseDurationArg(const std::string& name, const std::string& value) {
  absl::Duration d;
  if (!absl::ParseDuration(value, &d) || d < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", name, " takes a duration such as 30s, 1.5m or 250ms, not \"", value, "\""));
  }
  return d;
}

absl::StatusOr<int64_t> ParseIntArg(const std::string& name, const std::string& value) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(value, &v)) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " takes a whole number, not \"", value, "\""));
  }
  return v;
}

std::string OneLine(std::string text) {
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = ' ';
  }
  return std::string(absl::StripAsciiWhitespace(text));
}

std::string ToJson(const google::protobuf::Message& message) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(message, &json, options);
  return json;
}

}  // namespace coordctl
