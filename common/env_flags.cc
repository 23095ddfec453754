#include "common/env_flags.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/flags/commandlineflag.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"

extern char** environ;

namespace common {
namespace {

// Abseil's own flags (--flagfile, --fromenv, --help, --helpfull, --version, ...) are defined in
// its flags library; they control parsing itself and stay command-line only.
bool IsAbseilFlag(const absl::CommandLineFlag& flag) {
  return absl::StrContains(flag.Filename(), "absl/flags/");
}

// At most `max` bytes of `text` on one line: printable ASCII as it is, other bytes as \xNN.
std::string Quote(absl::string_view text, size_t max) {
  std::string out;
  for (const char c : text.substr(0, max)) {
    if (c >= 0x20 && c < 0x7f) {
      out += c;
    } else {
      absl::StrAppend(&out, "\\x", absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2));
    }
  }
  if (text.size() > max) out += "...";
  return out;
}

}  // namespace

std::string EnvVarName(absl::string_view prefix, absl::string_view flag_name) {
  return absl::StrCat(prefix, absl::AsciiStrToUpper(flag_name));
}

absl::StatusOr<EnvFlagsResult> ApplyEnvFlags(absl::string_view prefix,
                                             absl::Span<const std::string> environment) {
  absl::flat_hash_map<std::string, absl::CommandLineFlag*> by_variable;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (!IsAbseilFlag(*flag)) by_variable[EnvVarName(prefix, name)] = flag;
  }
  EnvFlagsResult result;
  for (const std::string& entry : environment) {
    const size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    const std::string variable = entry.substr(0, eq);
    if (prefix.empty() || !absl::StartsWith(variable, prefix)) continue;
    const absl::string_view value = absl::string_view(entry).substr(eq + 1);
    auto it = by_variable.find(variable);
    if (it == by_variable.end()) {
      result.unknown.push_back(variable);
      continue;
    }
    std::string error;
    if (!it->second->ParseFrom(value, &error)) {
      // Abseil's error quotes the value: escaped and cut, like the value itself, so that a
      // hostile or huge variable stays one short line.
      return absl::InvalidArgumentError(absl::StrCat("environment variable ", variable, "=\"",
                                                     Quote(value, 100), "\" (--",
                                                     it->second->Name(), "): ", Quote(error, 300)));
    }
    result.applied.push_back(variable);
  }
  return result;
}

absl::StatusOr<EnvFlagsResult> ApplyEnvFlagsFromEnviron(absl::string_view prefix) {
  std::vector<std::string> environment;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) environment.emplace_back(*e);
  return ApplyEnvFlags(prefix, environment);
}

std::vector<std::string> UnderscoreFlagNames(std::vector<std::string> args) {
  for (std::string& arg : args) {
    if (arg == "--") break;
    if (arg.size() < 3 || arg[0] != '-') continue;
    const size_t start = arg[1] == '-' ? 2 : 1;
    const size_t end = std::min(arg.find('='), arg.size());
    std::string name = arg.substr(start, end - start);
    std::replace(name.begin(), name.end(), '-', '_');
    // Only a flag this program has: a value that starts with '-' stays as it is.
    if (absl::FindCommandLineFlag(name) == nullptr) continue;
    arg.replace(start, end - start, name);
  }
  return args;
}

std::vector<char*> InitFlags(absl::string_view env_prefix, absl::string_view usage, int argc,
                             char** argv) {
  absl::SetProgramUsageMessage(
      absl::StrCat(usage, "\n\nEvery flag can also be set by the environment variable ", env_prefix,
                   "<FLAG NAME IN UPPER CASE> (e.g. ", EnvVarName(env_prefix, "listen"),
                   "=0.0.0.0:50051); the command line wins over the environment."));
  absl::StatusOr<EnvFlagsResult> env = ApplyEnvFlagsFromEnviron(env_prefix);
  if (!env.ok()) {
    // Before --log_format is known: one plain line, as Abseil prints a bad command-line value.
    std::fprintf(stderr, "ERROR: %s\n", std::string(env.status().message()).c_str());
    std::exit(1);
  }
  // The rewritten command line lives as long as the process: the positional arguments returned
  // point into it.
  static std::vector<std::string>* const args = new std::vector<std::string>(
      UnderscoreFlagNames(std::vector<std::string>(argv + std::min(argc, 1), argv + argc)));
  static std::vector<char*>* const rewritten = new std::vector<char*>();
  rewritten->assign({argc > 0 ? argv[0] : const_cast<char*>("")});
  for (std::string& arg : *args) rewritten->push_back(arg.data());
  std::vector<char*> positional =
      absl::ParseCommandLine(static_cast<int>(rewritten->size()), rewritten->data());
  SetLogFormat(absl::GetFlag(FLAGS_log_format));
  if (!env->unknown.empty()) {
    LOG_WARN("ignored environment variable(s) that name no flag: %s",
             absl::StrJoin(env->unknown, ", "));
  }
  return positional;
}

}  // namespace common
