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

}  // namespace

int main(int argc, char** argv) {
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

  std::vector<std::string> args(argv + 1, argv + argc);
  const char* env_target = std::getenv("COORDCTL_TARGET");
  std::string target = env_target != nullptr && *env_target != '\0' ? env_target : kDefaultTarget;
  // Credentials come from files (docs/security.md), so that a token never shows in `ps`.
  const char* env_token_file = std::getenv("COORDCTL_AUTH_TOKEN_FILE");
  std::string auth_token_file = env_token_file != nullptr ? env_token_file : "";
  const char* env_ca_file = std::getenv("COORDCTL_TLS_CA_FILE");
  std::string tls_ca_file = env_ca_file != nullptr ? env_ca_file : "";
  const char* env_timeout = std::getenv("COORDCTL_TIMEOUT");
  std::string timeout_text = env_timeout != nullptr && *env_timeout != '\0' ? env_timeout : "10s";
  // Where the timeout came from, for the error message.
  std::string timeout_source = timeout_text == "10s" ? "--timeout" : "COORDCTL_TIMEOUT";

  coordctl::Env env;
  env.out = &std::cout;
  env.err = &std::cerr;

  // Global options come before the command words.
  size_t i = 0;
  for (; i < args.size() && absl::StartsWith(args[i], "--"); ++i) {
    std::string name = args[i];
    std::string value;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (name == "--help") {
      PrintUsage(commands, std::cout);
      return coordctl::kExitOk;
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return coordctl::Fail(env, name + " needs a value", coordctl::kExitUsage);
    }
    if (name == "--auth-token-file" || name == "--auth_token_file") {
      auth_token_file = value;
    } else if (name == "--tls-ca-file" || name == "--tls_ca_file") {
      tls_ca_file = value;
    } else if (name == "--target") {
      target = value;
    } else if (name == "--timeout") {
      timeout_text = value;
      timeout_source = "--timeout";
    } else {
      return coordctl::Fail(env, "unknown option " + name + " (see coordctl --help)",
                            coordctl::kExitUsage);
    }
  }
  args.erase(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(i));
  if (args.empty() || args[0] == "help") {
    PrintUsage(commands, args.empty() ? std::cerr : std::cout);
    return args.empty() ? coordctl::kExitUsage : coordctl::kExitOk;
  }
  absl::StatusOr<absl::Duration> timeout = coordctl::ParseDurationArg("timeout", timeout_text);
  if (!timeout.ok() || *timeout <= absl::ZeroDuration()) {
    return coordctl::Fail(env, timeout_source + " takes a positive duration such as 10s",
                          coordctl::kExitUsage);
  }
  env.timeout = *timeout;

  // The command whose words match the most leading arguments.
  const coordctl::Command* command = nullptr;
  for (const coordctl::Command& c : commands) {
    if (c.words.size() > args.size()) continue;
    if (!std::equal(c.words.begin(), c.words.end(), args.begin())) continue;
    if (command == nullptr || c.words.size() > command->words.size()) command = &c;
  }
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
      common::LoadClientCredentials(auth_token_file, tls_ca_file);
  if (!credentials.ok()) {
    return coordctl::Fail(env, std::string(credentials.status().message()), coordctl::kExitUsage);
  }
  if (absl::Status t = common::ExpandTarget(target).status(); !t.ok()) {
    return coordctl::Fail(env, std::string(t.message()), coordctl::kExitUsage);
  }
  env.channel = common::MakeChannel(target, *credentials, channel_args);
  return command->run(env, *parsed);
}
