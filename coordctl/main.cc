// coordctl: the command-line client of the coordinator, for people and scripts.
//   coordctl [--target host:port] [--timeout 10s] <group> <command> [args...]
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "common/grpc_client.h"
#include "coordctl/cli.h"

namespace {

constexpr char kDefaultTarget[] = "127.0.0.1:50051";

void PrintUsage(const std::vector<coordctl::Command>& commands, std::ostream& out) {
  out << "usage: coordctl [--target host:port] [--timeout 10s] <command> [args...]\n"
      << "  --target   coordinator address, or replicas of one etcd data set as "
         "host:port,host:port\n"
      << "             (the next is used when one is down; default $COORDCTL_TARGET or "
      << kDefaultTarget << ")\n"
      << "  --auth-token-file  file holding the bearer token to present (default "
         "$COORDCTL_AUTH_TOKEN_FILE; none)\n"
      << "  --tls-ca-file      PEM root certificate: connect with TLS (default "
         "$COORDCTL_TLS_CA_FILE; plaintext)\n"
      << "  --timeout  deadline of each call (default $COORDCTL_TIMEOUT or 10s)\n\ncommands:\n";
  for (const coordctl::Command& c : commands) {
    out << "  coordctl " << absl::StrJoin(c.words, " ") << (c.usage.empty() ? "" : " ") << c.usage
        << "\n      " << c.help << "\n";
  }
  out << "\nexit codes: 0 ok, 1 not found (or \"no\"), 2 usage error, 3 other errors\n";
}

// The options before the command words, with their defaults from the environment.
struct GlobalOptions {
  std::string target;
  std::string auth_token_file;
  std::string tls_ca_file;
  std::string timeout_text;
  std::string timeout_source;  // where the timeout came from, for the error message
  bool help = false;
};

std::string FromEnv(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

// Reads the global options at the front of `args` and removes them. INVALID_ARGUMENT for an
// unknown option or one without its value.
absl::StatusOr<GlobalOptions> ReadGlobalOptions(std::vector<std::string>& args) {
  GlobalOptions o;
  o.target = FromEnv("COORDCTL_TARGET", kDefaultTarget);
  // Credentials come from files (docs/security.md), so that a token never shows in `ps`.
  o.auth_token_file = FromEnv("COORDCTL_AUTH_TOKEN_FILE", "");
  o.tls_ca_file = FromEnv("COORDCTL_TLS_CA_FILE", "");
  o.timeout_text = FromEnv("COORDCTL_TIMEOUT", "10s");
  o.timeout_source = o.timeout_text == "10s" ? "--timeout" : "COORDCTL_TIMEOUT";
  size_t i = 0;
  for (; i < args.size() && absl::StartsWith(args[i], "--"); ++i) {
    std::string name = args[i];
    std::string value;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (name == "--help") {
      o.help = true;
      return o;
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return absl::InvalidArgumentError(name + " needs a value");
    }
    if (name == "--auth-token-file" || name == "--auth_token_file") {
      o.auth_token_file = value;
    } else if (name == "--tls-ca-file" || name == "--tls_ca_file") {
      o.tls_ca_file = value;
    } else if (name == "--target") {
      o.target = value;
    } else if (name == "--timeout") {
      o.timeout_text = value;
      o.timeout_source = "--timeout";
    } else {
      return absl::InvalidArgumentError("unknown option " + name + " (see coordctl --help)");
    }
  }
  args.erase(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(i));
  return o;
}

// The command whose words match the most leading arguments; null when none does.
const coordctl::Command* FindCommand(const std::vector<coordctl::Command>& commands,
                                     const std::vector<std::string>& args) {
  const coordctl::Command* command = nullptr;
  for (const coordctl::Command& c : commands) {
    if (c.words.size() > args.size()) continue;
    if (!std::equal(c.words.begin(), c.words.end(), args.begin())) continue;
    if (command == nullptr || c.words.size() > command->words.size()) command = &c;
  }
  return command;
}

std::vector<coordctl::Command> AllCommands() {
  std::vector<coordctl::Command> commands;
  coordctl::AddContextCommands(&commands);
  coordctl::AddAgentCommands(&commands);
  coordctl::AddA2ACommands(&commands);
  coordctl::AddConversationCommands(&commands);
  coordctl::AddHealthCommands(&commands);
  coordctl::AddTaskCommands(&commands);
  coordctl::AddBreakerCommands(&commands);
  coordctl::AddImportCommands(&commands);
  coordctl::AddRunCommands(&commands);
  coordctl::AddRunIoCommands(&commands);
  coordctl::AddScenarioCommands(&commands);
  coordctl::AddAdminCommands(&commands);
  coordctl::AddTokenCommands(&commands);
  return commands;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<coordctl::Command> commands = AllCommands();
  std::vector<std::string> args(argv + 1, argv + argc);
  coordctl::Env env;
  env.out = &std::cout;
  env.err = &std::cerr;
  absl::StatusOr<GlobalOptions> global = ReadGlobalOptions(args);
  if (!global.ok()) {
    return coordctl::Fail(env, std::string(global.status().message()), coordctl::kExitUsage);
  }
  if (global->help) {
    PrintUsage(commands, std::cout);
    return coordctl::kExitOk;
  }
  if (args.empty() || args[0] == "help") {
    PrintUsage(commands, args.empty() ? std::cerr : std::cout);
    return args.empty() ? coordctl::kExitUsage : coordctl::kExitOk;
  }
  absl::StatusOr<absl::Duration> timeout =
      coordctl::ParseDurationArg("timeout", global->timeout_text);
  if (!timeout.ok() || *timeout <= absl::ZeroDuration()) {
    return coordctl::Fail(env, global->timeout_source + " takes a positive duration such as 10s",
                          coordctl::kExitUsage);
  }
  env.timeout = *timeout;
  const coordctl::Command* command = FindCommand(commands, args);
  if (command == nullptr) {
    return coordctl::Fail(
        env,
        "unknown command \"" + absl::StrJoin(args, " ").substr(0, 80) + "\" (see coordctl --help)",
        coordctl::kExitUsage);
  }
  std::vector<std::string> rest(args.begin() + static_cast<std::ptrdiff_t>(command->words.size()),
                                args.end());
  if (std::find(rest.begin(), rest.end(), "--help") != rest.end() &&
      std::find(rest.begin(), rest.end(), "--") == rest.end()) {
    std::cout << "usage: coordctl " << absl::StrJoin(command->words, " ") << " " << command->usage
              << "\n  " << command->help << "\n";
    return coordctl::kExitOk;
  }
  absl::StatusOr<coordctl::ParsedArgs> parsed = coordctl::ParseArgs(*command, rest);
  if (!parsed.ok()) {
    return coordctl::Fail(env,
                          std::string(parsed.status().message()) + "\nusage: coordctl " +
                              absl::StrJoin(command->words, " ") + " " + command->usage,
                          coordctl::kExitUsage);
  }
  grpc::ChannelArguments channel_args;
  channel_args.SetMaxReceiveMessageSize(64 << 20);
  absl::StatusOr<common::ClientCredentialOptions> credentials =
      common::LoadClientCredentials(global->auth_token_file, global->tls_ca_file);
  if (!credentials.ok()) {
    return coordctl::Fail(env, std::string(credentials.status().message()), coordctl::kExitUsage);
  }
  if (absl::Status t = common::ExpandTarget(global->target).status(); !t.ok()) {
    return coordctl::Fail(env, std::string(t.message()), coordctl::kExitUsage);
  }
  env.channel = common::MakeChannel(global->target, *credentials, channel_args);
  return command->run(env, *parsed);
}
